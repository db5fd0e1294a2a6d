"""Run folders (docs/spec.md#5-the-run-directory): ``runs/<run_id>/`` with config.yaml, command.sh,
status.json, metrics.jsonl, probes.jsonl, train.log, data/ (a snapshot of the data used, with
``manifest.json``: each file's row count and content hash), model/ and eval/.

Only the files on disk are the truth about a run; the UI and the CLI read them back.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import socket
import tempfile
import time
from datetime import datetime
from pathlib import Path

from sga_core.config import RUN_ID_RE, ConfigError, TrainConfig, dump_config, valid_run_id
from sga_core.fileio import atomic_write_json, atomic_write_text, now_iso
from sga_core.runs import status as run_status
from sga_core.runs import validate
from sga_core.runs.command import write_command_sh

CANCEL_FILE = "CANCEL"
EVAL_REQUEST = "EVAL_REQUESTED"  # a marker: evaluate this completed run when a slot is free
MANIFEST = Path("data") / "manifest.json"
# long runs (docs/long-runs.md): checkpoints/step-<step>/ (accelerate's save_state, plus
# CHECKPOINT_INFO written last), and the TensorBoard tracker's event files
CHECKPOINTS_DIR = "checkpoints"
CHECKPOINT_INFO = "checkpoint.json"
TENSORBOARD_DIR = "tensorboard"
STRESS_DIR = "stress"  # stress tests of the model: stress/<attack>.json (docs/stress-tests.md)
STRESS_KEPT = "kept"  # inside STRESS_DIR: relearned copies kept on request (--keep)
# a run sent to SLURM (sga_core.runs.slurm): its batch script, the job's output, and for a
# sweep or seed group the array script kept in its first run's folder
SLURM_SCRIPT = "slurm.sh"
SLURM_LOG = "slurm.log"
SLURM_ARRAY_SCRIPT = "slurm-array.sh"
SLURM_EVAL_SCRIPT = "slurm-eval.sh"  # a re-evaluation sent to SLURM


def runs_root(path: str | os.PathLike | None = None) -> Path:
    """The runs folder: the argument, ``$SGA_RUNS_DIR``, or ``./runs``."""
    return Path(path or os.environ.get("SGA_RUNS_DIR") or "runs").resolve()


def run_path(run_id: str, root: str | os.PathLike | None = None) -> Path:
    """The folder of run ``run_id`` inside the runs folder; an id that is not a plain run id
    (``../x``, a path, a trailing newline) is refused, so nothing outside the runs folder is
    ever touched."""
    if not isinstance(run_id, str) or not valid_run_id(run_id):
        raise ConfigError(f"run id {run_id!r}: must match {RUN_ID_RE.pattern} (a run of the "
                          "runs folder, not a path)")
    return runs_root(root) / run_id


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


def snapshot_data(cfg: TrainConfig, run_dir: Path) -> dict:
    """Copy the data files of a validated ``cfg`` (its data paths resolved) into
    ``run_dir/data`` so the folder is self-contained and can be moved to a cluster; the
    config then points at the copies (relative paths). Returns the manifest: per file, its
    source, row count and rows hash."""
    from sga_core.data import rows_hash, write_dataset

    data_dir = Path(run_dir) / "data"
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
        setattr(cfg.data, name, f"data/{dst.name}")
        manifest[name] = {"file": dst.name, "source": str(src), "rows": len(rows),
                          "rows_hash": rows_hash(rows)}
        if mapped:
            manifest[name]["field_map"] = field_map
    cfg.data.field_map = {}  # applied: the config now names the renamed snapshot
    atomic_write_json(Path(run_dir) / MANIFEST, manifest)
    return manifest


class RunIdTaken(ConfigError):
    """The run id given to a launch names a run folder that exists (made earlier, or by a
    launch at the same moment: another tab, thread or process)."""


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
            atomic_write_text(tmp / "config.yaml", dump_config(cfg))
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


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request_cancel(run_dir: str | os.PathLike) -> None:
    """Ask a run to stop at its next step boundary (the trainer polls this file)."""
    atomic_write_text(Path(run_dir) / CANCEL_FILE, now_iso() + "\n")


def manifest(run_dir: str | os.PathLike) -> dict:
    """``data/manifest.json`` of a run ({} for runs made before it existed, and for a
    damaged one: :func:`list_runs` reports the damage)."""
    try:
        return validate.manifest(run_dir)
    except validate.Damaged:
        return {}


def _config_of(path: Path) -> dict:
    """A run's config.yaml as a mapping ({} when unreadable or damaged), parsed once per
    file version: the Runs and Results pages list every run each second."""
    try:
        st = path.stat()
    except OSError:
        return {}
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _CONFIGS:
        try:
            data = validate.config(path.parent)
        except validate.Damaged:  # a broken config still lists, marked as damaged
            data = {}
        if len(_CONFIGS) > 4096:
            _CONFIGS.clear()
        _CONFIGS[key] = data
    return _CONFIGS[key]


_CONFIGS: dict[tuple, dict] = {}


def list_runs(root: str | os.PathLike | None = None) -> list[dict]:
    """Every run folder with its status and key settings, newest first. A run with a
    damaged file is listed too, with ``damaged`` saying which file and why (None for a
    sound run) and the settings of its damaged files left out."""
    root = runs_root(root)
    out = []
    if not root.exists():
        return out
    for d in root.iterdir():
        if not d.is_dir() or d.name.startswith(".") or not (d / "config.yaml").exists():
            continue
        cfg = _config_of(d / "config.yaml")
        st = run_status.effective_run(d)
        args = cfg.get("method_args") if isinstance(cfg.get("method_args"), dict) else {}
        forget = manifest(d).get("forget") or {}
        training = cfg.get("training") if isinstance(cfg.get("training"), dict) else {}
        swept = _sweep_param(cfg.get("method"))
        out.append({"run_id": d.name, "path": str(d), "state": st.get("state", "unknown"),
                    "forget_hash": forget.get("rows_hash"),
                    "method": cfg.get("method"), "r": args.get("r"), "k": args.get("k"),
                    "sweep_param": swept, "sweep_value": _number(args.get(swept)),
                    "sweep": cfg.get("sweep"), "group": cfg.get("group"),
                    "seed": training.get("seed"), "mode": st.get("mode"),
                    "created_at": st.get("created_at"), "queued_ns": st.get("queued_ns"),
                    "started_at": st.get("started_at"), "ended_at": st.get("ended_at"),
                    "step": st.get("step"), "total_steps": st.get("total_steps"),
                    "eval_state": _eval_state(d), "damaged": run_damage(d, st),
                    "slurm_job_id": st.get("slurm_job_id"),
                    "slurm_reason": st.get("slurm_reason")})
    out.sort(key=lambda r: r.get("created_at") or "", reverse=True)
    return out


def _sweep_param(method) -> str | None:
    """The setting a sweep of ``method`` varies (SGA: r; Task Vector, WHP: alpha)."""
    from sga_core.methods import REGISTRY

    cls = REGISTRY.get(method) if isinstance(method, str) else None
    return cls.sweep_param if cls is not None else None


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _eval_state(run_dir: Path) -> str | None:
    """The evaluation's state; "queued" while a request for it waits (even over the state
    of an earlier evaluation)."""
    state = run_status.effective_eval(run_dir).get("state")
    return "queued" if state != "running" and (run_dir / EVAL_REQUEST).exists() else state


def eval_request_protocol(run_dir: str | os.PathLike) -> str | None:
    """The evaluation protocol an evaluation request asks for (None: the run's own)."""
    import json

    try:
        data = json.loads((Path(run_dir) / EVAL_REQUEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    proto = data.get("protocol") if isinstance(data, dict) else None
    return proto if isinstance(proto, str) and proto else None


def eval_request_sets(run_dir: str | os.PathLike) -> dict[str, str]:
    """The extra evaluation sets an evaluation request asks for ({} for a plain request, or
    a marker written before requests carried sets)."""
    import json

    try:
        data = json.loads((Path(run_dir) / EVAL_REQUEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    sets = data.get("sets") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in sets.items()} if isinstance(sets, dict) else {}


def tail(path: str | os.PathLike, n_lines: int = 40, max_bytes: int = 65536) -> str:
    path = Path(path)
    if not path.exists():
        return ""
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(max(0, size - max_bytes))
        data = fh.read().decode("utf-8", errors="replace")
    return "\n".join(data.splitlines()[-n_lines:])


def metrics(run_dir: str | os.PathLike) -> list[dict]:
    """metrics.jsonl, checked (:class:`sga_core.runs.validate.Damaged` when damaged)."""
    return validate.metrics(run_dir, run_status.effective_run(run_dir))


def probes(run_dir: str | os.PathLike) -> list[dict]:
    """probes.jsonl, checked (:class:`sga_core.runs.validate.Damaged` when damaged)."""
    return validate.probes(run_dir, run_status.effective_run(run_dir))


def eval_steps(run_dir: str | os.PathLike) -> list[dict]:
    """eval_steps.jsonl, checked (:class:`sga_core.runs.validate.Damaged` when damaged)."""
    return validate.eval_steps(run_dir, run_status.effective_run(run_dir))


def _status_damage(read):
    """A checked status reader (``read_run``/``read_eval``) as one that raises Damaged."""
    def check(run_dir, status):
        st = read(run_dir)
        if st.get("damaged"):
            raise validate.Damaged(*st["damaged"].split(": ", 1))
    return check


#: every checked reader of a run folder (run_dir, effective status), in the order damage is
#: reported, and the files they read
_READERS = (
    _status_damage(run_status.read_run), lambda d, st: validate.config_sections(d),
    _status_damage(run_status.read_eval), lambda d, st: validate.manifest(d),
    lambda d, st: validate.summary(d), validate.metrics, lambda d, st: validate.per_sample(d),
    lambda d, st: validate.tokens(d), validate.probes, validate.eval_steps)
_FILES = (run_status.RUN_FILE, validate.CONFIG, str(run_status.EVAL_FILE), validate.MANIFEST,
          validate.SUMMARY, validate.METRICS, validate.PER_SAMPLE, validate.TOKENS,
          validate.PROBES, validate.EVAL_STEPS)
_DAMAGE: dict[tuple, list] = {}


def damage(run_dir: str | os.PathLike, status: dict | None = None) -> list:
    """Every damaged file of a run, as :class:`sga_core.runs.validate.Damaged` ([] for a
    sound run; each reader tried once); ``status``: its effective status when the caller
    has it. Remembered per version of the run's files, so listing runs each second stays
    cheap."""
    run_dir = Path(run_dir)
    status = run_status.effective_run(run_dir) if status is None else status
    key: list = [str(run_dir), status.get("state")]
    for rel in _FILES:
        try:
            s = os.stat(run_dir / rel)
            key.append((s.st_mtime_ns, s.st_size))
        except OSError:
            key.append(None)
    key_t = tuple(key)
    if key_t not in _DAMAGE:
        found = []
        for reader in _READERS:
            try:
                reader(run_dir, status)
            except validate.Damaged as exc:
                found.append(exc)
        if len(_DAMAGE) > 4096:
            _DAMAGE.clear()
        _DAMAGE[key_t] = found
    return _DAMAGE[key_t]


def run_damage(run_dir: str | os.PathLike, status: dict | None = None) -> str | None:
    """What is damaged in a run ("eval/summary.json: metrics must be ..."; several files
    joined by "; "), None for a sound run."""
    return "; ".join(str(d) for d in damage(run_dir, status)) or None


def wait_for_final(run_dir: str | os.PathLike, timeout: float = 600.0) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        st = run_status.effective_run(run_dir)
        if st.get("state") in run_status.FINAL_STATES:
            return st
        time.sleep(0.5)
    raise TimeoutError(f"run {run_dir} did not finish within {timeout}s")
