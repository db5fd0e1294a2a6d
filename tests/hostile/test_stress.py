"""Hostile stress-test settings and leftovers: every bad setting
is refused with one line naming it before a model loads, never a traceback; a stress test of
a run Results would not list is not queued; relearning that diverges, and NaN scores, say
"not a number" instead of an empty "no value"; a killed write leaves no part of a result."""

from __future__ import annotations

import json
import shutil

import pytest

from sga_core.params import ConfigError, from_dict
from sga_core.stress import StressSettings
from tests.helpers.cli import sga_cli
from tests.helpers.stress import tiny_run

BAD_SETTINGS = [
    ({"relearn_lr": "inf"}, "relearn_lr"), ({"relearn_lr": "1e308"}, "relearn_lr"),
    ({"relearn_lr": "nan"}, "relearn_lr"), ({"relearn_lr": -1}, "relearn_lr"),
    ({"relearn_steps": [0]}, "relearn_steps"), ({"relearn_steps": [10**9]}, "relearn_steps"),
    ({"relearn_steps": []}, "relearn_steps"),
    ({"relearn_steps": list(range(1, 50))}, "relearn_steps"),
    ({"seeds": list(range(1000))}, "seeds"), ({"seeds": [2**40]}, "seeds"),
    ({"seeds": [-1]}, "seeds"), ({"seeds": []}, "seeds"),
    ({"relearn_batch_size": 10**9}, "relearn_batch_size"),
    ({"fewshot_k": 10**6}, "fewshot_k"), ({"quant_group_size": 2**40}, "quant_group_size"),
]


@pytest.mark.parametrize("given,name", BAD_SETTINGS)
def test_bad_stress_settings_are_refused_naming_the_setting(given, name):
    with pytest.raises(ConfigError, match=name):
        from_dict(StressSettings, given, "--")
    with pytest.raises(ConfigError, match=name):  # built directly (the pages, the API)
        StressSettings(**{k: (float(v) if k == "relearn_lr" else v)
                          for k, v in given.items()}).check()


def test_stress_flags_give_one_line_before_any_model_loads(tmp_path, tiny_model_dir, demo_dir):
    """--relearn-lr 1e308 / inf, --relearn-steps 0 and --device cuda:99 each end with one
    line naming the setting (no traceback), and nothing is written: a missing model shows
    the settings are checked before anything loads."""
    out = tmp_path / "out"
    common = ["--forget", str(demo_dir / "forget.jsonl"), "--out", str(out), "--attacks",
              "relearn,quant8", "--no-rouge"]
    for model, args, needle in (
            (tmp_path / "no-model", ["--relearn-lr", "1e308"], "relearn_lr"),
            (tmp_path / "no-model", ["--relearn-lr", "inf"], "relearn_lr"),
            (tmp_path / "no-model", ["--relearn-steps", "0"], "relearn_steps"),
            (tmp_path / "no-model", ["--seeds", ",".join(map(str, range(100)))], "seeds"),
            (tmp_path / "no-model", ["--batch-size", "0"], "--batch-size"),
            (tmp_path / "no-model", ["--batch-size", str(10**12)], "--batch-size"),
            (tmp_path / "no-model", ["--max-new-tokens", "-1"], "--max-new-tokens"),
            (tmp_path / "no-model", ["--max-new-tokens", str(10**9)], "--max-new-tokens"),
            (tiny_model_dir, ["--device", "cuda:99"], "cuda:99")):
        p = sga_cli("stress", str(model), *common, *args, timeout=300)
        assert p.returncode == 2, (args, p.stdout, p.stderr[-2000:])
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        assert "Traceback" not in p.stderr and len(lines) == 1, (args, p.stderr[-2000:])
        assert needle in lines[0], (args, lines)
        assert not out.exists(), args


def test_queue_refuses_a_run_that_is_not_evaluated(runs_dir, tiny_model_dir, demo_dir):
    """Results offers only evaluated runs for a stress test (and shows only theirs), so
    ``stress --queue`` says the same instead of queueing a test nobody would see."""
    run_dir = tiny_run(runs_dir, tiny_model_dir, demo_dir, "not-evaluated", completed=True)
    p = sga_cli("stress", run_dir.name, "--runs-dir", str(runs_dir), "--queue", "--attacks",
                "quant8", timeout=120)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "not evaluated" in p.stderr and "eval not-evaluated" in p.stderr, p.stderr
    assert not (run_dir / "STRESS_REQUESTED").exists()


def test_nan_weights_say_not_a_number_and_divergence_names_its_step(tmp_path, tiny_model_dir,
                                                                    demo_dir):
    """A model whose weights are NaN: relearning stops at step 1 with "relearning diverged
    at step 1"; quantization's recovery is undefined because the scores are "not a number
    (NaN)", which the file and the CLI say in words instead of a bare null / "no value"."""
    import torch
    from transformers import AutoModelForCausalLM

    from sga_core.cli.stress import format_results
    from sga_core.evaluation.settings import EvalSettings
    from sga_core.stress.run import stress_model

    nan_dir = tmp_path / "nan-model"
    shutil.copytree(tiny_model_dir, nan_dir)
    model = AutoModelForCausalLM.from_pretrained(nan_dir)
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(float("nan"))
    model.save_pretrained(nan_dir)
    out = tmp_path / "out"
    res = stress_model(str(nan_dir), out, str(demo_dir / "forget.jsonl"),
                       original=str(tiny_model_dir), attacks=["quant8", "relearn"],
                       settings=StressSettings(seeds=[0], relearn_steps=[1, 2], rouge=False),
                       eval_settings=EvalSettings(batch_size=4))
    assert "not a number (NaN)" in res["quant8"]["recovery_reason"], res["quant8"]
    for key in ("relearn-1", "relearn-2"):
        assert "relearning diverged at step 1" in res[key]["recovery_reason"], res[key]
        assert "lower --relearn-lr" in res[key]["recovery_reason"]
    on_disk = json.loads((out / "quant8.json").read_text())
    assert "not a number" in on_disk["recovery_reason"]
    assert "not a number (NaN)" in format_results(res)


def test_a_killed_write_leaves_no_part_of_a_result(tmp_path, tiny_model_dir, demo_dir):
    """What a stress process killed mid-write leaves (a result's temporary file, a kept
    copy's temporary folder) is removed by the next stress test of the folder; the result
    files there are all whole."""
    from sga_core.evaluation.settings import EvalSettings
    from sga_core.stress.run import stress_model

    out = tmp_path / "out"
    (out / "kept" / ".relearn-seed0.tmp").mkdir(parents=True)
    (out / ".quant8.json.k1ll3d.tmp").write_text('{"attack": "quant8", "summ')
    stress_model(str(tiny_model_dir), out, str(demo_dir / "forget.jsonl"),
                 original=str(tiny_model_dir), attacks=["quant8"],
                 settings=StressSettings(rouge=False), eval_settings=EvalSettings())
    left = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    assert left == ["kept", "quant8.json"], left
    json.loads((out / "quant8.json").read_text())
