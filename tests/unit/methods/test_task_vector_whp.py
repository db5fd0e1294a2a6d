"""Task Vector and Who's Harry Potter end to end on the tiny model: the reinforced
model is built once and reused, Task Vector's weights are the task arithmetic, WHP's model is a
model spec that evaluation, the token tables, the Results table and the probe load like any
other run's model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sga_core.config import TrainConfig
from sga_core.data import load_qa, write_dataset

TRAINING = {"batch_size": 3, "max_steps": 2, "lr": 5e-3, "probe_rows": [0], "probe_every": 1,
            "eval_nll": True, "group_by_length": False}


@pytest.fixture(scope="module")
def data(tmp_path_factory, demo_dir) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("tvwhp-data")
    sizes = {"forget": 3, "retain": 4, "real_authors": 2, "world_facts": 2}
    return {n: write_dataset(d / f"{n}.jsonl", load_qa(demo_dir / f"{n}.jsonl")[:k])
            for n, k in sizes.items()}


def cfg(model, data, method, run_id, training=None, **args) -> TrainConfig:
    return TrainConfig.from_dict({
        "run_id": run_id, "model": str(model), "method": method, "method_args": args,
        "data": {"forget": str(data["forget"]), "retain": str(data["retain"])},
        "training": {**TRAINING, **(training or {})},
        "eval": {"sets": {"real_authors": str(data["real_authors"]),
                          "world_facts": str(data["world_facts"])}, "max_new_tokens": 4}})


def train(c: TrainConfig, root: Path) -> Path:
    from sga_core.config import load_config
    from sga_core.runs.create import create_run
    from sga_core.runs.status import read_run
    from sga_core.train.trainer import run_training

    run_dir = create_run(c, root)
    state = run_training(load_config(run_dir / "config.yaml"), run_dir)
    assert state == "completed", read_run(run_dir)
    return run_dir


def params(folder) -> dict:
    from sga_core.model.loading import load_model

    return {n: p.detach() for n, p in load_model(str(folder)).named_parameters()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_model_dir, data):
    root = tmp_path_factory.mktemp("runs")
    tv = train(cfg(tiny_model_dir, data, "task-vector", "tv", alpha=0.5), root)
    whp = train(cfg(tiny_model_dir, data, "whp", "whp", alpha=0.8), root)
    return root, tv, whp


def test_task_vector_is_the_task_arithmetic(runs, tiny_model_dir):
    import torch

    from sga_core.runs.status import read_run

    _, tv, _ = runs
    original, reinforced, unlearned = (params(tiny_model_dir), params(tv / "reinforced"),
                                       params(tv / "model"))
    assert any(not torch.equal(original[n], reinforced[n]) for n in original)  # trained
    for n in original:
        want = original[n] - 0.5 * (reinforced[n] - original[n])
        assert torch.allclose(unlearned[n], want, atol=1e-6), n
    fp = json.loads((tv / "reinforced" / "reinforce.json").read_text())
    assert fp["model"] == str(tiny_model_dir) and fp["training"]["lr"] == 5e-3
    st = read_run(tv)
    assert st["step"] == 2 and st["nll_after"]["forget"] > st["nll_before"]["forget"]


def test_whp_reuses_the_reinforced_model_and_saves_a_model_spec(runs, tiny_model_dir):
    import torch

    from sga_core.model.loading import load_model
    from sga_core.model.wrapper import combine
    from sga_core.runs.status import read_run

    _, tv, whp = runs
    st = read_run(whp)
    assert st["state"] == "completed" and st["step"] == 0 and st["total_steps"] == 0
    assert st["reinforced_from"] == str(tv / "reinforced")
    for f in (tv / "reinforced").iterdir():  # hard links, not a second copy
        assert os.path.samefile(f, whp / "reinforced" / f.name)
    spec = json.loads((whp / "model" / "wrapper.json").read_text())
    assert spec == {"kind": "whp", "version": 1, "base": str(tiny_model_dir),
                    "reinforced": "../reinforced", "alpha": 0.8, "combine": "logits"}
    assert (whp / "model" / "config.json").exists()  # it looks like a model to every tool
    lm = load_model(str(whp / "model"))
    base, reinforced = load_model(str(tiny_model_dir)), load_model(str(tv / "reinforced"))
    ids = torch.tensor([[1, 7, 30, 44, 5]])
    with torch.no_grad():
        want = combine(base(input_ids=ids).logits, reinforced(input_ids=ids).logits, 0.8)
        assert torch.allclose(lm(input_ids=ids).logits, want, atol=1e-6)
    # the final answer NLL was measured on the WHP model, not on the original
    assert st["nll_after"] != st["nll_before"]


def test_both_are_evaluated_and_shown_like_any_run(runs, ui_env, data):
    from sga_core.evaluation import evaluate_run
    from sga_core.projects import create_project
    from sga_core.projects.probe_job import answer_with_probs
    from sga_core.report.run_files import token_table
    from sga_core.report.table import results_table

    root, tv, whp = runs
    for run_dir in (tv, whp):
        summary = evaluate_run(run_dir)
        assert summary["metrics"]["forget_rouge"]["value"] is not None
        table = token_table(run_dir)
        assert sorted(table) == [0, 1, 2] and all(t["probs"] for t in table.values())
    project = create_project("p", data["forget"], data["retain"])
    rows = {r["run_id"]: r for r in results_table(project, root)}
    assert rows["tv"]["method"] == "task-vector" and rows["whp"]["method"] == "whp"
    assert rows["whp"]["forget ROUGE-L"] is not None
    # the probe job's model side answers with the wrapper too
    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_model, load_tokenizer

    enc = Encoder(load_tokenizer(str(whp / "model")))
    out = answer_with_probs(load_model(str(whp / "model")), enc, "Who is Lucien?", "qa", 4)
    assert len(out["probs"]) == len(out["tokens"]) >= 1


def test_explicit_reinforced_and_a_changed_setting(runs, tiny_model_dir, data):
    from sga_core.runs.status import read_run
    from sga_core.train.trainer import run_training

    root, tv, _ = runs
    # other training settings: no automatic reuse, but the run id names one
    named = train(cfg(tiny_model_dir, data, "task-vector", "tv-named", {"lr": 1e-3},
                      alpha=2.0, reinforced="tv"), root)
    assert read_run(named)["total_steps"] == 0
    assert not (named / "reinforced").exists()  # Task Vector reads it, keeps no copy
    # ... and without it, the run trains its own
    own = train(cfg(tiny_model_dir, data, "whp", "whp-own", {"lr": 1e-3}), root)
    assert read_run(own)["step"] == 2 and (own / "reinforced" / "reinforce.json").exists()
    from sga_core.config import load_config
    from sga_core.runs.create import create_run

    bad = create_run(cfg(tiny_model_dir, data, "whp", "whp-bad", reinforced="nowhere"), root)
    with pytest.raises(ValueError, match="'nowhere' is neither a run"):
        run_training(load_config(bad / "config.yaml"), bad)
    assert read_run(bad)["state"] == "failed"


def test_a_whp_model_is_not_trained_further(runs, data):
    from sga_core.runs.status import read_run
    from sga_core.train.trainer import run_training

    root, _, whp = runs
    c = cfg(whp / "model", data, "ga", "")
    run_dir = root / "ga-on-whp"
    run_dir.mkdir()
    with pytest.raises(ValueError, match="not trained further"):
        run_training(c, run_dir)
    assert "not trained further" in read_run(run_dir)["error"]


def test_task_vector_refuses_a_reinforced_model_of_another_shape(runs, tiny_model_dir, data,
                                                                  tmp_path):
    from sga_core.config import load_config
    from sga_core.model.loading import load_model
    from sga_core.runs.create import create_run
    from sga_core.train.trainer import run_training

    root = runs[0]
    other = tmp_path / "other"
    model = load_model(str(tiny_model_dir))
    model.model.layers = model.model.layers[:1]  # one layer fewer: layer 1's weights missing
    model.config.num_hidden_layers = 1
    model.save_pretrained(other)
    bad = create_run(cfg(tiny_model_dir, data, "task-vector", "tv-shape",
                         reinforced=str(other)), root)
    with pytest.raises(ValueError, match="not in both the original and the reinforced"):
        run_training(load_config(bad / "config.yaml"), bad)
