"""The Train page's model section: the model to unlearn, which is the project's prepared
original whenever there is one (unless a person chose another model for this project), and
**Prepare models**, which confirms what it queued."""

from __future__ import annotations

import streamlit as st

from sga_core import workbench as wb
from ui import forms
from ui.cluster import chosen_backend
from ui.context import project_note
from ui.protocol import eval_rows_value
from ui.show import panel, plain, show_error

ORIGINAL, OTHER = "prepared original", "other model"
QUEUED = "train.prepare_queued"  # the run ids Prepare queued (shown while they are pending)
CANCELLED = "train.prepare_cancelled"  # the run ids Cancel Prepare asked to stop


def model_section(project, root) -> str:
    """Draw the section; returns the model spec a run of this project would start from."""
    st.subheader("Model")
    original, pending = wb.prepared_model(project, root), wb.pending_model(project, root)
    published = wb.published_names(project).get("original")
    if published:  # the Data page named a published checkpoint as the Original
        st.caption(plain(f"The project's Original is the published {published} (Data page)"
                         + ("" if original else ": it cannot be used now, see the Data "
                                                "page's Models in use")))
    options = ([ORIGINAL] if original or pending else []) + [OTHER]
    mine = forms.chosen("train.model_choice")  # what a person chose for this project
    forms.prepare("train.model_mode", mine if mine in options else options[0])
    if mine not in options:  # never chosen: the prepared original as soon as there is one
        st.session_state["train.model_mode"] = options[0]
    mode = st.radio("model to unlearn", options, horizontal=True, key="train.model_mode",
                    # the Original the project uses: Prepare's, or the published one named
                    format_func=lambda o: "published original" if o == ORIGINAL and
                    published else o,
                    on_change=lambda: forms.remember("train.model_choice",
                                                     st.session_state["train.model_mode"]))
    if mode == ORIGINAL:
        model = str(original or pending)
        st.caption(f"`{model}`" + (" (being prepared now: runs you launch are queued behind "
                                    "it and start once it is ready)" if pending else ""))
    else:
        model = forms.kept(st.text_input, "train.model", "embedded:smollm2",
                           label="model (HF id, local folder, or embedded:smollm2)")
        if original:
            which = "published" if published else "prepared"
            st.caption(f"This project has a {which} original; choose **{which} original** "
                       "to unlearn it (this model is not fine-tuned on the project's data).")
    queued = st.session_state.get(QUEUED)
    if queued and pending:
        st.success(f"Prepare queued {' and '.join(f'**{q}**' for q in queued)} (fine-tuning, "
                   "then evaluation; see the Runs page). The model to unlearn is now the "
                   "prepared original.")
    asked = st.session_state.get(CANCELLED)
    if pending and asked:  # asked already: say so until the runs have stopped
        st.info(f"Cancelling Prepare: {' and '.join(asked)} stop at their next step (a "
                "queued one never starts); the Runs page shows each one's state.")
    elif pending and st.button("Cancel Prepare (both models)", key="train.prepare_cancel",
                               help="stops the retain reference and the original alike, "
                                    "queued or running; cancelling one of them on the Runs "
                                    "page lets the other go on"):
        st.session_state[CANCELLED] = wb.cancel_prepare(project, root) or ["nothing"]
        st.session_state.pop(QUEUED, None)
        st.rerun()
    if not pending:
        st.session_state.pop(CANCELLED, None)
    if not original and not pending:
        _prepare_button(project, root, model, mode)
    return model


