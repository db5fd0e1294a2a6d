"""A stress test of a trained run: ``python -m sga_core stress RUN_DIR --attacks ...``
(docs/stress-tests.md#queued-as-a-job). Requested by the ``STRESS_REQUESTED`` marker (the
attacks, their settings and the command's options); its status is ``stress_status.json``,
its log ``stress.log`` and its results ``stress/``."""

from __future__ import annotations

from pathlib import Path

from sga_core.runs.jobs.base import JobKind

#: the stress command's options besides the attacks' settings that a request may carry
OPTIONS = ("original", "retained", "max_new_tokens", "batch_size", "device")


def flags(values: dict) -> list[str]:
    """``{"relearn_steps": [1, 2], "rouge": False}`` as command-line flags
    (``--relearn-steps 1,2 --no-rouge``); None values are left out."""
    out: list[str] = []
    for name, value in values.items():
        flag = "--" + str(name).replace("_", "-")
        if value is None:
            continue
        if isinstance(value, bool):
            out.append(flag if value else "--no-" + flag[2:])
        elif isinstance(value, (list, tuple)):
            out += [flag, ",".join(str(v) for v in value)]
        else:
            out += [flag, str(value)]
    return out


def argv(run_dir: Path, request: dict) -> list[str]:
    """The stress-test command of a run folder: the request's ``attacks``, their
    ``settings`` (StressSettings fields given) and ``options`` (:data:`OPTIONS`) as flags."""
    options = request.get("options") if isinstance(request.get("options"), dict) else {}
    settings = request.get("settings") if isinstance(request.get("settings"), dict) else {}
    opts = {k: v for k, v in options.items() if k in OPTIONS}
    return ["python", "-m", "sga_core", "stress", str(Path(run_dir).resolve()),
            "--attacks", ",".join(str(a) for a in request.get("attacks") or []),
            *flags(settings),
            *flags(opts)]


#: what a fresh start (or a dropped request) of a stress test resets
FRESH = {"done": 0, "total": None, "stage_done": 0, "stage_total": None, "results": [],
         "exit_code": None, "slurm_job_id": None, "slurm_state_final": None}

def started(request: dict) -> dict:
    """What a stress test's record says of its request: the attacks it asked for."""
    return {"attacks": [str(a) for a in request.get("attacks") or []]}


def dropped(request: dict) -> dict:
    """A stress test cancelled before it started: the attacks it asked for, nothing done."""
    return {**FRESH, **started(request), "started_at": None, "pid": None, "pid_start": None}


KIND = JobKind(name="stress test", key="stress", status="stress_status_path",
               request="stress_request_path", log="stress_log_path",
               read="read_stress_status", shown="stress_status", argv=argv, fresh=FRESH,
               dropped=dropped, started=started, priority=2)
