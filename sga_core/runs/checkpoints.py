"""A run's checkpoints on disk (docs/long-runs.md, docs/spec.md#52-files): which exist, which
one a resume continues from, pruning, and cutting the step logs back to a checkpoint. No
torch here: the Runs page asks whether a run can be resumed. Saving and loading the states
themselves is :mod:`sga_core.train.checkpoint`'s (accelerate's ``save_state``/``load_state``).

``RUN/checkpoints/step-<step>/`` is complete once it is there: it is built beside its place
(``.step-<step>.tmp``, a name :mod:`sga_core.runs.leftovers` knows) and renamed in, with
:data:`~sga_core.runs.folder.CHECKPOINT_INFO` written last inside it. A kill during a save
leaves the temporary folder, never a half-written checkpoint under a checkpoint's name.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from sga_core.fileio import atomic_write_jsonl, read_json, read_jsonl
from sga_core.runs.folder import CHECKPOINT_INFO, CHECKPOINTS_DIR

NAME_RE = re.compile(r"step-(\d{6,12})")
#: the states a run can be resumed from, when it has a checkpoint ("timed_out": where a
#: backend records a run that reached its time limit)
RESUMABLE_STATES = ("failed", "cancelled", "timed_out")
#: the exit code of a trainer that saved a checkpoint on SIGTERM/SIGUSR1 and stopped
#: (EX_TEMPFAIL: "try again"), for a batch script to tell it from a failure
STOPPED_EXIT = 75
#: set to 1 in the trainer's environment: continue from the newest checkpoint, as with
#: ``--resume`` (a requeued SLURM job: docs/slurm.md#requeue-and-resume)
RESUME_ENV = "SGA_TRAIN_RESUME"


def checkpoint_name(step: int) -> str:
    return f"step-{int(step):06d}"


def checkpoints_dir(run_dir: str | os.PathLike) -> Path:
    return Path(run_dir) / CHECKPOINTS_DIR


def checkpoints(run_dir: str | os.PathLike) -> list[tuple[int, Path]]:
    """The complete checkpoints of a run, ``(step, folder)``, oldest first. A folder counts
    when its name is a checkpoint's and its info file is there (written last)."""
    root = checkpoints_dir(run_dir)
    try:
        entries = list(root.iterdir())
    except OSError:
        return []
    out = []
    for d in entries:
        m = NAME_RE.fullmatch(d.name)
        if m and d.is_dir() and (d / CHECKPOINT_INFO).is_file():
            out.append((int(m.group(1)), d))
    return sorted(out)


def latest(run_dir: str | os.PathLike) -> tuple[int, Path] | None:
    """The newest complete checkpoint ``(step, folder)``, or None."""
    found = checkpoints(run_dir)
    return found[-1] if found else None


def info(folder: str | os.PathLike) -> dict:
    """A checkpoint's info file ({} when unreadable)."""
    data = read_json(Path(folder) / CHECKPOINT_INFO, default={})
    return data if isinstance(data, dict) else {}


def resumable(run_dir: str | os.PathLike, status: dict) -> bool:
    """Whether a run can be resumed: it ended failed, cancelled or timed out (``status``:
    its effective status) and it has a checkpoint."""
    return status.get("state") in RESUMABLE_STATES and latest(run_dir) is not None


def resume_offer(run_dir: str | os.PathLike, status: dict) -> str | None:
    """What the Resume button says it continues from ("the checkpoint at step 10"), or None
    when the run cannot be resumed (``status``: its effective status)."""
    if status.get("state") not in RESUMABLE_STATES:
        return None
    found = latest(run_dir)
    return f"the checkpoint at step {found[0]}" if found else None


def temp_name(step: int) -> str:
    """Where checkpoint ``step`` is built before it is renamed into place."""
    return f".{checkpoint_name(step)}.tmp"


def prune(run_dir: str | os.PathLike, keep: int) -> list[Path]:
    """Remove all but the newest ``keep`` checkpoints, and the temporary folders of saves
    that never finished (only the trainer, the one writer of checkpoints/, calls this).
    Returns what was removed."""
    root = checkpoints_dir(run_dir)
    removed = []
    for _, folder in checkpoints(run_dir)[:-max(1, keep)]:
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    if root.is_dir():
        for d in root.iterdir():
            if d.name.startswith(".step-") and d.name.endswith(".tmp"):
                shutil.rmtree(d, ignore_errors=True)
                removed.append(d)
    return removed


def truncate_log(path: str | os.PathLike, step: int) -> int:
    """Keep the lines of a step log (metrics.jsonl, probes.jsonl, eval_steps.jsonl) up to
    ``step``, so a resumed run logs each later step once; a torn last line goes too.
    Returns how many lines were dropped. For the file's one writer, the trainer."""
    path = Path(path)
    if not path.exists():
        return 0
    rows = read_jsonl(path)
    kept = [r for r in rows if isinstance(r, dict) and isinstance(r.get("step"), int)
            and not isinstance(r.get("step"), bool) and r["step"] <= step]
    atomic_write_jsonl(path, kept)
    return len(rows) - len(kept)
