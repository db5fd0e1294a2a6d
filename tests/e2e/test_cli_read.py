"""The read side from the shell: ``results``, ``compare`` and ``probe`` print the numbers the
Results and Token probabilities pages show, computed by the same library functions, and a
run or project that is not there is one clear line and a non-zero exit.

Two runs are really trained and evaluated (the tiny model, 2 steps, probing the French row);
the Original and a seed group are run folders with written summaries (no training needed for
the table's pooling and collapse flags)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sga_core.report.export import export_csv, export_rows
from sga_core.report.measurable import difference
from sga_core.report.run_files import follow_token, token_table, word_token_index
from sga_core.report.table import results_table
from sga_core.report.uncertainty import compare_runs
from sga_core.runs.prepared_ids import original_id
from tests.helpers.cli import sga_cli
from tests.helpers.own_data import fake_run, metrics, own_project, tofu_files, write_summary

pytestmark = pytest.mark.slow
FRENCH_ROW = 4  # "Ana Ruiz writes all of her books in French."


def trained(project, runs: Path, model: Path, run_id: str, lr: float) -> Path:
    """A run of ``project`` trained 2 steps with the tiny model and evaluated in-process,
    probing the French row at every step."""
    from sga_core.projects.training import build_config
    from sga_core.runs.create import create_run
    from sga_core.runs.launch import run_foreground

    cfg = build_config(project, method="ga", method_args={}, model=str(model), run_id=run_id,
                       training={"max_steps": 2, "batch_size": 3, "lr": lr, "eval_nll": False,
                                 "probe_rows": [FRENCH_ROW], "probe_every": 1},
                       launch={"device": "cpu"},
                       eval_cfg={"max_new_tokens": 4, "max_retain_rows": 4})
    run_dir = create_run(cfg, runs)
    status = run_foreground(run_dir, echo=lambda line: None, poll_s=0.2)
    assert status["state"] == "completed", (run_dir / "train.log").read_text()[-3000:]
    assert status.get("eval_state") == "completed", (run_dir / "train.log").read_text()[-3000:]
    return run_dir


def seeded(project, runs: Path, run_id: str, seed: int, values: dict) -> Path:
    """A run of the seed group ``g1`` with a written summary."""
    from sga_core.normals.idk import idk_normals
    from sga_core.projects.training import build_config
    from sga_core.runs.create import create_run
    from sga_core.runs.status import write_run

    normals = project.path / "idk.jsonl"
    if not normals.exists():
        idk_normals(len(project.forget()), 4).save(normals)
    cfg = build_config(project, method="sga", method_args={"r": -0.8, "k": 4},
                       training={"max_steps": 2, "seed": seed}, launch={},
                       model="embedded:smollm2", run_id=run_id, normals=str(normals),
                       eval_cfg={"enabled": False})
    cfg.group = "g1"
    run_dir = create_run(cfg, runs)
    write_run(run_dir, "completed", step=2, total_steps=2)
    write_summary(run_dir, values)
    return run_dir


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_model_dir):
    base = tmp_path_factory.mktemp("read")
    ws, runs = base / "ws", base / "runs"
    project = own_project(ws, tofu_files(base / "files"))
    fake_run(runs, project, original_id(project.name), method="finetune",
             metrics=metrics(fq=0.01, mu=0.5, r_rouge=0.9, r_prob=0.9))
    seeded(project, runs, "sga-seed-0", 0, metrics(fq=0.40, r_rouge=0.85))
    seeded(project, runs, "sga-seed-1", 1, metrics(fq=0.58, r_rouge=0.80))
    fake_run(runs, project, "broken", r=-2.0,
             metrics=metrics(fq=0.9, r_rouge=0.2, r_prob=0.01))  # collapsed
    fake_run(runs, project, "not-evaluated")
    a = trained(project, runs, tiny_model_dir, "tiny-a", 1e-3)
    b = trained(project, runs, tiny_model_dir, "tiny-b", 5e-2)
    return {"base": base, "ws": ws, "runs": runs, "project": project, "a": a, "b": b}


def cli(world, *args: str):
    return sga_cli(*args, "--runs-dir", str(world["runs"]), cwd=world["base"])


def results(world, *args: str):
    return cli(world, "results", "--workspace", str(world["ws"]), *args)


def one_error_line(res, *words: str) -> None:
    assert res.returncode != 0, res.stdout
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert "Traceback" not in res.stderr
    for w in words:
        assert w in lines[0], lines[0]


# --- results ------------------------------------------------------------------------------

def test_results_json_and_csv_are_the_results_pages_download(world):
    project = world["project"]
    rows = results_table(project, world["runs"], project.kind)
    assert [r["run_id"] for r in rows][0] == original_id(project.name)  # the Original first
    assert {"tiny-a", "tiny-b", "sga-seed-0", "sga-seed-1", "broken"} <= \
        {r["run_id"] for r in rows}

    res = results(world, "--project", project.name, "--format", "json")
    assert res.returncode == 0, res.stderr
    expected = json.loads(json.dumps(export_rows(rows, project.kind), default=str))
    assert json.loads(res.stdout) == expected
    levels = [r["level"] for r in expected]
    assert "group" in levels and "seed" in levels  # pooled over seeds, as the download

    res = results(world, "--format", "csv")  # the workspace's only project
    assert res.returncode == 0, res.stderr
    assert res.stdout == export_csv(rows, project.kind)


def test_results_table_shows_rows_flags_best_values_and_the_pooled_seeds(world):
    project = world["project"]
    rows = results_table(project, world["runs"], project.kind)
    res = results(world, "--project", project.name)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.startswith("run "))
    assert lines[header].split()[:5] == ["run", "method", "r", "K", "collapsed"]
    body = lines[header + 1:header + 1 + len(rows)]
    for row, line in zip(rows, body):  # same rows, same order as the page
        assert line.startswith(row["run"]), (row["run"], line)
        fq = row.get("FQ")
        assert (f"{fq:.4g}" if fq is not None else "-") in line, (row["run"], line)
    by_id = dict(zip((r["run_id"] for r in rows), body))
    broken = next(r for r in rows if r["run_id"] == "broken")
    assert broken["collapsed"] is True and " collapsed " in by_id["broken"]
    assert "*" not in by_id["broken"]  # a collapsed run is never best
    assert "collapsed = " in res.stdout  # the rule
    assert f"collapsed {broken['run']}: {broken['collapsed (why)']}" in res.stdout
    assert "0.58*" in by_id["sga-seed-1"]  # the best FQ among runs that did not collapse
    pooled = lines.index("Per configuration, over seeds (mean [95% t-interval] sd; n seeds):")
    group = next(ln for ln in lines[pooled:] if ln.startswith("sga r=-0.8 "))
    assert " 2 " in group and "0, 1" in group  # n and the seeds
    assert "0.49 [" in group  # FQ's mean over the two seeds, with its interval


# --- compare ------------------------------------------------------------------------------

def test_compare_prints_the_paired_comparison_of_the_results_page(world):
    out = compare_runs(world["a"], world["b"])
    assert out["rows"], "the two trained runs share evaluated rows"

    res = cli(world, "compare", "tiny-a", "tiny-b", "--format", "json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == json.loads(json.dumps({"a": "tiny-a", "b": "tiny-b",
                                                            **out}))

    res = cli(world, "compare", "tiny-a", "tiny-b")
    assert res.returncode == 0, res.stderr
    assert "A = tiny-a" in res.stdout and "B = tiny-b" in res.stdout
    for r in out["rows"]:
        line = next(ln for ln in res.stdout.splitlines() if ln.startswith(r["label"] + " "))
        assert f"{r['diff']:.3g}" in line and f"[{r['lo']:.3g}, {r['hi']:.3g}]" in line
        assert line.rstrip().endswith(difference(r).replace("≠", "!="))
        assert r["clear"] == (not line.rstrip().endswith("within noise"))


# --- probe --------------------------------------------------------------------------------

def test_probe_follows_a_token_as_the_token_probabilities_page_does(world):
    run = world["a"]
    rec = token_table(run)[FRENCH_ROW]
    pos = word_token_index(rec["tokens"], "French")
    assert pos is not None
    steps = follow_token(run, FRENCH_ROW, pos)
    assert [s for s, _ in steps] == [0, 1, 2] or len(steps) >= 2  # probed while training

    res = cli(world, "probe", "tiny-a", "--token", "French", "--format", "json")
    assert res.returncode == 0, res.stderr
    shown = json.loads(res.stdout)["rows"]
    assert [v["index"] for v in shown] == [FRENCH_ROW]  # only the row whose answer has it
    assert shown[0]["position"] == pos and shown[0]["p"] == rec["probs"][pos]
    assert [tuple(s) for s in shown[0]["steps"]] == steps

    res = cli(world, "probe", "tiny-a", "--token", "French")
    assert res.returncode == 0, res.stderr
    assert f"under the evaluated model: {rec['probs'][pos]:.4g}" in res.stdout
    for step, p in steps:
        assert any(ln.split() == [str(step), f"{p:.4g}"] for ln in res.stdout.splitlines())


def test_probe_without_a_token_prints_each_answer_tokens_probability(world):
    run = world["b"]
    table = token_table(run)
    res = cli(world, "probe", "tiny-b", "--row", "1")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("forget row 1: ")
    for j, (tok, p) in enumerate(zip(table[1]["tokens"], table[1]["probs"])):
        assert any(ln.startswith(f"{j} ") and repr(tok) in ln and f"{p:.4g}" in ln
                   for ln in lines), (j, tok)
    res = cli(world, "probe", "tiny-b", "--format", "json")
    assert [v["index"] for v in json.loads(res.stdout)["rows"]] == sorted(table)


def test_probe_layers_prints_the_layer_view_the_evaluation_wrote(world):
    """``probe RUN --layers``: the trained run's evaluation wrote its layer table (the
    logit lens); with --token the followed token's reading at every layer, the last being
    the output (the token table's probability); without, one line per answer token."""
    from sga_core.report.layers import layer_table, layer_words

    run = world["a"]
    rec, tokens = layer_table(run)[FRENCH_ROW], token_table(run)[FRENCH_ROW]
    pos = word_token_index(tokens["tokens"], "French")
    res = cli(world, "probe", "tiny-a", "--layers", "--token", "French", "--format", "json")
    assert res.returncode == 0, res.stderr
    (view,) = json.loads(res.stdout)["rows"]
    (f,) = view["followed"]
    assert view["index"] == FRENCH_ROW and view["layers"] == 2 and f["position"] == pos
    assert f["probs"] == [layer[pos] for layer in rec["probs"]]
    assert abs(f["output_p"] - tokens["probs"][pos]) < 1e-5  # the last layer: the output

    res = cli(world, "probe", "tiny-a", "--layers", "--token", "French")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == (f"forget row {FRENCH_ROW}: {''.join(rec['tokens'])!r} (logit lens, 2 "
                        "layers; layer 2 is the output)")
    assert lines[1] == f"token {pos}: {layer_words(f)}"
    assert lines[2].split() == ["layer", "p", "rank", "lens", "top-1"]
    for k in range(2):
        assert lines[3 + k].split()[:3] == [str(k + 1), f"{f['probs'][k]:.4g}",
                                            str(f["ranks"][k])]

    res = cli(world, "probe", "tiny-a", "--layers", "--row", str(FRENCH_ROW))
    assert res.returncode == 0, res.stderr
    rows = res.stdout.splitlines()[2:]
    assert len(rows) == len(rec["tokens"])
    assert rows[pos].split()[0] == str(pos) and f"{f['output_p']:.4g}" in rows[pos]
    one_error_line(cli(world, "probe", "not-evaluated", "--layers"), "no layer table",
                   "eval/layers.jsonl")
    one_error_line(cli(world, "probe", "tiny-a", "--layers", "--set", "retain"),
                   "forget rows only")


# --- errors -------------------------------------------------------------------------------

def test_unknown_runs_and_projects_are_one_line_and_a_non_zero_exit(world):
    one_error_line(results(world, "--project", "nope"), "no project named 'nope'")
    one_error_line(cli(world, "compare", "tiny-a", "ghost"), "no run 'ghost'")
    one_error_line(cli(world, "compare", "tiny-a", "not-evaluated"),
                   "'not-evaluated' has no evaluation", "sga_core eval not-evaluated")
    one_error_line(cli(world, "compare", "tiny-a", "tiny-a"), "two different runs")
    one_error_line(cli(world, "compare", "tiny-a", "../x"), "run id '../x'")
    one_error_line(cli(world, "probe", "ghost"), "no run 'ghost'")
    one_error_line(cli(world, "probe", "not-evaluated"), "no token probabilities")
    one_error_line(cli(world, "probe", "tiny-a", "--token", "Zanzibar"),
                   "'Zanzibar' is not in any forget answer")
    one_error_line(cli(world, "probe", "tiny-a", "--row", "99"), "row 99")


def test_results_needs_a_project_name_when_the_workspace_has_several(world, tmp_path):
    from sga_core.projects import create_demo_project

    ws = tmp_path / "ws"
    own_project(ws, tofu_files(tmp_path / "files"))
    create_demo_project(root=ws)
    res = sga_cli("results", "--workspace", str(ws), "--runs-dir", str(world["runs"]),
                  cwd=tmp_path)
    one_error_line(res, "give --project", "demo", "mine")
    empty = sga_cli("results", "--workspace", str(tmp_path / "none"), cwd=tmp_path)
    one_error_line(empty, "no projects in")
