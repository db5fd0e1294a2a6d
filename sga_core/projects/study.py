"""MUSE's sustainability and scalability studies of a project
(docs/spec.md#512-muse-studies-sustainability-and-scalability).

- **sustain**: the sustainability study. The project's ``sust`` forget parts (forget_1..N,
  :meth:`~sga_core.projects.project.Project.forget_parts`) are unlearning requests that come
  one after another: request 1's run trains from the starting model (the prepared Original),
  request k's from request k-1's run's model (``<runs>/<id>/model``, which the backends hold
  it on: :mod:`sga_core.runs.upstream` on this machine, ``afterok`` on SLURM), and each run
  is evaluated when it ends, so the curve shows what is left after each request.
- **scale**: the scalability study. One run per forget set of growing size, each from the
  starting model: the ``scal`` parts as MUSE publishes them (``forget_k`` holds the first k
  folds), else the ``sust`` folds 1..k joined (written to ``studies/<name>/``).

A study is a file of the project, ``studies/<name>.json`` (its mode, method, parts and run
ids in request order), written before its runs are sent, so that Results finds them
(:mod:`sga_core.report.study`). The runs are ordinary runs: the same config, folder, backend
and evaluation as any other."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sga_core.config import TrainConfig
from sga_core.fileio import atomic_write_json, now_iso, read_json
from sga_core.params import ConfigError
from sga_core.projects.project import Project
from sga_core.projects.published_eval import row_id
from sga_core.runs.folder import RunFolder, runs_root

#: mode -> (the parts it reads, what it is)
MODES = {"sustain": ("sust", "sustainability: the requests one after another, each run "
                             "from the last run's model"),
         "scale": ("scal", "scalability: forget sets of growing size, each from the "
                           "starting model")}
STUDIES_DIR = "studies"
NAME_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,55}")


@dataclass
class Study:
    """One study of a project: its runs in request order (``runs[k-1]`` answers request
    k), the forget part each trained on, and the model it started from."""

    name: str
    mode: str
    method: str
    parts: list[str]
    runs: list[str]
    start_model: str
    original_run: str | None = None  # the prepared Original's run, when it starts there
    reference_run: str | None = None  # the retain reference (the Retained row)
    created_at: str = field(default_factory=now_iso)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def study_path(project: Project, name: str) -> Path:
    return project.path / STUDIES_DIR / f"{name}.json"


def list_studies(project: Project) -> list[Study]:
    """The project's studies, newest first; a damaged study file is left out."""
    folder = project.path / STUDIES_DIR
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            data = read_json(path)
            study = Study(**{k: data[k] for k in Study.__dataclass_fields__ if k in data})
        except (OSError, ValueError, TypeError, KeyError):
            continue
        if well_formed(study):
            out.append(study)
    return sorted(out, key=lambda s: s.created_at, reverse=True)


def well_formed(study: Study) -> bool:
    """Whether a study read back is one to show: a known mode, run ids that are plain run
    ids of the runs folder (never a path), one forget part's name per run."""
    from sga_core.config import valid_run_id

    runs, parts = study.runs, study.parts
    return (study.mode in MODES and isinstance(study.name, str)
            and isinstance(runs, list) and isinstance(parts, list)
            and len(runs) == len(parts) and all(valid_run_id(r) for r in runs)
            and all(isinstance(p, str) for p in parts)
            and all(r is None or valid_run_id(r)
                    for r in (study.original_run, study.reference_run))
            and isinstance(study.created_at, str))


def request_files(project: Project, mode: str, name: str) -> list[tuple[str, Path]]:
    """The forget file of each request, in order: (the part's name, its file). Scale
    without ``scal`` parts joins the ``sust`` folds 1..k (written under
    ``studies/<name>/``); a project with neither is a ConfigError saying how to import them."""
    if mode not in MODES:
        raise ConfigError(f"study mode {mode!r}: choose one of {', '.join(MODES)}")
    own = project.forget_parts(MODES[mode][0])
    if own:
        return list(own.items())
    folds = project.forget_parts("sust")
    if mode == "scale" and folds:
        from sga_core.data import load_dataset, write_dataset

        out, rows = [], []
        for k, path in enumerate(folds.values(), 1):
            rows += load_dataset(path, kind=project.kind).rows
            joined = project.path / STUDIES_DIR / name / f"forget_{k}.jsonl"
            write_dataset(joined, rows)
            out.append((f"sust/forget_1..{k}", joined))
        return out
    raise ConfigError(
        f"project {project.name} has no {MODES[mode][0]} forget parts for a {mode} study: "
        "import MUSE-News with its study splits (`python -m sga_core import muse-news "
        "--study-splits`, or tick 'scal / sust splits' on the Data page)")


def study_name(name: str | None, mode: str, method: str) -> str:
    """The study's name (its runs are ``<name>-r<k>``): ``name`` checked, else the mode, the
    method and the time."""
    if name:
        if not NAME_RE.fullmatch(name):
            raise ConfigError(f"study name {name[:60]!r}: 1-56 lower-case letters, digits or "
                              "'-', starting with a letter or digit (its runs are "
                              "<name>-r1, <name>-r2, ...)")
        return name
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return re.sub(r"[^a-z0-9-]+", "-", f"{mode}-{method}-{stamp}".lower())[:56].strip("-")


