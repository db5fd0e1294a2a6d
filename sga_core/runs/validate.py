"""Reading a run folder's files back *checked*: every reader of a run-folder file goes through
here and gets either data of the shape the workbench wrote, or :class:`Damaged` naming the
file and what is wrong with it ("eval/summary.json: metrics must be an object of metric
entries, got 5").

The readers of one file take its path inside the run folder (``rel``) from
:class:`sga_core.runs.folder.RunFolder`, which owns the names: call them through it
(``RunFolder(path).summary()``).

A damaged file damages its run only: listings keep the run, marked with the reason
(:func:`sga_core.runs.damage.run_damage`), and everything else of the project keeps working.

JSON Lines logs (metrics, probes, evaluation during training) are appended while a run
trains, so the last line of a *running* run may be a record still being written: only that
unterminated tail line is ignored, and only while the run runs. Any other line that is not
a record, or a finished run whose log stops before the step its status.json records, is
damage, reported with its line number.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sga_core.fileio import NON_FINITE, is_non_finite_text

STATES = ("queued", "running", "completed", "failed", "cancelled", "diverged")
FINAL_STATES = ("completed", "failed", "cancelled", "diverged")
MAX_INT = 2**63 - 1
MAX_PID = 2**22  # Linux's largest pid_max
#: a SLURM job id, read here and checked again before every tool call
#: (sga_core.runs.slurm.client.job_id): ASCII digits, or digits_digits
SLURM_JOB_ID = re.compile(r"[0-9]{1,20}(_[0-9]{1,20})?")


class Damaged(ValueError):
    """A run-folder file that cannot be used: ``file`` (relative to the run folder) and
    ``reason``; ``str()`` reads "eval/summary.json: metrics must be ..."."""

    def __init__(self, file: str | os.PathLike, reason: str):
        self.file, self.reason = str(file), reason
        super().__init__(f"{self.file}: {reason}")


# --- value checks: each returns None when the value is fine, else what is wrong --------------

def damaged_status(exc: Exception) -> dict:
    """The status a run (or evaluation) with a damaged status file is shown with: state
    "damaged", the file and what is wrong in ``damaged`` and ``error``; no process ids, so
    nothing is ever signalled on the strength of a damaged file."""
    return {"state": "damaged", "damaged": str(exc), "error": str(exc)}


def _show(v: Any) -> str:
    text = json.dumps(v, default=str) if not isinstance(v, str) else repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and abs(v) <= MAX_INT


def is_num(v: Any) -> bool:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return abs(v) <= MAX_INT if isinstance(v, int) else math.isfinite(v)


def _too_big(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_INT


def opt(check: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    """``check``, with None (JSON null) allowed."""
    return lambda v: None if v is None else check(v)


def integer(lo: int = -MAX_INT, hi: int = MAX_INT) -> Callable[[Any], str | None]:
    def check(v):
        if not is_int(v) or not lo <= v <= hi:
            return f"must be a whole number from {lo} to {hi}, got {_show(v)}"
        return None
    return check


def number(v: Any) -> str | None:
    if _too_big(v):
        return f"is too large (over 2^63), got {_show(v)}"
    return None if is_num(v) else f"must be a number, got {_show(v)}"


def text(v: Any) -> str | None:
    return None if isinstance(v, str) else f"must be text, got {_show(v)}"


def mapping(v: Any) -> str | None:
    return None if isinstance(v, dict) else f"must be an object, got {_show(v)}"


def flag(v: Any) -> str | None:
    return None if isinstance(v, bool) else f"must be true or false, got {_show(v)}"


def one_of(choices: tuple[str, ...]) -> Callable[[Any], str | None]:
    def check(v):
        return None if v in choices else f"must be one of {', '.join(choices)}, got {_show(v)}"
    return check


def list_of(check: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    def each(v):
        if not isinstance(v, list):
            return f"must be a list, got {_show(v)}"
        for i, item in enumerate(v):
            err = check(item)
            if err:
                return f"item {i} {err}"
        return None
    return each


def map_of(check: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    def each(v):
        if not isinstance(v, dict):
            return f"must be an object, got {_show(v)}"
        for k, item in v.items():
            err = check(item)
            if err:
                return f"entry {k!r} {err}"
        return None
    return each


def fields(obj: Any, spec: dict[str, Callable], required: tuple[str, ...] = (),
           where: str = "") -> str | None:
    """What is wrong with the mapping ``obj`` against ``spec`` (key -> check; keys not in
    ``spec`` are left alone), or None."""
    if not isinstance(obj, dict):
        return f"{where.rstrip('.') + ' ' if where else ''}must be an object, got {_show(obj)}"
    for key in required:
        if key not in obj:
            return f"{where}{key} is missing"
    for key, check in spec.items():
        if key in obj:
            err = check(obj[key])
            if err:
                return f"{where}{key} {err}"
    return None


# --- the shapes of the run-folder files ------------------------------------------------------

def slurm_job_id(v: Any) -> str | None:
    """A SLURM job id as the workbench writes it: digits, or digits_digits for a task of a
    job array. Anything else (``--me``, ``-u root``) is damage, so it never reaches scancel
    or squeue as an option."""
    if isinstance(v, str) and SLURM_JOB_ID.fullmatch(v):
        return None
    return f"must be a SLURM job id (digits, or digits_digits), got {_show(v)}"


PID = opt(integer(1, MAX_PID))
COUNT = opt(integer(0))
STAMP = opt(text)
NUM = opt(number)
JOB_ID = opt(slurm_job_id)

RUN_STATUS_FIELDS = {
    "state": one_of(STATES), "run_id": STAMP, "created_at": STAMP, "mode": STAMP,
    "queued_ns": COUNT, "updated_at": STAMP, "launcher_pid": PID, "pid": PID,
    "runner_pid": PID, "started_at": STAMP, "ended_at": STAMP, "host": STAMP,
    "num_processes": COUNT, "error": STAMP, "total_steps": COUNT, "steps_per_epoch": COUNT,
    "step": COUNT, "n_units": COUNT, "best_step": COUNT, "best_metric": STAMP,
    "best_value": NUM, "best_model": STAMP, "epoch": NUM, "exit_code": opt(integer()),
    "elapsed_s": NUM, "nll_before": opt(map_of(NUM)), "nll_after": opt(map_of(NUM)),
    # a stage before or after the steps (the NLL before/after training): rows done of all
    "stage": STAMP, "stage_done": COUNT, "stage_total": COUNT, "stage_started_at": STAMP,
    # long runs (docs/long-runs.md): the newest checkpoint, a stop signal's checkpoint, resumes
    "checkpoint_step": COUNT, "stopped_at_checkpoint": COUNT, "resumes": COUNT,
    "resumed_from": COUNT, "resumed_at": STAMP, "resume": opt(flag),
    # each pid's start time (clock ticks since boot): with the pid, which process it was
    "pid_start": COUNT, "launcher_pid_start": COUNT, "runner_pid_start": COUNT,
    # a run sent to SLURM (sga_core.runs.slurm): its job, node, wait and SLURM's verdict
    "backend": STAMP, "slurm_job_id": JOB_ID, "slurm_submitted_at": STAMP,
    "slurm_node": STAMP, "slurm_wait_s": NUM, "slurm_reason": STAMP, "slurm_state": STAMP,
    "slurm_state_final": STAMP, "slurm_started_at": STAMP, "cancel_requested_at": STAMP,
    # answers in a row that did not list the job, since when (epoch s), the last one counted
    "slurm_unseen": COUNT, "slurm_unseen_since": NUM, "slurm_unseen_at": NUM,
    # the local queue holds a run that would not fit in the memory left (runs/memory.py)
    "waiting_for": STAMP,
}
EVAL_STATUS_FIELDS = {
    "state": one_of(STATES), "pid": PID, "started_at": STAMP, "ended_at": STAMP,
    "error": STAMP, "stage": STAMP, "done": COUNT, "total": COUNT, "updated_at": STAMP,
    "stage_started_at": STAMP, "elapsed_s": NUM, "host": STAMP, "pid_start": COUNT,
    "cancel_requested_at": STAMP, "slurm_job_id": JOB_ID, "slurm_submitted_at": STAMP,
    "slurm_node": STAMP, "slurm_wait_s": NUM, "slurm_reason": STAMP, "slurm_state": STAMP,
    "slurm_state_final": STAMP, "slurm_started_at": STAMP,
    "slurm_unseen": COUNT, "slurm_unseen_since": NUM, "slurm_unseen_at": NUM,
    "exit_code": opt(integer()),
}
#: a stress test queued as a job (stress_status.json): an evaluation's fields, plus the
#: attacks asked for, the progress of the current stage and the result files written
STRESS_STATUS_FIELDS = {
    **EVAL_STATUS_FIELDS, "attacks": opt(list_of(text)), "stage_done": COUNT,
    "stage_total": COUNT, "results": opt(list_of(text)), "requested_at": STAMP,
}
CONFIG_FIELDS = {
    "run_id": STAMP, "method": STAMP, "model": STAMP, "sweep": STAMP, "group": STAMP,
    "method_args": opt(mapping), "training": opt(mapping), "data": opt(mapping),
    "eval": opt(mapping), "launch": opt(mapping),
}
CONFIG_ARGS = {"r": NUM, "k": COUNT}
CONFIG_TRAINING = {"seed": opt(integer()), "max_steps": COUNT, "epochs": NUM}
METRIC_ENTRY = opt(lambda v: fields(v, {"value": NUM, "reason": STAMP,
                                         "per_sample": opt(list_of(lambda x: None))}))
FQ_ENTRY = opt(lambda v: fields(v, {"per_sample": opt(list_of(NUM))}))
SUMMARY_FIELDS = {
    "task": one_of(("qa", "text")), "metrics": map_of(METRIC_ENTRY), "elapsed_s": NUM,
    "rows": opt(map_of(COUNT)), "rows_of": opt(map_of(COUNT)),
    "forget_truth_ratios": opt(list_of(NUM)),
    "protocol": opt(lambda v: fields(v, {"name": STAMP})),
    "reference": opt(lambda v: fields(v, {"path": STAMP, "n_truth_ratios": COUNT})),
    "data": opt(lambda v: fields(v, {"sets": opt(mapping)})),
    "model_utility_components": opt(lambda v: fields(v, {"components": opt(mapping)})),
}
MANIFEST_ENTRY = lambda v: fields(v, {"file": STAMP, "source": STAMP, "rows": COUNT,  # noqa: E731
                                      "rows_hash": STAMP, "field_map": opt(mapping)})


def number_or_non_finite(v: Any) -> str | None:
    """A number, or one of the strings a log writes for NaN and the infinities
    (:data:`sga_core.fileio.NON_FINITE`)."""
    if is_non_finite_text(v):
        return None
    return None if number(v) is None else \
        f"must be a number (or \"NaN\", \"Infinity\", \"-Infinity\"), got {_show(v)}"


METRICS_ROW = {"step": integer(0), **{k: opt(number_or_non_finite) for k in (
    "epoch", "loss", "forget_nll", "normal_nll", "retain_nll", "r", "r_star", "lr",
    "grad_norm", "tokens_per_s", "elapsed_s")}}
PROBES_ROW = {"step": integer(0), "forget_index": integer(0), "tokens": list_of(text),
              "probs": list_of(number)}
TOKENS_ROW = {"set": text, "index": integer(0), "tokens": list_of(text),
              "probs": list_of(number)}
LAYERS_ROW = {"set": text, "index": integer(0), "tokens": list_of(text),
              "token_ids": opt(list_of(integer(0))), "probs": list_of(list_of(number)),
              "ranks": list_of(list_of(integer(1))), "top1": opt(list_of(list_of(text))),
              "lens": STAMP}
PER_SAMPLE_ROW = {"set": text, "index": integer(0), "question": STAMP, "prompt": STAMP,
                  "answer": STAMP, "generated": STAMP, **{k: NUM for k in (
                      "probability", "truth_ratio", "rouge_l_recall", "rouge_l_f1")}}
EVAL_STEPS_ROW = {"step": integer(0), "best": opt(lambda v: None if isinstance(v, bool)
                                                  else f"must be true or false, got {v!r}"),
                  "eval_s": NUM, "reasons": opt(mapping)}


# --- reading --------------------------------------------------------------------------------

def _bytes(run_dir: Path, rel: str) -> bytes | None:
    """The file's bytes, None when it does not exist."""
    try:
        return (Path(run_dir) / rel).read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise Damaged(rel, "is a folder, not a file") from None
    except OSError as exc:
        raise Damaged(rel, f"cannot be read ({exc.strerror or exc})") from None


