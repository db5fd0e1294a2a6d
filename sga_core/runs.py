"""Run folders (SPEC 5): ``runs/<run_id>/`` with config.yaml, command.sh, status.json,
metrics.jsonl, probes.jsonl, train.log, model/ and eval/.

Only the files on disk are the truth about a run; the UI and the CLI read them back.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from sga_core.config import RUN_ID_RE, ConfigError, TrainConfig, dump_config
from sga_core.fileio import atomic_write_json, atomic_write_text, read_json, read_jsonl

STATES = ("queued", "running", "completed", "failed", "cancelled", "diverged")
FINAL_STATES = ("completed", "failed", "cancelled", "diverged")
CANCEL_FILE = "CANCEL"


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def runs_root(path: str | os.PathLike | None = None) -> Path:
    """The runs folder: the argument, ``$SGA_RUNS_DIR``, or ``./runs``."""
    return Path(path or os.environ.get("SGA_RUNS_DIR") or "runs").resolve()


def make_run_id(cfg: TrainConfig, root: Path) -> str:
    """A readable unique id such as ``sga-r-0p8-k4-20261121-213000``."""
    parts = [cfg.method]
    if "r" in cfg.method_args:
        r = float(cfg.method_args["r"])
        parts.append("r" + ("-" if r < 0 else "") + f"{abs(r):g}".replace(".", "p"))
    if "k" in cfg.method_args:
        parts.append(f"k{cfg.method_args['k']}")
    parts.append(datetime.now().strftime("%Y%m%d-%H%M%S"))
    base = re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")[:56]
    run_id, n = base, 1
    while (root / run_id).exists():
        n += 1
        run_id = f"{base}-{n}"
    return run_id


def launch_argv(cfg: TrainConfig, config_path: str) -> list[str]:
    """The exact ``accelerate launch`` argument list for a run (shown by "Preview command",
    written to command.sh and executed by the runner)."""
    la = cfg.launch
    argv = ["accelerate", "launch"]
    if la.config_file:
        argv += ["--config_file", la.config_file]
    else:
        argv += ["--num_machines", "1", "--num_processes", str(la.num_processes),
                 "--mixed_precision", la.mixed_precision, "--dynamo_backend", "no"]
        if la.num_processes > 1:
            # torchrun-style launch; on CPU, config.launch.cpu makes the Accelerator use DDP
            # over gloo (accelerate's own --cpu flag starts one process unless MPI is set up)
            argv.append("--multi_gpu")
            if la.main_process_port:
                argv += ["--main_process_port", str(la.main_process_port)]
        elif la.cpu:
            argv.append("--cpu")
    argv += ["-m", "sga_core.train", "--config", config_path]
    return argv


def command_text(cfg: TrainConfig, run_dir: Path) -> str:
    return shlex.join(launch_argv(cfg, str(Path(run_dir).resolve() / "config.yaml")))


def write_command_sh(cfg: TrainConfig, run_dir: Path, into: Path | None = None) -> Path:
    """Write command.sh for the run at ``run_dir`` (into folder ``into``, default run_dir)."""
    text = (
        "#!/usr/bin/env bash\n"
        "# Re-run this training exactly: from the project root, with the same environment.\n"
        "# On a GPU cluster: edit config.yaml's launch section or pass an accelerate config.\n"
        "set -euo pipefail\n"
        f"{command_text(cfg, run_dir)}\n"
    )
    path = Path(into or run_dir) / "command.sh"
    atomic_write_text(path, text)
    path.chmod(0o755)
    return path


def snapshot_data(cfg: TrainConfig, run_dir: Path) -> None:
    """Copy the data files into ``run_dir/data`` so the folder is self-contained and can be
    moved to a cluster; the config then points at the copies (relative paths)."""
    data_dir = Path(run_dir) / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    for name in ("forget", "retain", "normals"):
        src = cfg.resolve(getattr(cfg.data, name))
        if src is None:
            continue
        if not src.exists():
            raise ConfigError(f"data.{name}: file {src} does not exist")
        # a bad file is reported (file, row, field) before any run folder exists (SPEC 3)
        from sga_core.data import NormalTable, load_dataset

        if name == "normals":
            NormalTable.load(src)
        else:
            load_dataset(src, kind=cfg.data.task)
        dst = data_dir / f"{name}{src.suffix}"
        tmp = dst.with_name(f".{dst.name}.tmp")
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
        setattr(cfg.data, name, f"data/{dst.name}")


def create_run(cfg: TrainConfig, root: str | os.PathLike | None = None,
               state: str = "queued", mode: str = "foreground") -> Path:
    """Validate ``cfg``, make its run folder and write config.yaml, command.sh, status.json.

    The folder is built under a temporary name and renamed into place, so a failure never
    leaves a half-made run behind. ``mode`` is "queue" for runs the queue runner should start
    and "foreground" for runs their creator starts itself (the CLI's ``train``, ``prepare``).
    """
    root = runs_root(root)
    root.mkdir(parents=True, exist_ok=True)
    cfg.validate()
    if not cfg.run_id:
        cfg.run_id = make_run_id(cfg, root)
    if cfg.launch.num_processes > 1 and not cfg.launch.config_file and \
            not cfg.launch.main_process_port:
        cfg.launch.main_process_port = free_port()  # so parallel runs never clash
    if not RUN_ID_RE.match(cfg.run_id):
        raise ConfigError(f"run_id: {cfg.run_id!r} must match {RUN_ID_RE.pattern}")
    final = root / cfg.run_id
    if final.exists():
        raise ConfigError(f"run_id: a run named {cfg.run_id!r} already exists in {root}")
    tmp = root / f".creating-{cfg.run_id}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        snapshot_data(cfg, tmp)
        cfg.base_dir = str(final)
        atomic_write_text(tmp / "config.yaml", dump_config(cfg))
        write_command_sh(cfg, final, into=tmp)
        write_status(tmp, state, run_id=cfg.run_id, created_at=now_iso(), mode=mode)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_status(run_dir: str | os.PathLike) -> dict:
    return read_json(Path(run_dir) / "status.json", default={}) or {}


def write_status(run_dir: str | os.PathLike, state: str | None = None, **fields) -> dict:
    """Merge ``fields`` (and ``state``) into status.json atomically; returns the new status."""
    if state is not None and state not in STATES:
        raise ValueError(f"unknown run state {state!r}")
    status = read_status(run_dir)
    if state is not None:
        status["state"] = state
    status.update(fields)
    status["updated_at"] = now_iso()
    atomic_write_json(Path(run_dir) / "status.json", status)
    return status


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped) is not alive
        with open(f"/proc/{int(pid)}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def effective_status(run_dir: str | os.PathLike) -> dict:
    """status.json, with a 'running' run whose process vanished reported as failed."""
    status = read_status(run_dir)
    if status.get("state") == "running" and status.get("host", socket.gethostname()) == \
            socket.gethostname():
        pids = [p for p in (status.get("runner_pid"), status.get("pid")) if p]
        if pids and not any(pid_alive(p) for p in pids):
            status = write_status(run_dir, "failed", ended_at=now_iso(),
                                  error="the training process vanished (killed or machine "
                                        "restarted)")
    return status


def request_cancel(run_dir: str | os.PathLike) -> None:
    """Ask a run to stop at its next step boundary (the trainer polls this file)."""
    atomic_write_text(Path(run_dir) / CANCEL_FILE, now_iso() + "\n")


def list_runs(root: str | os.PathLike | None = None) -> list[dict]:
    """Every run folder with its status and key settings, newest first."""
    import yaml

    root = runs_root(root)
    out = []
    if not root.exists():
        return out
    for d in root.iterdir():
        if not d.is_dir() or d.name.startswith(".") or not (d / "config.yaml").exists():
            continue
        try:
            cfg = yaml.safe_load((d / "config.yaml").read_text()) or {}
        except Exception:  # a broken config still lists, marked as such
            cfg = {}
        st = effective_status(d)
        args = cfg.get("method_args") or {}
        out.append({"run_id": d.name, "path": str(d), "state": st.get("state", "unknown"),
                    "method": cfg.get("method"), "r": args.get("r"), "k": args.get("k"),
                    "sweep": cfg.get("sweep"), "mode": st.get("mode"),
                    "created_at": st.get("created_at"), "queued_ns": st.get("queued_ns"),
                    "started_at": st.get("started_at"), "ended_at": st.get("ended_at"),
                    "step": st.get("step"), "total_steps": st.get("total_steps"),
                    "eval_state": st.get("eval_state")})
    out.sort(key=lambda r: r.get("created_at") or "", reverse=True)
    return out


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
    return read_jsonl(Path(run_dir) / "metrics.jsonl")


def probes(run_dir: str | os.PathLike) -> list[dict]:
    return read_jsonl(Path(run_dir) / "probes.jsonl")


def python_executable() -> str:
    return sys.executable


def wait_for_final(run_dir: str | os.PathLike, timeout: float = 600.0) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        st = effective_status(run_dir)
        if st.get("state") in FINAL_STATES:
            return st
        time.sleep(0.5)
    raise TimeoutError(f"run {run_dir} did not finish within {timeout}s")
