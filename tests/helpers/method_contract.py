"""The contract every unlearning method meets (docs/decisions/008-typed-param-configs.md): its
settings round-trip through CLI flags and YAML, it builds units on a tiny model, its loss is finite,
gradients reach the weights, and one real training step completes.
tests/unit/methods/test_method_contract.py runs it for every registered method;
tests/repo/test_docs_recipes.py for the contributing guide's example method."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import yaml

from sga_core.assets import idk_templates
from sga_core.cli import build_parser, build_train_config
from sga_core.config import TrainConfig, dump_config
from sga_core.data import NormalTable, load_qa
from sga_core.methods import MethodData, get_method
from sga_core.methods.base import flatten
from sga_core.model.forward import forward_stats
from sga_core.normals.idk import idk_normals
from sga_core.params import field_specs, from_dict, to_dict


def varied_value(spec: dict):
    """A valid value of a setting that differs from its default (None: cannot vary)."""
    d, lo, hi = spec["default"], spec.get("min"), spec.get("max")
    if spec.get("choices"):
        others = [c for c in spec["choices"] if c != d]
        return others[0] if others else None
    if spec["kind"] == "bool":
        return not d
    if spec["kind"] in ("int", "float"):
        step = 1 if spec["kind"] == "int" else 0.5 * (abs(d) or 1.0)
        for v in (d + step, d - step):
            if (lo is None or v >= lo) and (hi is None or v <= hi) and v != d:
                return type(d)(v) if spec["kind"] == "int" else float(v)
        return None
    if spec["kind"] == "str":
        return (d or "") + "x"
    return None


def varied_args(name: str) -> dict:
    """Every setting of method ``name`` changed to another valid value, where it can be,
    while the whole stays a valid config."""
    cls = get_method(name)
    out = {}
    for spec in field_specs(cls.Config):
        v = varied_value(spec)
        if v is None:
            continue
        try:
            from_dict(cls.Config, {**out, spec["name"]: v})
        except ValueError:
            continue  # a combination the method refuses (e.g. r_min above r_max)
        out[spec["name"]] = v
    return out


def check_flags_and_yaml(name: str, forget: Path, normals: Path) -> None:
    """The method's settings given as flags reach config.yaml, and come back from it."""
    args = varied_args(name)
    argv = ["train", "--method", name, "--forget", str(forget), "--normals", str(normals),
            "--retain", str(forget), "--no-launch"]
    specs = {s["name"]: s for s in field_specs(get_method(name).Config)}
    train = build_parser(argv)._subparsers._group_actions[0].choices["train"]
    flags = {a.dest: a.option_strings[0] for a in train._actions if a.option_strings}
    for key, value in args.items():
        flag = flags[f"margs.{key}"]  # --<name>, or --<method>-<name> where that is taken
        if specs[key]["kind"] == "bool":
            argv.append(flag if value else "--no-" + flag[2:])
        else:
            argv += [flag, str(value)]
    parsed = build_parser(argv).parse_args(argv)
    base = build_train_config(parsed)
    cfg = TrainConfig.from_dict(base, base_dir=Path.cwd())
    expected = {**to_dict(get_method(name).Config()), **args}
    assert cfg.method_args == expected, (cfg.method_args, expected)
    again = TrainConfig.from_dict(yaml.safe_load(dump_config(cfg)), base_dir=Path.cwd())
    assert again.method_args == expected


def method_data(demo_dir: Path) -> MethodData:
    forget = load_qa(demo_dir / "forget.jsonl")[:4]
    return MethodData("qa", forget, retain=load_qa(demo_dir / "retain.jsonl")[:6],
                      normals=idk_normals(len(forget), 4), idk_templates=idk_templates())


def normals_for(name: str, table: NormalTable) -> NormalTable:
    """``table`` as method ``name`` may train on it: for a method that refuses "I don't
    know" refusals (AltPO), the same texts marked as written by hand."""
    if get_method(name).idk_normals:
        return table
    return NormalTable([dataclasses.replace(a, source="manual") for a in table.answers],
                       table.k)


def check_units_loss_and_gradients(name: str, model, enc, data: MethodData) -> None:
    """Units build; the per-unit losses are finite; their mean's gradient reaches the
    weights (the frozen reference is the starting model itself)."""
    import torch

    cls = get_method(name)
    method = cls(cls.Config())
    data = dataclasses.replace(data, normals=normals_for(name, data.normals))
    units = method.build_units(data, enc)
    assert units and all(u.seqs for u in units)
    seqs, ids = flatten(units)
    model.zero_grad(set_to_none=True)
    method.attach(model, model if "reference" in cls.needs else None)
    try:
        stats = forward_stats(model, seqs, ids, enc.pad_id, "cpu",
                              keep_logits=method.needs_logits)
        if "reference" in cls.needs:
            with torch.no_grad():
                stats.ref = forward_stats(model, seqs, ids, enc.pad_id, "cpu",
                                          keep_logits=method.needs_logits)
        losses = method.unit_losses(stats, len(units))
        assert losses.shape == (len(units),)
        assert all(math.isfinite(v) for v in losses.tolist())
        losses.mean().backward()
    finally:
        method.detach()
    grads = [p.grad.abs().sum().item() for p in model.parameters() if p.grad is not None]
    assert grads and sum(grads) > 0


def check_one_training_step(name: str, model_dir: Path, forget: Path, retain: Path,
                            normals: Path, run_dir: Path) -> None:
    """One real optimizer step through the trainer completes and is logged."""
    from sga_core.fileio import read_jsonl
    from sga_core.runs.status import read_run
    from sga_core.train.trainer import run_training

    if not get_method(name).idk_normals:
        normals = normals_for(name, NormalTable.load(normals)).save(run_dir.parent / "alt.jsonl")
    data = {"forget": str(forget), "retain": str(retain), "normals": str(normals)}
    cfg = TrainConfig.from_dict({
        "run_id": "contract", "model": str(model_dir), "method": name, "data": data,
        "training": {"max_steps": 1, "batch_size": 2, "lr": 1e-3, "eval_nll": False,
                     "save_model": False, "probe_count": 0},
        "eval": {"enabled": False}})
    run_dir.mkdir(parents=True)
    assert run_training(cfg, run_dir) == "completed", read_run(run_dir)
    (rec,) = read_jsonl(run_dir / "metrics.jsonl")
    assert rec["step"] == 1 and math.isfinite(rec["loss"])