def _decode(rel: str, data: bytes, line: int | None = None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = f"line {line}: " if line else ""
        raise Damaged(rel, f"{where}not UTF-8 text (byte {exc.start})") from None


def read_json_file(run_dir, rel: str, spec: dict | None = None,
                   required: tuple[str, ...] = ()) -> Any:
    """A JSON file of the run folder, checked against ``spec``; None when absent."""
    data = _bytes(Path(run_dir), rel)
    if data is None:
        return None
    body = _decode(rel, data)
    if not body.strip():
        raise Damaged(rel, "is empty")
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as exc:
        raise Damaged(rel, f"is not valid JSON (line {exc.lineno}: {exc.msg}; cut off?)") \
            from None
    except RecursionError:
        raise Damaged(rel, "is nested too deeply") from None
    if spec is not None:
        err = fields(obj, spec, required) if isinstance(obj, dict) else \
            f"must hold a JSON object, got {_show(obj)}"
        if err:
            raise Damaged(rel, err)
    return obj


def read_jsonl_file(run_dir, rel: str, row: dict, live: bool = False) -> list[dict]:
    """A JSON Lines file of the run folder, each record checked against ``row``; [] when
    absent. ``live``: the writer may still be appending, so an unterminated last line that
    is not yet a whole record is left out (never any other line)."""
    data = _bytes(Path(run_dir), rel)
    if data is None:
        return []
    lines = data.split(b"\n")
    out = []
    for n, raw in enumerate(lines, 1):
        tail = n == len(lines)  # no newline after it: possibly cut off
        try:
            line = _decode(rel, raw, n)
        except Damaged:
            if live and tail:
                break
            raise
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            if live and tail:
                break
            why = "cut off mid-record" if tail else getattr(exc, "msg", "nested too deeply")
            raise Damaged(rel, f"line {n} is not a JSON record ({why})") from None
        err = fields(rec, row, where="")
        if err:
            raise Damaged(rel, f"line {n}: {err}")
        out.append(rec)
    return out


def config(run_dir, rel: str) -> dict:
    """config.yaml as a mapping ({} when absent), the fields readers use checked."""
    import yaml

    from sga_core.fileio import YAMLTooLarge, load_yaml

    data = _bytes(Path(run_dir), rel)
    if data is None:
        return {}
    body = _decode(rel, data)
    try:  # bounded: a few hundred bytes of nested aliases never expand into a billion values
        cfg = load_yaml(body, rel, fast=True)
    except YAMLTooLarge as exc:
        raise Damaged(rel, str(exc).removeprefix(f"{rel}: ")) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise Damaged(rel, f"is not valid YAML{where}: "
                           f"{getattr(exc, 'problem', None) or exc}") from None
    except RecursionError:
        raise Damaged(rel, "is nested too deeply") from None
    if cfg is None:
        raise Damaged(rel, "is empty")
    if not isinstance(cfg, dict):
        raise Damaged(rel, f"must hold a mapping of settings, got {_show(cfg)}")
    err = (fields(cfg, CONFIG_FIELDS)
           or fields(cfg.get("method_args") or {}, CONFIG_ARGS, where="method_args.")
           or fields(cfg.get("training") or {}, CONFIG_TRAINING, where="training."))
    if err:
        raise Damaged(rel, err)
    return cfg


def manifest(run_dir, rel: str) -> dict:
    """data/manifest.json ({} when absent: runs made before manifests existed)."""
    data = read_json_file(run_dir, rel)
    if data is None:
        return {}
    err = (map_of(MANIFEST_ENTRY)(data) if isinstance(data, dict)
           else f"must hold a JSON object, got {_show(data)}")
    if err:
        raise Damaged(rel, err)
    return data


def summary(run_dir, rel: str) -> dict | None:
    """eval/summary.json, None when the run has no evaluation."""
    summ = read_json_file(run_dir, rel, SUMMARY_FIELDS, ("metrics",))
    err = summ and FQ_ENTRY(summ["metrics"].get("forget_quality"))
    if err:  # its KS statistic is shown as a number
        raise Damaged(rel, f"metrics entry 'forget_quality' {err}")
    return summ


def _live(status: dict) -> bool:
    """Whether a run with this (effective) status may still be appending to its logs."""
    return status.get("state") in ("queued", "running")


def _log(run_dir, rel: str, row: dict, live: bool) -> list[dict]:
    """An append-only log: the trainer creates it with its first record, so one that exists
    with no record was emptied (or cut off before its first line ended)."""
    rows = read_jsonl_file(run_dir, rel, row, live)
    if not rows and not live and (Path(run_dir) / rel).exists():
        raise Damaged(rel, "holds no record (emptied or cut off?)")
    return rows


def config_sections(run_dir, rel: str) -> dict:
    """config.yaml as :func:`config`, and complete: a run folder's config names every
    section (a cut-off one lacks the last ones). Only the damage report asks this."""
    cfg = config(run_dir, rel)
    if cfg:
        missing = [k for k in CONFIG_SECTIONS if k not in cfg]
        if missing:
            raise Damaged(rel, f"{', '.join(missing)} missing (cut off?)")
    return cfg


CONFIG_SECTIONS = ("method", "model", "data", "training", "launch", "eval")


def metrics(run_dir, rel: str, status: dict) -> list[dict]:
    """metrics.jsonl; a finished run's log must reach the step its status.json records.
    ``status``: the run's effective status (``sga_core.runs.status.effective_run``), which
    tells whether the trainer may still be writing the last line. A value written "NaN",
    "Infinity" or "-Infinity" comes back as that float (a diverged step); null as None (not
    logged, and what runs made before the strings wrote for a non-finite value too)."""
    live = _live(status)
    rows = [{k: NON_FINITE[v] if k in METRICS_ROW and is_non_finite_text(v) else v
             for k, v in row.items()} for row in _log(run_dir, rel, METRICS_ROW, live)]
    st = status if "damaged" not in status else {}
    step = st.get("step")
    if not live and st.get("state") in FINAL_STATES and step and (
            (rows[-1]["step"] if rows else 0) < step):
        last = rows[-1]["step"] if rows else None
        raise Damaged(rel, f"ends at step {last} ({len(rows)} records) but status.json "
                           f"says the run reached step {step}: cut off?")
    return rows


def probes(run_dir, rel: str, status: dict) -> list[dict]:
    """probes.jsonl (``status`` as for :func:`metrics`)."""
    return _log(run_dir, rel, PROBES_ROW, _live(status))


def eval_steps(run_dir, rel: str, status: dict) -> list[dict]:
    """eval_steps.jsonl (``status`` as for :func:`metrics`)."""
    return _log(run_dir, rel, EVAL_STEPS_ROW, _live(status))


def _evaluated_rows(run_dir, summary_rel: str) -> tuple[dict, str]:
    """Rows per set that eval/summary.json says were evaluated ({} when it cannot say),
    and the task."""
    try:
        summ = summary(run_dir, summary_rel) or {}
    except Damaged:
        return {}, "qa"  # the summary's own damage is reported for it
    return ({s: n for s, n in (summ.get("rows") or {}).items() if n is not None},
            summ.get("task", "qa"))


def _short(rel: str, rows: list[dict], expected: dict, summary_rel: str) -> None:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["set"]] = counts.get(r["set"], 0) + 1
    short = {s: (counts.get(s, 0), n) for s, n in expected.items() if counts.get(s, 0) < n}
    if short:
        missing = sum(n - have for have, n in short.values())
        sets = ", ".join(f"{s}: {have} of {n}" for s, (have, n) in short.items())
        raise Damaged(rel, f"{missing} evaluated rows are missing ({sets} rows, as "
                           f"{summary_rel} counts them): cut off?")


