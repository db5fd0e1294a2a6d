"""Controlled comparisons (docs/spec.md#15-data-order, docs/decisions/004-seeds-and-data-order.md):
for a given seed, which forget rows share a batch and their order depend only on the forget rows, so
`ga` and `sga --r 0` are the same run step for step, and runs that differ only in r (or in their
normal answers) see the same batches."""

from __future__ import annotations

from pathlib import Path

import pytest

from sga_core.config import TrainConfig
from sga_core.data import NormalAnswer, NormalTable, load_qa
from sga_core.fileio import read_jsonl
from sga_core.methods import MethodData, get_method
from sga_core.train.order import dropout_note, set_order_lengths
from sga_core.train.trainer import make_batches, run_training


def normals_table(n: int, k: int, long_every: int) -> NormalTable:
    """Normal answers whose lengths vary from row to row (some far longer than any forget
    answer), so a unit's longest sequence is often a normal answer."""
    answers = []
    for i in range(n):
        for j in range(1, k):
            words = 3 + (i * 7 + j * 3) % long_every * 6
            answers.append(NormalAnswer(i, j, " ".join(["word"] * words), "manual"))
    return NormalTable(answers, k)


@pytest.fixture(scope="module")
def data_files(tmp_path_factory, demo_dir):
    d = tmp_path_factory.mktemp("order")
    n = len(load_qa(demo_dir / "forget.jsonl"))
    paths = {}
    for name, every in (("short", 2), ("long", 9)):
        paths[name] = d / f"normals-{name}.jsonl"
        normals_table(n, 4, every).save(paths[name])
    return paths


def config(model: Path, demo_dir: Path, normals: Path, method: str, args: dict,
           steps: int = 20, **training) -> TrainConfig:
    return TrainConfig.from_dict({
        "run_id": "order", "model": str(model), "method": method, "method_args": args,
        "data": {"forget": str(demo_dir / "forget.jsonl"), "retain": str(demo_dir /
                                                                          "retain.jsonl"),
                 "normals": str(normals)},
        "training": {"max_steps": steps, "batch_size": 3, "lr": 1e-3, "seed": 3,
                     "probe_count": 0, "eval_nll": False, **training},
        "eval": {"enabled": False}})


def train(cfg: TrainConfig, run_dir: Path) -> list[dict]:
    run_dir.mkdir(parents=True)
    assert run_training(cfg, run_dir) == "completed"
    return read_jsonl(run_dir / "metrics.jsonl")


def units_of(method: str, args: dict, demo_dir: Path, normals: NormalTable, enc):
    cls = get_method(method)
    data = MethodData("qa", load_qa(demo_dir / "forget.jsonl"),
                      load_qa(demo_dir / "retain.jsonl"), normals, ["I don't know."])
    units = cls(cls.Config(**args)).build_units(data, enc)
    set_order_lengths(units, cls, data, enc)
    return units


def batches_of(units, seed: int, epoch: int):
    return [[units[i].index for i in b] for b in make_batches(units, 3, seed, epoch)]


def test_batches_depend_only_on_the_forget_rows(tiny_model_dir, demo_dir, data_files):
    """GA, SGA (any r, any normals), GradDiff, KL, NPO and IDK units give the same batches of
    forget rows for every seed and epoch; the normal answers would reorder them if the
    grouping went by the whole unit's length."""
    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_tokenizer

    enc = Encoder(load_tokenizer(str(tiny_model_dir)))
    long = NormalTable.load(data_files["long"])
    short = NormalTable.load(data_files["short"])
    variants = {"ga": units_of("ga", {}, demo_dir, long, enc),
                "sga-long": units_of("sga", {"r": 0.0, "k": 4}, demo_dir, long, enc),
                "sga-short": units_of("sga", {"r": -0.8, "k": 4}, demo_dir, short, enc)}
    for m in ("graddiff", "kl", "npo", "idk"):
        variants[m] = units_of(m, {}, demo_dir, long, enc)
    # the normals really are longer than the forget answers for some rows: grouping by the
    # whole unit would order differently
    sga = variants["sga-long"]
    assert any(u.max_len > u.order_len for u in sga)
    whole = [[sga[i].index for i in b] for b in make_batches(
        [type(u)(u.index, u.seqs) for u in sga], 3, 3, 0)]
    assert whole != batches_of(sga, 3, 0)
    for seed in range(4):
        for epoch in range(3):
            ref = batches_of(variants["ga"], seed, epoch)
            assert sorted(i for b in ref for i in b) == list(range(10))
            for name, units in variants.items():
                assert batches_of(units, seed, epoch) == ref, (name, seed, epoch)


@pytest.mark.slow
def test_ga_and_sga_r0_are_the_same_run(tiny_model_dir, demo_dir, data_files, tmp_path):
    """Over 20 steps: the same per-step losses (1e-5), the same batches, the same final
    weights, though SGA's units carry three (long) normal answers each."""
    from tests.e2e.test_training import load_weights, max_abs_diff

    ga = train(config(tiny_model_dir, demo_dir, data_files["long"], "ga", {}),
               tmp_path / "ga")
    sga = train(config(tiny_model_dir, demo_dir, data_files["long"], "sga",
                       {"r": 0.0, "k": 4}), tmp_path / "sga")
    assert len(ga) == len(sga) == 20
    for a, b in zip(ga, sga):
        assert a["batch"] == b["batch"], a["step"]
        assert abs(a["loss"] - b["loss"]) < 1e-5, (a["step"], a["loss"], b["loss"])
        assert abs(a["forget_nll"] - b["forget_nll"]) < 1e-5
    assert ga[-1]["loss"] < ga[0]["loss"] - 0.1  # it trained (ascent: the loss falls)
    wa, wb = load_weights(tmp_path / "ga" / "model"), load_weights(tmp_path / "sga" / "model")
    assert max_abs_diff(wa, wb) < 1e-5


@pytest.mark.slow
def test_runs_differing_in_r_or_normals_start_from_the_same_batch(tiny_model_dir, demo_dir,
                                                                  data_files, tmp_path):
    """Two SGA runs that differ only in r, or in the normal answers (short vs long), see the
    same batches, so their forget NLL at step 1 (before any update) is the same."""
    runs = {}
    for name, r, normals in (("a", -0.8, "long"), ("b", 0.4, "long"), ("c", -0.8, "short")):
        runs[name] = train(config(tiny_model_dir, demo_dir, data_files[normals], "sga",
                                  {"r": r, "k": 4}, steps=4), tmp_path / name)
    first = runs["a"][0]
    for name in ("b", "c"):
        assert runs[name][0]["forget_nll"] == pytest.approx(first["forget_nll"], abs=1e-6)
        assert [m["batch"] for m in runs[name]] == [m["batch"] for m in runs["a"]]
    assert runs["a"][1]["loss"] != runs["b"][1]["loss"]  # r did change the training


def test_dropout_is_named_in_the_log():
    class Cfg:
        attention_dropout = 0.1
        hidden_dropout_prob = 0.0
        use_dropout = True

    assert "attention_dropout=0.1" in dropout_note(Cfg())
    assert dropout_note(type("C", (), {"attention_dropout": 0.0})()) is None
