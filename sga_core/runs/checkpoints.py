"""A run's checkpoints on disk (docs/long-runs.md, docs/spec.md#52-files): which exist, which
one a resume continues from, whether a checkpoint still fits its run (:func:`check_resume`:
every file and the config, before a resume changes anything), pruning, and cutting the step
logs back to a checkpoint. No torch here: the Runs page asks whether a run can be resumed.
Saving and loading the states themselves is :mod:`sga_core.train.checkpoint`'s (safetensors
and JSON: nothing is unpickled).

``RUN/checkpoints/step-<step>/`` is complete once it is there: it is built beside its place
(``.step-<step>.tmp``, a name :mod:`sga_core.runs.leftovers` knows) and renamed in, with
:data:`~sga_core.runs.folder.CHECKPOINT_INFO` written last inside it. A kill during a save
leaves the temporary folder, never a half-written checkpoint under a checkpoint's name.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
from pathlib import Path

from sga_core.fileio import atomic_write_jsonl, read_jsonl
from sga_core.runs.folder import CHECKPOINT_INFO, CHECKPOINTS_DIR, TENSORBOARD_DIR
from sga_core.runs.validate import is_int
from sga_core.text import plural

NAME_RE = re.compile(r"step-(\d{6,12})")
#: the states a run can be resumed from, when it has a checkpoint. A run that reached a
#: time limit is recorded as ``failed`` with the reason (the SLURM backend's TIMEOUT), so
#: it is among these; there is no separate "timed out" state (runs.validate.STATES).
RESUMABLE_STATES = ("failed", "cancelled")
#: the checkpoint format: 2 holds nothing that is unpickled (safetensors and JSON only);
#: format 1 (accelerate's ``save_state``, with pickled ``custom_checkpoint_*.pkl`` and
#: ``random_states_*.pkl``) is refused, since loading a pickle can run any code
FORMAT = 2
MODEL_FILE = "model.safetensors"  # the trained weights (with LoRA, the adapters)
OPTIMIZER_FILE = "optimizer.safetensors"  # the optimizer's tensors (AdamW's moments)
TRAINER_FILE = "trainer.json"  # the position, the scheduler, the optimizer's other values
#: what a checkpoint's config must still say for a resume (the run's own config.yaml)
SAME_SETTINGS = ("method", "method_args", "batch_size", "grad_accum", "seed", "lora")
#: the largest safetensors header read when a checkpoint is checked
MAX_HEADER = 100 * 2**20


class ResumeError(ValueError):
    """A run that cannot be resumed, with the reason (naming the file at fault)."""


def rng_file(rank: int) -> str:
    """Process ``rank``'s random states (safetensors, the Python and NumPy states as
    numbers; no pickle)."""
    return f"random_states_{int(rank)}.safetensors"
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


def resumable(run_dir: str | os.PathLike, status: dict) -> bool:
    """Whether a run can be resumed: it ended failed or cancelled (``status``:
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


# --- checking a checkpoint before a resume changes anything -------------------------------------

def settings(cfg) -> dict:
    """What of a run's config a checkpoint must still match (:data:`SAME_SETTINGS`)."""
    t = cfg.training
    return {"method": cfg.method, "method_args": json.loads(json.dumps(
                cfg.method_args or {}, default=str)),
            "batch_size": t.batch_size, "grad_accum": t.grad_accum, "seed": t.seed,
            "lora": bool(t.lora_rank)}


def _where(run_dir: Path, folder: Path, name: str | None = None) -> str:
    rel = f"{CHECKPOINTS_DIR}/{folder.name}" + (f"/{name}" if name else "")
    return f"run {Path(run_dir).name}: {rel}"


def read_json_file(path: Path, where: str) -> dict:
    """A checkpoint's JSON file, which must hold an object (ResumeError naming it when it
    is missing, torn or not an object)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResumeError(f"{where}: missing; the checkpoint is incomplete") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResumeError(f"{where}: cannot be read ({exc})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ResumeError(f"{where}: not valid JSON, torn or damaged ({exc})") from None
    if not isinstance(data, dict):
        raise ResumeError(f"{where}: must hold a JSON object, got {type(data).__name__}")
    return data


def safetensors_header(path: Path, where: str) -> dict:
    """The tensor entries of a safetensors file's header (name -> dtype, shape, offsets),
    read and checked without loading a tensor; ResumeError naming the file when it is not
    a whole safetensors file."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            head = fh.read(8)
            if len(head) < 8:
                raise ResumeError(f"{where}: not a safetensors file (too short)")
            n = struct.unpack("<Q", head)[0]
            if n > min(MAX_HEADER, size - 8):
                raise ResumeError(f"{where}: not a safetensors file (bad header length)")
            header = json.loads(fh.read(n).decode("utf-8"))
    except FileNotFoundError:
        raise ResumeError(f"{where}: missing; the checkpoint is incomplete") from None
    except (OSError, ValueError) as exc:
        if isinstance(exc, ResumeError):
            raise
        raise ResumeError(f"{where}: not a safetensors file ({exc})") from None
    if not isinstance(header, dict):
        raise ResumeError(f"{where}: not a safetensors file (its header is not an object)")
    header.pop("__metadata__", None)
    end = size - 8 - n
    for name, entry in header.items():
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(is_int, offsets))
                and 0 <= offsets[0] <= offsets[1] <= end):
            raise ResumeError(f"{where}: tensor {name!r} lies outside the file (torn or "
                              "damaged)")
    return header


