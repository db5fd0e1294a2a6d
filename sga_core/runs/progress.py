"""Watching a run: its training and evaluation progress with an ETA, the charts' names for its
metrics, and its probes by forget row. Data only (no Streamlit, no HTML): the pages render it."""

from __future__ import annotations

import functools
import math
from datetime import UTC, datetime
from pathlib import Path

from sga_core.runs.folder import RunFolder, probes
from sga_core.runs.status import effective_run


def _parse(ts: str | None) -> datetime | None:
    if not ts:
        return None
    try:
        return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def progress(run_dir: str | Path) -> dict:
    """State, step/total, fraction, elapsed and ETA (seconds) of a run; while it measures
    the NLL before or after training (status.json ``stage``), ``text`` names that stage with
    its rows done ("measuring the NLL before training 300/2207 · step 0/120") and the ETA is
    the stage's."""
    st = effective_run(run_dir)
    step, total = int(st.get("step") or 0), int(st.get("total_steps") or 0)
    start = _parse(st.get("started_at"))
    end = _parse(st.get("ended_at")) if st.get("state") not in ("queued", "running") else None
    now = end or datetime.now(UTC)
    elapsed = (now - start).total_seconds() if start else None
    eta = None
    if st.get("state") == "running" and elapsed and step and total:
        eta = elapsed / step * (total - step)
    cancelling = st.get("state") in ("queued", "running") and \
        RunFolder(run_dir).cancel_requested()
    text = f"step {step}/{total}" if total else st.get("state", "")
    stage = st.get("stage") if st.get("state") == "running" else None
    if stage:  # the NLL before/after training: its rows done, the ETA of the stage
        done, rows = int(st.get("stage_done") or 0), int(st.get("stage_total") or 0)
        begun = _parse(st.get("stage_started_at"))
        text = f"{stage} {done}/{rows} · {text}" if rows else f"{stage} · {text}"
        eta = ((now - begun).total_seconds() / done * (rows - done)
               if begun and done and rows and done < rows else None)
    waits = None
    if st.get("state") == "queued":
        from sga_core.runs.queue import wait_reason

        waits = wait_reason(run_dir)
        text = f"queued: {waits}" if waits else text
    if cancelling and st.get("state") == "running":
        text = f"cancelling (asked {_ago(RunFolder(run_dir).cancel_path)}) · {text}"
    return {"state": st.get("state"), "step": step, "total": total,
            "fraction": min(1.0, step / total) if total else 0.0, "elapsed_s": elapsed,
            "eta_s": None if cancelling else eta, "error": st.get("error"), "status": st,
            "cancelling": cancelling, "waits": waits, "stage": stage, "text": text}


def _ago(path: Path) -> str:
    """How long ago ``path`` was last written ("12s ago")."""
    import time

    try:
        return f"{fmt_seconds(max(0.0, time.time() - path.stat().st_mtime))} ago"
    except OSError:
        return "just now"


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "-"
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def eval_progress(run_dir: str | Path, typical_s: float | None = None) -> dict:
    """An evaluation's progress (``eval/status.json``: stage, done, total, stage_started_at):
    state, the stage, its done/total, elapsed seconds, and an ETA. With ``typical_s`` (how
    long this project's evaluations took, :func:`typical_eval_seconds`) the ETA and fraction
    are for the whole evaluation; without it, for the current stage. ``text`` reads
    "evaluating: generating answers 12/40"."""
    from sga_core.runs.status import effective_eval

    ev = effective_eval(run_dir)
    state = ev.get("state")
    if state != "running" and RunFolder(run_dir).eval_requested():
        state = "queued"  # asked for (again), not started yet
    stage, done, total = ev.get("stage"), int(ev.get("done") or 0), int(ev.get("total") or 0)
    running = state == "running"
    now = datetime.now(UTC)
    start, stage_start = _parse(ev.get("started_at")), _parse(ev.get("stage_started_at"))
    elapsed = (now - start).total_seconds() if running and start else ev.get("elapsed_s")
    stage_eta = None
    if running and stage_start and done and total and done < total:
        stage_eta = (now - stage_start).total_seconds() / done * (total - done)
    fraction = min(1.0, done / total) if total else 0.0
    eta = stage_eta
    if running and typical_s and elapsed is not None:
        fraction = min(0.99, elapsed / typical_s)
        eta = max(typical_s - elapsed, stage_eta or 0.0)
    cancelling = running and bool(ev.get("cancel_requested_at"))
    if cancelling:
        text = f"cancelling the evaluation (asked at {str(ev['cancel_requested_at'])[11:19]})"
    elif running:
        text = f"evaluating: {stage or 'starting'}" + (f" {done}/{total}" if total else "")
    else:
        text = {"queued": "evaluation queued", None: "not evaluated"}.get(
            state, f"evaluation {state}")
    return {"state": state, "stage": stage, "done": done, "total": total,
            "fraction": fraction, "elapsed_s": elapsed,
            "eta_s": eta if running and not cancelling else None,
            "whole": bool(running and typical_s), "error": ev.get("error"),
            "cancelling": cancelling, "text": text}