def tokens(run_dir, rel: str, summary_rel: str) -> list[dict]:
    """eval/tokens.jsonl: an evaluation (QA or text) writes one token table per forget
    row (``summary_rel``: the summary that counts them)."""
    rows = read_jsonl_file(run_dir, rel, TOKENS_ROW)
    if (Path(run_dir) / rel).exists():
        expected, task = _evaluated_rows(run_dir, summary_rel)
        if "forget" in expected:
            _short(rel, rows, {"forget": expected["forget"]}, summary_rel)
    return rows


def layer_grids(v: dict, depth: int | None = None) -> tuple[str | None, int | None]:
    """What is wrong with the per-layer grids of a layer record (``probs``, ``ranks``, and
    ``top1`` where given: at least one layer, each as long as its ``tokens``, ``depth``
    layers when given), or None; and the record's depth."""
    for key in ("probs", "ranks", "top1"):
        grid = v.get(key)
        if grid is None:
            if key != "top1":
                return f"{key} is missing", depth
            continue
        if not grid:
            return f"{key} has no layer", depth
        if depth is None:
            depth = len(grid)
        if len(grid) != depth:
            return f"{key} has {len(grid)} layers, other rows {depth}", depth
        bad = next((i for i, layer in enumerate(grid) if len(layer) != len(v["tokens"])), None)
        if bad is not None:
            return (f"{key} of layer {bad + 1} has {len(grid[bad])} values for "
                    f"{len(v['tokens'])} tokens"), depth
    return None, depth