def old_format_files(folder: Path) -> list[str]:
    """The pickled files of a checkpoint saved by accelerate's ``save_state`` (format 1)."""
    try:
        return sorted(p.name for p in folder.iterdir() if p.suffix in (".pkl", ".bin"))
    except OSError:
        return []


def check_info(run_dir: Path, step: int, folder: Path, num_processes: int | None) -> dict:
    """checkpoint.json of checkpoint ``folder``, checked (ResumeError naming the file)."""
    where = _where(run_dir, folder, CHECKPOINT_INFO)
    data = read_json_file(folder / CHECKPOINT_INFO, where)
    if data.get("format") != FORMAT:
        old = old_format_files(folder)
        raise ResumeError(
            f"{_where(run_dir, folder)}: saved in an older checkpoint format"
            + (f" ({', '.join(old[:3])})" if old else "")
            + " whose states are Python pickles, which resume does not load (loading a "
              "pickle can run any code); train the run again")
    if data.get("step") != step:
        raise ResumeError(f"{where}: step is {data.get('step')!r}, but the folder is the "
                          f"checkpoint of step {step}")
    n = data.get("num_processes")
    if not is_int(n) or n < 1:
        raise ResumeError(f"{where}: num_processes must be a whole number of 1 or more, "
                          f"got {n!r}")
    if num_processes is not None and n != num_processes:
        raise ResumeError(f"{where}: the checkpoint was saved by "
                          f"{plural(n, 'process', 'processes')}; resume it with the same "
                          f"number (this run has "
                          f"{plural(num_processes, 'process', 'processes')})")
    for key, ok in (("settings", dict), ("data", dict)):
        if not isinstance(data.get(key), ok):
            raise ResumeError(f"{where}: {key} must be an object, got {data.get(key)!r}")
    for key in ("total_steps", "steps_per_epoch"):
        if not is_int(data.get(key)) or data[key] < 1:
            raise ResumeError(f"{where}: {key} must be a whole number of 1 or more, got "
                              f"{data.get(key)!r}")
    if not isinstance(data.get("sharded"), bool):
        raise ResumeError(f"{where}: sharded must be true or false, got "
                          f"{data.get('sharded')!r}")
    return data


