"""The Data page's evaluation sets: the project's extra sets listed with their role (utility
sets are Model Utility components), a form to add one (validated like forget data, with the
same field mapping step), and a re-evaluation of runs that were evaluated before a set was
added."""

from __future__ import annotations

import streamlit as st

from sga_core import workbench as wb
from ui.context import project_note
from ui.field_map import mapping_for, valid
from ui.show import panel, plain, show_error

DONE = "data.set_done"  # the last action's confirmation, shown after the rerun
FORM = "data.set_form"  # the add-a-set form's generation
OPEN = "data.set_open"  # + project: whether its add-a-set panel is open (across reruns)

ROLES_QA = ("A QA set whose every row has `perturbed_answer` is a **utility set**: its "
            "normalised probability, ROUGE-L and truth ratio enter **Model Utility (MU)** with "
            "the retain set's (TOFU's real_authors and world_facts are two such sets; yours "
            "count the same, whatever their names). Other QA sets are reported, not in MU.")
ROLES_TEXT = ("A set's name can give it a role (`holdout`, `forget_qa`, `retain_qa`, "
              "`<set>_icl`, `forget_eval`, ...: what each does is shown when you type it, and "
              "is confirmed before the set is added); any other set gets its perplexity "
              "(text) or KnowMem (QA).")
WARN = "data.set_warning"  # a warning about the set just added, shown after the rerun


def eval_sets_section(project, root) -> None:
    st.subheader("Evaluation sets")
    st.caption(ROLES_QA if project.kind == "qa" else ROLES_TEXT)
    done = st.session_state.pop(DONE, None)
    if done:
        st.success(plain(done))
    warning = st.session_state.pop(WARN, None)
    if warning:
        st.warning(plain(warning))
    if project.kind == "qa" and not any(r.get("perturbed_answer") for r in project.forget()):
        st.warning("The forget rows have no `perturbed_answer`, so the forget truth ratio and "
                   "Forget Quality (a test over those truth ratios) cannot be computed: "
                   "Results shows — for them. Create the project from a forget file with "
                   "perturbed answers (TOFU: forget10_perturbed; map `perturbed_response` → "
                   "perturbed_answer if needed).")
    if project.kind == "qa" and project.retain() and not any(
            r.get("perturbed_answer") for r in project.retain()):
        st.warning("The retain rows have no `perturbed_answer`, so the retain set's truth "
                   "ratio, one of MU's components, cannot be computed and MU stays —. "
                   "Create the project from a retain file with perturbed answers (TOFU: "
                   "retain_perturbed; map `perturbed_response` → perturbed_answer if needed).")
    info = project.eval_set_info()
    if info:
        st.dataframe([{"set": i["name"], "rows": i["rows"], "role": i["role"],
                       "what it is for": i["what"], "file": i["source"],
                       "fields mapped": ", ".join(f"{s} → {t}" for s, t in
                                                  i["field_map"].items()) or "-"}
                      for i in info], hide_index=True, width="stretch")
    else:
        st.info("No evaluation sets yet: " + ("MU cannot be computed without a utility set. "
                                              if project.kind == "qa" else "") +
                "Add them below; every run of this project is evaluated on them.")
    _add_form(project, info)
    _reevaluate(project, root)
    if info:
        with panel("Remove an evaluation set", "data.set_remove_open"):
            name = st.selectbox("set", [i["name"] for i in info], key="data.set_remove_name")
            sure = st.checkbox("confirm removal", key="data.set_remove_confirm")
            if st.button("Remove", key="data.set_remove", disabled=not sure):
                project.remove_eval_set(name)
                st.session_state[DONE] = (f"Removed {name} (runs evaluated with it keep their "
                                          "results).")
                st.rerun()


def _add_form(project, info) -> None:
    # open at first when there is no set yet; then as the person leaves it, also after an add
    # (its open state is session state, so the confirmation above it coming and going does
    # not fold it away)
    with panel("Add an evaluation set", f"{OPEN}.{project.name}", expanded=not info):
        types = [e[1:] for e in wb.SUPPORTED_EXTENSIONS]
        n = st.session_state.get(FORM, 0)  # a new form (empty uploader) after each set added
        up = st.file_uploader("evaluation set file", type=types, key=f"data.set_file.{n}")
        suggested = wb.suggest_set_name(up.name) if up else "set"
        _prefill(f"data.set_name.{n}", suggested if up else "")
        name = st.text_input("set name", key=f"data.set_name.{n}", placeholder=suggested,
                             help=f"lower-case letters, digits, '_' (empty: {suggested}); "
                                  "it names the set's metrics, e.g. <name>_rouge") or suggested
        kind = wb.set_kind(project.kind, name)
        mapping = mapping_for("set", up, kind, remembered=project.field_map)
        role = wb.set_role_words(project, name)
        confirmed = True
        if role:  # a name that gives a role: said in words, and confirmed
            st.info(plain(f"The name {name!r} gives this set a role: it {role}."))
            confirmed = st.checkbox(f"use {name} in this role", key=f"data.set_role.{n}")
        else:
            st.caption(plain(f"{name}: " + ("a utility set (Model Utility) when every row "
                                            "has perturbed_answer, else reported only"
                                            if project.kind == "qa" else
                                            "an extra set: its perplexity (text) or KnowMem "
                                            "(QA)")))
        replace = st.checkbox("replace a set with the same name", key="data.set_replace")
        project_note(project, "adds to")
        if st.button("Add evaluation set", key="data.set_add",
                     disabled=up is None or not valid(mapping) or not confirmed,
                     help=None if confirmed else "confirm the set's role first"):
            try:
                entry = wb.add_eval_set(project, name, up.name, up.getvalue(), mapping,
                                        replace=replace, confirm_role=confirmed)
            except (wb.DataError, wb.ProjectError) as exc:
                show_error(exc, "Nothing was added")
                return
            st.session_state[FORM] = n + 1
            st.session_state[DONE] = (f"Added {entry['name']} "
                                      f"({wb.plural(entry['rows'], 'row')}): {entry['what']}. "
                                      f"New runs of {project.name} are evaluated on it.")
            if entry.get("warning"):
                st.session_state[WARN] = entry["warning"]
            st.rerun()


def _prefill(key: str, suggested: str) -> None:
    """Put a chosen file's suggested set name into the name field, unless the person typed
    a name of their own there (the field then holds neither nothing nor the last
    suggestion)."""
    last = st.session_state.get(f"{key}.suggested", "")
    if st.session_state.get(key, "") in ("", last):
        st.session_state[key] = suggested
    st.session_state[f"{key}.suggested"] = suggested


def _reevaluate(project, root) -> None:
    missing = wb.runs_missing_sets(project, root)
    if not missing:
        return
    sets = sorted({s for names in missing.values() for s in names})
    st.warning(plain(f"{wb.plural(len(missing), 'evaluated run')} of this project "
                     f"{'was' if len(missing) == 1 else 'were'} evaluated "
                     f"before {', '.join(sets)} existed: "
                     f"{', '.join(list(missing)[:6])}{' ...' if len(missing) > 6 else ''}."))
    if st.button("Re-evaluate them with every evaluation set (queued jobs)",
                 key="data.reevaluate"):
        skipped = wb.reevaluate(project, list(missing), root)
        st.session_state[DONE] = (f"Queued the evaluation of "
                                  f"{wb.plural(len(missing) - len(skipped), 'run')}; "
                                  "progress on the Runs page." +
                                  "".join(f" {why}." for why in skipped.values()))
        st.rerun()