def layers(run_dir, rel: str, summary_rel: str) -> list[dict]:
    """eval/layers.jsonl: per forget row, every layer's reading of each answer token (as
    many layers in each row, each layer as long as the row's tokens, at least one layer);
    an evaluation writes one row per forget row, as its token table."""
    rows = read_jsonl_file(run_dir, rel, LAYERS_ROW)
    depth = None
    for n, r in enumerate(rows, 1):
        err, depth = layer_grids(r, depth)
        if err:
            raise Damaged(rel, f"row {n} ({r['set']} {r['index']}): {err}")
    if (Path(run_dir) / rel).exists():
        expected, _ = _evaluated_rows(run_dir, summary_rel)
        if "forget" in expected:
            _short(rel, rows, {"forget": expected["forget"]}, summary_rel)
    return rows


def per_sample(run_dir, rel: str, summary_rel: str) -> list[dict]:
    """eval/per_sample.jsonl (written whole, never appended): every row of every set the
    summary says was evaluated must be there."""
    rows = read_jsonl_file(run_dir, rel, PER_SAMPLE_ROW)
    if (Path(run_dir) / rel).exists():
        _short(rel, rows, _evaluated_rows(run_dir, summary_rel)[0], summary_rel)
    return rows


# --- stress-test results (stress/<key>.json, docs/stress-tests.md) ----------------------------

