"""The paper's Table 1: which runs bench/paper_table.py plans, how their rows are
named and ordered, and the Results page showing the table once such runs are evaluated."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from sga_core.report.paper import PAPER_R, paper_label, paper_table, top_values

ROOT = Path(__file__).resolve().parents[2]


def bench():
    spec = importlib.util.spec_from_file_location("paper_table_bench",
                                                  ROOT / "bench" / "paper_table.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, mod)
    spec.loader.exec_module(mod)
    return mod


def test_the_plan_is_every_method_once_then_sga_at_the_papers_r():
    from sga_core.methods import method_names

    plan = bench().method_plan("all", list(PAPER_R))
    names = [m for m, _ in plan]
    others = set(method_names(unlearning_only=True)) - {"sga"}
    # gd and graddiff are one method under two names: it runs once
    assert len({"gd", "graddiff"} & set(names)) == 1
    assert set(names) - {"sga"} == others - {"graddiff"}
    assert names[:3] == ["ga", "kl", "gd"]  # the paper's order
    assert names.index("task-vector") < names.index("whp")  # WHP reuses its reinforced model
    assert [a["r"] for m, a in plan if m == "sga"] == [0.4, 0.2, -0.4, -0.8, -2, -4, -8]
    assert all(a == {} for m, a in plan if m != "sga")  # every method at its defaults
    assert bench().method_plan("flat,sga", [-0.8]) == [("flat", {}),
                                                       ("sga", {"r": -0.8, "k": 4})]
    assert bench().method_plan("flat", [-0.8]) == [("flat", {})]
    with pytest.raises(SystemExit, match="unknown"):
        bench().method_plan("flat,nonsense", [])


def test_paper_labels():
    assert paper_label("flat", {"divergence": "pearson"}) == "FLAT (Pearson)"
    assert paper_label("sga", {"r": -0.8, "k": 4}) == "SGA (r = -0.8)"
    assert paper_label("idk", {}) == "PO"
    assert paper_label("whp", {"alpha": 1.0}) == "WHP"
    assert paper_label("task-vector", {"alpha": 2.0}) == "Task Vector (alpha = 2)"
    assert paper_label("new-method", {}) == "new-method"


def row(run, run_id, method, r=None, sweep=None, fq=None, f_rl=None):
    return {"run": run, "run_id": run_id, "method": method, "r": r, "sweep": sweep,
            "FQ": fq, "MU": 0.4, "forget ROUGE-L": f_rl, "retain ROUGE-L": 0.9}


def write_args(root: Path, run_id: str, args: dict) -> None:
    import yaml

    (root / run_id).mkdir(parents=True)
    (root / run_id / "config.yaml").write_text(yaml.safe_dump({"method_args": args}))


def test_table_rows_order_and_names(tmp_path):
    g1, g2 = "paper-table-20261101-000000", "paper-table-20261102-000000"
    rows = [row("Original", "demo-original", "-", fq=0.001),
            row("Retained", "demo-retain-ref", "-", fq=1.0),
            row("sga r=0.4", "s04", "sga", 0.4, g2, 0.1, 0.5),
            row("sga r=-8", "s8", "sga", -8.0, g2, 0.2, 0.3),
            row("flat", "fl", "flat", None, g2, 0.05, 0.2),
            row("kl", "kl", "kl", None, g2, 0.3, 0.6),
            row("ga", "ga", "ga", None, g2, None, 0.7),
            row("ga", "ga-old", "ga", None, g1, 0.9, 0.1),  # an older group
            row("npo", "mine", "npo", None, None, 0.5, 0.1)]  # not a paper-table run
    for run_id, args in (("s04", {"r": 0.4}), ("s8", {"r": -8.0}),
                         ("fl", {"divergence": "pearson"}), ("kl", {}), ("ga", {})):
        write_args(tmp_path, run_id, args)
    table = paper_table(rows, tmp_path)
    assert [r["run"] for r in table] == ["Original", "Retained", "GA", "KL", "FLAT (Pearson)",
                                         "SGA (r = 0.4)", "SGA (r = -8)"]
    assert table[4]["forget ROUGE-L"] == 0.2
    assert [r["run"] for r in paper_table(rows, tmp_path, group=g1)] == [
        "Original", "Retained", "GA"]
    # the top 2 of each column among the unlearning runs, by its direction
    top = top_values(table)
    assert top["FQ"] == [0.3, 0.2]  # higher is better; the Retained row's 1.0 does not count
    assert top["forget ROUGE-L"] == [0.2, 0.3]  # lower is better
    assert paper_table([r for r in rows if r["sweep"] is None], tmp_path) == []


def test_a_row_over_seeds_is_their_mean_with_a_t_interval(tmp_path):
    from sga_core.report.paper import format_table

    g = "paper-table-20261128-000000"
    seeded = []
    for i, (seed, fq, f_rl) in enumerate(((0, 0.1, 0.30), (1, 0.3, 0.34), (2, 0.2, 0.32))):
        r = row("wga", f"w{i}", "wga", None, g, fq, f_rl) | {"seed": seed}
        seeded.append(r)
        write_args(tmp_path, f"w{i}", {})
    rerun = row("wga", "w0b", "wga", None, g, 0.5, 0.9) | {"seed": 0, "created_at": "z"}
    write_args(tmp_path, "w0b", {})
    one = row("ga", "ga", "ga", None, g, 0.01, 0.05) | {"seed": 0}
    write_args(tmp_path, "ga", {})
    table = paper_table([row("Original", "o", "-", fq=0.001), *seeded, one], tmp_path)
    assert [r["run"] for r in table] == ["Original", "GA", "WGA"]
    wga = table[2]
    assert wga["n"] == 3 and wga["seeds"] == [0, 1, 2] and wga["run_ids"] == ["w0", "w1", "w2"]
    assert wga["FQ"] == pytest.approx(0.2)
    # mean ± t(0.975, 2) sd / sqrt(3), sd 0.1: 4.303 * 0.1 / 1.732 = 0.2484
    assert wga["FQ (interval)"] == "0.2 [-0.0484, 0.448] sd 0.1"
    assert "n" not in table[1] and table[1]["FQ"] == 0.01  # one seed: its value alone
    # a re-run of a seed replaces that seed's run, not another seed's
    again = paper_table([*seeded, rerun], tmp_path)[0]
    assert again["run_ids"] == ["w0b", "w1", "w2"] and again["FQ"] == pytest.approx(1 / 3)
    md = format_table(table)
    assert "| WGA | 0.2 [-0.0484, 0.448] sd 0.1 |" in md and "| GA | 0.01 |" in md


def test_seed_groups_of_the_bench_are_valid_group_names():
    from sga_core.config import name_problem

    group = "paper-table-20261128-000000"
    names = {bench().seed_group(group, m, a) for m, a in bench().method_plan("all", [-0.8])}
    assert len(names) == len(bench().method_plan("all", [-0.8]))  # one per row
    assert all(name_problem(n) is None for n in names), names


# ------------------------------------------------------------------------ Results page -----

def fake_evaluated_run(cfg, root, metrics: dict) -> Path:
    """A run folder marked completed with an evaluation summary (the page reads only
    these files; the bench's smoke run proves real ones)."""
    from sga_core.fileio import atomic_write_json
    from sga_core.runs.create import create_run
    from sga_core.runs.status import write_run

    run_dir = create_run(cfg, root)
    write_run(run_dir, "completed", ended_at="2026-11-23T00:00:00Z", exit_code=0)
    atomic_write_json(run_dir / "eval" / "summary.json", {"metrics": {
        k: {"value": v, "reason": None if v is not None else "not computed"}
        for k, v in metrics.items()}})
    return run_dir


@pytest.mark.slow
def test_results_page_shows_the_paper_table(ui_env, tiny_model_dir):
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project
    from sga_core.projects.training import build_config
    from tests.helpers.ui import open_page

    project = create_demo_project()
    project.save_normals(idk_normals(10, 4), "seed")
    root = ui_env / "runs"
    group = "paper-table-20261123-010203"

    def cfg(method, run_id="", sweep=None, **args):
        return build_config(project, method=method, method_args=args, training={},
                            launch={}, model=str(tiny_model_dir), run_id=run_id, sweep=sweep,
                            normals=str(project.normals_path), eval_cfg={"enabled": False})

    def metrics(fq, f_rl):
        return {"forget_quality": fq, "model_utility": 0.5, "forget_rouge": f_rl,
                "retain_rouge": 0.8}

    fake_evaluated_run(cfg("finetune", "demo-original", include_forget=True), root,
                       metrics(0.002, 0.9))
    fake_evaluated_run(cfg("finetune", "demo-retain-ref", include_forget=False), root,
                       metrics(1.0, 0.4))
    at = open_page("app_pages/results.py")
    assert not at.exception and not [s for s in at.subheader
                                      if s.value == "The paper's Table 1"]
    fake_evaluated_run(cfg("flat", sweep=group), root, metrics(0.05, 0.3))
    fake_evaluated_run(cfg("sga", sweep=group, r=-0.8, k=4), root, metrics(0.27, None))
    fake_evaluated_run(cfg("ga", sweep=group), root, metrics(0.01, 0.5))
    at = open_page("app_pages/results.py")
    assert not at.exception, at.exception
    assert [s for s in at.subheader if s.value == "The paper's Table 1"]
    paper = at.dataframe[1].value
    assert list(paper["run"]) == ["Original", "Retained", "GA", "FLAT (Pearson)",
                                  "SGA (r = -0.8)"]
    assert list(paper.columns) == ["run", "FQ", "MU", "forget ROUGE-L", "retain ROUGE-L"]
    assert paper.loc[paper["run"] == "FLAT (Pearson)", "FQ"].item() == 0.05
    # GA over two seeds: one row, its mean with the interval over seeds
    ga1 = build_config(project, method="ga", method_args={}, training={"seed": 1}, launch={},
                       model=str(tiny_model_dir), sweep=group, normals=str(
                           project.normals_path), eval_cfg={"enabled": False})
    fake_evaluated_run(ga1, root, metrics(0.03, 0.7))
    at = open_page("app_pages/results.py")
    assert not at.exception, at.exception
    paper = at.dataframe[1].value
    assert list(paper.columns) == ["run", "seeds", "FQ", "MU", "forget ROUGE-L",
                                   "retain ROUGE-L"]
    ga = paper[paper["run"] == "GA"]
    assert ga["seeds"].item() == 2 and ga["FQ"].item().startswith("0.02 [")
    assert paper.loc[paper["run"] == "FLAT (Pearson)", "FQ"].item() == "0.05"


def test_resume_keeps_the_groups_finished_runs_by_label(ui_env):
    """--resume GROUP keeps the runs of that group that completed and were evaluated (by the
    row label their config gives), and nothing that failed, is unevaluated or in another
    group."""
    from sga_core.projects import create_demo_project
    from sga_core.runs.status import write_eval
    from tests.helpers.own_data import fake_run

    project = create_demo_project(root=ui_env / "workspace")
    runs = ui_env / "runs"
    g = "paper-table-20261123-000000"
    for run_id, method, r, state, ev, sweep in [
            ("a", "sga", -0.8, "completed", "completed", g),
            ("b", "ga", None, "completed", "completed", g),
            ("c", "sga", 0.4, "failed", None, g),
            ("d", "sga", -2.0, "completed", None, g),
            ("e", "sga", -4.0, "completed", "completed", "other")]:
        run = fake_run(runs, project, run_id, method=method, r=r, state=state, sweep=sweep)
        if ev:
            write_eval(run, ev)
    done = bench().finished_runs(runs, g)
    assert {label for label, _ in done} == {"SGA (r = -0.8)", paper_label("ga", {})}
    by_label = {label: rec for (label, _), rec in done.items()}
    assert by_label["SGA (r = -0.8)"]["run_id"] == "a" and by_label["GA"]["run_id"] == "b"


def test_resume_runs_again_what_was_trained_with_other_settings_or_data(ui_env):
    """A kept run stands for a planned one only with the same model, method and training
    settings and the same rows of data; anything else is named and run again."""
    from sga_core.config import load_config
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project
    from tests.helpers.own_data import fake_run

    project = create_demo_project(root=ui_env / "workspace")
    run = fake_run(ui_env / "runs", project, "a", r=-0.8)
    same = load_config(run / "config.yaml")  # its own config: nothing differs
    assert bench().settings_differ(run, same) == []
    other = load_config(run / "config.yaml")
    other.training.lr *= 10
    other_normals = ui_env / "other_normals.jsonl"
    idk_normals(len(project.forget()), 4, seed=7).save(other_normals)
    other.data.normals = str(other_normals)
    assert bench().settings_differ(run, other) == ["training settings", "normals data"]


def test_resume_keeps_runs_whose_normals_were_regenerated_alike(ui_env):
    """The paper table writes its "I don't know" normals afresh on every invocation: the same
    answers with a later ``updated_at`` are the same data, so a resumed table keeps the runs
    (it re-ran all seven SGA runs when the hash covered the timestamp)."""
    import json

    from sga_core.config import load_config
    from sga_core.normals.idk import idk_normals
    from sga_core.projects import create_demo_project
    from sga_core.runs.create import snapshot_data
    from tests.helpers.own_data import fake_run

    project = create_demo_project(root=ui_env / "workspace")
    n = len(project.forget())
    first = ui_env / "idk_first.jsonl"
    idk_normals(n, 4).save(first)
    run = fake_run(ui_env / "runs", project, "a", r=-0.8)
    cfg = load_config(run / "config.yaml")
    cfg.data.normals = str(first)
    snapshot_data(cfg, run)  # the run's manifest: trained on the first table
    again = ui_env / "idk_again.jsonl"
    rows = [json.loads(line) for line in first.read_text().splitlines() if line.strip()]
    assert rows and all("updated_at" in r for r in rows)
    again.write_text("".join(json.dumps({**r, "updated_at": "2030-01-01T00:00:00Z"}) + "\n"
                             for r in rows))
    planned = load_config(run / "config.yaml")
    planned.data.normals = str(again)
    assert bench().settings_differ(run, planned) == []
    changed = ui_env / "idk_changed.jsonl"
    changed.write_text("".join(json.dumps({**r, "text": r["text"] + " Sorry."}) + "\n"
                               for r in rows))
    planned.data.normals = str(changed)
    assert bench().settings_differ(run, planned) == ["normals data"]


def test_a_re_run_replaces_its_earlier_row(ui_env):
    """One row per method and settings: the newest evaluated run of a label; a run that is
    not evaluated does not push out one that is."""
    from sga_core.projects import create_demo_project
    from tests.helpers.own_data import fake_run

    project = create_demo_project(root=ui_env / "workspace")
    g = "paper-table-20261123-000000"
    for run_id in ("old", "unevaluated", "newest"):
        fake_run(ui_env / "runs", project, run_id, method="ga", sweep=g)

    def row(run_id, fq, created):
        return {"run": run_id, "run_id": run_id, "method": "ga", "r": None, "sweep": g,
                "FQ": fq, "created_at": created}

    rows = [row("old", 0.1, "2026-11-23T08:00:00Z"),
            row("unevaluated", None, "2026-11-23T09:00:00Z")]
    assert [r["run_id"] for r in paper_table(rows, ui_env / "runs", group=g)] == ["old"]
    rows.append(row("newest", 0.3, "2026-11-23T10:00:00Z"))
    assert [r["run_id"] for r in paper_table(rows, ui_env / "runs", group=g)] == ["newest"]


def test_report_prints_a_groups_table_or_names_the_missing_group(ui_env, capsys):
    from sga_core.projects import create_demo_project
    from tests.helpers.own_data import fake_run, write_summary

    project = create_demo_project(root=ui_env / "workspace")
    g = "paper-table-20261123-000000"
    run = fake_run(ui_env / "runs", project, "ga-run", method="ga", sweep=g)
    write_summary(run, {"FQ": 0.05, "MU": 0.41})
    assert bench().report("demo", g) == 0
    out = capsys.readouterr().out
    assert "| GA | 0.05 | 0.41 |" in out and f"group={g} rows=1 of " in out
    with pytest.raises(SystemExit, match="no evaluated run of that group"):
        bench().report("demo", "paper-table-19990101-000000")


def test_report_adds_a_recovery_column_per_stress_result(ui_env, capsys):
    """``--report GROUP --stress``: one column per attack result any row has, the recovery
    with its interval or why it is undefined, "—" for a run that was not stress-tested."""
    from sga_core.fileio import atomic_write_json
    from sga_core.projects import create_demo_project
    from sga_core.runs.folder import STRESS_DIR
    from tests.helpers.own_data import fake_run, write_summary

    project = create_demo_project(root=ui_env / "workspace")
    g = "paper-table-20261123-000000"
    ga = fake_run(ui_env / "runs", project, "ga-run", method="ga", sweep=g)
    sga = fake_run(ui_env / "runs", project, "sga-run", r=-0.8, sweep=g)
    for run in (ga, sga):
        write_summary(run, {"FQ": 0.05, "MU": 0.41})
    atomic_write_json(ga / STRESS_DIR / "quant4.json", {
        "attack": "quant4", "recovery_reason": None,
        "summary": {"probability": {"recovery": {"n": 1, "mean": 0.8}}}})
    atomic_write_json(ga / STRESS_DIR / "relearn-10.json", {
        "attack": "relearn-10", "recovery_reason": None,
        "summary": {"probability": {"recovery": {"n": 3, "mean": 0.5, "lo": 0.25,
                                                 "hi": 0.75}}}})
    atomic_write_json(sga / STRESS_DIR / "quant4.json", {
        "attack": "quant4", "recovery_reason": "the gap is under 0.01",
        "summary": {"probability": {"recovery": {"n": 1, "mean": None}}}})
    assert bench().report("demo", g, stress=True) == 0
    out = capsys.readouterr().out
    head = next(ln for ln in out.splitlines() if ln.startswith("| run |"))
    assert head.endswith("| relearn-10 recovery | quant4 recovery |"), head
    assert "| GA | 0.05 | 0.41 | — | — | 0.50 [0.25, 0.75] (3 cases) | 0.80 |" in out
    assert "| SGA (r = -0.8) | 0.05 | 0.41 | — | — | — | undefined: the gap is under 0.01 |" \
        in out
    assert bench().report("demo", g) == 0  # without --stress: no such columns
    assert "recovery" not in capsys.readouterr().out


def smoke_bench(tmp_path: Path, *args: str):
    """``bench/paper_table.py --model tiny ARGS`` run to its end (it must succeed): the
    process and the path of its ``--out`` JSON."""
    import os
    import subprocess

    out_json = tmp_path / "table.json"
    env = {k: v for k, v in os.environ.items() if k not in ("SGA_WORKSPACE", "SGA_RUNS_DIR")}
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "paper_table.py"), "--model",
                           "tiny", *args, "--backend", "local", "--out", str(out_json)],
                          capture_output=True, text=True, env=env, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, out_json


