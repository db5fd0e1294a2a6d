"""The UI never loads a model (docs/decisions/007-ui-never-loads-a-model.md): work that needs
a tokenizer or a model runs as a job. A process that renders every page and then presses
every button of every page (AppTest's ``at.button``: each ``st.button`` and form submit
button, tests/helpers/presses.py) has imported none of torch, transformers, peft, accelerate
or sentence-transformers.

The workspace is set up so that the buttons that start work are there, enabled, and do it:
the demo project with complete normal answers (two saved versions), an r* result and a probe
result; an evaluated SGA run with a token table, a completed run with the tiny model
(evaluated under another protocol and before the project's evaluation sets, so the Data page
offers both re-evaluations), a completed run with a model not evaluated yet, a failed run
with a checkpoint, and a running run (a stand-in process). Each page's presses start from
that workspace (a copy is put back), so no page's presses take away what another's need.
The Normal answers page presses Generate and Regenerate with every backend; the Data page
Import with every benchmark (the copyright book, cut with a tokenizer, is followed until its
project exists), and, with files chosen, Create project and Add evaluation set, and Use
for another protocol; the Runs page every action on every set-up run. ``WORK`` names the
work-starting buttons each page must show enabled (a page that hides one fails the test),
``STARTS`` those whose press must start a process.

Every process a press starts (a project job, an import, the queue runner and what it starts)
is stopped before the next press and at the end (tests/helpers/processes.py: through the
status files and the runner's ``.runner.json``), so nothing outlives the test and no press's
job competes with the next for the CPU. The pages run in a fresh interpreter
(``python -m tests.ui.test_no_model_in_the_ui``), so no other test's imports can hide or cause
a failure."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.wait import wait_for

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "app_pages"
HEAVY = ("torch", "transformers", "peft", "accelerate", "sentence_transformers")
PROJECT = "demo"
RUNS = ("sga-live", "ga-done", "ga-tiny", "sga-stopped", "sga-run")  # the Runs page's picks
ORDER = tuple(sorted(p.name for p in PAGES.glob("*.py")))
#: the buttons that start work, per page: each must be shown, enabled, and pressed (a form's
#: submit button by its label)
WORK = {
    "normals.py": {"normals.generate", "normals.regen"},
    "rstar.py": {"rstar.run", "rstar.sweep"},
    "train.py": {"train.preview", "train.launch", "train.prepare", "train.sweep"},
    "probe.py": {"probe.ask"},
    "tokens.py": {"tokens.reeval"},
    "results.py": {"results.eval", "Stress-test runs"},
    "data.py": {"bench.go", "data.reevaluate", "data.protocol_reevaluate"},
    "runs.py": {"runs.cancel", "runs.resume", "runs.rerun", "Stress-test",
                "runs.stress_cancel"},
}
#: of those, the ones whose press starts a process: a job, or the queue runner that takes
#: the run or request it queued
STARTS = set().union(*WORK.values()) - {"train.preview", "runs.cancel", "runs.stress_cancel"}
#: pressed after the rest of their page, in this order: they take away what other buttons
#: act on, or switch the page to another project
LAST = ("normals.restore", "data.set_remove", "data.protocol_set", "data.demo.yes",
        "data.create", "runs.delete")
FORGET = "".join(json.dumps({"question": f"Who is {i}?", "answer": f"Number {i}."}) + "\n"
                 for i in range(4)).encode()
BOOK = " ".join(f"Chapter {i}: the keeper counted {i} ships at dawn." for i in range(60))


def heavy() -> list[str]:
    return sorted(m for m in HEAVY if m in sys.modules)


# --- the UI process -------------------------------------------------------------------------

def main(root: Path, tiny: str, keep: set[int]) -> dict:
    """Render every page, then press every button of every page; what was imported."""
    from dataclasses import asdict

    from sga_core import workbench as wb
    from tests.helpers.presses import press_all
    from tests.helpers.processes import running, stop_all
    from tests.helpers.ui import open_page

    ws, runs, marks = root / "workspace", root / "runs", (str(root), str(root.resolve()))
    out: dict = {"pages": {}, "presses": [], "disabled": {}, "heavy": {}, "imported": False}
    pristine = root / "set-up"
    for folder in (ws, runs):
        shutil.copytree(folder, pristine / folder.name, symlinks=True)
    for page in ORDER:
        open_page(f"app_pages/{page}", project=PROJECT)
        out["pages"][page] = heavy()

    def settle() -> bool:
        """Nothing of ours runs when a button is pressed: what the last press or drawing
        the page started (the Runs page starts the runner for queued runs) is stopped."""
        return bool(stop_all(ws, runs, marks, keep))

    def after(at, press) -> list[str]:
        """What runs right after a press is what it started: stopped (unless it is the
        copyright import, which is followed until its project exists), and the page drawn
        again, so that the next press is judged by what it shows itself."""
        started = [r["cmd"] for r in running(ws, runs, marks, keep)]
        if press.button == "bench.go" and press.variant == "copyright":
            if at.session_state["project"] != "my-book":
                wait_for(lambda: at.run().session_state["project"] == "my-book", 300,
                         "the copyright import's project", interval=0.5)
            out["imported"] = "my-book" in wb.list_projects()
        if stop_all(ws, runs, marks, keep):
            at.run()  # the page as it is now, the job stopped
        return started

    def pick(key: str, value, kind: str = "selectbox"):
        def setup(at):
            try:
                widget = getattr(at, kind)(key=key)
            except KeyError:  # not on the page now (another project was chosen)
                return
            if widget.value != value:
                widget.set_value(value).run()
        return setup

    def run_picked(run_id: str):
        def setup(at):
            if not (runs / run_id).exists():  # deleted (its variant's last press)
                return False
            pick("runs.select", run_id)(at)
        return setup

    def upload(at, part: str, files: list[tuple[str, bytes]]) -> None:
        ups = [u for u in at.get("file_uploader") if part in str(u.proto.id)]
        if ups and not ups[0].value:
            for up, (fname, data) in zip(ups, files, strict=False):
                up.set_value((fname, data, "text/plain"))
            at.run()

    project = wb.load_project(PROJECT)
    table = wb.normals_problems(project)[0]
    normals_file = wb.dumps_jsonl(table.to_rows()).encode()

    def normals(backend: str):
        def setup(at):
            pick("normals.backend", backend)(at)
            upload(at, "normals.import", [("normals.jsonl", normals_file)])
        return setup

    def importer(name: str):
        def setup(at):
            # the project's own buttons too: a new project from a file, an evaluation set
            # added, another protocol
            at.text_input(key="data.name").set_value("from-files")
            upload(at, "data.forget", [("forget.jsonl", FORGET)])
            upload(at, "data.set_file", [("extra.jsonl", FORGET)])
            pick(f"data.protocol.{PROJECT}", "tofu")(at)
            pick("bench.kind", name, "radio")(at)
            if name != "copyright" or at.text_input(key="bench.name").value:
                return
            at.text_input(key="bench.name").set_value("my-book")
            at.text_input(key="bench.copyright.model").set_value(tiny)
            at.number_input(key="bench.copyright.segment_tokens").set_value(64)
            at.number_input(key="bench.copyright.prompt_tokens").set_value(16)
            at.run()
            upload(at, "bench.", [("book.txt", BOOK.encode()),
                                  ("retain.txt", BOOK[::-1].encode())])
        return setup

    plain = [("page", lambda at: None)]
    variants = {
        "normals.py": [(b.name, normals(b.name)) for b in wb.normal_backends()],
        "data.py": [(b.name, importer(b.name)) for b in
                    sorted(wb.benchmark_importers(), key=lambda b: b.name == "copyright")],
        "runs.py": [(run, run_picked(run)) for run in RUNS],
    }
    each_variant = {"normals.py": {"normals.generate", "normals.regen"},
                    "data.py": {"bench.go"}, "runs.py": WORK["runs.py"] | {"runs.delete"}}
    for page in ORDER:  # each page's presses start from the workspace as set up
        stop_all(ws, runs, marks, keep)
        for folder in (ws, runs):
            shutil.rmtree(folder)
            shutil.copytree(pristine / folder.name, folder, symlinks=True)
        presses, disabled = press_all(page, variants.get(page, plain), project=PROJECT,
                                      each_variant=each_variant.get(page, ()), last=LAST,
                                      settle=settle, after=after)
        out["presses"] += [asdict(p) for p in presses]
        out["disabled"][page] = disabled
        out["heavy"][page] = heavy()
    out["after"] = heavy()
    return out


# --- the test -------------------------------------------------------------------------------

def set_up(root: Path, tiny_model: Path, demo_dir: Path):
    """The workspace the buttons need (see the module's docstring); returns the stand-in
    process of the running run."""
    from sga_core.fileio import atomic_write_json, atomic_write_jsonl
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project
    from sga_core.report.table import project_runs
    from sga_core.runs import procs
    from sga_core.runs.checkpoints import resume_offer
    from sga_core.runs.folder import RunFolder
    from sga_core.runs.status import effective_run, write_run
    from tests.helpers.own_data import fake_run, metrics
    from tests.helpers.resume import write_checkpoint
    from tests.helpers.stress import tiny_run

    ws, runs = root / "workspace", root / "runs"
    demo = create_demo_project(root=ws)
    n = len(demo.forget())
    for seed in (0, 1):  # two saved versions: Restore has one to go back to
        demo.save_normals(idk_normals(n, 4, seed=seed), "seed")
    atomic_write_json(demo.path / "rstar" / "result.json", {
        "model": "embedded:smollm2", "k": 4, "convention": "label", "subset": "all",
        "last_n_layers": 0, "elapsed_s": 1.0,
        "summary": {"n": n, "n_positive": n // 2, "n_negative": n - n // 2, "median": -0.2,
                    "q1": -0.6, "q3": 0.4, "suggested_range": [-0.6, 0.4]},
        "rows": [{"r_star": (i - n / 2) / n, "forget_index": i, "cos_ab": 0.5, "norm_a": 1.0,
                  "norm_b": 1.0} for i in range(n)]})
    atomic_write_json(demo.path / "probe" / "result.json", {
        "question": "q?", "kind": "qa",
        "answers": {"ga-tiny": {"answer": "a.", "tokens": ["a", "."], "probs": [0.5, 0.9]}}})
    sga = fake_run(runs, demo, "sga-run", r=-0.8, metrics=metrics())
    atomic_write_jsonl(RunFolder(sga).tokens_path,
                       [{"set": "forget", "index": 0, "tokens": ["a", "0", "."],
                         "token_ids": [1, 2, 3], "probs": [0.5, 0.4, 0.9],
                         "top": [[["a", 0.5]], [["0", 0.4]], [[".", 0.9]]]}])
    atomic_write_json(RunFolder(sga).stress_dir / "quant4.json", {  # Results: Does it hold?
        "attack": "quant4", "recovery_reason": None,
        "summary": {"probability": {"recovery": {"n": 1, "mean": 0.2, "lo": None, "hi": None}}},
        "cases": []})
    # evaluated under another protocol, and before the project's evaluation sets existed
    ga = tiny_run(runs, tiny_model, demo_dir, "ga-tiny", completed=True)
    atomic_write_json(RunFolder(ga).summary_path,
                      {"task": "qa", "metrics": {}, "protocol": {"name": "tofu"}})
    tiny_run(runs, tiny_model, demo_dir, "ga-done", completed=True)  # not evaluated
    stopped = fake_run(runs, demo, "sga-stopped", state="failed")
    write_checkpoint(stopped, 1)
    assert resume_offer(stopped, effective_run(stopped))
    live = fake_run(runs, demo, "sga-live", state="running")
    proc = procs.spawn([sys.executable, "-c", "import time; time.sleep(900)", str(root)],
                       root / "stand-in.log", nice=0)
    write_run(live, "running", pid=proc.pid, pid_start=proc.sga_record["start"],
              launcher_pid=None, step=1, total_steps=2)
    assert {r["run_id"] for r in project_runs(demo, runs)} == set(RUNS)
    return proc


@pytest.mark.slow
def test_pressing_every_button_imports_no_model_library(ui_env, tiny_model_dir, demo_dir):
    from tests.helpers.processes import running, stop_all

    ws, runs = ui_env / "workspace", ui_env / "runs"
    marks = (str(ui_env), str(ui_env.resolve()))
    stand_in = set_up(ui_env, tiny_model_dir, demo_dir)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "tests.ui.test_no_model_in_the_ui", str(ui_env),
             str(tiny_model_dir), str(stand_in.pid)], capture_output=True, text=True,
            cwd=ui_env, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=900,
            stdin=subprocess.DEVNULL)
    finally:  # nothing the presses started outlives the test
        stopped = stop_all(ws, runs, marks)
        stand_in.wait(timeout=30)
        left = running(ws, runs, marks)
    assert not left, left
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    loaded = out["pages"]
    assert sorted(loaded) == sorted(p.name for p in PAGES.glob("*.py"))
    assert loaded == {page: [] for page in loaded}, loaded

    presses = out["presses"]
    pressed = {page: sorted({p["button"] for p in presses if p["page"] == page})
               for page in ORDER}
    print("pressed per page:", json.dumps(pressed, indent=1), "stopped at the end:", stopped)
    assert not [p for p in presses if p["exception"]], [p for p in presses if p["exception"]]
    for page, buttons in WORK.items():  # every work-starting button was there, and pressed
        assert buttons <= set(pressed[page]), (page, buttons - set(pressed[page]),
                                               out["disabled"][page])
    for button in sorted(STARTS):  # ... and did its work: it started a process, no error
        ok = [p for p in presses if p["button"] == button and p["started"] and not p["errors"]]
        if not ok:  # the whole record (an assertion's message is cut short)
            pytest.fail(f"{button} started nothing: "
                        f"{json.dumps([p for p in presses if p['button'] == button], indent=1)}")
    from sga_core.projects.benchmarks import benchmark_importers

    imports = {p["variant"] for p in presses if p["button"] == "bench.go" and p["started"]}
    assert imports == {b.name for b in benchmark_importers()}, imports  # every benchmark
    assert out["imported"], out  # the copyright book was cut, in its own process
    assert out["heavy"] == {page: [] for page in ORDER}, out["heavy"]
    assert out["after"] == [], out


if __name__ == "__main__":  # the UI process of the test above
    here = Path(sys.argv[1])
    os.chdir(here)
    result = main(here, sys.argv[2], {int(sys.argv[3])})
    print(json.dumps(result))
