"""The Results page's table, drawn so that a reader cannot misread it: every missing value
is "—" with its reason on hover, each unlearning run carries a collapse flag (its reason on
hover, the rule above the table), the best value of each column is marked only among runs
that did not collapse, and collapsed runs are greyed. An HTML table (``st.dataframe`` has no
per-cell hover text); every value in it is escaped."""

from __future__ import annotations

import html

import streamlit as st

from sga_core import workbench as wb
from ui import forms
from ui.measurable import stamp

BEST = "font-weight:bold;background:#d8f3dc"
MUTED = "color:#888"
SUBSET = "color:#888;font-size:0.8em;white-space:nowrap"  # "(3 of 10 rows)" after a value
HOVER = "border-bottom:1px dotted #888;cursor:help"
PAD = "padding:4px 8px"  # as the headers: neighbouring cells never touch
RUN_WIDTH = ("max-width:28ch;overflow:hidden;text-overflow:ellipsis;white-space:nowrap")
REFS = ("Original", "Retained")


def _cell(text: str, col: str, title: str | None = None, style: str = "",
          rows: str | None = None) -> str:
    """A cell; ``rows``: the row subset the value was computed on ("3 of 10 rows"), shown
    after it in small grey type."""
    attrs = f' data-col="{html.escape(col)}"'
    if title:
        attrs += f' title="{html.escape(title)}"'
        style = f"{style};{HOVER}" if style else HOVER
    attrs += f' style="{PAD};{style}"' if style else f' style="{PAD}"'
    note = f' <span style="{SUBSET}">({html.escape(rows)})</span>' if rows else ""
    return f"<td{attrs}>{html.escape(text)}{note}</td>"


def _run_cell(name: str) -> str:
    """A run's name on one line, cut with an ellipsis where it is long; the whole name on
    hover (a long name ran into the method column)."""
    return (f'<td data-col="run" title="{html.escape(name)}" style="{PAD};{RUN_WIDTH}">'
            f"{html.escape(name)}</td>")


def _collapse_cell(row: dict) -> str:
    if row["run"] in REFS:
        return _cell("", "collapsed", "a reference model, not an unlearning run")
    flag = row.get("collapsed")
    text = {True: "collapsed", False: "no"}.get(flag, "—")
    return _cell(text, "collapsed", row.get("collapsed (why)"),
                 "color:#b00020;font-weight:bold" if flag else "")


@st.cache_data(show_spinner=False, max_entries=32)
def _best(rows: list[dict], kind: str, skip: tuple, root: str | None, key: tuple) -> dict:
    return wb.best_values(rows, kind, skip, root)


def best_values(rows: list[dict], kind: str, skip=(), root=None) -> dict:
    """:func:`sga_core.report.ranking.best_values`, cached until a run's evaluation
    changes (its paired comparisons read every run's per-row values)."""
    key = stamp(root, [r for r in rows if r.get("run_id")]) if root is not None else ()
    return _best(rows, kind, tuple(skip), None if root is None else str(root), key)


