"""Runs: every run with its state; the live view of one run (progress, losses, log, probe
tokens) refreshes by itself while something runs; cancel, re-run, delete; a completed run's
stress test, queued as a job (progress, ETA, cancel)."""

from __future__ import annotations

import streamlit as st

from sga_core import workbench as wb
from ui import run_detail
from ui.cluster import profile_section
from ui.context import current_project
from ui.damaged import warn_damaged
from ui.forms import kept
from ui.rerun import rerun_button
from ui.resume import resume_button
from ui.run_detail import eta
from ui.show import plain, show_error, state_text
from ui.stress_job import run_section as stress_section

st.title("Runs")
root = wb.runs_root()
profile_section()  # where SLURM runs go: the workspace's cluster profile
if any(r["state"] == "queued" and r.get("mode") == "queue" for r in wb.list_runs(root)):
    wb.ensure_runner(root)  # e.g. after a server restart
project = current_project()
ALL = "all projects"
shown_as = kept(st.radio, "runs.filter", f"project {project.name}" if project else ALL,
                label="show runs of", horizontal=True,
                options=([f"project {project.name}"] if project else []) + [ALL],
                help="a project's runs are those trained on its forget rows")
mine = project if project and shown_as != ALL else None
runs = wb.runs_of(mine, root)
if not runs:
    st.info("No runs yet" + (f" of project {plain(project.name)} (see all projects above)"
                             if mine else "") + ". Launch one on the Train page.")
    st.stop()


def evaluating(r: dict) -> bool:
    return r["state"] == "completed" and r.get("eval_state") in ("queued", "running")


def cell(v) -> str:
    """A setting as table text; blank where it does not apply (a prepare run has no r)."""
    return "" if v is None else f"{v:g}" if isinstance(v, float) else str(v)


def read_states(rows: list[dict]) -> dict[str, tuple[dict, dict]]:
    """One read of every listed run's state for this render: run id -> (its progress, its
    evaluation's progress). The table, the picker's labels and the detail all show these, so
    they never disagree (one of them said "running" while another said "evaluating")."""
    evals = wb.eval_status_of(rows)
    return {r["run_id"]: (wb.progress(r["path"]), evals[r["run_id"]]) for r in rows}


def evaluating_now(p: dict, ev: dict) -> bool:
    return p["state"] == "completed" and ev["state"] in ("queued", "running")


def shown_state(p: dict, ev: dict) -> str:
    """A run's state as the table and the picker say it: "cancelling" from the cancel on
    (of the run, or of its evaluation) until it has stopped."""
    if p.get("cancelling"):
        return "cancelling"
    if evaluating_now(p, ev):
        return p["state"] + (" · cancelling evaluation" if ev.get("cancelling") else
                             " · evaluating")
    return state_text(p["state"])


def busy(rows: list[dict], states: dict | None = None) -> bool:
    """Something will change by itself: a run queued or training, an evaluation or a stress
    test queued or running, or a completed run the runner is about to evaluate (training
    writes "completed" a poll before the runner starts the evaluation: the page must keep
    refreshing then)."""
    if states is None:
        live = any(r["state"] in ("queued", "running") or evaluating(r) for r in rows)
    else:
        live = any(p["state"] in ("queued", "running") or evaluating_now(p, ev)
                   for p, ev in states.values())
    stressing = any(r.get("stress_state") in ("queued", "running") for r in rows)
    return live or stressing or wb.awaiting_evaluation(rows, root)


active = busy(runs)


def runs_table(rows: list[dict], states: dict) -> None:
    owners = wb.run_projects(rows) if not mine else {}
    table = []
    for r in rows:
        p, ev = states[r["run_id"]]
        table.append({"run": r["run_id"], "state": shown_state(p, ev),
                      "project": owners.get(r["run_id"], "-"),
                      "method": (f"published {r['published']} (evaluated only)"
                                 if r.get("published") else r["method"]),
                      "r": cell(r["r"]), "K": cell(r["k"]),
                      "sweep": cell(r["sweep"]),
                      "started": (r.get("started_at") or "").replace("T", " ")[:19],
                      "duration": wb.fmt_seconds(p["elapsed_s"]),
                      "progress": ev["text"] + eta(ev) if evaluating_now(p, ev)
                      else p["text"]})
    st.dataframe(table, hide_index=True, width="stretch",
                 column_order=[c for c in table[0] if c != "project" or not mine])


