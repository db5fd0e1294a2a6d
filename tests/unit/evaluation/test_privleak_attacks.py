"""PrivLeak of each membership-inference attack against the retain reference's AUC of the same
attack, on QA (TOFU's holdout) and text (MUSE's holdout) projects: the formula against
open-unlearning's ``src/evals/metrics/privacy.py`` ``privleak`` (locuslab/open-unlearning
d3d7cf9, ported below), the reference's AUCs against the reference model's own evaluation,
and the cache (kind ``mia_aucs``) that spares the next evaluation the reference model."""

from __future__ import annotations

import shutil

import pytest

from sga_core.evaluation import EvalSettings, evaluate_model
from sga_core.fileio import atomic_write_jsonl, read_json, read_jsonl
from sga_core.metrics.catalog import REFERENCE_ATTACKS, auc_name, privleak_name

TOL = 1e-4


def ou_privleak(score, ref):  # privacy.py privleak: MUSE's 1 - AUC, relative to the ref's
    score = 1 - score
    ref = 1 - ref
    return (score - ref) / (ref + 1e-10) * 100


@pytest.fixture(scope="module")
def reference_weights(tmp_path_factory):
    """A retain reference with other weights than the evaluated tiny model."""
    from sga_core.model.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("reference") / "model", seed=1)


def _files(tmp_path, demo_dir, kind: str) -> tuple[str, str, dict]:
    if kind == "qa":
        forget = read_jsonl(demo_dir / "forget.jsonl")[:6]
        retain = read_jsonl(demo_dir / "retain.jsonl")
        holdout = [{"question": r["question"], "answer": r["answer"]} for r in retain[-6:]]
        retain = retain[:3]
    else:
        forget = read_jsonl(demo_dir / "text_forget.jsonl")[:4]
        retain = read_jsonl(demo_dir / "text_retain.jsonl")[:2]
        holdout = read_jsonl(demo_dir / "text_holdout.jsonl")[:4]
    paths = {}
    for name, rows in (("forget", forget), ("retain", retain), ("holdout", holdout)):
        paths[name] = str(atomic_write_jsonl(tmp_path / f"{name}.jsonl", rows))
    return paths["forget"], paths["retain"], {"holdout": paths["holdout"]}


@pytest.mark.parametrize("kind", ["qa", "text"])
def test_each_attack_has_its_privleak_against_the_reference(tmp_path, tiny_model_dir,
                                                            reference_weights, demo_dir, kind):
    forget, retain, sets = _files(tmp_path, demo_dir, kind)
    ref = shutil.copytree(reference_weights, tmp_path / "reference")
    st = EvalSettings(max_new_tokens=1, batch_size=8, max_retain_rows=2)
    s = evaluate_model(str(tiny_model_dir), tmp_path / "eval", forget, retain, sets,
                       reference=str(ref), task=kind, settings=st)
    # the reference's AUCs are its own evaluation's
    own = evaluate_model(str(ref), tmp_path / "ref-eval", forget, retain, sets, task=kind,
                         settings=st)
    aucs = s["reference"]["mia_aucs"]
    assert set(aucs) == set(REFERENCE_ATTACKS)
    assert s["reference"]["mia_auc"] == aucs["min_k"]
    worst = 0.0
    assert aucs["reference"] == 0.5  # the Reference attack of the reference against itself
    for attack in REFERENCE_ATTACKS:
        if attack != "reference":
            assert aucs[attack] == pytest.approx(own["metrics"][auc_name(attack)]["value"],
                                                 abs=1e-9)
        got = s["metrics"][privleak_name(attack)]["value"]
        want = ou_privleak(s["metrics"][auc_name(attack)]["value"], aucs[attack])
        worst = max(worst, abs(got - want))
        assert got == pytest.approx(want, abs=TOL), attack
    print(f"{kind}: max |PrivLeak - OU's privleak| = {worst:.2e}")
    # cached once (the reference's eval/reference_cache.json): the next evaluation reads it
    entries = read_json(ref / "eval" / "reference_cache.json")["entries"]
    cached = [e["value"] for e in entries.values() if e["kind"] == "mia_aucs"]
    assert [c["aucs"] for c in cached] == [aucs]
    assert [len(cached[0]["losses"][n]) for n in ("forget", "holdout")] == [4 + 2 * (
        kind == "qa"), 4 + 2 * (kind == "qa")]
    again = evaluate_model(str(tiny_model_dir), tmp_path / "again", forget, retain, sets,
                           reference=str(ref), task=kind, settings=st)
    source = again["reference"]["mia_source" if kind == "qa" else "source"]
    assert source == "reference cache"
    assert again["cache_keys"]["mia_aucs"] == s["cache_keys"]["mia_aucs"]
    for attack in REFERENCE_ATTACKS:
        name = privleak_name(attack)
        assert again["metrics"][name]["value"] == pytest.approx(s["metrics"][name]["value"])


def test_the_reference_itself_has_privleak_0_for_every_attack(tmp_path, reference_weights,
                                                                demo_dir):
    forget, retain, sets = _files(tmp_path, demo_dir, "qa")
    st = EvalSettings(max_new_tokens=1, batch_size=8, max_retain_rows=2)
    s = evaluate_model(str(reference_weights), tmp_path / "eval", forget, retain, sets,
                       reference=str(reference_weights), task="qa", settings=st)
    for attack in REFERENCE_ATTACKS:
        assert s["metrics"][privleak_name(attack)]["value"] == 0.0, attack


