"""Token probabilities (the paper's Figure 3): how the probability of each answer token (say
"French"), or of each token of a forget passage's continuation (say " Mitsotakis"), moves
under the original model and each run, and across training steps."""

from __future__ import annotations

import html

import plotly.graph_objects as go
import streamlit as st

from sga_core import workbench as wb
from ui.charts import step_chart
from ui.context import require_project
from ui.damaged import unless_damaged, warn_damaged
from ui.layers import show_layer_view
from ui.show import plain
from ui.tokens import attacked_variants, reference_text, row_title, side_by_side, tokens_html

st.title("Token probabilities")
project = require_project()
root = wb.runs_root()
forget = project.forget()
everything = wb.project_runs(project, root)
warn_damaged(everything)
runs = [r for r in everything if wb.RunFolder(r["path"]).tokens_path.exists()]
original = root / (wb.reference_row_id(project, "original", root) or "")  # Prepare's or published
without = [r["run_id"] for r in everything if r["run_id"] not in {x["run_id"] for x in runs}
           and wb.RunFolder(r["path"]).summary_path.exists()]
if without:  # evaluated before text evaluations wrote token tables
    st.caption(f"{wb.plural(len(without), 'evaluated run')} without token tables (evaluated "
               "before they were written for text).")
    if st.button("Re-evaluate them (queued jobs)", key="tokens.reeval"):
        for run_id in without:
            try:
                wb.request_eval(root / run_id)
            except ValueError as exc:  # its evaluation could only fail: said, not queued
                st.warning(str(exc))
        st.rerun()
if not runs:
    st.info("No evaluated runs with token tables yet: runs are evaluated when they complete "
            "(the prepared Original model too).")
    st.stop()


starred = project.starred_rows()  # the French-style rows (the paper's Figure 3 example)
first = {}
with unless_damaged(runs[0]["run_id"]):  # rows as the token tables have them (a text
    first = wb.token_table(root / runs[0]["run_id"])  # project's own forget passages too)
indices = sorted(first) or list(range(len(forget)))


def row_label(i: int) -> str:
    q = row_title(forget[i] if i < len(forget) else None, first.get(i))
    return f"{i}: {q[:90]}{' ★' if i in starred else ''}"


row = st.selectbox("forget row" + (" (★: a French-style fact, the paper's Figure 3 example)"
                                   if starred else ""),
                   indices, format_func=row_label, key="tokens.row",
                   index=indices.index(starred[0]) if starred and starred[0] in indices else 0)
names = wb.display_names(runs, project)
ids = [r["run_id"] for r in runs]
default = [i for i in ids if i == original.name] + [i for i in ids if i != original.name][:3]
chosen = st.multiselect("models (the Original first)", ids, default=default,
                        key="tokens.runs", format_func=lambda i: names.get(i, i),
                        help="starts with the Original and the three newest evaluated runs "
                             "of this project; add or remove any")
tables = {}
for run_id in chosen:
    with unless_damaged(run_id):
        tables[run_id] = wb.token_table(root / run_id).get(row)
tables = {k: v for k, v in tables.items() if v}
if not tables:
    st.warning("No token table for this row in the chosen runs.")
    st.stop()
ref = next(iter(tables.values()))
tokens = ref["tokens"]
variants = attacked_variants(root, list(tables), row, names, len(tokens))
if variants and st.toggle(
        f"with the stress-tested variants ({wb.plural(len(variants), 'row')}: "
        f"{', '.join(sorted({k.split(' · ', 1)[1].split(' ')[0] for k in variants}))})",
        key="tokens.stressed",
        help="each attacked model's probabilities of the same answer tokens, from "
             "RUN_DIR/stress/ (the stress command or Results' Does it hold?)"):
    rows = {}  # each run's variants right after its own row
    for run_id, table in tables.items():
        rows[run_id] = table
        rows.update({k: v for k, v in variants.items() if k.startswith(f"{run_id} · ")})
    tables = rows
what, spelled = reference_text(forget[row] if row < len(forget) else None, ref)
if ref.get("prompt"):
    st.markdown("**Prompt:** " + plain(ref["prompt"]))
