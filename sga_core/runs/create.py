"""Making a run folder (docs/spec.md#5-the-run-directory): its id, the snapshot of its data
with the manifest, and the folder itself, claimed atomically. The names of what is written
are :class:`sga_core.runs.folder.RunFolder`'s."""

from __future__ import annotations

import errno
import os
import re
import shutil
import tempfile
import time
from datetime import datetime
from pathlib import Path

from sga_core.config import ConfigError, TrainConfig, dump_config, name_problem
from sga_core.fileio import atomic_write_json, atomic_write_text, now_iso
from sga_core.runs import status as run_status
from sga_core.runs.command import write_command_sh
from sga_core.runs.folder import (
    DATA_DIR,
    EVAL_SETS_DIR,
    RunFolder,
    free_port,
    model_owner,
    rel,
    runs_root,
)


def base_run_id(cfg: TrainConfig) -> str:
    """A readable id such as ``sga-r-0p8-k4-20261121-213000``: the method, the settings it
    names itself by, and the time (not yet checked against the runs folder)."""
    from sga_core.methods import get_method

    parts = [cfg.method, *get_method(cfg.method).id_parts(cfg.method_args)]
    parts.append(datetime.now().strftime("%Y%m%d-%H%M%S"))
    return re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")[:56]


MAX_ID_TRIES = 10_000


def id_candidates(base: str):
    """``base``, then ``base-2``, ``base-3``, ...: the ids a launch tries in turn."""
    yield base
    for n in range(2, MAX_ID_TRIES):
        yield f"{base}-{n}"
    raise ConfigError(f"run_id: {MAX_ID_TRIES} runs named {base}-<n> already exist")


def make_run_id(cfg: TrainConfig, root: Path) -> str:
    """The first id of :func:`base_run_id`'s candidates not taken in ``root`` now (a preview:
    :func:`create_run` claims its id atomically, so a launch at the same moment that takes
    it first moves this one on to the next)."""
    return next(i for i in id_candidates(base_run_id(cfg)) if not (Path(root) / i).exists())


def _data_rows(cfg, name: str, src: Path) -> list[dict]:
    """The validated rows of one of a config's data files, as its manifest hash covers them."""
    from sga_core.data import NormalTable, load_dataset

    if name == "normals":
        return NormalTable.load(src).content_rows()
    return load_dataset(src, kind=cfg.data.task, field_map=dict(cfg.data.field_map or {})
                        or None).rows


def data_hashes(cfg) -> dict[str, str]:
    """Per data file of ``cfg`` (forget, retain, normals), the rows hash its run folder's
    manifest would record: compare with :func:`manifest` to tell whether a run was trained
    on the same rows."""
    from sga_core.data import rows_hash

    out = {}
    for name in ("forget", "retain", "normals"):
        src = cfg.resolve(getattr(cfg.data, name))
        if src is not None:
            out[name] = rows_hash(_data_rows(cfg, name, src))
    return out


def check_probe_rows(probe_rows: list[int], n_forget: int) -> None:
    """Every probe row a row of the forget set (0-based), else a ConfigError naming the row
    and the set's size: a row out of range would silently probe nothing."""
    bad = next((r for r in probe_rows or [] if not 0 <= r < n_forget), None)
    if bad is not None:
        raise ConfigError(f"training.probe_rows: row {bad} is not in the forget set, which "
                          f"has {n_forget} rows (0 to {n_forget - 1})")


def check_forget_rows(cfg: TrainConfig) -> None:
    """What a launch checks of the forget set, without writing anything: the file reads
    (a DataError names file, row and field) and every probe row is one of its rows. A
    preview checks it too, so that it never shows a command the launch then refuses."""
    src = cfg.resolve(cfg.data.forget) if cfg.data.forget else None
    if src is None:
        return
    if not Path(src).exists():
        raise ConfigError(f"data.forget: file {src} does not exist")
    check_probe_rows(cfg.training.probe_rows, len(_data_rows(cfg, "forget", Path(src))))