def stress_fraction(st: dict) -> float:
    """How much of a stress test is done (0-1), from its status: the parts done (the
    baselines, then each attack: ``done``/``total``) plus the current stage's share of the
    part it is in (``stage_done``/``stage_total``)."""
    done, total = int(st.get("done") or 0), int(st.get("total") or 0)
    if not total:
        return 0.0
    s_done, s_total = int(st.get("stage_done") or 0), int(st.get("stage_total") or 0)
    within = min(1.0, s_done / s_total) if s_total else 0.0
    return max(0.0, min(1.0, (min(done, total) + (within if done < total else 0.0)) / total))


def stress_eta(elapsed_s: float | None, fraction: float) -> float | None:
    """Seconds left, from the time elapsed and the share done (None before any progress:
    "ETA unknown")."""
    if elapsed_s is None or fraction <= 0.0 or fraction >= 1.0:
        return None
    return elapsed_s / fraction * (1.0 - fraction)


def stress_progress(run_dir: str | Path) -> dict:
    """A run's stress test as a job (stress_status.json, docs/stress-tests.md#queued-as-a-
    job): state ("queued" while a request waits; None when none was ever asked for), the
    attacks, the stage, done/total parts, fraction, elapsed seconds, an ETA (None before
    there is progress), the error, the result files written, and ``text`` / ``eta_text``
    to show ("stress test, part 2 of 4: quant8 12/40": the baselines, then each attack;
    "ETA 1m05s" or "ETA unknown")."""
    from sga_core.runs.status import effective_stress

    run = RunFolder(run_dir)
    st = effective_stress(run_dir)
    state = st.get("state")
    attacks = st.get("attacks") or []
    if state != "running" and run.stress_requested():
        state = "queued"  # asked for (again), not started yet
        attacks = (run.stress_request() or {}).get("attacks") or attacks
    running = state == "running"
    now = datetime.now(UTC)
    start = _parse(st.get("started_at"))
    end = _parse(st.get("ended_at"))
    elapsed = (now - start).total_seconds() if running and start else \
        (end - start).total_seconds() if start and end else None
    fraction = stress_fraction(st) if running else (1.0 if state == "completed" else 0.0)
    eta = stress_eta(elapsed, fraction) if running else None
    done, total = int(st.get("done") or 0), int(st.get("total") or 0)
    stage = st.get("stage")
    cancelling = running and bool(st.get("cancel_requested_at"))
    if cancelling:
        text = f"cancelling the stress test (asked at {str(st['cancel_requested_at'])[11:19]})"
    elif running:
        s_done, s_total = int(st.get("stage_done") or 0), int(st.get("stage_total") or 0)
        # its parts: the baselines, then each attack
        text = f"stress test{f', part {min(done + 1, total)} of {total}' if total else ''}: " + \
            f"{stage or 'starting'}" + (f" {s_done}/{s_total}" if s_total else "")
    elif state == "queued":
        why = st.get("slurm_reason") or (None if st.get("slurm_job_id") else _local_wait(
            run_dir))
        text = "stress test queued" + (f" ({why})" if why else "")
    else:
        text = {None: "not stress-tested"}.get(state, f"stress test {state}")
    return {"state": state, "attacks": attacks, "stage": stage, "done": done, "total": total,
            "fraction": fraction, "elapsed_s": elapsed, "eta_s": eta,
            "eta_text": ("ETA unknown" if eta is None else f"ETA {fmt_seconds(eta)}")
            if running and not cancelling else "", "error": st.get("error"),
            "cancelling": cancelling,
            "results": st.get("results") or [], "text": text, "status": st}


