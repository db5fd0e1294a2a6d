"""Shared set-up of the issue-12 benchmarks (bench/seeds.py, bench/eval_during_training.py):
the demo project, its prepared original and retain reference (or, with ``--model tiny``,
random tiny stand-ins in a temporary folder: a smoke test whose numbers mean nothing), the
demo preset, and one way to build, run and evaluate a run folder."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from sga_core.fileio import load_yaml  # noqa: E402

PRESET = ROOT / "assets" / "presets" / "demo-sga.yaml"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


class Demo:
    """The project, runs folder, model to unlearn and retain reference of a benchmark."""

    def __init__(self, model: str | None, runs_dir: str | None = None):
        from sga_core.normals.idk import idk_normals
        from sga_core.projects import create_demo_project, list_projects, load_project
        from sga_core.projects.training import original_run_id, reference_run_id
        from sga_core.runs.folder import RunFolder, runs_root

        self.tiny = model == "tiny"
        self._tmp = tempfile.TemporaryDirectory(prefix="sga-bench-") if self.tiny else None
        if self.tiny:
            from sga_core.model.tiny import build_tiny_model

            tmp = Path(self._tmp.name)
            self.root = tmp / "runs"
            self.project = create_demo_project(root=tmp / "workspace")
            self.model = str(build_tiny_model(tmp / "original"))
            self.reference = tmp / "runs" / "demo-retain-ref"
            ref = RunFolder(self.reference)
            build_tiny_model(ref.model_dir, seed=1)
            ref.config_path.write_text("run_id: demo-retain-ref\n")
            # its own evaluation holds its forget truth ratios, as prepare's does
            from sga_core.evaluation import EvalSettings, evaluate_model

            evaluate_model(str(ref.model_dir), ref.eval_dir,
                           str(self.project.forget_path), None, {}, str(self.reference),
                           settings=EvalSettings(max_new_tokens=4))
        else:
            self.root = runs_root(runs_dir)
            self.project = (load_project("demo") if "demo" in list_projects()
                            else create_demo_project())
            prepared = RunFolder.of(original_run_id(self.project), self.root).model_dir
            self.model = model or str(prepared)
            self.reference = self.root / reference_run_id(self.project)
            if not model and not (prepared / "config.json").exists():
                sys.exit(f"no prepared demo model at {prepared}: run "
                         "`python -m sga_core prepare --demo` first (about 15-20 minutes)")
        if self.project.normals() is None or not self.project.normals().is_complete(
                len(self.project.forget())):
            self.project.save_normals(idk_normals(len(self.project.forget()), 4),
                                      "generate idk")
        self.preset = load_yaml(PRESET.read_text())

    def config(self, *, r: float, training: dict | None = None, sweep: str | None = None,
               evaluate: bool = True):
        """A demo-preset SGA config at ``r`` (``training`` overrides the preset's)."""
        from sga_core.projects.training import build_config, default_eval

        ev = {**default_eval(self.project, self.root, evaluate),
              "reference": str(self.reference)}
        if self.tiny:
            ev.update(max_new_tokens=8, max_retain_rows=6)
        return build_config(self.project, method="sga",
                            method_args={**self.preset["method_args"], "r": r},
                            training={**self.preset["training"], **(training or {})},
                            launch={}, model=self.model, sweep=sweep,
                            normals=str(self.project.normals_path), eval_cfg=ev,
                            notes="bench")

    def run(self, cfg, quiet: bool = True) -> tuple:
        """Create, train and (per its config) evaluate one run; (run folder, status)."""
        from sga_core.runs.create import create_run
        from sga_core.runs.launch import run_foreground

        run_dir = create_run(cfg, self.root)
        status = run_foreground(run_dir, echo=(lambda m: None) if quiet else print)
        return run_dir, status
