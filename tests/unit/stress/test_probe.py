"""The probe attack (docs/stress-tests.md#probe): a readout of one layer, trained on retain
answers with the model frozen, reads the forget answers, and its recovery runs between the
same probe's reading of the Retained model (0) and of the Original (1). On the hand-built
model whose fact lives in a middle layer and was removed only at the head
(tests/helpers/hidden_fact.py) the probe at the middle layer brings the answer back; the
control, a model that never saw the fact (the Retained model's role), is the floor, and
reads nothing; the two controls' readings are cached beside them."""

from __future__ import annotations

import json

import pytest

from sga_core.params import ConfigError, from_dict
from sga_core.stress import StressSettings
from sga_core.stress.run import stress_model
from tests.helpers.hidden_fact import (
    FACT,
    LAYERS,
    MIDDLE,
    OTHER,
    RETAIN,
    build_hidden_fact_models,
)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return {k: str(v) for k, v in
            build_hidden_fact_models(tmp_path_factory.mktemp("hidden_fact")).items()}


def _probe(models, name, out, retained="control", **settings):
    st = StressSettings(**{"rouge": False, "seeds": [0, 1], **settings})
    return stress_model(models[name], out, [FACT], [RETAIN, OTHER], original=models["original"],
                        attacks=["probe"], settings=st,
                        retained=models[retained] if retained else None)["probe"]


def _by_layer(res) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for c in res["cases"]:
        out.setdefault(c["info"]["layer"], []).append(c)
    return out


def test_the_probe_at_the_middle_layer_recovers_what_the_head_removed(models, tmp_path):
    res = _probe(models, "unlearned", tmp_path / "stress",
                 probe_layers=list(range(1, LAYERS + 1)))
    layers = _by_layer(res)
    assert sorted(layers) == list(range(1, LAYERS + 1))
    for cases in layers.values():
        assert [c["seed"] for c in cases] == [0, 1]  # one case per layer and seed
    middle = [c["metrics"]["probability"] for c in layers[MIDDLE]]
    for m in middle:  # the ends: the same probe on the control (floor) and the Original
        assert m["unlearned"] < 0.05 and m["original"] > 0.5
        assert m["recovery"] > 0.5 and m["attacked"] > 0.5  # back through the probe
    # the first block has not formed it yet: the Original and the control read alike there,
    # and the case says so rather than divide by noise
    for c in layers[1]:
        m = c["metrics"]["probability"]
        assert m["recovery"] is None and abs(m["original"] - m["unlearned"]) < 0.01
        assert m["reason"].startswith("it reads the Original (") and "alike" in m["reason"]
    assert res["baselines"].startswith("the same probe")
    sample = res["samples"][0]  # a sample's ends are its case's
    assert sample["prob_unlearned"] == pytest.approx(
        res["cases"][sample["case"]]["metrics"]["probability"]["unlearned"])
    info = layers[MIDDLE][0]["info"]
    assert info["depth"] == LAYERS and info["lens_prob"] > 0.9 and info["retain_rows"] == 2
    assert layers[MIDDLE][0]["attack_set"] == "retain"
    assert layers[MIDDLE][0]["attack_rows"] == [0, 1]
    # the summary as the other multi-case attacks have it: the mean and the worst case
    head = res["summary"]["probability"]
    defined = [c["metrics"]["probability"]["recovery"] for c in res["cases"]
               if c["metrics"]["probability"]["recovery"] is not None]
    assert head["max_recovery"] == max(defined)
    assert head["max_recovery"] > 0.5 and head["recovery"]["n"] == len(defined) >= LAYERS
    assert res["recovery"] == pytest.approx(head["recovery"]["mean"])
    # the probe's own reading of each answer token, for Token probabilities' variant rows
    sample = next(s for s in res["samples"] if s["case"] == res["cases"].index(
        layers[MIDDLE][0]))
    assert "".join(sample["tokens"]["tokens"]).startswith("French")
    assert min(sample["tokens"]["probs"]) > 0.3 and sample["rouge"] is None
    on_disk = json.loads((tmp_path / "stress" / "probe.json").read_text())
    assert on_disk["family"] == "probe" and on_disk["settings"]["probe_layers"] == [1, 2, 3, 4]
    # a run folder's readers take it as sound (its info fields checked), and Token
    # probabilities finds the probe's reading as a variant row of the run
    from sga_core.runs.folder import RunFolder
    from sga_core.stress.results import attacked_token_tables

    good, damaged = RunFolder(tmp_path).stress_results()
    assert damaged == [] and set(good) == {"probe"}
    variants = attacked_token_tables(tmp_path, 0)  # every layer read, of the first seed
    assert list(variants) == [f"probe layer {n} seed 0" for n in range(1, LAYERS + 1)]
    assert variants["probe layer 1 seed 0"]["tokens"] == sample["tokens"]["tokens"]
    middle = res["cases"].index(layers[MIDDLE][0])
    assert variants[f"probe layer {MIDDLE} seed 0"]["probs"] == next(
        s for s in res["samples"] if s["case"] == middle)["tokens"]["probs"]


