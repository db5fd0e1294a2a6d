"""A run's settings, read from its config.yaml, and what sets runs apart: the settings that
differ between runs name them in the Results table ("sga r=-0.8 · 20 steps · lr 1e-05") and
split metric-versus-r groups so one group varies r alone."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

from sga_core.runs import validate
from sga_core.runs.folder import MODEL_DIR, RunFolder, manifest
from sga_core.text import plural

#: training settings that shape the unlearned model (logging, probes and saving do not)
MODEL_SETTINGS = ("lr", "batch_size", "grad_accum", "seed", "weight_decay", "warmup_steps",
                  "scheduler", "max_grad_norm", "max_length", "group_by_length",
                  "system_prompt", "dtype")
_SHOW = {"lr": "lr {:g}", "seed": "seed {}", "batch_size": "batch {}", "k": "K={}",
         "grad_accum": "grad accum {}", "model": "model {}", "normals": "normals {}"}


def run_settings(run_dir) -> dict:
    """The settings that make a run's results what they are, read from its config.yaml:
    the method's own (except its sweep setting, r for SGA), the length ("20 steps" or
    "3 epochs"), each of ``MODEL_SETTINGS``, the model (its run's name when it is a run's
    model) and the normal answers (their file's name). {} when the config cannot be read."""
    try:
        st = os.stat(RunFolder(run_dir).config_path)
    except OSError:
        return {}
    return dict(_run_settings(str(run_dir), st.st_mtime_ns))


@functools.lru_cache(maxsize=1024)
def _run_settings(run_dir: str, mtime_ns: int) -> tuple:
    from sga_core.methods import REGISTRY

    try:
        cfg = RunFolder(run_dir).config_dict()
    except validate.Damaged:
        return ()
    method = REGISTRY.get(cfg.get("method") or "")
    sweep = getattr(method, "sweep_param", None) or "r"
    out = {k: v for k, v in sorted((cfg.get("method_args") or {}).items()) if k != sweep}
    t = cfg.get("training") if isinstance(cfg.get("training"), dict) else {}
    steps = t.get("max_steps") or 0
    out["length"] = plural(steps, "step") if steps else f"{t.get('epochs', 3):g} epochs"
    out.update({k: t[k] for k in MODEL_SETTINGS if k in t})
    model = str(cfg.get("model") or "")
    out["model"] = Path(model).parent.name if Path(model).name == MODEL_DIR else model
    normals = (manifest(run_dir).get("normals") or {}).get("source")
    if normals:
        out["normals"] = Path(normals).name
    return tuple((k, v if isinstance(v, (str, int, float, bool, type(None))) else str(v))
                 for k, v in out.items())


def signature(settings: dict) -> str:
    """Settings as one comparable text (key order does not matter)."""
    return json.dumps(settings, sort_keys=True, default=str)


def differing_settings(settings: dict[str, dict], methods: dict[str, str] | None = None
                       ) -> dict[str, list[str]]:
    """key -> the names of the settings whose values differ between the entries of
    ``settings`` (a run missing a setting counts as a different value), in a fixed order;
    with ``methods`` (key -> method), a method's own settings count only between runs of the
    same method (an SGA run's K is no news next to a GA run)."""
    if len(settings) < 2:
        return dict.fromkeys(settings, [])
    names = list(dict.fromkeys(k for s in settings.values() for k in s))
    common = {"length", *MODEL_SETTINGS, "model", "normals"}
    out: dict[str, list[str]] = {}
    for key, s in settings.items():
        peers = [o for k, o in settings.items()
                 if methods is None or methods.get(k) == methods.get(key)]
        keys = []
        for name in names:
            group = settings.values() if name in common or methods is None else peers
            if name in s and len({signature({"v": o.get(name)}) for o in group}) > 1:
                keys.append(name)
        out[key] = keys
    return out


def show_setting(name: str, value) -> str:
    """A setting as a short label part: "20 steps", "lr 1e-05", "seed 1", "K=4"."""
    if name == "length":
        return str(value)
    if name in _SHOW and value is not None:
        try:
            return _SHOW[name].format(value)
        except (TypeError, ValueError):
            pass
    if isinstance(value, bool):
        return name.replace("_", " ") if value else f"no {name.replace('_', ' ')}"
    return f"{name.replace('_', ' ')} {value}"




def configuration(row: dict) -> dict:
    """A row's settings but its seed: seeds are replicates of one configuration, not a
    setting that sets runs apart."""
    return {k: v for k, v in (row.get("settings") or {}).items() if k != "seed"}