def _prepare_button(project, root, model: str, mode: str) -> None:
    why = wb.prepare_refusal(project)
    if why:  # no retain rows: nothing to prepare the retain reference from
        st.info(plain(f"This project has no prepared original model, and Prepare cannot make "
                      f"one: {why}."))
        return
    st.info("This project has no prepared original model yet. **Prepare** fine-tunes the "
            "base model on forget + retain (the model to unlearn) and on retain only (the "
            "reference for Forget Quality); both run as queued jobs on the Runs page.")
    project_note(project, "prepares")
    training = _prepare_settings(project.kind)
    max_rows = eval_rows_value()  # the Train page's "evaluate at most", drawn further down
    _prepare_plan(project, root, training, max_rows)
    if st.button("Prepare models", key="train.prepare"):
        try:
            dirs = wb.submit_prepare(project, model=model if mode == OTHER else
                                     "embedded:smollm2", root=root, training=training,
                                     backend=chosen_backend(), max_rows=max_rows)
        except (wb.ConfigError, wb.SlurmError, ValueError) as exc:
            show_error(exc, "cannot prepare")
            return
        # the radio is drawn already: its new value applies on the rerun
        forms.put_later("train.model_mode", ORIGINAL)
        forms.remember("train.model_choice", ORIGINAL)
        st.session_state[QUEUED] = [d.name for d in dirs]
        st.session_state["runs.selected"] = dirs[0].name  # the Runs page opens on it
        st.rerun()  # offer the original being prepared at once, with the confirmation


def _prepare_settings(kind: str = "qa") -> dict:
    """The fine-tuning settings of both prepare runs (defaults: ``prepare_defaults(kind)``,
    what ``python -m sga_core prepare --task <kind>`` uses: more epochs and longer sequences
    for text), kept per project like every field."""
    d = wb.prepare_defaults(kind)
    with panel("prepare settings (both models)", "train.prep_open"):
        c = st.columns(5)
        out = {
            "lr": forms.kept(c[0].number_input, "train.prep.lr", float(d["lr"]),
                             label="learning rate", min_value=1e-8, max_value=1.0,
                             format="%.1e", step=1e-5),
            "epochs": forms.kept(c[1].number_input, "train.prep.epochs", float(d["epochs"]),
                                 label="epochs", min_value=0.1, max_value=1000.0, step=1.0),
            "batch_size": forms.kept(c[2].number_input, "train.prep.batch_size",
                                     int(d["batch_size"]), label="batch size", min_value=1,
                                     max_value=1024),
            "max_length": forms.kept(c[3].number_input, "train.prep.max_length",
                                     int(d.get("max_length", 256)), label="sequence length",
                                     min_value=8, max_value=32768,
                                     help="tokens per training sequence (longer passages are "
                                          "cut)"),
            "max_steps": forms.kept(c[4].number_input, "train.prep.max_steps", 0,
                                    label="max steps", min_value=0, max_value=10**7,
                                    help="0: the epochs decide"),
        }
        c = st.columns([2, 1])
        out["eval_nll"] = forms.kept(c[0].checkbox, "train.prep.eval_nll", True,
                                     label="measure the NLL before and after training",
                                     help="the mean answer NLL of the forget and retain "
                                          "rows (the Runs page shows its progress)")
        out["nll_rows"] = forms.kept(c[1].number_input, "train.prep.nll_rows",
                                     int(d["nll_rows"]), label="NLL rows per set (0 = all)",
                                     min_value=0, max_value=10**7, step=50,
                                     disabled=not out["eval_nll"],
                                     help="an evenly spaced sample of each set")
        st.caption("The original and the retain reference are fine-tuned with the same "
                   "settings, so Forget Quality compares like with like." +
                   (" Text: the Original must memorise its passages, or no forgetting can be "
                    "measured (the Results page says so); see docs/measurability.md."
                    if kind == "text" else ""))
    return out


def _prepare_plan(project, root, training: dict, max_rows: int) -> None:
    """What pressing Prepare starts: the steps of each model, a rough time where this
    project's earlier prepare runs give a time per step, and the evaluation's row limit."""
    try:
        plan = wb.prepare_plan(project, training, root)
    except (wb.ConfigError, ValueError, OSError):
        return  # the settings or the data are refused when Prepare is pressed
    steps = plan["steps"]
    took = (f", about {wb.fmt_seconds(plan['eta_s'])} at {plan['step_s']:.1f}s a step (this "
            "project's last prepare run)" if plan["eta_s"] is not None else "")
    st.caption(f"Prepare runs {plan['total']:,} training steps: {steps['retain-ref']:,} for "
               f"the retain reference, then {steps['original']:,} for the original{took}. "
               "Each model is then evaluated on " + (
                   f"at most {max_rows:,} rows of each set" if max_rows else
                   "every row of each set") + " (\"evaluate at most\" below).")