def test_the_retained_model_sets_the_floor(models, tmp_path):
    """The control never saw the fact: a probe at any layer reads nothing of it, so the
    Retained model stressed as a run (its own floor) recovers nothing, and the Original
    (its own ceiling) reads as all there."""
    res = _probe(models, "control", tmp_path / "c", probe_layers=[])  # the default layers
    assert sorted(_by_layer(res)) == [1, 2, 3]  # 1/4, 1/2, 3/4 of 4 blocks
    for c in res["cases"]:
        m = c["metrics"]["probability"]
        assert m["attacked"] < 0.05 and m["attacked"] == pytest.approx(m["unlearned"])
    middle = _by_layer(res)[MIDDLE]
    assert all(c["metrics"]["probability"]["recovery"] == pytest.approx(0, abs=1e-9)
               for c in middle)
    res = _probe(models, "original", tmp_path / "o", probe_layers=[MIDDLE])
    assert res["recovery"] == pytest.approx(1.0)


def test_without_the_retained_model_the_recovery_is_undefined_saying_why(models, tmp_path):
    res = _probe(models, "unlearned", tmp_path, retained=None, probe_layers=[MIDDLE])
    assert res["recovery"] is None
    assert "no probe reading of the Retained model (give --retained)" in \
        res["recovery_reason"]
    assert all(c["metrics"]["probability"]["attacked"] > 0.5 for c in res["cases"])


def test_the_controls_readings_are_cached_beside_them(models, tmp_path):
    """The Retained model's and the Original's probe readings are computed once per rows
    and settings, kept in ``<model>/eval/reference_cache.json``, and read from there."""
    import shutil

    from sga_core.fileio import atomic_write_json, read_json

    own = {**models, "control": str(shutil.copytree(models["control"], tmp_path / "ctl",
                                                   ignore=shutil.ignore_patterns("eval")))}
    first = _probe(own, "unlearned", tmp_path / "1", probe_layers=[MIDDLE])
    cache = tmp_path / "ctl" / "eval" / "reference_cache.json"
    entries = read_json(cache)["entries"]
    (key, entry), = entries.items()
    assert entry["kind"] == "probe_readings" and sorted(entry["value"]) == \
        [f"{MIDDLE}/0", f"{MIDDLE}/1"]
    assert first["cases"][0]["metrics"]["probability"]["unlearned"] == \
        pytest.approx(entry["value"][f"{MIDDLE}/0"][0])
    # read from the cache, not recomputed: a value put there is the floor the next run uses
    entry["value"] = {k: [0.25] for k in entry["value"]}
    atomic_write_json(cache, {**read_json(cache), "entries": {key: entry}})
    again = _probe(own, "unlearned", tmp_path / "2", probe_layers=[MIDDLE])
    assert [c["metrics"]["probability"]["unlearned"] for c in again["cases"]] == \
        [0.25, 0.25]
    # other settings: another entry
    _probe(own, "unlearned", tmp_path / "3", probe_layers=[MIDDLE], probe_steps=7)
    assert len(read_json(cache)["entries"]) == 2