def snapshot_data(cfg: TrainConfig, run_dir: Path) -> dict:
    """Copy the data files of a validated ``cfg`` (its data paths resolved) into
    ``run_dir/data`` so the folder is self-contained and can be moved to a cluster; the
    config then points at the copies (relative paths). Returns the manifest: per file, its
    source, row count and rows hash."""
    from sga_core.data import rows_hash, write_dataset

    data_dir = RunFolder(run_dir).data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    manifest = {}
    field_map = dict(cfg.data.field_map or {})
    for name in ("forget", "retain", "normals"):
        if not getattr(cfg.data, name):
            continue
        src = Path(getattr(cfg.data, name))
        if not src.exists():
            raise ConfigError(f"data.{name}: file {src} does not exist")
        # a bad file is reported (file, row, field) before any run folder exists
        # (docs/spec.md#34-formats-errors-and-bounds)
        mapped = bool(field_map) and name != "normals"
        rows = _data_rows(cfg, name, src)
        if name == "forget":
            check_probe_rows(cfg.training.probe_rows, len(rows))
        dst = data_dir / (f"{name}.jsonl" if mapped else f"{name}{src.suffix}")
        if mapped:  # the snapshot holds the rows under the workbench's field names
            write_dataset(dst, rows)
        else:
            tmp = dst.with_name(f".{dst.name}.tmp")
            shutil.copyfile(src, tmp)
            os.replace(tmp, dst)
        setattr(cfg.data, name, rel(DATA_DIR, dst.name))
        manifest[name] = {"file": dst.name, "source": str(src), "rows": len(rows),
                          "rows_hash": rows_hash(rows)}
        if mapped:
            manifest[name]["field_map"] = field_map
    cfg.data.field_map = {}  # applied: the config now names the renamed snapshot
    snapshot_eval_sets(cfg, run_dir)
    atomic_write_json(RunFolder(run_dir).manifest_path, manifest)
    return manifest


def snapshot_eval_sets(cfg: TrainConfig, run_dir: Path) -> None:
    """Copy the evaluation sets ``cfg`` names (``eval.sets``) into the run folder, and point
    the config at the copies: a set removed from its project later (or a folder moved to a
    cluster) still evaluates as the run was made. A set that is not there is a ConfigError
    before any run folder exists."""
    if not cfg.eval.sets:
        return
    target = RunFolder(run_dir).eval_sets_dir
    target.mkdir(parents=True, exist_ok=True)
    sets = {}
    # names checked by cfg.validate (no paths), which made each file's path absolute
    for name, path in cfg.eval.sets.items():
        src = Path(path)
        if not src.is_file():
            raise ConfigError(f"eval.sets.{name}: file {src} does not exist")
        dst = target / f"{name}{src.suffix}"
        tmp = dst.with_name(f".{dst.name}.tmp")
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
        sets[name] = rel(DATA_DIR, EVAL_SETS_DIR, dst.name)
    cfg.eval.sets = sets


class RunIdTaken(ConfigError):
    """The run id given to a launch names a run folder that exists (made earlier, or by a
    launch at the same moment: another tab, thread or process)."""


_BARE_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}$")  # "gpt2": a hub id without org