def _pair(v: Any) -> str | None:
    """A top-k alternative: [token text, probability] (a NaN probability is written null)."""
    if not isinstance(v, list) or len(v) != 2:
        return f"must be a [token, probability] pair, got {_show(v)}"
    return text(v[0]) or NUM(v[1])


def _token_record(v: Any) -> str | None:
    """An attacked model's token record of one answer (as eval/tokens.jsonl holds them):
    ``tokens``, ``probs`` and ``top`` of one length each; and where given its ``layers``
    (``probs``, ``ranks``, ``top1`` per layer, as eval/layers.jsonl holds them)."""
    err = fields(v, {"tokens": list_of(text), "probs": list_of(NUM),
                     "top": list_of(list_of(_pair)), "token_ids": opt(list_of(integer(0)))},
                 ("tokens", "probs"))
    if err:
        return err
    lengths = {k: len(v[k]) for k in ("tokens", "probs", "top") if k in v}
    if len(set(lengths.values())) > 1:
        return "tokens, probs and top must be as long as each other, got " + ", ".join(
            f"{k} {n}" for k, n in lengths.items())
    if v.get("layers") is not None:  # the attacked model's layer view of the same tokens
        lay = v["layers"]
        err = fields(lay, {k: LAYERS_ROW[k] for k in ("probs", "ranks", "top1")},
                     ("probs", "ranks")) or layer_grids({**lay, "tokens": v["tokens"]})[0]
        if err:
            return f"layers {err}"
    return None