def test_the_model_is_left_as_it_was(models):
    """The probe trains only its own readout: no weight of the model moves, none gets a
    gradient."""
    import torch

    from sga_core.evaluation import EvalSettings
    from sga_core.evaluation.run import load_model_and_tokenizer
    from sga_core.stress.attacks.probe import Probe
    from sga_core.stress.context import StressContext

    m, tok = load_model_and_tokenizer(models["unlearned"])
    before = {k: v.clone() for k, v in m.state_dict().items()}
    ctx = StressContext(m, EvalSettings().resolve()[1].encoder(tok, m), [FACT],
                        [RETAIN, OTHER], StressSettings(rouge=False, seeds=[0],
                                                        probe_steps=5))
    cases = Probe().cases(ctx)["probe"]
    assert len(cases) == 3 and all(not c.reason for c in cases)
    assert all(torch.equal(before[k], v) for k, v in m.state_dict().items())
    assert all(p.grad is None for p in m.parameters())


def test_bad_settings_and_missing_parts_are_said(models, tmp_path):
    with pytest.raises(ConfigError, match="probe_layers: 0 is outside"):
        from_dict(StressSettings, {"probe_layers": [0]})
    with pytest.raises(ConfigError, match="probe_steps"):
        from_dict(StressSettings, {"probe_steps": 0})
    res = _probe(models, "unlearned", tmp_path / "deep", probe_layers=[9])
    assert res["recovery"] is None
    assert res["recovery_reason"] == "--probe-layers 9: the model has 4 blocks (1..4)"
    st = StressSettings(rouge=False, seeds=[0])
    res = stress_model(models["unlearned"], tmp_path / "none", [FACT], None,
                       original=models["original"], attacks=["probe"], settings=st)["probe"]
    assert "no retain rows" in res["recovery_reason"]


def test_text_data_is_probed_on_passages(tmp_path, tiny_model_dir, demo_dir):
    """A text run: the probe trains on retain passages' tokens and reads the forget
    continuations (the rows the text stress scoring has)."""
    st = StressSettings(rouge=False, seeds=[0], probe_steps=3)
    res = stress_model(str(tiny_model_dir), tmp_path, str(demo_dir / "text_forget.jsonl"),
                       str(demo_dir / "text_retain.jsonl"), original=str(tiny_model_dir),
                       attacks=["probe"], settings=st)["probe"]
    assert res["kind"] == "text"
    cases = [c for c in res["cases"] if not c["reason"]]
    assert [c["info"]["layer"] for c in cases] == [1, 2]  # the tiny model has 2 blocks
    assert all(c["info"]["retain_tokens"] > 50 for c in cases)
    probs = [s["prob"] for s in res["samples"]]
    assert probs and all(0 < p < 1 for p in probs)


def test_the_stress_command_runs_it(models, tmp_path, capsys):
    from sga_core.cli import main
    from sga_core.fileio import atomic_write_jsonl

    forget = atomic_write_jsonl(tmp_path / "forget.jsonl", [FACT])
    retain = atomic_write_jsonl(tmp_path / "retain.jsonl", [RETAIN, OTHER])
    code = main(["stress", models["unlearned"], "--forget", str(forget), "--retain",
                 str(retain), "--original", models["original"], "--retained",
                 models["control"], "--out", str(tmp_path / "o"),
                 "--attacks", "probe", "--probe-layers", str(MIDDLE), "--seeds", "0",
                 "--no-rouge"])
    assert code == 0
    res = json.loads((tmp_path / "o" / "probe.json").read_text())
    assert [c["label"] for c in res["cases"]] == [f"layer {MIDDLE} seed 0"]
    assert res["recovery"] > 0.5
    assert "probe" in capsys.readouterr().out