def check_model(cfg: TrainConfig) -> None:
    """The model a new run starts from, checked before anything is written: a folder that
    holds a model, the model of a run still queued or running (the queue holds the new run
    until it is saved: :mod:`sga_core.runs.upstream`), an embedded model, or a hub id
    (loaded from the hub or its local cache when the run starts). A ConfigError names the
    spec and what is wrong: a missing folder is refused at launch, not by a failed run."""
    from sga_core.model.loading import EMBEDDED_MODELS, EMBEDDED_PREFIX, is_model_folder
    from sga_core.model.published import HUB_ID

    spec = (cfg.model or "").strip()
    if not spec:
        raise ConfigError("model: give a hub id (org/name), a model folder or "
                          "embedded:smollm2")
    if spec.startswith(EMBEDDED_PREFIX):
        if spec[len(EMBEDDED_PREFIX):] not in EMBEDDED_MODELS:
            raise ConfigError(f"model: {spec!r} is no embedded model; known: "
                              + ", ".join(EMBEDDED_PREFIX + k for k in EMBEDDED_MODELS))
        return
    path = Path(spec).expanduser()
    try:
        exists = path.exists()
    except OSError as exc:  # a name the system refuses (too long, ...)
        raise ConfigError(f"model: {spec[:80]!r}: {exc.strerror or exc}") from None
    if exists:
        if not is_model_folder(path):
            raise ConfigError(f"model: the folder {spec} holds no model (no config.json, "
                              "LoRA adapter_config.json or wrapper.json)")
        return
    src = model_owner(path)
    if src is not None:
        state = run_status.effective_run(src.path).get("state")
        if state in ("queued", "running"):
            return  # the queue starts the new run once that run has saved its model
        raise ConfigError(f"model: run {src.path.name} has no model ({state}: it ended "
                          "without saving one)")
    if spec.startswith((".", "/", "~")) or spec.count("/") > 1:  # no hub id has two "/"
        raise ConfigError(f"model: the folder {spec} does not exist")
    if not (HUB_ID.match(spec) or _BARE_HUB_ID.match(spec)):
        raise ConfigError(f"model: {spec!r} is neither a folder on this machine nor a hub "
                          "id (org/name)")


def create_run(cfg: TrainConfig, root: str | os.PathLike | None = None,
               state: str = "queued", mode: str = "foreground", before_claim=None) -> Path:
    """Validate ``cfg``, make its run folder and write config.yaml, command.sh, status.json.

    The folder is built under a temporary name of its own and renamed into place, so a
    failure never leaves a half-made run behind, and the rename is the claim of the run id:
    it fails when another launch made that folder first (at the same moment, from another
    tab, thread or process), and a run without an id of its own then takes the next one
    (``<id>-2``, ...); a run id given in ``cfg`` is refused instead. ``mode`` is "queue"
    for runs the queue runner should start, "foreground" for runs their creator starts
    itself (the CLI's ``train``, ``prepare``) and "slurm" for runs sent to SLURM.
    ``before_claim(tmp, final, cfg)`` adds files to the folder before it is put in place
    (the SLURM batch script); what it raises leaves no folder behind.
    """
    root = runs_root(root)
    root.mkdir(parents=True, exist_ok=True)
    cfg.validate()
    check_model(cfg)
    problem = name_problem(cfg.sweep)  # a new run's sweep: the group rule (job names)
    if problem:
        raise ConfigError(f"sweep: {problem}")
    if cfg.launch.num_processes > 1 and not cfg.launch.config_file and \
            not cfg.launch.main_process_port:
        cfg.launch.main_process_port = free_port()  # so parallel runs never clash
    given = cfg.run_id  # validated: a plain run id, not a path
    if given:
        if (root / given).exists():
            raise RunIdTaken(f"run_id: a run named {given!r} already exists in {root}")
    candidates = [given] if given else id_candidates(base_run_id(cfg))
    tmp = Path(tempfile.mkdtemp(prefix=f".creating-{given or cfg.method}-",
                                suffix=f"-{os.getpid()}", dir=root))
    try:
        snapshot_data(cfg, tmp)
        for run_id in candidates:  # the given id or generated ones: plain ids, no paths
            final = root / run_id
            if final.exists() and not given:
                continue
            cfg.run_id, cfg.base_dir = run_id, str(final)
            atomic_write_text(RunFolder(tmp).config_path, dump_config(cfg))
            write_command_sh(cfg, final, into=tmp)
            if before_claim is not None:
                before_claim(tmp, final, cfg)
            run_status.write_run(tmp, state, run_id=run_id, created_at=now_iso(), mode=mode,
                                 queued_ns=time.time_ns())
            try:
                os.rename(tmp, final)  # fails when the folder exists and is not empty
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR):
                    raise
                if given:
                    raise RunIdTaken(f"run_id: a run named {given!r} already exists in "
                                      f"{root}") from None
                continue
            return final
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        cfg.run_id = given
        raise
    raise AssertionError("unreachable: id_candidates ends with an error")
