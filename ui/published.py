"""The Data page's **Published models** panel: which Original, Retained model and retain
reference the project's runs use (Prepare's, a published checkpoint, a folder, or a retain
model's published eval log), and fields to name them. Layout only: the checks are
:mod:`sga_core.projects.published`'s, and nothing here loads a model or downloads one."""

from __future__ import annotations

import streamlit as st

from sga_core import workbench as wb
from ui.cluster import backend_choice, chosen_backend
from ui.show import as_list, panel, plain, show_error

DONE = "data.published_done"  # the last save's confirmation, shown after the rerun
BACKEND = "data.published_backend"  # where their evaluations go (where SLURM is offered)
FIELDS = (("original", "Original (model to unlearn)",
           "open-unlearning/tofu_Llama-3.2-1B-Instruct_full, or a folder"),
          ("retained", "Retained model (retain reference)",
           "open-unlearning/tofu_Llama-3.2-1B-Instruct_retain90, or a folder"),
          ("reference_logs", "retain model's eval log (reference values)",
           "saves/eval/tofu_Llama-3.2-1B-Instruct_retain90/TOFU_EVAL.json"))


def published_section(project, root) -> None:
    """Say which models and reference are in use; name published ones instead of
    Prepare's."""
    st.markdown("**Models in use**")
    lines = wb.in_use_lines(project, root)
    st.markdown(as_list(lines))
    if any(" - cannot be used: " in line for line in lines):
        st.warning("A published model or log named for this project cannot be used now "
                   "(see above): fix it or unset it below.")
    if st.session_state.get(DONE):
        st.success(plain(st.session_state.pop(DONE)))
    named = wb.published_names(project)
    evaluations = {label: state for role, label in (("original", "Original"),
                                                    ("retained", "Retained"))
                   if (state := wb.evaluation_state(project, role, root)) is not None}
    if evaluations:  # the Results rows of the published models
        st.markdown(as_list([f"published {label}: {state}"
                             for label, state in evaluations.items()]))
        if not wb.slurm_unavailable():  # where the evaluations go: a choice where SLURM is
            backend_choice(BACKEND)
        if st.button("Evaluate the published models", key="data.published_eval",
                     help="Queue the evaluation of each published model on the project's "
                          "data and settings (the Retained model's first), as Prepare's are: "
                          "they become the Original and Retained rows of Results, and the "
                          "collapse flags and measurability compare with them. Nothing is "
                          "trained or copied: each run folder links to the model."):
            try:
                queued = wb.evaluate_published(project, root,
                                               backend=chosen_backend(BACKEND))
            except (wb.ConfigError, ValueError, OSError) as exc:
                show_error(exc, "Nothing was queued")
            else:
                st.session_state[DONE] = "Queued: " + ", ".join(p.name for p in queued) + \
                    " (the Runs page follows them)."
                st.session_state["runs.selected"] = queued[0].name  # the Runs page opens on it
                st.rerun()
    with panel("Published models and eval logs", "data.published_open"):
        st.caption("Take the Original and the Retained model from published checkpoints "
                   "(a hub id found in the local Hugging Face cache, or a folder) instead "
                   "of Prepare, and a retain model's open-unlearning eval log "
                   "(TOFU_EVAL.json, MUSE_EVAL.json) as the reference for Forget Quality "
                   "and PrivLeak. Leave a field empty to use Prepare's. Nothing is "
                   "downloaded here: a hub id missing from the cache is fetched with "
                   "`huggingface-cli download ID` or `python -m sga_core project set-models "
                   "NAME --original ID --online`.")
        with st.form("data.published_form", enter_to_submit=False, border=False):
            given = {role: st.text_input(label, value=named.get(role, ""), placeholder=hint,
                                         key=f"data.published.{role}")
                     for role, label, hint in FIELDS}
            saved = st.form_submit_button("Save published models")
        if saved:
            try:
                wb.set_published(project, **{r: v.strip() or "prepared"
                                             for r, v in given.items()})
            except wb.ProjectError as exc:
                show_error(exc, "Nothing was changed")
            else:
                st.session_state[DONE] = "Saved: the project's runs now use the models and " \
                                         "reference listed above."
                st.rerun()