def check_trainer_file(run_dir: Path, step: int, folder: Path) -> dict:
    """trainer.json (the position, the scheduler, the optimizer's plain values), checked."""
    where = _where(run_dir, folder, TRAINER_FILE)
    data = read_json_file(folder / TRAINER_FILE, where)
    if data.get("step") != step:
        raise ResumeError(f"{where}: the trainer's saved position is step "
                          f"{data.get('step')!r}, but the checkpoint is step {step}")
    for key in ("scheduler", "optimizer"):
        if not isinstance(data.get(key), dict):
            raise ResumeError(f"{where}: {key} must be an object, got "
                              f"{str(data.get(key))[:40]!r}")
    if not isinstance(data["optimizer"].get("param_groups"), list):
        raise ResumeError(f"{where}: optimizer.param_groups must be a list")
    if not isinstance(data.get("elapsed_s", 0), (int, float)):
        raise ResumeError(f"{where}: elapsed_s must be a number")
    for key in ("method", "step_eval"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise ResumeError(f"{where}: {key} must be an object or null")
    return data


RNG_TENSORS = ("torch", "python", "numpy")


def check_rng_file(run_dir: Path, folder: Path, rank: int) -> None:
    name = rng_file(rank)
    header = safetensors_header(folder / name, _where(run_dir, folder, name))
    missing = [k for k in RNG_TENSORS if k not in header]
    if missing:
        raise ResumeError(f"{_where(run_dir, folder, name)}: holds no {missing[0]} random "
                          "state; the checkpoint is damaged")


def check_resume(run_dir: str | os.PathLike, cfg, num_processes: int | None = None,
                 data_hashes: dict | None = None) -> tuple[int, Path] | None:
    """Check everything a resume of ``run_dir`` from its newest checkpoint needs, before
    anything is changed: the checkpoint's files (whole, of this format, agreeing on the
    step), and that ``cfg`` (the run's config) still matches what it was saved with: the
    method and its settings, batch size, seed, LoRA, the data snapshot's rows
    (``data_hashes``: computed here when None), ``max_steps`` not below the checkpoint's
    step, the number of processes (when given), and a tensorboard/ that is a folder.
    Returns ``(step, folder)``, None when there is no checkpoint; ResumeError (a
    ValueError) naming the file at fault."""
    run_dir = Path(run_dir)
    found = latest(run_dir)
    if found is None:
        return None
    step, folder = found
    info = check_info(run_dir, step, folder, num_processes)
    check_trainer_file(run_dir, step, folder)
    if not info["sharded"]:
        safetensors_header(folder / MODEL_FILE, _where(run_dir, folder, MODEL_FILE))
        safetensors_header(folder / OPTIMIZER_FILE, _where(run_dir, folder, OPTIMIZER_FILE))
    for rank in range(info["num_processes"]):
        check_rng_file(run_dir, folder, rank)
    where = _where(run_dir, folder, CHECKPOINT_INFO)
    now = settings(cfg)
    for key in SAME_SETTINGS:
        if key not in info["settings"]:
            raise ResumeError(f"{where}: settings has no {key}")
        if info["settings"][key] != now[key]:
            raise ResumeError(f"cannot resume run {run_dir.name}: its config.yaml now says "
                              f"{key} {now[key]!r}, but the checkpoint at step {step} was "
                              f"trained with {info['settings'][key]!r} ({where})")
    if data_hashes is None:
        from sga_core.runs.create import data_hashes as compute

        try:
            data_hashes = compute(cfg)
        except (ValueError, OSError) as exc:
            raise ResumeError(f"cannot resume run {run_dir.name}: its data cannot be read "
                              f"({exc})") from None
    if data_hashes != info["data"]:
        changed = sorted(k for k in set(data_hashes) | set(info["data"])
                         if data_hashes.get(k) != info["data"].get(k))
        raise ResumeError(f"cannot resume run {run_dir.name}: its data snapshot changed "
                          f"since the checkpoint at step {step} ({', '.join(changed)}: not "
                          f"the rows it trained on; {where})")
    max_steps = cfg.training.max_steps
    if max_steps and max_steps < step:
        raise ResumeError(f"cannot resume run {run_dir.name}: training.max_steps is "
                          f"{max_steps} in its config.yaml, below the checkpoint's step "
                          f"{step}")
    check_tensorboard_dir(run_dir, cfg)
    return step, folder


def check_tensorboard_dir(run_dir: str | os.PathLike, cfg) -> None:
    """With TensorBoard asked for, the run's tensorboard/ must be a folder (or not yet
    there): ResumeError naming it otherwise (TensorBoard would fail on it with a bare
    FileExistsError)."""
    if "tensorboard" not in (cfg.training.report_to or []):
        return
    path = Path(run_dir) / TENSORBOARD_DIR
    if os.path.lexists(path) and not path.is_dir():
        raise ResumeError(f"run {Path(run_dir).name}: {TENSORBOARD_DIR} is a file, not a "
                          f"folder; TensorBoard writes its events there "
                          f"(training.report_to: tensorboard). Move or remove {path}")