def start_model(project: Project, model: str | None, root=None) -> tuple[str, str | None]:
    """The model request 1 starts from and the prepared Original's run id when it is that
    model: ``model`` when given, else the project's Original (prepared, or being prepared);
    ConfigError when there is neither."""
    from sga_core.projects.training import pending_model, prepared_model

    original = prepared_model(project, root) or pending_model(project, root)
    if model:
        same = original is not None and Path(model).expanduser().resolve() == original.resolve()
        return model, row_id(project, "original", root) if same else None
    if original is None:
        raise ConfigError(f"project {project.name} has no Original to start the study from: "
                          "prepare it first (Train page, or `python -m sga_core prepare`), "
                          "or give the model (--model)")
    return str(original), row_id(project, "original", root)


def study_configs(project: Project, mode: str, *, method: str, method_args: dict | None = None,
                  training: dict | None = None, launch: dict | None = None,
                  model: str | None = None, name: str | None = None, requests: int = 0,
                  max_rows: int = 0, root=None) -> tuple[Study, list[TrainConfig]]:
    """The study and one validated config per request (at most ``requests``, 0 = every
    part): sustain chains each run on the previous run's model, scale starts each from the
    starting model. A method that trains on normal answers gets the 'I don't know' ones,
    written for each request's rows under ``studies/<name>/`` (the project's own normal
    answers belong to its forget set)."""
    from sga_core.methods import get_method

    root = runs_root(root)
    cls = get_method(method)
    name = study_name(name, mode, method)
    if study_path(project, name).exists():
        raise ConfigError(f"project {project.name} already has a study named {name!r}")
    try:
        return _configs(project, mode, cls, name, method, method_args, training, launch,
                        model, requests, max_rows, root)
    except BaseException:
        forget_study(project, name)  # what it wrote for its requests (joined folds, normals)
        raise


def forget_study(project: Project, name: str) -> None:
    """Remove a study's file and its folder (one that was refused, or never sent)."""
    import shutil

    study_path(project, name).unlink(missing_ok=True)
    shutil.rmtree(project.path / STUDIES_DIR / name, ignore_errors=True)


def _configs(project, mode, cls, name, method, method_args, training, launch, model,
             requests, max_rows, root) -> tuple[Study, list[TrainConfig]]:
    from sga_core.params import parse_seeds
    from sga_core.projects.training import build_config, default_eval

    training = dict(training or {})
    if len(parse_seeds(training.get("seeds"), training.get("seed", 0))) > 1:
        raise ConfigError("a study runs one seed (each request's run starts from one model); "
                          "launch the study once per seed, each with its own --seed")
    if isinstance(requests, bool) or not isinstance(requests, int) or requests < 0:
        raise ConfigError(f"requests: a whole number of at least 0 (0 = all), got "
                          f"{requests!r}")
    files = request_files(project, mode, name)
    if requests:
        if requests > len(files):
            raise ConfigError(f"requests: {requests} asked for, but project {project.name} "
                              f"has {len(files)} {MODES[mode][0]} parts")
        files = files[:requests]
    ids = [f"{name}-r{k}" for k in range(1, len(files) + 1)]
    taken = [i for i in ids if (root / i).exists()]
    if taken:
        raise ConfigError(f"run {taken[0]} already exists: choose another study name")
    first, original_run = start_model(project, model, root)
    ev = {**default_eval(project, root), **({"max_rows": int(max_rows)} if max_rows else {})}
    ref = row_id(project, "retained", root)  # the Retained row: Prepare's or a published one
    ref = ref if ref and (root / ref).exists() else None
    cfgs = []
    for k, ((part, path), run_id) in enumerate(zip(files, ids), 1):
        normals = None
        if "normals" in cls.needs:
            normals = idk_normals_for(project, name, k, path, method_args or {}, cls)
        start = first if mode == "scale" or k == 1 else \
            str(RunFolder(root / ids[k - 2]).model_dir)
        cfg = build_config(project, method=method, method_args=dict(method_args or {}),
                           training=training, launch=dict(launch or {}), model=start,
                           run_id=run_id, normals=normals, eval_cfg=ev,
                           notes=f"{mode} study {name}: request {k} of {len(files)} ({part})")
        cfg.data.forget = str(path)
        cfgs.append(cfg.validate())
    study = Study(name, mode, method, [p for p, _ in files], ids, first, original_run, ref)
    return study, cfgs


def idk_normals_for(project: Project, name: str, k: int, forget: Path, method_args: dict,
                    cls) -> str:
    """'I don't know' normal answers for request k's rows (K-1 each), under
    ``studies/<name>/``; a method that cannot train on them is a ConfigError."""
    from sga_core.data import load_dataset
    from sga_core.normals.idk import idk_normals

    if not cls.idk_normals:
        raise ConfigError(f"method {cls.name!r} trains on normal answers that are not 'I "
                          "don't know' refusals; a study's requests have none: choose "
                          "another method")
    n = len(load_dataset(forget, kind=project.kind))
    path = project.path / STUDIES_DIR / name / f"normals_{k}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    idk_normals(n, int(method_args.get("k", project.k)), seed=0).save(path)
    return str(path)


def submit_study(project: Project, mode: str, *, backend: str = "local", workspace=None,
                 root=None, **settings) -> tuple[Study, list[Path]]:
    """Write the study's file and send its runs to the backend named ``backend``, as a
    chain (sustain: each held until the one before ended well and has its model)."""
    from sga_core.runs.backends import backend as named

    study, cfgs = study_configs(project, mode, root=root, **settings)
    save_study(project, study)
    try:
        dirs = named(backend).launch(cfgs, runs_root(root), chain=True, workspace=workspace)
    except BaseException:
        # nothing was sent (a refused submission leaves no run folder): no study either
        if not any((runs_root(root) / r).exists() for r in study.runs):
            forget_study(project, study.name)
        raise
    return study, dirs


def save_study(project: Project, study: Study) -> Path:
    return atomic_write_json(study_path(project, study.name), study.to_dict())
