"""``results``, ``compare`` and ``probe``: the read side from the shell, the numbers the
Results and Token probabilities pages show, computed by the same library functions
(:mod:`sga_core.report`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from sga_core.params import ConfigError
from sga_core.text import printable

FORMATS = ("table", "csv", "json")
MISSING = "-"  # a value that could not be computed (the pages show a dash too)


def _fmt(value, digits: int = 4) -> str:
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def text_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """Lines of a left-aligned table, columns two spaces apart (what a terminal would act
    on, from a run's name or a token, written escaped)."""
    headers = [printable(h) for h in headers]
    rows = [[printable(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    return ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip()
            for line in [headers, *rows]]


def _print_lines(lines: list[str]) -> None:
    for line in lines:
        print(printable(line))


def _print_json(data) -> None:
    print(json.dumps(data, indent=1, default=str, allow_nan=True))


# --- results -------------------------------------------------------------------------------

def chosen_project(name: str | None, workspace: str | None):
    """The project ``--project`` names; without it, the workspace's only project."""
    from sga_core.projects import list_projects, load_project, workspace_root

    if name:
        return load_project(name, workspace)  # ProjectError: "no project named ..."
    names = list_projects(workspace)
    if len(names) == 1:
        return load_project(names[0], workspace)
    if not names:
        raise ConfigError(f"no projects in {workspace_root(workspace)}: create one first "
                          "(python -m sga_core project create / import)")
    raise ConfigError(f"give --project: {workspace_root(workspace)} holds {len(names)} "
                      f"projects ({', '.join(names)})")


def results_lines(rows: list[dict], kind: str, verdict: dict | None = None,
                  root=None, more: list | None = None) -> list[str]:
    """The Results table as text: whether forgetting can be measured (``verdict``: the
    Results page's :func:`~sga_core.report.measurable.table_verdict`, in its words), run,
    method, r, K, collapsed, every metric column (the best value of each among runs that
    did not collapse marked ``*`` where it beats every other beyond noise (``root``: the runs
    folder, for their paired intervals; :mod:`sga_core.report.ranking`), unless the verdict
    says forgetting cannot be measured;
    "(3 of 10 rows)" after a value computed on a row subset, ``eval.max_rows``), the extra
    lm-eval columns; then what could not be computed and why, the collapse rule,
    and the table pooled over seeds when a configuration has several. ``more``: the
    columns shown on request (:func:`~sga_core.report.columns.optional_columns`: each
    attack's AUC and PrivLeak, prob_mean truth ratios) after the table's own, never
    starred (as on the page), and pooled over seeds with the rest."""
    from sga_core.report.collapse import collapse_rule
    from sga_core.report.columns import REFERENCE_ROWS, extra_columns, row_columns
    from sga_core.report.measurable import can_rank, unranked, verdict_text
    from sga_core.report.ranking import best_values
    from sga_core.report.seeds import group_display, has_seed_groups
    from sga_core.report.table import protocol_note

    specs = row_columns(rows, kind) + list(more or [])
    extra = extra_columns(rows)
    metrics = [c.label for c in specs] + extra
    rank, skip = can_rank(verdict), unranked(verdict)
    best = best_values(rows, kind, skip, root) if rank else {}
    body = []
    for row in rows:
        ref, collapsed = row["run"] in REFERENCE_ROWS, row.get("collapsed") is True
        flag = "" if ref else {True: "collapsed", False: "no"}.get(row.get("collapsed"),
                                                                  MISSING)
        cells = [str(row["run"]), str(row.get("method") or MISSING),
                 MISSING if row.get("r") is None else f"{row['r']:g}",
                 MISSING if row.get("K") is None else str(int(row["K"])), flag]
        for label in metrics:
            value = row.get(label)
            star = "*" if (value is not None and not ref and not collapsed
                           and label in best and best[label] == value) else ""
            subset = row.get(f"{label} (rows)")  # eval.max_rows: "(3 of 10 rows)"
            warn = "!" if value is not None and row.get(f"{label} (note)") else ""
            cells.append(_fmt(value) + star + warn + (f" ({subset})" if subset else ""))
        body.append(cells)
    lines = []
    note = protocol_note(rows)
    if note:
        lines.append(f"protocol: {note}")
    if verdict is not None:
        lines.append(f"verdict: {verdict_text(verdict)}")
    lines += text_table(["run", "method", "r", "K", "collapsed", *metrics], body)
    lines.append(("* the best value of the column among runs that did not collapse, where it "
                  "beats every other beyond noise (on a forget-side metric, the Original too)" +
                  (f" (none on {', '.join(skip)}: they cannot show forgetting here)"
                   if skip else "") + "; " if rank
                  else "no value is marked best: forgetting cannot be measured here; ") +
                 f"{MISSING} = cannot be computed" +
                 ("; (n of N rows) = computed on an evenly spaced subset (eval.max_rows)"
                  if any(f"{c} (rows)" in r for r in rows for c in metrics) else "") +
                 ("; ! = the value does not mean what its column says (note below)"
                  if any(f"{c} (note)" in r for r in rows for c in metrics) else ""))
    lines.append(collapse_rule(kind))
    for row in rows:
        for label in metrics:
            if f"{label} (why)" in row:
                lines.append(f"why {row['run']}: {label}: {row[f'{label} (why)']}")
            if f"{label} (note)" in row:  # ! after the value
                lines.append(f"note {row['run']}: {label}: {row[f'{label} (note)']}")
        why = row.get("collapsed (why)") or ""
        if row.get("collapsed") is True and why or why.startswith("cannot tell"):
            lines.append(f"collapsed {row['run']}: {why}")
    if has_seed_groups(rows):
        pooled = group_display(rows, kind, list(more or []))
        heads = list(pooled[0])
        lines += ["", "Per configuration, over seeds (mean [95% t-interval] sd; n seeds):"]
        lines += text_table(heads, [[_fmt(g.get(h), 3) if h in ("r", "K") else
                                     (MISSING if g.get(h) in (None, "") else str(g[h]))
                                     for h in heads] for g in pooled])
    return lines


def cmd_results(args) -> int:
    from sga_core.report.export import export_csv, export_rows
    from sga_core.report.table import results_table
    from sga_core.runs.folder import runs_root

    project = chosen_project(args.project, args.workspace)
    root = runs_root(args.runs_dir)
    rows = results_table(project, root, project.kind)
    if args.format == "csv":
        sys.stdout.write(export_csv(rows, project.kind) if rows else "")
        return 0
    if args.format == "json":
        _print_json(export_rows(rows, project.kind))
        return 0
    print(printable(f"project {project.name} ({project.kind}), runs in {root}"))
    if not rows:
        print("no evaluated run of this project yet (runs are evaluated when they complete; "
              "python -m sga_core eval RUN evaluates one)")
        return 0
    from sga_core.report.measurable import table_verdict

    more = chosen_columns(rows, project.kind, args.columns)
    _print_lines(results_lines(rows, project.kind, table_verdict(rows, root), root, more))
    return 0


def chosen_columns(rows: list[dict], kind: str, asked: str | None) -> list:
    """``--columns``: the optional columns named (metric names or labels, or ``all``), of
    those these rows have; a name they do not have is an error listing the ones they do."""
    from sga_core.report.columns import optional_columns

    if not asked:
        return []
    have = optional_columns(rows, kind)
    names = [n.strip() for n in asked.split(",") if n.strip()]
    if names == ["all"]:
        return have
    by = {**{c.name: c for c in have}, **{c.label: c for c in have}}
    unknown = [n for n in names if n not in by]
    if unknown:
        offered = ", ".join(c.name for c in have) or "none (no run has them yet)"
        raise ConfigError(f"--columns {', '.join(unknown)}: not a column these runs have; "
                          f"they have: {offered}, or all")
    return list(dict.fromkeys(by[n] for n in names))


# --- compare -------------------------------------------------------------------------------

def evaluated_run(run_id: str, root: Path) -> Path:
    """The folder of an evaluated run of the runs folder, else a one-line error naming it."""
    from sga_core.runs.folder import EVAL_DIR, SUMMARY, RunFolder, rel, run_path

    run_dir = run_path(run_id, root)  # a plain run id, never a path outside the folder
    if not RunFolder(run_dir).exists():
        raise ConfigError(f"no run {run_id!r} in {root}")
    if RunFolder(run_dir).summary() is None:  # Damaged (a ValueError) names a broken file
        raise ConfigError(f"run {run_id!r} has no evaluation yet ({rel(EVAL_DIR, SUMMARY)}); "
                          f"evaluate it first: python -m sga_core eval {run_id}")
    return run_dir


def compare_lines(out: dict, a: str, b: str) -> list[str]:
    from sga_core.report.measurable import difference

    rows = [[r["label"], _fmt(r["a"]), _fmt(r["b"]), _fmt(r["diff"], 3),
             f"[{_fmt(r['lo'], 3)}, {_fmt(r['hi'], 3)}]", str(r["n"]),
             difference(r).replace("≠", "!=")] for r in out["rows"]]
    lines = [f"A = {a}", f"B = {b}"]
    lines += text_table(["metric", "A", "B", "A - B", "95% interval", "rows", "verdict"], rows)
    lines.append("Paired bootstrap over the rows both runs evaluated (resampled together); "
                 "'A != B': the interval of the difference excludes 0; 'negligibly': it "
                 "lies wholly inside the metric's negligible gap.")
    if out["mismatched"]:
        n = out["mismatched"]
        lines.append(f"{n} row{'s' if n != 1 else ''} differ{'s' if n == 1 else ''} in their "
                     "question and are left out.")
    return lines


def cmd_compare(args) -> int:
    from sga_core.report.uncertainty import compare_runs
    from sga_core.runs.folder import runs_root

    root = runs_root(args.runs_dir)
    if args.run_a == args.run_b:
        raise ConfigError(f"compare: give two different runs (both are {args.run_a!r})")
    run_a, run_b = evaluated_run(args.run_a, root), evaluated_run(args.run_b, root)
    out = compare_runs(run_a, run_b)
    if args.format == "json":
        _print_json({"a": args.run_a, "b": args.run_b, **out})
        return 0
    if not out["rows"]:
        raise ConfigError(f"runs {args.run_a!r} and {args.run_b!r} share no evaluated rows "
                          "(different data?)")
    _print_lines(compare_lines(out, args.run_a, args.run_b))
    return 0


# --- probe ---------------------------------------------------------------------------------

def probe_view(run_dir: Path, set_name: str = "forget", row: int | None = None,
               token: str | None = None) -> list[dict]:
    """What the Token probabilities page shows of one run, per row: its answer ``tokens``
    and their probabilities under the evaluated model (``probs``, ``top``: None when the
    run is not evaluated; the tokens then come from its probes), and with ``token`` its
    ``position`` (where the text starts in the answer), ``p`` under the evaluated model
    and ``steps``: (step, p) across the run's probes. Rows without ``token`` are left out;
    a one-line error when nothing is there."""
    from sga_core.report.run_files import follow_token, token_table, word_token_index
    from sga_core.runs.folder import EVAL_DIR, PROBES, TOKENS, probes, rel

    table = token_table(run_dir, set_name)
    probed: dict[int, list[str]] = {}
    if set_name == "forget":
        for rec in probes(run_dir):
            probed.setdefault(rec["forget_index"], rec["tokens"])
    if not table and not probed:
        raise ConfigError(f"run {run_dir.name!r} has no token probabilities for the "
                          f"{set_name} set: none in {rel(EVAL_DIR, TOKENS)} (written when the "
                          f"run is evaluated) and no probes ({PROBES})")
    indices = sorted(set(table) | set(probed))
    if row is not None:
        if row not in indices:
            raise ConfigError(f"--row {row}: run {run_dir.name!r} has no token "
                              f"probabilities for {set_name} row {row} (rows: "
                              f"{', '.join(map(str, indices))})")
        indices = [row]
    out = []
    for i in indices:
        rec = table.get(i)
        tokens = rec["tokens"] if rec else probed[i]
        view = {"set": set_name, "index": i, "tokens": tokens,
                "probs": rec["probs"] if rec else None, "top": rec.get("top") if rec else None}
        if token is not None:
            pos = word_token_index(tokens, token)
            if pos is None:
                continue
            view.update(token=token, position=pos,
                        p=rec["probs"][pos] if rec and pos < len(rec["probs"]) else None,
                        steps=follow_token(run_dir, i, pos) if set_name == "forget" else [])
        out.append(view)
    if token is not None and not out:
        where = f"row {row}'s answer" if row is not None else f"any {set_name} answer"
        raise ConfigError(f"--token {token!r} is not in {where} of run {run_dir.name!r}")
    return out


def probe_lines(views: list[dict]) -> list[str]:
    lines = []
    for v in views:
        if lines:
            lines.append("")
        answer = "".join(v["tokens"])
        lines.append(f"{v['set']} row {v['index']}: {answer!r}")
        if "token" in v:
            shown = repr(v["tokens"][v["position"]].strip())
            p = ("not evaluated" if v["p"] is None else f"{v['p']:.4g}")
            lines.append(f"p({shown}) at token {v['position']} (where {v['token']!r} "
                         f"starts) under the evaluated model: {p}")
            if v["steps"]:
                lines.append("across training steps (probes):")
                lines += ["  " + ln for ln in text_table(
                    ["step", "p"], [[str(s), f"{p:.4g}"] for s, p in v["steps"]])]
            else:
                lines.append("no probes of this row (set probe rows on the Train page)")
            continue
        if v["probs"] is None:
            lines.append("not evaluated: no probabilities under the evaluated model")
            continue
        top = v["top"] or [None] * len(v["tokens"])
        lines += text_table(
            ["pos", "token", "p", "top-5"],
            [[str(j), repr(t), f"{p:.4g}",
              ", ".join(f"{a!r} {q:.2g}" for a, q in (top[j] or []))]
             for j, (t, p) in enumerate(zip(v["tokens"], v["probs"]))])
    return lines


def layer_lines(views: list[dict]) -> list[str]:
    """``probe --layers``: per row, with one followed token its reading at every layer (the
    logit lens), else one line per answer token: its output probability and rank, and
    where it is top-1."""
    from sga_core.report.layers import layer_words

    lines = []
    for v in views:
        if lines:
            lines.append("")
        lines.append(f"forget row {v['index']}: {''.join(v['tokens'])!r} ({v['lens']} lens, "
                     f"{v['layers']} layers; layer {v['layers']} is the output)")
        if len(v["followed"]) == 1:
            f = v["followed"][0]
            lines.append(f"token {f['position']}: {layer_words(f)}")
            lines += text_table(["layer", "p", "rank", "lens top-1"], [
                [str(k + 1), f"{p:.4g}", str(r), repr(t) if t is not None else MISSING]
                for k, (p, r, t) in enumerate(zip(f["probs"], f["ranks"],
                                                  f["top1"] or [None] * f["layers"]))])
            continue
        lines += text_table(
            ["pos", "token", "p (output)", "rank (output)", "first top-1 layer",
             "top-1 at layers"],
            [[str(f["position"]), repr(f["token"]), f"{f['output_p']:.4g}",
              str(f["last_rank"]), _fmt(f["first_top1"]),
              ",".join(str(k + 1) for k, r in enumerate(f["ranks"]) if r == 1) or MISSING]
             for f in v["followed"]])
    return lines


def cmd_probe(args) -> int:
    from sga_core.runs.folder import RunFolder, run_path, runs_root

    root = runs_root(args.runs_dir)
    run_dir = run_path(args.run_id, root)
    if not RunFolder(run_dir).exists():
        raise ConfigError(f"no run {args.run_id!r} in {root}")
    if args.layers:
        from sga_core.report.layers import layer_views

        if args.set != "forget":
            raise ConfigError("--layers: layer tables are of the forget rows only (no --set "
                              f"{args.set})")
        views = layer_views(run_dir, args.row, args.token)
        if args.format == "json":
            _print_json({"run": args.run_id, "rows": views})
        else:
            _print_lines(layer_lines(views))
        return 0
    views = probe_view(run_dir, args.set, args.row, args.token)
    if args.format == "json":
        _print_json({"run": args.run_id, "rows": views})
        return 0
    _print_lines(probe_lines(views))
    return 0


# ------------------------------------------------------------------------------------------


def add_parsers(sub, argv: list[str] | None = None) -> None:
    """Add this module's commands to the subparsers ``sub``."""
    s = sub.add_parser(
        "results", help="the Results table of a project (the Results page)",
        description="One row per evaluated run of a project (the Original and Retained "
                    "rows first), the columns of the protocols they were evaluated under, "
                    "whether forgetting can be measured (the Results page's verdict), each "
                    "run's collapse flag, the best value of each column (none where "
                    "forgetting cannot be measured), and the table pooled over seeds. "
                    "--format csv/json: the Results page's download (one "
                    "row per seed and one per configuration).")
    s.add_argument("--project", help="project name (default: the workspace's only project)")
    s.add_argument("--format", choices=FORMATS, default="table",
                   help="table: for reading; csv/json: the page's download")
    s.add_argument("--workspace", help="projects folder (default $SGA_WORKSPACE or "
                                       "./workspace)")
    s.add_argument("--runs-dir", help="runs folder (default $SGA_RUNS_DIR or ./runs)")
    s.add_argument("--columns", help="more columns after the table's own, as the page's "
                                     "\"more columns\": metric names (privleak_loss, "
                                     "mia_zlib_auc, forget_truth_ratio_prob_mean, ...) or "
                                     "all (the table format)")
    s.set_defaults(func=cmd_results)

    s = sub.add_parser(
        "compare", help="two evaluated runs compared, with intervals (the Results page)",
        description="Run A minus run B for each per-row metric on the rows both evaluated, "
                    "with a 95% paired bootstrap interval (2000 resamples) and whether it "
                    "excludes 0: the Results page's 'compare two runs'.")
    s.add_argument("run_a", metavar="RUN_A", help="an evaluated run's id")
    s.add_argument("run_b", metavar="RUN_B", help="another evaluated run's id (same rows)")
    s.add_argument("--format", choices=("table", "json"), default="table",
                   help="json: every number unrounded")
    s.add_argument("--runs-dir", help="runs folder (default $SGA_RUNS_DIR or ./runs)")
    s.set_defaults(func=cmd_compare)

    s = sub.add_parser(
        "probe", help="a run's token probabilities (the Token probabilities page)",
        description="Each answer token's probability under a run's evaluated model (the "
                    "token table its evaluation wrote), and with --token the probability of "
                    "that token under the evaluated model and across the training steps the "
                    "run probed (its probe rows, set with training.probe_rows). --layers: "
                    "the same tokens read at every layer (the layer view).")
    s.add_argument("run_id", metavar="RUN", help="a run's id")
    s.add_argument("--token", metavar="TEXT",
                   help="follow the answer token where TEXT starts (e.g. French); rows "
                        "whose answer lacks it are left out")
    s.add_argument("--row", type=int, help="only this row (0-based; default: every row)")
    s.add_argument("--set", choices=("forget", "retain"), default="forget",
                   help="which set's rows (probes follow forget rows only)")
    s.add_argument("--layers", action="store_true",
                   help="the layer view: each answer token read at every layer by the logit "
                        "lens (eval/layers.jsonl): its output probability and rank and the "
                        "layers where it is top-1; with --token, that token's probability, "
                        "rank and the lens's top-1 at every layer")
    s.add_argument("--format", choices=("table", "json"), default="table",
                   help="json: every number unrounded")
    s.add_argument("--runs-dir", help="runs folder (default $SGA_RUNS_DIR or ./runs)")
    s.set_defaults(func=cmd_probe)