@pytest.mark.slow
def test_smoke_table_with_stress_tests_each_run_and_the_retained_model(tmp_path):
    """The bench end to end on a tiny model: one method, ``--stress quant8``: the run and the
    Retained model each get a stress result, and the table a quant8 column."""
    import json

    proc, out_json = smoke_bench(tmp_path, "--methods", "ga", "--r", "", "--stress", "quant8")
    lines = proc.stdout.splitlines()
    ga = json.loads(next(ln for ln in lines if ln.startswith('{"run": "GA"')))
    assert isinstance(ga["stress_s"], float), ga
    retained = json.loads(next(ln for ln in lines if ln.startswith('{"run": "Retained"')))
    assert isinstance(retained["stress_s"], float), retained
    table = json.loads(out_json.read_text())["table"]
    assert [r["run"] for r in table] == ["Original", "Retained", "GA"]
    for r in table:
        # the Original is the far end itself: not stress-tested, "—"; the others have a
        # result (on a tiny random model the gap is ~0, so it says why it is undefined)
        text = r["quant8 recovery (text)"]
        assert (text == "—") == (r["run"] == "Original"), r
    assert "| quant8 recovery |" in proc.stdout


@pytest.mark.slow
def test_smoke_table_over_two_seeds_with_altpos_generated_alternates(tmp_path):
    """``--seeds 2`` on AltPO: its alternates are generated once from the Original with its
    recipe (a normal-answer table in the project, not "I don't know" answers), each seed is
    a run of one seed group, and the table has one AltPO row over both seeds."""
    import json

    proc, out_json = smoke_bench(tmp_path, "--methods", "altpo", "--r", "", "--seeds", "2")
    made = json.loads(out_json.read_text())
    assert [(r["run"], r["seed"], r["state"], r["eval_state"]) for r in made["runs"]] == [
        ("AltPO", 0, "completed", "completed"), ("AltPO", 1, "completed", "completed")]
    # 10 forget rows x 5 alternates, sampled by the local backend
    assert "alternates: 50 answers, K = 6, source local, in" in proc.stdout, proc.stdout[-3000:]
    altpo = [r for r in made["table"] if r["run"] == "AltPO"]
    assert len(altpo) == 1 and altpo[0]["n"] == 2 and altpo[0]["seeds"] == [0, 1]