def test_without_a_holdout_each_privleak_says_why(tmp_path, tiny_model_dir, reference_weights,
                                                   demo_dir):
    forget, retain, _ = _files(tmp_path, demo_dir, "qa")
    s = evaluate_model(str(tiny_model_dir), tmp_path / "eval", forget, retain, {},
                       reference=str(reference_weights), task="qa",
                       settings=EvalSettings(max_new_tokens=1, batch_size=8))
    for attack in REFERENCE_ATTACKS:
        m = s["metrics"][privleak_name(attack)]
        assert m["value"] is None and "no holdout set" in m["reason"], attack
    assert s["reference"]["mia_reason"] == "no holdout set (eval.sets.holdout)"


def ou_reference_auc(target, reference, enc, forget_rows, holdout_rows, sequence):
    """mia/reference.py ReferenceAttack (score target_loss - ref_loss, evaluate_probability
    of each model) and mia/utils.py mia_auc, one row per batch."""
    from sga_core.model.encoding import collate
    from tests.unit.metrics.test_mia import ou_auc
    from tests.unit.metrics.test_mia_qa import ou_evaluate_probability

    def scores(rows):
        out = []
        for r in rows:
            batch = collate([sequence(r)], enc.pad_id)
            ref = ou_evaluate_probability(reference, batch)[0]["avg_loss"]
            tgt = ou_evaluate_probability(target, batch)[0]["avg_loss"]
            out.append(tgt - ref)
        return out

    return ou_auc(scores(forget_rows), scores(holdout_rows))


@pytest.mark.parametrize("kind", ["qa", "text"])
def test_the_reference_attack_equals_open_unlearnings(tmp_path, tiny_model_dir,
                                                      reference_weights, demo_dir, kind):
    from sga_core.evaluation.qa import answer_scoring
    from sga_core.evaluation.text import text_scoring
    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_model, load_tokenizer

    forget, retain, sets = _files(tmp_path, demo_dir, kind)
    ref = shutil.copytree(reference_weights, tmp_path / "reference")
    s = evaluate_model(str(tiny_model_dir), tmp_path / "eval", forget, retain, sets,
                       reference=str(ref), task=kind,
                       settings=EvalSettings(max_new_tokens=1, batch_size=8, max_retain_rows=2))
    enc = Encoder(load_tokenizer(str(tiny_model_dir)))
    target, reference = (load_model(str(m)).eval() for m in (tiny_model_dir, ref))
    sequence = (answer_scoring if kind == "qa" else text_scoring)(enc)[0]
    want = ou_reference_auc(target, reference, enc, read_jsonl(forget),
                            read_jsonl(sets["holdout"]), sequence)
    got = s["metrics"]["mia_reference_auc"]["value"]
    print(f"{kind}: |Reference AUC - OU's| = {abs(got - want):.2e}")
    assert got == pytest.approx(want, abs=TOL)
    assert 0 < want < 1 and want != 0.5  # the two models differ
    assert s["metrics"]["privleak_reference"]["value"] == pytest.approx(ou_privleak(got, 0.5),
                                                                        abs=TOL)


def test_the_command_line_turns_gradnorm_on(tmp_path, tiny_model_dir, reference_weights,
                                            demo_dir):
    """``eval --mia-gradnorm``: GradNorm's AUC and PrivLeak (the reference's GradNorm AUC
    computed and cached with its other values); without the flag each says it is off."""
    from sga_core.cli import main

    forget, retain, sets = _files(tmp_path, demo_dir, "qa")
    ref = shutil.copytree(reference_weights, tmp_path / "reference")
    base = ["eval", str(tiny_model_dir), "--forget", forget, "--retain", retain, "--task",
            "qa", "--set", f"holdout={sets['holdout']}", "--reference", str(ref),
            "--max-new-tokens", "1", "--max-retain-rows", "2"]
    assert main([*base, "--out", str(tmp_path / "on"), "--mia-gradnorm"]) == 0
    on = read_json(tmp_path / "on" / "summary.json")
    assert on["protocol"]["mia_gradnorm"] is True
    assert set(on["reference"]["mia_aucs"]) == {*REFERENCE_ATTACKS, "gradnorm"}
    for name in ("mia_gradnorm_auc", "privleak_gradnorm"):
        assert on["metrics"][name]["value"] is not None, name
    assert on["metrics"]["privleak_gradnorm"]["value"] == pytest.approx(ou_privleak(
        on["metrics"]["mia_gradnorm_auc"]["value"], on["reference"]["mia_aucs"]["gradnorm"]),
        abs=TOL)
    assert main([*base, "--out", str(tmp_path / "off")]) == 0
    off = read_json(tmp_path / "off" / "summary.json")
    for name in ("mia_gradnorm_auc", "privleak_gradnorm"):
        assert off["metrics"][name]["value"] is None
        assert "eval.mia_gradnorm" in off["metrics"][name]["reason"], name
    assert off["metrics"]["privleak_loss"]["value"] is not None