INTERVAL = opt(lambda v: fields(v, {"n": COUNT, "mean": NUM, "sd": NUM, "lo": NUM, "hi": NUM,
                                     "level": NUM}))
STRESS_METRIC = opt(lambda v: fields(v, {
    "attacked": INTERVAL, "recovery": INTERVAL, "max_recovery": NUM, "unlearned": NUM,
    "original": NUM, "undefined": COUNT, "reason": STAMP}))
STRESS_CASE_METRIC = opt(lambda v: fields(v, {
    "attacked": NUM, "unlearned": NUM, "original": NUM, "recovery": NUM, "reason": STAMP}))
#: the check of a value of each type an attack may declare for its cases' ``info``
#: (sga_core.stress.base.INFO_TYPES)
INFO_CHECKS = {int: COUNT, float: NUM, str: STAMP, bool: opt(flag),
               dict[str, str]: opt(map_of(text)), list[int]: opt(list_of(integer(0)))}


def case_info(v: Any) -> str | None:
    """A case's ``info``: each field any registered attack declares (its ``info_fields``,
    :mod:`sga_core.stress.attacks`) of the type it declares."""
    from sga_core.stress.attacks import info_fields

    return fields(v, {k: INFO_CHECKS[t] for k, t in info_fields().items()})


STRESS_CASE = {
    "label": STAMP, "seed": opt(integer()), "reason": STAMP,
    "eval_rows": opt(list_of(integer(0))), "attack_rows": opt(list_of(integer(0))),
    "attack_set": STAMP, "metrics": opt(map_of(STRESS_CASE_METRIC)), "info": opt(case_info),
}
STRESS_SAMPLE = {
    "case": opt(integer(0)), "index": opt(integer(0)), "question": STAMP, "generated": STAMP,
    "tokens": opt(_token_record), **{k: NUM for k in (
        "prob", "rouge", "prob_unlearned", "rouge_unlearned", "prob_original",
        "rouge_original")}}