def pick(rows: list[dict], states: dict) -> str:
    """The run picker, its labels from this render's states."""
    ids = [r["run_id"] for r in rows]
    labels = {i: f"{i} — {shown_state(*states[i])}" for i in ids}
    linked = st.query_params.get("run")  # the URL keeps the choice across a reload
    default = st.session_state.get("runs.selected") or (linked if linked in ids else None) \
        or next((i for i in ids if states[i][0]["state"] == "running"), None) or next(
            (i for i in ids if states[i][0]["state"] != "queued"), None)  # else the running
    # one, else the newest that ran (not queued)
    if st.session_state.pop("runs.want", None) in ids:  # a run this page just queued
        st.session_state["runs.select"] = default
    if st.session_state.pop("runs.deleted", None):  # the browser still shows the deleted run:
        st.session_state["runs.select"] = default if default in ids else ids[0]  # set anew
    current = st.session_state.get("runs.select")
    if current in ids and st.session_state.get("runs.label") not in (None, labels[current]):
        st.session_state["runs.select"] = current  # the browser keeps an option's old label
    selected = st.selectbox("run", ids, index=ids.index(default) if default in ids else 0,
                            key="runs.select", format_func=labels.get)
    st.session_state["runs.selected"] = selected
    st.session_state["runs.label"] = labels[selected]
    if st.query_params.get("run") != selected:
        st.query_params["run"] = selected
    return selected


@st.fragment(run_every=1.0 if active else None)
def live() -> None:
    """The table, the picker and the selected run's detail and actions, from one read of the
    runs per refresh; it refreshes itself while something is busy."""
    rows = wb.runs_of(mine, root)
    if not rows:  # deleted elsewhere
        st.rerun()
    warn_damaged(rows)
    states = read_states(rows)
    runs_table(rows, states)
    selected = pick(rows, states)
    p, ev = states[selected]
    run_detail.show(root / selected, selected, p, ev)
    actions(selected, p, ev)
    stress_section(root / selected, selected, p, root)
    if busy(rows, states) != active:
        st.rerun()  # start or stop refreshing


def actions(selected: str, p: dict, ev: dict) -> None:
    run_dir = root / selected
    sel_active = p["state"] in ("queued", "running") or evaluating_now(p, ev)
    done = st.session_state.pop("runs.done", None)
    if done:
        st.success(plain(done))
    c1, c2, c3 = st.columns(3)
    if c1.button("Cancel", key="runs.cancel", disabled=not sel_active,
                 help="stops the run, or its evaluation (the trained model stays)"):
        if p["state"] in ("queued", "running"):
            state = wb.cancel(run_dir).get("state")
            st.toast(f"cancel requested: {'cancelling' if state == 'running' else state}")
        else:
            try:
                state = wb.cancel_eval(run_dir).get("state")
                st.toast(f"evaluation: {'cancelling' if state == 'running' else state}")
            except RuntimeError as exc:  # it runs on another machine
                show_error(exc)
    rerun_button(c2, run_dir, root, selected)
    resume_button(c2, run_dir, root, p)

    def delete_selected() -> None:
        """Delete's on_click: runs before the next script run draws the widgets, so unticking
        "confirm delete" and forgetting the picked run is allowed here (not after the checkbox
        was drawn); the rerun that follows lists the runs without the deleted one."""
        st.session_state["runs.confirm_delete"] = False
        try:
            wb.delete(run_dir)
        except RuntimeError as exc:
            st.session_state["runs.delete_error"] = str(exc)
            return
        st.session_state.pop("runs.selected", None)
        st.session_state["runs.deleted"] = selected
        st.session_state["runs.done"] = f"Deleted {selected}."

    with c3:
        confirm = st.checkbox("confirm delete", key="runs.confirm_delete")
        st.button("Delete", key="runs.delete", disabled=not confirm, on_click=delete_selected)
        failed = st.session_state.pop("runs.delete_error", None)
        if failed:
            show_error(failed, "cannot delete")


live()
