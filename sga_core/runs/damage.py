"""What is damaged in a run folder: every checked reader of :class:`~sga_core.runs.folder.
RunFolder` tried once, each damaged file reported as :class:`sga_core.runs.validate.Damaged`
naming it, so one bad file marks its run while every other run still shows
(docs/architecture.md#the-run-folder)."""

from __future__ import annotations

import os
from pathlib import Path

from sga_core.runs import validate
from sga_core.runs.folder import (
    CONFIG,
    DATA_DIR,
    EVAL_DIR,
    EVAL_STEPS,
    LAYERS,
    MANIFEST_FILE,
    METRICS,
    PER_SAMPLE,
    PROBES,
    STATUS,
    SUMMARY,
    TOKENS,
    RunFolder,
    rel,
)


def _status_damage(read):
    """A status reader (``RunFolder.read_status``/``read_eval_status``) as a checked
    reader that raises Damaged."""
    def check(run, status):
        st = read(run)
        if st.get("damaged"):
            raise validate.Damaged(*st["damaged"].split(": ", 1))
    return check


#: every checked reader of a run folder (run, effective status), in the order damage is
#: reported, and the files they read
_READERS = (
    _status_damage(RunFolder.read_status), lambda run, st: run.config_sections(),
    _status_damage(RunFolder.read_eval_status), lambda run, st: run.manifest(),
    lambda run, st: run.summary(), RunFolder.metrics, lambda run, st: run.per_sample(),
    lambda run, st: run.tokens(), RunFolder.probes, RunFolder.eval_steps,
    lambda run, st: run.layers())
_FILES = (rel(STATUS), rel(CONFIG), rel(EVAL_DIR, STATUS), rel(DATA_DIR, MANIFEST_FILE),
          rel(EVAL_DIR, SUMMARY), rel(METRICS), rel(EVAL_DIR, PER_SAMPLE),
          rel(EVAL_DIR, TOKENS), rel(PROBES), rel(EVAL_STEPS), rel(EVAL_DIR, LAYERS))
_DAMAGE: dict[tuple, list] = {}


def damage(run_dir: str | os.PathLike, status: dict | None = None) -> list:
    """Every damaged file of a run, as :class:`sga_core.runs.validate.Damaged` ([] for a
    sound run; each reader tried once); ``status``: its effective status when the caller
    has it. Remembered per version of the run's files, so listing runs each second stays
    cheap."""
    run_dir = Path(run_dir)
    run = RunFolder(run_dir)
    status = run.status() if status is None else status
    key: list = [str(run_dir), status.get("state")]
    for name in _FILES:
        try:
            s = os.stat(run_dir / name)
            key.append((s.st_mtime_ns, s.st_size))
        except OSError:
            key.append(None)
    key.append(_stress_files(run.stress_dir))
    key_t = tuple(key)
    if key_t not in _DAMAGE:
        found = []
        for reader in _READERS:
            try:
                reader(run, status)
            except validate.Damaged as exc:
                found.append(exc)
        found += run.stress_results()[1]  # each damaged stress result, by name
        if len(_DAMAGE) > 4096:
            _DAMAGE.clear()
        _DAMAGE[key_t] = found
    return _DAMAGE[key_t]


def _stress_files(folder: Path) -> tuple | None:
    """The stress results' names and versions (what :func:`damage` remembers them by)."""
    try:
        return tuple((e.name, e.stat().st_mtime_ns, e.stat().st_size)
                     for e in os.scandir(folder) if e.name.endswith(".json"))
    except OSError:
        return None


def run_damage(run_dir: str | os.PathLike, status: dict | None = None) -> str | None:
    """What is damaged in a run ("eval/summary.json: metrics must be ..."; several files
    joined by "; "), None for a sound run."""
    return "; ".join(str(d) for d in damage(run_dir, status)) or None