def test_the_runs_page_offers_it(ui_env, tiny_model_dir):
    """The Runs page's Stress-test form lists the probe (from the registry) and its
    settings; a request queued from it carries them."""
    import shutil

    from sga_core.runs.folder import RunFolder
    from tests.helpers.own_data import fake_run, metrics, own_project, tofu_files
    from tests.helpers.stress import runner_lock
    from tests.helpers.ui import open_page, shown

    project = own_project(ui_env / "workspace", tofu_files(ui_env / "files"))
    runs = ui_env / "runs"
    run = fake_run(runs, project, "ga-probe", model=str(tiny_model_dir), metrics=metrics())
    shutil.copytree(tiny_model_dir, RunFolder(run).model_dir)
    with runner_lock(runs):  # the page writes the request; no runner takes it
        at = open_page("app_pages/runs.py")
        at.radio(key="runs.filter").set_value("all projects").run()
        at.selectbox(key="runs.select").set_value("ga-probe").run()
        assert not at.exception, at.exception
        chosen = at.multiselect(key="runs.stress_attacks")
        assert "probe" in chosen.options and "probe" not in chosen.value  # asked for only
        chosen.set_value(["probe"])
        at.text_input(key="runs.stress_set.probe_layers").set_value("1")
        next(b for b in at.button if b.label == "Stress-test").click().run()
        assert not at.exception, at.exception
        assert any("Queued a stress test of ga-probe (probe; probe layers 1)"
                   in shown(s.value) for s in at.success), [s.value for s in at.success]
    request = RunFolder(run).stress_request()
    assert request["attacks"] == ["probe"] and request["settings"] == {"probe_layers": [1]}


def test_a_bfloat16_model_is_probed_too(models, tmp_path):
    """The hidden states are kept in the model's dtype, the readout trains in float32."""
    from sga_core.evaluation import EvalSettings

    st = StressSettings(rouge=False, seeds=[0], probe_layers=[MIDDLE])
    res = stress_model(models["unlearned"], tmp_path, [FACT], [RETAIN, OTHER],
                       original=models["original"], attacks=["probe"], settings=st,
                       retained=models["control"],
                       eval_settings=EvalSettings(dtype="bfloat16"))["probe"]
    assert res["settings"]["dtype"] == "bfloat16" and res["recovery"] > 0.5


def test_small_readings_that_differ_give_a_recovery_alike_ones_do_not():
    """The probe's ends are its own readings, often far below the outputs' 0.01 gap rule:
    they count as a gap when they differ by a tenth of the larger, else the case says the
    probe reads the two alike."""
    from sga_core.evaluation import EvalSettings
    from sga_core.stress.base import Case
    from sga_core.stress.run import _result

    def case(attacked, retained, original):
        return Case("layer 22 seed 0", 0, [0], [{"prob": attacked}], [0], "retain",
                    baselines={"unlearned": [{"prob": retained}],
                               "original": [{"prob": original}], "reason": None})

    es = EvalSettings().resolve()[1]
    res = _result("probe", "probe", [case(0.0068, 0.0055, 0.0070), case(0.003, 0.0030,
                                                                        0.0031)],
                  [{"prob": 0.1}], [{"prob": 0.9}], StressSettings(rouge=False), es, "m",
                  "o", None, 1.0, None)
    defined, alike = (c["metrics"]["probability"] for c in res["cases"])
    assert defined["recovery"] == pytest.approx((0.0068 - 0.0055) / (0.0070 - 0.0055))
    assert defined["reason"] is None
    assert alike["recovery"] is None and "alike (within 10% of each other)" in alike["reason"]
    assert res["samples"][0]["prob_unlearned"] == 0.0055  # the case's own ends
