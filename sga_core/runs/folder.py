"""Run folders (docs/spec.md#5-the-run-directory): ``runs/<run_id>/`` with config.yaml, command.sh,
status.json, metrics.jsonl, probes.jsonl, train.log, data/ (a snapshot of the data used, with
``manifest.json``: each file's row count and content hash), model/ and eval/.

Only the files on disk are the truth about a run; the UI and the CLI read them back.
:class:`RunFolder` owns every path of a run folder and its checked readers: this module is
the one place that spells a run-folder file name (tests/repo/test_run_folder_names.py).
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from sga_core.config import RUN_ID_RULE, ConfigError, TrainConfig, load_config, valid_run_id
from sga_core.fileio import atomic_write_text, now_iso
from sga_core.runs import validate
from sga_core.runs.procs import EVAL_PIDS, RUN_PIDS, derive

# --- the names of a run folder's files and folders: spelled here only -----------------------
CONFIG = "config.yaml"
COMMAND = "command.sh"
STATUS = "status.json"  # the run's; eval/ holds the evaluation's under the same name
METRICS = "metrics.jsonl"
PROBES = "probes.jsonl"
EVAL_STEPS = "eval_steps.jsonl"  # evaluation during training
TRAIN_LOG = "train.log"
ENV = "env.json"  # what a result was computed with (sga_core.runs.envrecord)
DATA_DIR = "data"  # the snapshot of the data used
MANIFEST_FILE = "manifest.json"  # in data/: each file's row count and rows hash
EVAL_SETS_DIR = "eval_sets"  # in data/: the snapshot of the evaluation sets (eval.sets)
MODEL_DIR = "model"
# the evaluation of a published model (sga_core.projects.published_eval): model/ is a link to
# it, and this file says which model it is (nothing was trained in such a folder)
PUBLISHED = "published.json"
MERGED_MODEL_DIR = "model-merged"  # a LoRA run's adapter merged into its base
BEST_MODEL_DIR = "best_model"  # with keep_best: the model of the best evaluated step
REINFORCED_DIR = "reinforced"  # WHP's reinforced model
CHECKPOINTS_DIR = "checkpoints"
EVAL_DIR = "eval"  # an evaluation's folder: a run's eval/, or any --out folder
EVAL_LOG = "eval.log"
SUMMARY = "summary.json"  # in an evaluation's folder, as are the three below
PER_SAMPLE = "per_sample.jsonl"
TOKENS = "tokens.jsonl"
LAYERS = "layers.jsonl"  # the logit lens: each forget answer token read at every layer
REFERENCE_CACHE = "reference_cache.json"
CANCEL_FILE = "CANCEL"  # a marker: stop at the next step boundary
EVAL_REQUEST = "EVAL_REQUESTED"  # a marker: evaluate this completed run when a slot is free
# long runs (docs/long-runs.md): checkpoints/step-<step>/ (accelerate's save_state, plus
# CHECKPOINT_INFO written last), and the TensorBoard tracker's event files
CHECKPOINT_INFO = "checkpoint.json"
TENSORBOARD_DIR = "tensorboard"
STRESS_DIR = "stress"  # stress tests of the model: stress/<attack>.json (docs/stress-tests.md)
STRESS_KEPT = "kept"  # inside STRESS_DIR: relearned copies kept on request (--keep)
# a stress test queued as a job (docs/stress-tests.md#queued-as-a-job): the request (attacks
# and settings), the job's status and its log; beside stress/, never in it (stress/ holds
# only results, and its writer's lock is on that folder)
STRESS_REQUEST = "STRESS_REQUESTED"  # a marker: stress-test this run when a slot is free
STRESS_STATUS = "stress_status.json"
STRESS_LOG = "stress.log"
# a run sent to SLURM (sga_core.runs.slurm): its batch script, the job's output, and for a
# sweep or seed group the array script kept in its first run's folder
SLURM_SCRIPT = "slurm.sh"
SLURM_LOG = "slurm.log"
SLURM_ARRAY_SCRIPT = "slurm-array.sh"
SLURM_EVAL_SCRIPT = "slurm-eval.sh"  # a re-evaluation sent to SLURM
SLURM_STRESS_SCRIPT = "slurm-stress.sh"  # a stress test sent to SLURM
SLURM_PROFILE = "slurm-profile.yaml"  # the cluster profile slurm.sh was made from (a resume's)
MANIFEST = Path(DATA_DIR) / MANIFEST_FILE

#: every name above, for the check that no other module spells one
NAMES = (CONFIG, COMMAND, STATUS, METRICS, PROBES, EVAL_STEPS, TRAIN_LOG, ENV, DATA_DIR,
         MANIFEST_FILE, EVAL_SETS_DIR, MODEL_DIR, MERGED_MODEL_DIR, BEST_MODEL_DIR, REINFORCED_DIR,
         CHECKPOINTS_DIR, CHECKPOINT_INFO, TENSORBOARD_DIR, EVAL_DIR, EVAL_LOG, SUMMARY,
         PER_SAMPLE, TOKENS, REFERENCE_CACHE, CANCEL_FILE, EVAL_REQUEST, STRESS_DIR,
         SLURM_SCRIPT, SLURM_LOG, SLURM_ARRAY_SCRIPT, SLURM_EVAL_SCRIPT, STRESS_REQUEST,
         STRESS_STATUS, STRESS_LOG, SLURM_STRESS_SCRIPT, SLURM_PROFILE, LAYERS, PUBLISHED)


def shown_status(path: Path, status: dict, key: str, pids: tuple[str, ...], what: str,
                 cancel_asked: bool = False) -> dict:
    """``status`` of the job ``key`` ("run", "eval", "stress": :data:`sga_core.runs.jobs.
    KINDS`; ``pids``: its process fields, ``what``: its name) as shown: as the backend it
    was sent to knows it (SLURM: as its job is, with its verdict on an ended job recorded
    once); where the backend cannot say, from its processes
    (:func:`sga_core.runs.procs.derive`; ``cancel_asked``: a cancel was requested, so a
    record whose processes are gone is cancelled, not failed)."""
    from sga_core.runs.backends import backend_of

    if status.get("state") is not None:
        status, sure = backend_of(status).view(key, path, status)
        if sure:
            return status
    return derive(status, pids, what, cancel_asked)


def rel(*parts: str) -> str:
    """A path inside a run folder as its messages name it ("eval/summary.json")."""
    return "/".join(parts)


class RunFolder:
    """One run folder: the path of each of its files, and their checked readers. Each reader
    raises :class:`sga_core.runs.validate.Damaged` naming the file and what is wrong with
    it, and gives the empty value ({}, [], None) for a file not written yet."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    @classmethod
    def of(cls, run_id: str, root: str | os.PathLike | None = None) -> RunFolder:
        """Run ``run_id`` of the runs folder ``root`` (a plain run id, never a path)."""
        return cls(run_path(run_id, root))

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, RunFolder) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    @property
    def run_id(self) -> str:
        return self.path.name

    def exists(self) -> bool:
        """Whether this is a run folder (it has its config)."""
        return self.config_path.exists()

    # --- paths ------------------------------------------------------------------------------
    config_path = property(lambda self: self.path / CONFIG)
    command_path = property(lambda self: self.path / COMMAND)
    status_path = property(lambda self: self.path / STATUS)
    metrics_path = property(lambda self: self.path / METRICS)
    probes_path = property(lambda self: self.path / PROBES)
    eval_steps_path = property(lambda self: self.path / EVAL_STEPS)
    train_log_path = property(lambda self: self.path / TRAIN_LOG)
    env_path = property(lambda self: self.path / ENV)
    data_dir = property(lambda self: self.path / DATA_DIR)
    manifest_path = property(lambda self: self.path / MANIFEST)
    eval_sets_dir = property(lambda self: self.data_dir / EVAL_SETS_DIR)
    model_dir = property(lambda self: self.path / MODEL_DIR)
    published_path = property(lambda self: self.path / PUBLISHED)
    merged_model_dir = property(lambda self: self.path / MERGED_MODEL_DIR)
    best_model_dir = property(lambda self: self.path / BEST_MODEL_DIR)
    reinforced_dir = property(lambda self: self.path / REINFORCED_DIR)
    checkpoints_dir = property(lambda self: self.path / CHECKPOINTS_DIR)
    tensorboard_dir = property(lambda self: self.path / TENSORBOARD_DIR)
    eval_dir = property(lambda self: self.path / EVAL_DIR)
    eval_status_path = property(lambda self: self.eval_dir / STATUS)
    eval_log_path = property(lambda self: self.path / EVAL_LOG)
    summary_path = property(lambda self: self.eval_dir / SUMMARY)
    per_sample_path = property(lambda self: self.eval_dir / PER_SAMPLE)
    tokens_path = property(lambda self: self.eval_dir / TOKENS)
    layers_path = property(lambda self: self.eval_dir / LAYERS)
    cancel_path = property(lambda self: self.path / CANCEL_FILE)
    eval_request_path = property(lambda self: self.path / EVAL_REQUEST)
    stress_dir = property(lambda self: self.path / STRESS_DIR)
    stress_request_path = property(lambda self: self.path / STRESS_REQUEST)
    stress_status_path = property(lambda self: self.path / STRESS_STATUS)
    stress_log_path = property(lambda self: self.path / STRESS_LOG)
    slurm_stress_script_path = property(lambda self: self.path / SLURM_STRESS_SCRIPT)
    slurm_script_path = property(lambda self: self.path / SLURM_SCRIPT)
    slurm_profile_path = property(lambda self: self.path / SLURM_PROFILE)

    # --- checked readers (sga_core.runs.validate) -------------------------------------------
    def config(self) -> TrainConfig:
        """config.yaml as a :class:`TrainConfig` (ConfigError naming what is wrong)."""
        return load_config(self.config_path)

    def config_dict(self) -> dict:
        """config.yaml as a mapping, the fields readers use checked ({} when absent)."""
        return validate.config(self.path, CONFIG)

    def config_sections(self) -> dict:
        """:meth:`config_dict`, and every section of a config present (one cut off is not)."""
        return validate.config_sections(self.path, CONFIG)

    def read_status(self) -> dict:
        """status.json as written ({} when absent; a damaged one as
        :func:`sga_core.runs.validate.damaged_status`)."""
        return _read_status(self.path, rel(STATUS), validate.RUN_STATUS_FIELDS)

    def status(self) -> dict:
        """status.json as shown: a running run whose processes are all gone is failed (or
        cancelled, once its CANCEL file asked for that); a run sent to SLURM is shown as its
        job is (:func:`shown_status`)."""
        return shown_status(self.path, self.read_status(), "run", RUN_PIDS, "training",
                            self.cancel_requested())

    def read_eval_status(self) -> dict:
        """eval/status.json as written (as :meth:`read_status`)."""
        return _read_status(self.path, rel(EVAL_DIR, STATUS), validate.EVAL_STATUS_FIELDS)

    def eval_status(self) -> dict:
        """eval/status.json as shown (as :meth:`status`)."""
        return shown_status(self.path, self.read_eval_status(), "eval", EVAL_PIDS,
                            "evaluation")

    def read_stress_status(self) -> dict:
        """stress_status.json as written: the stress test queued as a job (as
        :meth:`read_status`)."""
        return _read_status(self.path, rel(STRESS_STATUS), validate.STRESS_STATUS_FIELDS)

    def stress_status(self) -> dict:
        """stress_status.json as shown (as :meth:`status`): a running stress test whose
        process is gone is failed; one sent to SLURM is shown as its job is."""
        return shown_status(self.path, self.read_stress_status(), "stress", EVAL_PIDS,
                            "stress test")

    def metrics(self, status: dict | None = None) -> list[dict]:
        """metrics.jsonl (``status``: the effective status when the caller has it)."""
        return validate.metrics(self.path, METRICS, self._status(status))

    def probes(self, status: dict | None = None) -> list[dict]:
        return validate.probes(self.path, PROBES, self._status(status))

    def eval_steps(self, status: dict | None = None) -> list[dict]:
        return validate.eval_steps(self.path, EVAL_STEPS, self._status(status))

    def _status(self, status: dict | None) -> dict:
        return self.status() if status is None else status

    def manifest(self) -> dict:
        """data/manifest.json ({} for runs made before manifests existed)."""
        return validate.manifest(self.path, rel(DATA_DIR, MANIFEST_FILE))

    def summary(self) -> dict | None:
        """eval/summary.json (None before an evaluation wrote one)."""
        return validate.summary(self.path, rel(EVAL_DIR, SUMMARY))

    def per_sample(self) -> list[dict]:
        """eval/per_sample.jsonl: every row the summary counts."""
        return validate.per_sample(self.path, rel(EVAL_DIR, PER_SAMPLE), rel(EVAL_DIR, SUMMARY))

    def tokens(self) -> list[dict]:
        """eval/tokens.jsonl: a QA evaluation's token table per forget row."""
        return validate.tokens(self.path, rel(EVAL_DIR, TOKENS), rel(EVAL_DIR, SUMMARY))

    def layers(self) -> list[dict]:
        """eval/layers.jsonl: the per-layer table (logit lens) per forget row ([] for an
        evaluation made before it was written, or of a model the lens cannot read)."""
        return validate.layers(self.path, rel(EVAL_DIR, LAYERS), rel(EVAL_DIR, SUMMARY))

    # --- logs and markers -------------------------------------------------------------------
    def train_log(self, n_lines: int = 40) -> str:
        """The last lines of train.log ("" before there is one)."""
        return tail(self.train_log_path, n_lines)

    def eval_log(self, n_lines: int = 40) -> str:
        return tail(self.eval_log_path, n_lines)

    def stress_log(self, n_lines: int = 40) -> str:
        return tail(self.stress_log_path, n_lines)

    def has_model(self) -> bool:
        """Whether model/ holds a complete model."""
        from sga_core.model.loading import is_model_folder

        return is_model_folder(self.model_dir)

    def published_model(self) -> dict | None:
        """What this folder evaluated when it is the evaluation of a project's published
        model (``published.json``: role "original" or "retained", spec, path:
        :mod:`sga_core.projects.published_eval`); None for any other run folder, or where
        that file is unreadable."""
        from sga_core.fileio import read_json

        try:
            got = read_json(self.published_path)
        except (OSError, ValueError):
            return None
        ok = isinstance(got, dict) and got.get("role") in ("original", "retained") and \
            all(isinstance(got.get(k), str) for k in ("spec", "path"))
        return got if ok else None

    def cancel_requested(self) -> bool:
        return self.cancel_path.exists()

    def eval_requested(self) -> bool:
        return self.eval_request_path.exists()

    def eval_request_sets(self) -> dict[str, str]:
        """The extra evaluation sets an evaluation request asks for ({} for a plain
        request, or a marker written before requests carried sets)."""
        import json

        try:
            data = json.loads(self.eval_request_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        sets = data.get("sets") if isinstance(data, dict) else None
        return {str(k): str(v) for k, v in sets.items()} if isinstance(sets, dict) else {}

    def stress_requested(self) -> bool:
        return self.stress_request_path.exists()

    def stress_request(self) -> dict | None:
        """The stress test asked for (``attacks``: a list of attack names, ``settings``:
        StressSettings fields, ``options``: the stress command's evaluation options), or
        None when there is no request (or it cannot be read: it was being replaced)."""
        import json

        try:
            data = json.loads(self.stress_request_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        attacks = data.get("attacks")
        return {"requested_at": data.get("requested_at"),
                "attacks": [str(a) for a in attacks] if isinstance(attacks, list) else [],
                "settings": data.get("settings") if isinstance(data.get("settings"), dict)
                else {},
                "options": data.get("options") if isinstance(data.get("options"), dict)
                else {}}

    def stress_results(self) -> tuple[dict[str, dict], list]:
        """stress/<key>.json: (key -> each sound result, Damaged for each other file)."""
        return validate.stress_results(self.path, STRESS_DIR)


def _read_status(run_dir: Path, rel_path: str, spec: dict) -> dict:
    try:
        return validate.read_json_file(run_dir, rel_path, spec, ("state",)) or {}
    except validate.Damaged as exc:
        return validate.damaged_status(exc)


def model_owner(path: str | os.PathLike) -> RunFolder | None:
    """The run folder whose ``model`` folder ``path`` is (``<runs>/<id>/model``, whether or
    not it exists yet), else None."""
    path = Path(path)
    run = RunFolder(path.parent)
    return run if path.name == MODEL_DIR and run.status_path.exists() else None


def runs_root(path: str | os.PathLike | None = None) -> Path:
    """The runs folder: the argument, ``$SGA_RUNS_DIR``, or ``./runs``."""
    return Path(path or os.environ.get("SGA_RUNS_DIR") or "runs").resolve()


def run_path(run_id: str, root: str | os.PathLike | None = None) -> Path:
    """The folder of run ``run_id`` inside the runs folder; an id that is not a plain run id
    (``../x``, a path, a trailing newline) is refused, so nothing outside the runs folder is
    ever touched."""
    if not isinstance(run_id, str) or not valid_run_id(run_id):
        raise ConfigError(f"run id {run_id!r}: {RUN_ID_RULE} (a run of the runs folder, "
                          "not a path)")
    return runs_root(root) / run_id


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request_cancel(run_dir: str | os.PathLike) -> None:
    """Ask a run to stop at its next step boundary (the trainer polls this file)."""
    atomic_write_text(RunFolder(run_dir).cancel_path, now_iso() + "\n")


def manifest(run_dir: str | os.PathLike) -> dict:
    """``data/manifest.json`` of a run ({} for runs made before it existed, and for a
    damaged one: :func:`sga_core.runs.listing.list_runs` reports the damage)."""
    try:
        return RunFolder(run_dir).manifest()
    except validate.Damaged:
        return {}


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
    return RunFolder(run_dir).metrics()


def probes(run_dir: str | os.PathLike) -> list[dict]:
    """probes.jsonl, checked (:class:`sga_core.runs.validate.Damaged` when damaged)."""
    return RunFolder(run_dir).probes()


def eval_steps(run_dir: str | os.PathLike) -> list[dict]:
    """eval_steps.jsonl, checked (:class:`sga_core.runs.validate.Damaged` when damaged)."""
    return RunFolder(run_dir).eval_steps()


def wait_for_final(run_dir: str | os.PathLike, timeout: float = 600.0) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        st = RunFolder(run_dir).status()
        if st.get("state") in validate.FINAL_STATES:
            return st
        time.sleep(0.5)
    raise TimeoutError(f"run {run_dir} did not finish within {timeout}s")

