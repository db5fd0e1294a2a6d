"""The Results page's "Does it hold?" table: one row per run with stress results, one column
per attack, each cell the recovery of the forget probability, coloured by how much came
back (docs/stress-tests.md#recovery); collapsed runs greyed and marked, as in the main
table. An HTML table so every cell can say, on hover, the interval or why it is empty. Below
it, "Stress-test runs" queues the attacks for several runs (:func:`ui.stress_job.runs_form`)."""

from __future__ import annotations

import html

import streamlit as st

from sga_core import workbench as wb
from ui.stress_job import runs_form

BANDS = {"held": "#d8f3dc", "partly back": "#fff3bf", "back": "#ffc9c9", "undefined": ""}
PAD = "padding:4px 8px"


def table_html(rows: list[dict], columns: list[str]) -> str:
    head = "".join(f'<th style="{PAD};text-align:left">{html.escape(h)}</th>'
                   for h in ["run", "collapsed", *columns])
    body = []
    for row in rows:
        collapsed = row.get("collapsed") is True
        flag = {True: "collapsed", False: "no"}.get(row.get("collapsed"), "—")
        cells = [f'<td style="{PAD}">{html.escape(str(row["run"]))}</td>',
                 f'<td style="{PAD}">{flag}</td>']
        for c in columns:
            value = row.get(c)
            title = row.get(f"{c} (text)") or "not run"
            if row.get(f"{c} (detail)"):
                title += "\n" + row[f"{c} (detail)"]
            band = wb.recovery_band(value) if f"{c} (text)" in row else "undefined"
            colour = "" if collapsed else BANDS[band]
            style = f"{PAD};background:{colour}" if colour else PAD
            text = "—" if value is None else f"{value:.2f}"
            cells.append(f'<td data-col="{html.escape(c)}" data-band="{band}" '
                         f'title="{html.escape(title)}" style="{style}">{text}</td>')
        muted = ' style="color:#888"' if collapsed else ""
        body.append(f'<tr data-run="{html.escape(str(row["run"]))}"{muted}>'
                    + "".join(cells) + "</tr>")
    return ("<div style='overflow-x:auto'><table style='border-collapse:collapse;"
            "font-size:0.9rem'><thead><tr>" + head + "</tr></thead><tbody>" + "".join(body)
            + "</tbody></table></div>")


def show_stress_table(rows: list[dict], root, kind: str | None = None) -> None:
    """The section under its heading: the table, or how to make one (``kind``: the
    project's data kind, whose attacks are preselected)."""
    st.subheader("Does it hold?")
    table, columns = wb.stress_table(rows, root)
    if not table:
        st.caption("No stress tests yet. \"Stress-test runs\" below (or Stress-test on the "
                   "Runs page, or `python -m sga_core stress RUN --queue --attacks "
                   f"{','.join(wb.default_attacks(kind))}`) attacks the runs' "
                   "models as queued jobs and saves the results beside their evaluations "
                   "(docs/stress-tests.md).")
        runs_form(rows, root, kind)
        return
    st.caption("Recovery = the share of the gap between the unlearned model and the Original "
               "that an attack closes, on the forget answers' probability: **0 = the "
               "forgetting held** (green, < 0.25), **1 = all back** (red, ≥ 0.75), amber "
               "between; below 0 the attack moved the model further from the Original; — = "
               "undefined (hover for why: e.g. no gap to close). The Original is the model "
               "each run was unlearned from (its config's model). Hover a cell for its "
               "interval over seeds and the probabilities it is made of: with a small gap "
               "(an Original that never learned the facts) the ratio is noise. Collapsed "
               "runs are greyed: forgetting that \"holds\" in a destroyed model means "
               "nothing. The probe's ends are its own: the same probe read on the Retained "
               "model (0) and on the Original (1), not the models' outputs.")
    st.html(table_html(table, columns))
    runs_form(rows, root, kind)
