"""The layer view on Token probabilities (docs/token-probabilities.md#the-layer-view): the
followed token's probability at every layer (the logit lens each evaluation wrote to
``eval/layers.jsonl``) as a heatmap, models on one axis and layers on the other, with each
model's first top-1 layer, its rank at the last layer and the sentence that says whether the
answer is still inside. Files only: no model is loaded."""

from __future__ import annotations

import html

import plotly.graph_objects as go
import streamlit as st

from sga_core import workbench as wb
from ui.damaged import unless_damaged
from ui.show import plain


def layer_rows(root, tables: dict[str, dict], row: int, position: int,
               token_ids: list[int] | None) -> tuple[dict[str, dict], dict[str, str]]:
    """Per model of the heatmap above (a run id, or ``"<run id> · <attack>"`` for a
    stress-tested variant, with its token record) the :func:`wb.layer_facts` of the
    followed token, and per model without them why (no layer table, or the token is not in
    it)."""
    facts, missing = {}, {}
    for run_id, token_rec in tables.items():
        with unless_damaged(run_id.split(" · ")[0]):
            rec, why = _layer_record(root, run_id, token_rec, row)
            at = None if rec is None else wb.token_position(rec, position, token_ids)
            if at is None:
                missing[run_id] = why or "the followed token is not in its layer table"
            else:
                facts[run_id] = {**wb.layer_facts(rec, at), "lens": rec.get("lens") or "logit"}
    return facts, missing


def _layer_record(root, run_id: str, token_rec: dict, row: int) -> tuple[dict | None, str]:
    """A model's layer record of ``row``, or None and why there is none."""
    if " · " in run_id:  # a stress-tested variant: its layers are in its token record
        return (wb.attacked_layer_record(token_rec),
                "no layers in its stress result (stress-tested before the layer view)")
    rec = wb.layer_table(root / run_id).get(row)
    if rec is not None:
        return rec, ""
    why = ((wb.RunFolder(root / run_id).summary() or {}).get("layer_view") or {}).get("reason")
    return None, (f"no layer table: {why}" if why else
                  "no layer table (evaluated before they were written: re-evaluate it)")


def layer_heatmap(facts: dict[str, dict], names: dict, token: str) -> go.Figure:
    """Models (rows, in the order given) by layers (columns): the token's probability, its
    rank written in each cell, the lens's top-1 on hover."""
    depth = max(f["layers"] for f in facts.values())
    labels = [names.get(k, k) for k in facts]
    z, text, hover = [], [], []
    for label, f in zip(labels, facts.values()):
        pad = [None] * (depth - f["layers"])
        z.append(f["probs"] + pad)
        text.append([str(r) for r in f["ranks"]] + [""] * len(pad))
        top1 = f["top1"] or ["?"] * f["layers"]
        hover.append([f"{html.escape(label)} · layer {k + 1}: p={p:.3f}, rank {r}<br>lens "
                      f"top-1: {html.escape(repr(t))}"
                      for k, (p, r, t) in enumerate(zip(f["probs"], f["ranks"], top1))] + pad)
    fig = go.Figure(go.Heatmap(z=z, x=list(range(1, depth + 1)), y=labels, text=text,
                               texttemplate="%{text}", customdata=hover,
                               hovertemplate="%{customdata}<extra></extra>",
                               colorscale="RdYlGn", zmin=0, zmax=1,
                               colorbar=dict(title="p")))
    fig.update_yaxes(autorange="reversed")  # the Original on top, as above
    lenses = " and ".join(sorted({f.get("lens") or "logit" for f in facts.values()}))
    fig.update_xaxes(title=f"layer ({lenses} lens; layer {depth} is the output)", dtick=1)
    fig.update_layout(height=140 + 40 * len(labels), margin=dict(l=10, r=10, t=40, b=10),
                      title=f"p({html.escape(repr(token))}) at every layer (cells: its rank; "
                            "hover: the lens's top-1)")
    return fig


def show_layer_view(root, tables: dict[str, dict], names: dict, row: int, position: int,
                    token: str, token_ids: list[int] | None) -> None:
    """The layer view of the followed token under the models of the token heatmap
    (``tables``: model -> its token record; stress-tested variants included)."""
    st.subheader(f"{plain(repr(token))} layer by layer")
    facts, missing = layer_rows(root, tables, row, position, token_ids)
    if facts:
        st.plotly_chart(layer_heatmap(facts, names, token), key="tokens.layers")
        st.table({"model": [names.get(k, k) for k in facts],
                  "first top-1 layer": [str(f["first_top1"] or "none") for f in facts.values()],
                  "rank at the last layer": [f["last_rank"] for f in facts.values()],
                  "lens": [f["lens"] for f in facts.values()],
                  "layers": [f["layers"] for f in facts.values()]})
        for run_id, f in facts.items():
            st.markdown(f"**{plain(names.get(run_id, run_id))}**: {plain(wb.layer_words(f))}")
    for run_id, why in missing.items():
        st.caption(plain(f"{names.get(run_id, run_id)}: {why}"))