st.markdown(f"**{what}:** " + plain(spelled))
candidates = [f"{j}: {t.strip() or repr(t)}" for j, t in enumerate(tokens)]
# the demo's fact, else the largest fall from the Original to an unlearning run (not the
# Retained's, nor an attacked variant's)
unlearned = [" · " not in k and names.get(k) not in ("Original", "Retained") for k in tables]
default_tok = wb.default_token(list(tables.values()), "French", unlearned)
mark = st.selectbox("follow a token", range(len(tokens)), index=default_tok,
                    format_func=lambda j: candidates[j], key=f"tokens.mark.{row}")

labels = [names.get(k, k) for k in tables]
z = [t["probs"] for t in tables.values()]
hover = [[f"{html.escape(tokens[j])} p={t['probs'][j]:.3f}<br>top-5: " +
          ", ".join(f"{html.escape(a)!s} {p:.2f}" for a, p in t["top"][j])
          for j in range(len(t["probs"]))] for t in tables.values()]
fig = go.Figure(go.Heatmap(z=z, x=[f"{j}:{tok}" for j, tok in enumerate(tokens)], y=labels,
                           text=hover, hoverinfo="text", colorscale="RdYlGn", zmin=0, zmax=1,
                           colorbar=dict(title="p")))
fig.add_vline(x=mark, line_color="#1f4fff", line_width=2)
fig.update_yaxes(autorange="reversed")  # the Original on top, as in the selector
fig.update_layout(height=120 + 40 * len(labels), margin=dict(l=10, r=10, t=30, b=10),
                  title=f"probability of each {what.lower()} token (hover: top-5 alternatives)")
st.plotly_chart(fig, key="tokens.heatmap")

for label, t in zip(labels, tables.values()):
    st.markdown(f"**{plain(label)}** — p({plain(repr(tokens[mark].strip()))}) = "
                f"{t['probs'][mark]:.3f}")
    st.html(tokens_html(t["tokens"], t["probs"], highlight=tokens[mark].strip()))

show_layer_view(root, tables, names, row, mark, tokens[mark], ref.get("token_ids"))

st.subheader(f"{plain(repr(tokens[mark].strip()))} across training steps")
fig = go.Figure()
for run_id in [k for k in tables if k not in variants]:
    pts = []
    with unless_damaged(run_id):
        pts = wb.follow_token(root / run_id, row, mark, ref.get("token_ids"))
    if pts and run_id != original.name:
        fig.add_scatter(x=[s for s, _ in pts], y=[p for _, p in pts], mode="lines+markers",
                        name=names.get(run_id, run_id))
if fig.data:
    step_chart(fig, height=300, yaxis_title="probability", yaxis_range=[0, 1],
               margin=dict(l=10, r=10, t=30, b=10))
    st.plotly_chart(fig, key="tokens.steps")
else:
    st.caption("No probes of this row in the chosen runs (set probe rows on the Train page).")

st.subheader("Greedy answers (or continuations) side by side")
which = st.radio("set", ["forget", "retain"], horizontal=True, key="tokens.set")
records = {}
for run_id in chosen:
    with unless_damaged(run_id):
        records[names.get(run_id, run_id)] = wb.per_sample(root / run_id)
answers = side_by_side(records, which)
if answers:
    order = sorted(answers)
    box = f"tokens.answer_row.{which}"
    # the forget picker follows the row chosen above whenever that changes (a keyed widget
    # keeps its own value and ignores a new index); the person may look at another row's
    # answers in between
    if which == "forget" and (st.session_state.get("tokens.answer_row.follows") != row or
                              box not in st.session_state):  # (back from the retain set)
        st.session_state["tokens.answer_row.follows"] = row
        if row in order:
            st.session_state[box] = row
    if st.session_state.get(box) not in order:
        st.session_state[box] = order[0]
    pick = st.selectbox("row" + (" (the evaluated sample of the retain set)" if which == "retain"
                                 else ""), order, key=box,
                        format_func=lambda i: f"{i}: {answers[i]['question'][:80]}")
    st.table({k: [v] for k, v in answers[pick].items()})
else:
    st.caption(f"No greedy outputs of the {which} set in the chosen runs.")