def table_html(rows: list[dict], specs, kind: str, extra: list[str] = (),
               rank: bool = True, skip=(), root=None) -> str:
    """The table as HTML: run, method, r, K, collapsed, then each metric column, then the
    ``extra`` lm-eval task columns (accuracy, higher is better). ``rank`` False: no value is
    marked best (the experiment cannot measure forgetting); ``skip``: the labels of columns
    that get no best (:func:`sga_core.report.measurable.unranked`); ``root``: the runs
    folder (a best must beat the others beyond their paired intervals)."""
    best = best_values(rows, kind, skip, root) if rank else {}
    head = ["run", "method", "r", "K", "collapsed"] + [c.label for c in specs] + list(extra)
    helps = {c.label: f"{c.help} ({wb.DIRECTIONS[c.direction]})" for c in specs}
    helps["collapsed"] = wb.collapse_rule(kind)
    helps.update({h: f"lm-evaluation-harness task {h}: accuracy (higher is better)"
                  for h in extra})
    ths = "".join(f'<th title="{html.escape(helps.get(h, h))}" style="text-align:left;'
                  f'padding:4px 8px">{html.escape(h)}</th>' for h in head)
    body = []
    for row in rows:
        ref, collapsed = row["run"] in REFS, row.get("collapsed") is True
        cells = [_run_cell(str(row["run"])), _cell(str(row.get("method") or "—"), "method"),
                 _cell("—" if row.get("r") is None else f"{row['r']:g}", "r"),
                 _cell("—" if row.get("K") is None else str(int(row["K"])), "K"),
                 _collapse_cell(row)]
        for c in specs:
            value = row.get(c.label)
            if value is None:
                cells.append(_cell("—", c.label, row.get(f"{c.label} (why)") or
                                   "no value"))
                continue
            is_best = not ref and not collapsed and best.get(c.label) == value
            note = row.get(f"{c.label} (note)")  # a value that does not mean what it says
            cells.append(_cell(f"{value:.4g}" + (" ⚠" if note else ""), c.label, note,
                               BEST if is_best else "", row.get(f"{c.label} (rows)")))
        for label in extra:
            value = row.get(label)
            cells.append(_cell("—" if value is None else f"{value:.4g}", label,
                               row.get(f"{label} (why)") or ("no value" if value is None
                                                            else None)))
        style = f' style="{MUTED}"' if collapsed else ""
        body.append(f'<tr data-run="{html.escape(str(row["run"]))}"{style}>' +
                    "".join(cells) + "</tr>")
    return ("<div style='overflow-x:auto'><table style='border-collapse:collapse;"
            "font-size:0.9rem'><thead><tr>" + ths + "</tr></thead><tbody>" + "".join(body) +
            "</tbody></table></div>")


def show_results_table(rows: list[dict], specs, kind: str, extra: list[str] = (),
                       rank: bool = True, skip: dict | None = None, root=None) -> None:
    skip = skip or {}
    best = ("Best value of each column in **bold green**, among runs that did not collapse, "
            "where it beats every other beyond noise (by more than the metric's negligible "
            "gap, and by its paired 95% interval where the runs share rows; on a "
            "forget-side metric it must beat the Original too)" +
            (" (none on " + ", ".join(skip) + ": they cannot show forgetting here, see the "
             "verdict above)" if skip else "") + ". "
            if rank else "No value is marked best: forgetting cannot be measured here. ")
    st.caption("One row per evaluated run, with the Original (before unlearning) and Retained "
               "(never saw the forget set: the target) models first. " + best + "**" +
               wb.collapse_rule(kind).replace(" = ", "** = ", 1) + "; collapsed rows are "
               "greyed. — = cannot be computed: hover it for the reason (and the column "
               "headers for what each metric means). (n of N rows) after a value: it was "
               "computed on an evenly spaced subset of the rows (eval.max_rows). ⚠ after a "
               "value: it does not mean what its column says here; hover it for why.")
    st.html(table_html(rows, specs, kind, extra, rank, skip, root))


def shown_columns(project: str, rows: list[dict], kind: str) -> list:
    """The columns a person chose to show beside the table's own (each attack's AUC and
    PrivLeak, each set's prob_mean truth ratio, a multiple-choice set's accuracy: those
    some row has), kept per project
    across page switches; none at first."""
    options = {c.label: c for c in wb.optional_columns(rows, kind)}
    if not options:
        return []
    key = f"results.shown.{project}"
    forms.prepare(key)
    if key not in st.session_state:  # a kept choice, less what these rows no longer have
        st.session_state[key] = [x for x in forms.chosen(key) or [] if x in options]
    picked = st.multiselect(
        "more columns", list(options), key=key,
        help="Show or hide each membership-inference attack's AUC and PrivLeak (LOSS, "
             "ZLib, Min-K%, Min-K%++, Reference, GradNorm), each set's prob_mean truth "
             "ratio and each multiple-choice set's accuracy (MMLU as a utility set) beside "
             "the table's columns (no best value is marked in them).")
    forms.remember(key, list(picked))
    return [options[label] for label in picked]