def _local_wait(run_dir) -> str | None:
    """Why a job queued on this machine waits (:func:`sga_core.runs.queue.job_wait_reason`),
    None where that cannot be read."""
    from sga_core.runs.queue import job_wait_reason

    try:
        return job_wait_reason(run_dir)
    except OSError:
        return None


def typical_eval_seconds(run_dirs) -> float | None:
    """The median time the evaluations of these runs took (None when none finished)."""
    times = sorted(t for t in (_eval_seconds(Path(d)) for d in run_dirs) if t)
    return times[len(times) // 2] if times else None


def eval_status_of(runs: list[dict], only: str | None = None) -> dict[str, dict]:
    """run id -> its evaluation's progress and ETA (:func:`eval_progress`), the ETA from the
    median time of these runs' finished evaluations (``only``: just that run's)."""
    typical = typical_eval_seconds(r["path"] for r in runs)
    return {r["run_id"]: eval_progress(r["path"], typical) for r in runs
            if only is None or r["run_id"] == only}


def _eval_seconds(run_dir: Path) -> float | None:
    try:
        st = RunFolder(run_dir).summary_path.stat()
    except OSError:
        return None
    return _summary_seconds(str(run_dir), st.st_mtime_ns)


@functools.lru_cache(maxsize=1024)
def _summary_seconds(run_dir: str, mtime_ns: int) -> float | None:
    from sga_core.runs.validate import Damaged

    try:
        value = (RunFolder(run_dir).summary() or {}).get("elapsed_s")
    except Damaged:
        return None
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def curve_names(run_dir: str | Path) -> dict[str, str]:
    """metrics.jsonl key -> the name its chart should show, for this run's method (a
    prepare run logs its retain loss under forget_nll: ``Method.curve_names``)."""
    from sga_core.methods import REGISTRY
    from sga_core.runs.validate import Damaged

    try:
        cfg = RunFolder(run_dir).config_dict()
    except Damaged:
        return {}
    method = REGISTRY.get(cfg.get("method") or "")
    args = cfg.get("method_args") or {}
    return method.curve_names(args) if method else {}


def not_a_number(rows: list[dict], keys, names: dict | None = None) -> list[str]:
    """Where the metrics rows' curves ``keys`` hold NaN or an infinity (a diverged step, which
    a chart can only leave out), one line a curve: "loss: NaN at step 3". A missing value
    (None: not logged) is not listed. ``names``: a key's shown name (:func:`curve_names`)."""
    from sga_core.fileio import non_finite_as_text

    out = []
    for key in keys:
        found: dict[str, list[int]] = {}
        for row in rows:
            value = row.get(key)
            if isinstance(value, float) and not math.isfinite(value):
                found.setdefault(non_finite_as_text(value), []).append(row["step"])
        if found:
            out.append(f"{(names or {}).get(key, key)}: " + "; ".join(
                f"{word} at step{'s' if len(steps) > 1 else ''} "
                f"{', '.join(map(str, steps[:5]))}{' ...' if len(steps) > 5 else ''}"
                for word, steps in found.items()))
    return out


def latest_probes(run_dir: str | Path) -> dict[int, list[dict]]:
    """Probe records grouped by forget row, in step order."""
    out: dict[int, list[dict]] = {}
    for rec in probes(run_dir):
        out.setdefault(rec.get("forget_index"), []).append(rec)
    return out