STRESS_RESULT_FIELDS = {
    "version": opt(integer(0)), "attack": text, "family": STAMP, "label": STAMP,
    "description": STAMP, "model": STAMP, "original": STAMP, "run_id": STAMP,
    "baselines": STAMP,
    "ended_at": STAMP, "metric": STAMP, "recovery": NUM, "recovery_reason": STAMP,
    "summary": opt(map_of(STRESS_METRIC)),
    "cases": opt(list_of(lambda v: fields(v, STRESS_CASE))),
    "settings": opt(mapping), "timings": opt(map_of(NUM)),
    "samples": opt(list_of(lambda v: fields(v, STRESS_SAMPLE))),
    "kind": opt(one_of(("qa", "text"))), "run_dir": STAMP, "method": STAMP,
    "method_args": opt(mapping),
}


def stress_result(run_dir, rel: str) -> dict | None:
    """One stress result file (``stress/<key>.json``), every field a reader uses checked,
    its ``attack`` the file's name; None when absent."""
    res = read_json_file(run_dir, rel, STRESS_RESULT_FIELDS, ("attack",))
    if res is None:
        return None
    key = Path(rel).stem
    if res["attack"] != key:
        raise Damaged(rel, f"attack must be the file's name ({key!r}), got {_show(res['attack'])}")
    cases = res.get("cases") or []
    for i, s in enumerate(res.get("samples") or []):
        ci = s.get("case")
        if ci is not None and ci >= len(cases):
            raise Damaged(rel, f"samples item {i} case must name one of the {len(cases)} "
                               f"cases, got {ci}")
    return res


def stress_results(run_dir, rel_dir: str) -> tuple[dict[str, dict], list[Damaged]]:
    """Every stress result file in the folder ``rel_dir`` of the run (``*.json``, hidden
    files left out: a write in progress): ``(key -> result of each sound file, Damaged for
    each other)``; ({}, []) when there is no such folder."""
    d = Path(run_dir) / rel_dir
    try:
        names = sorted(p.name for p in d.iterdir() if p.name.endswith(".json")
                       and not p.name.startswith("."))
    except NotADirectoryError:
        return {}, [Damaged(rel_dir, "is a file, not a folder")]
    except OSError:
        return {}, []
    out, damaged = {}, []
    for name in names:
        rel_path = f"{rel_dir}/{name}"
        try:
            res = stress_result(run_dir, rel_path)
        except Damaged as exc:
            damaged.append(exc)
            continue
        if res is not None:
            out[res["attack"]] = res
    return out, damaged
