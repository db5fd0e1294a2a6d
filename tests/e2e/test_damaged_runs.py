"""Damaged run-folder files: one bad file damages its run only. A project with real (tiny)
runs, trained and evaluated; then, for each kind of damage (cut off mid-file, emptied, `[]`,
wrong types, huge integers, bytes that are not UTF-8), a copy of an SGA run per run-folder
file gets that file damaged. Every page renders with no exception, names each damaged run
and its file, and still shows the sound runs; ``runs list`` and ``runs show`` exit cleanly
with the damage in words."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.helpers.cli import sga_cli
from tests.helpers.ui import APP, results_cells, shown

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["home", "data", "normals", "rstar", "train", "runs", "results", "tokens", "probe"]
#: the pages that list runs: each names every damaged run and its file
LISTING = ["home", "rstar", "runs", "results", "tokens", "probe"]
HUGE = 10**30

# what each file is damaged with, per kind: (label, change of the first record)
WRONG = {
    "status.json": [("pid [1]", {"pid": [1], "state": "running"}),
                    ("pid 'abc'", {"pid": "abc", "state": "running"}),
                    ("state 5", {"state": 5})],
    "eval/status.json": [("pid 'abc'", {"pid": "abc", "state": "running"})],
    "config.yaml": [("r as words", {"method_args": {"r": "minus-point-eight", "k": 4}})],
    "data/manifest.json": [("rows as text", {"forget": {"rows": "ten"}})],
    "eval/summary.json": [("metrics 5", {"metrics": 5}),
                          ("metric value text",
                           {"metrics": {"forget_quality": {"value": "high"}}})],
    "metrics.jsonl": [("step as text", {"step": "two"})],
    "eval/per_sample.jsonl": [("probability as text", {"probability": "high"})],
    "eval/tokens.jsonl": [("probs as text", {"probs": "x"})],
    "probes.jsonl": [("tokens 5", {"tokens": 5})],
    "eval_steps.jsonl": [("step null", {"step": None})],
}
BIG = {
    "status.json": {"pid": HUGE, "state": "running"},
    "eval/status.json": {"done": HUGE},
    "config.yaml": {"method_args": {"r": -0.8, "k": HUGE}},
    "data/manifest.json": {"forget": {"rows": HUGE}},
    "eval/summary.json": {"metrics": {"forget_quality": {"value": HUGE}}},
    "metrics.jsonl": {"step": HUGE},
    "eval/per_sample.jsonl": {"index": HUGE},
    "eval/tokens.jsonl": {"index": HUGE},
    "probes.jsonl": {"forget_index": HUGE},
    "eval_steps.jsonl": {"step": HUGE},
}
FILES = list(BIG)
KINDS = ["truncated", "empty", "list", "wrong_type", "huge", "non_utf8"]
COUNTS = {"damages": 0, "pages": 0, "cli": 0, "exceptions": 0}


def _merge(obj, change: dict):
    for k, v in change.items():
        if isinstance(v, dict) and isinstance(obj.get(k), dict):
            _merge(obj[k], v)
        else:
            obj[k] = v
    return obj


def _changed(rel: str, data: bytes, change: dict) -> bytes:
    """The file with its (first) record changed: JSON, YAML or the first JSON Lines line."""
    if rel.endswith(".yaml"):
        return yaml.safe_dump(_merge(yaml.safe_load(data), change)).encode()
    if rel.endswith(".jsonl"):
        first, rest = data.split(b"\n", 1)
        return json.dumps(_merge(json.loads(first), change)).encode() + b"\n" + rest
    return json.dumps(_merge(json.loads(data), change)).encode()


def damaged_versions(kind: str, rel: str, data: bytes) -> list[tuple[str, bytes]]:
    if kind == "truncated":  # cut mid-file, never just after a line's end
        cut = len(data) // 2
        while data[cut - 1:cut] in (b"\n", b" ", b""):
            cut -= 1
        return [("cut in half", data[:cut])]
    if kind == "empty":
        return [("empty", b"")]
    if kind == "list":
        return [("[]", b"[]\n")]
    if kind == "wrong_type":
        return [(label, _changed(rel, data, change)) for label, change in WRONG[rel]]
    if kind == "huge":
        return [("10^30", _changed(rel, data, BIG[rel]))]
    mid = len(data) // 3
    return [("not UTF-8", data[:mid] + b"\xff\xfe\xc3" + data[mid:])]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, tiny_model_dir):
    """A demo project with its prepared models and two SGA runs (r 0 and -0.8, evaluation
    during training on), all trained and evaluated: every run-folder file exists."""
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project
    from sga_core.projects.training import build_config, default_eval
    from sga_core.runs.create import create_run
    from sga_core.runs.launch import run_foreground

    tmp = tmp_path_factory.mktemp("damaged")
    project = create_demo_project(root=tmp / "workspace")
    project.save_normals(idk_normals(10, 4), "seed")
    runs = tmp / "runs"
    small = {"max_steps": 1, "batch_size": 4, "probe_rows": [7], "probe_every": 1,
             "eval_nll": False}
    ev = {**default_eval(project, runs), "max_new_tokens": 4, "max_retain_rows": 4}
    for run_id, include_forget in (("demo-retain-ref", False), ("demo-original", True)):
        cfg = build_config(project, method="finetune",
                           method_args={"include_forget": include_forget}, training=small,
                           launch={}, model=str(tiny_model_dir), run_id=run_id, eval_cfg=ev)
        st = run_foreground(create_run(cfg, runs), echo=lambda m: None)
        assert st.get("eval_state") == "completed", st
    for r in (0.0, -0.8):
        cfg = build_config(project, method="sga", method_args={"r": r, "k": 4},
                           training={**small, "max_steps": 2, "eval_every": 1}, launch={},
                           model=str(runs / "demo-original" / "model"), sweep="s1",
                           normals=str(project.normals_path), eval_cfg=ev,
                           run_id=f"sga-{'a' if r == 0 else 'b'}")
        st = run_foreground(create_run(cfg, runs), echo=lambda m: None)
        assert st.get("eval_state") == "completed", st
    for rel in FILES:
        assert (runs / "sga-b" / rel).is_file(), rel
    yield tmp
    print(f"\ndamaged runs: {COUNTS['damages']} damaged files tried, {COUNTS['pages']} pages "
          f"rendered, {COUNTS['cli']} CLI calls, exceptions = {COUNTS['exceptions']}")


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def make_damaged(pristine: Path, tmp: Path, kind: str) -> tuple[Path, dict[str, str]]:
    """A copy of the project whose runs folder holds, besides the sound runs, one copy of
    run sga-b per (file, damage) with that file damaged: run id -> the damaged file."""
    shutil.copytree(pristine, tmp / "p", symlinks=True)
    runs = tmp / "p" / "runs"
    out = {}
    for rel in FILES:
        data = (runs / "sga-b" / rel).read_bytes()
        for n, (_label, bad) in enumerate(damaged_versions(kind, rel, data)):
            run_id = f"dmg-{_slug(rel)}-{n}"
            shutil.copytree(runs / "sga-b", runs / run_id, symlinks=True)
            (runs / run_id / rel).write_bytes(bad)
            out[run_id] = rel
            COUNTS["damages"] += 1
    return tmp / "p", out


def warnings_of(at) -> list[str]:
    return [shown(w.value) for w in at.warning]


@pytest.mark.parametrize("kind", KINDS)
def test_damaged_file_damages_its_run_only(pristine, tmp_path, monkeypatch, kind):
    from streamlit.testing.v1 import AppTest

    from sga_core.runs.listing import list_runs

    project_dir, damaged = make_damaged(pristine, tmp_path, kind)
    runs = project_dir / "runs"
    sound = ["demo-original", "demo-retain-ref", "sga-a", "sga-b"]

    # the library: every run listed, each damaged one naming its file
    rows = {r["run_id"]: r for r in list_runs(runs)}
    assert set(rows) == set(sound) | set(damaged)
    for run_id in sound:
        assert rows[run_id]["damaged"] is None, (run_id, rows[run_id]["damaged"])
    for run_id, rel in damaged.items():
        assert rows[run_id]["damaged"] and rel in rows[run_id]["damaged"], (
            kind, run_id, rows[run_id]["damaged"])

    # the CLI: runs list, and runs show of each damaged run
    def cli(*args):
        COUNTS["cli"] += 1
        return sga_cli("runs", *args, env={"SGA_RUNS_DIR": str(runs)})

    res = cli("list")
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    for run_id in sound:
        assert run_id in res.stdout
    for run_id, rel in damaged.items():
        line = res.stdout.split(run_id, 1)[1]
        assert f"damaged: {rel}" in line.split("\n", 2)[1], (run_id, res.stdout)
    for run_id, rel in damaged.items():
        res = cli("show", run_id)
        assert res.returncode == 0 and "Traceback" not in res.stderr, (run_id, res.stderr)
        assert f"damaged: {rel}" in res.stdout, (run_id, res.stdout)

    # the pages: none raises; the listing ones name each damaged run and its file
    monkeypatch.setenv("SGA_WORKSPACE", str(project_dir / "workspace"))
    monkeypatch.setenv("SGA_RUNS_DIR", str(runs))
    monkeypatch.chdir(project_dir)
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    for page in PAGES:
        at.switch_page(f"app_pages/{page}.py").run()
        COUNTS["pages"] += 1
        COUNTS["exceptions"] += len(at.exception)
        assert not at.exception, (kind, page, [e.message for e in at.exception])
        if page in LISTING:
            warned = warnings_of(at)
            for run_id, rel in damaged.items():
                assert any(w.startswith(f"run {run_id} is damaged: ") and rel in w
                           for w in warned), (kind, page, run_id, warned)
        if page == "runs":  # every run listed; each damaged one's live view renders
            listed = [r for df in at.dataframe for r in df.value["run"]]
            assert set(listed) >= set(sound) | set(damaged)
            for run_id in damaged:
                at.selectbox(key="runs.select").set_value(run_id).run()
                COUNTS["pages"] += 1
                assert not at.exception, (kind, run_id, [e.message for e in at.exception])
        if page == "results":  # the sound runs are in the table
            labels = list(results_cells(at))
            assert labels[:2] == ["Original", "Retained"], labels
            assert any(x.startswith("sga r=0") for x in labels), labels
            assert any(x.startswith("sga r=-0.8") and "sga-b" in x for x in labels), labels
            unc = at.selectbox(key="results.unc_run")
            for run_id in unc.options:
                unc.set_value(run_id).run()
                COUNTS["pages"] += 1
                assert not at.exception, (kind, run_id, [e.message for e in at.exception])
            diff_a = at.selectbox(key="results.diff_a")
            for run_id in [o for o in diff_a.options if o in damaged]:
                diff_a.set_value(run_id).run()
                COUNTS["pages"] += 1
                assert not at.exception, (kind, run_id, [e.message for e in at.exception])
        if page == "tokens":
            ms = at.multiselect(key="tokens.runs")
            ms.set_value(list(ms.options)).run()
            COUNTS["pages"] += 1
            assert not at.exception, (kind, [e.message for e in at.exception])
