"""Stress tests queued as jobs (docs/stress-tests.md#queued-as-a-job): on the Runs page, one
completed run's "Stress-test" control, then its job's state, progress, stage, ETA and
Cancel; on the Results page, a form that queues the attacks for several runs (a sweep)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from sga_core import workbench as wb
from ui.forms import override_fields
from ui.show import panel, plain, show_error

ALL_RUNS = "all runs shown"


def attack_settings(prefix: str) -> dict:
    """The attacks' settings a stress form offers, as chosen: each attack's ``form``
    choices (declared in its own file), then, folded, every other setting of the typed
    ``StressSettings`` (seeds, relearning steps, learning rate, ...: the ``stress``
    command's flags, from the same declarations), each blank until a person fills it in
    (:func:`ui.forms.override_fields`): only what they filled in goes into the request."""
    chosen = {}
    choices = wb.stress_form_choices()
    for fc in choices:
        value = st.selectbox(fc.label, list(fc.choices), key=f"{prefix}.stress_{fc.key}",
                             format_func=fc.choices.get, help=fc.help or None)
        if value:
            chosen[fc.setting] = value
    with panel("attack settings: seeds, relearning steps and rate, ... (blank: the "
               "default, as in `stress --help`)", f"{prefix}.stress_set_open"):
        chosen |= override_fields(wb.stress_settings_class(), f"{prefix}.stress_set",
                                  skip={fc.setting for fc in choices})
    return chosen


def _said(settings: dict) -> str:
    """The chosen settings in words for the "Queued ..." line ("; paraphrases written by
    the local backend; seeds 1, 2; relearn steps 5")."""
    choices = wb.stress_form_choices()
    out = "".join(f"; {fc.said.format(value=settings[fc.setting])}"
                  for fc in choices if fc.said and fc.setting in settings)
    shown = {fc.setting for fc in choices}
    try:  # as the request holds them: "4,5" typed is seeds 4, 5
        settings = {**settings, **wb.typed_stress_settings(settings)}
    except ValueError:
        pass
    for name, value in settings.items():
        if name not in shown:
            text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
            out += f"; {name.replace('_', ' ')} {text}"
    return out


def job_line(sp: dict) -> str:
    """'stress test, part 3 of 4: quant8 5/10 · elapsed 0m40s · ETA 0m20s' (or 'ETA unknown')."""
    if sp["state"] != "running":
        return sp["text"]
    return f"{sp['text']} · elapsed {wb.fmt_seconds(sp['elapsed_s'])} · {sp['eta_text']}"


def run_section(run_dir: Path, selected: str, p: dict, root: Path) -> None:
    """The selected run's stress test (``p``: its progress as shown): for a completed run,
    its job's state with progress and Cancel while queued or running, how the last one
    ended, and the control that queues one."""
    if p["state"] != "completed":
        return
    sp = wb.stress_progress(run_dir)
    st.markdown("**Stress test** — does the forgetting hold?",
                help="attacks the run's model and re-scores the forget answers; results on "
                     "the Results page under \"Does it hold?\" (docs/stress-tests.md)")
    if sp["state"] in ("queued", "running"):
        attacks = ", ".join(sp["attacks"])
        st.progress(sp["fraction"], text=plain(job_line(sp) + (f" · attacks: {attacks}"
                                                               if attacks else "")))
        if st.button("Cancel stress test", key="runs.stress_cancel",
                     help="a queued test never starts; a running one stops (the result files "
                          "written so far stay)"):
            try:
                st.toast(f"stress test: {wb.cancel_stress(run_dir).get('state')}")
            except RuntimeError as exc:  # it runs on another machine
                show_error(exc)
        return
    if sp["state"] == "failed" and sp["error"]:
        st.error(plain(f"stress test failed: {sp['error']}"))
    elif sp["state"] == "cancelled":
        st.warning(plain(f"stress test cancelled: {sp['error'] or 'by request'}"))
    elif sp["state"] == "completed":
        st.caption(plain(f"last stress test completed ({', '.join(sp['results']) or 'no file'}"
                         f", {wb.fmt_seconds(sp['elapsed_s'])}): see Results → Does it hold?"))
    # the rule Results' "Stress-test runs" and `stress --queue` follow: Results lists
    # evaluated runs only, so a test of any other run would never be shown
    why = wb.stress_candidates([{"run_id": selected, "path": str(run_dir)}], root)[1].get(
        selected)
    if why:
        st.caption(plain(f"cannot stress-test this run: {why}"))
        return
    try:  # the run's data kind: a text run is not offered the QA-only attacks
        kind = wb.RunFolder(run_dir).config().data.task
    except Exception:  # noqa: BLE001 - a damaged config is shown elsewhere; offer all
        kind = None
    with st.form("runs.stress_form", border=False, enter_to_submit=False):
        attacks = st.multiselect("attacks", wb.attack_names(), default=wb.default_attacks(kind),
                                 key="runs.stress_attacks",
                                 help="the registered attacks (the stress command's "
                                      "--attacks; the reference lists them)")
        settings = attack_settings("runs")
        go = st.form_submit_button("Stress-test", help="queued as a job like an evaluation "
                                   "(it goes to SLURM for a run trained there)")
    if not go:
        return
    if not attacks:
        st.warning("Choose at least one attack.")
        return
    try:
        wb.request_stress(run_dir, attacks, settings, root=root)
    except (ValueError, OSError, wb.SlurmError) as exc:  # ConfigError is a ValueError
        show_error(exc, "cannot stress-test")
        return
    st.session_state["runs.done"] = (f"Queued a stress test of {selected} "
                                     f"({', '.join(attacks)}{_said(settings)}).")
    st.rerun()


def runs_form(rows: list[dict], root: Path, kind: str | None = None) -> None:
    """The Results page's "Stress-test runs": the attacks queued for the chosen runs of
    ``rows`` (by default every evaluated run with a model and no stress test in progress;
    a sweep picks its own), then how many were queued and why any were skipped."""
    said = st.session_state.pop("results.stress_done", None)
    if said:
        (st.success if said[0] else st.warning)(plain(said[1]))
        for line in said[2]:
            st.caption(plain(line))
    ok, why = wb.stress_candidates(rows, root)
    runs = [r for r in rows if r.get("run_id") and r["run_id"] in set(ok) | set(why)]
    if not runs:
        return
    names = {r["run_id"]: str(r.get("run") or r["run_id"]) for r in runs}
    sweeps = sorted({str(r["sweep"]) for r in runs if r.get("sweep")})
    with panel("Stress-test runs", "results.stress_open"):
        sweep = st.selectbox("runs of", [ALL_RUNS] + [f"sweep {s}" for s in sweeps],
                             key="results.stress_sweep",
                             help="a sweep's runs, or every run shown above")
        pool = [r["run_id"] for r in runs if sweep == ALL_RUNS or
                f"sweep {r.get('sweep')}" == sweep]
        with st.form("results.stress_form", border=False, enter_to_submit=False):
            chosen = st.multiselect("runs", pool, default=[i for i in pool if i in ok],
                                    key=f"results.stress_runs.{sweep}",
                                    format_func=lambda i: names.get(i, i),
                                    help="starts with every evaluated run that has a model "
                                         "and no stress test queued or running; the Retained "
                                         "model's relearning is the baseline (how fast the "
                                         "forget set is learned from scratch)")
            attacks = st.multiselect("attacks", wb.attack_names(),
                                     default=wb.default_attacks(kind),
                                     key="results.stress_attacks")
            settings = attack_settings("results")
            go = st.form_submit_button("Stress-test runs",
                                       help="each run's test is a job like an evaluation "
                                            "(SLURM for runs trained there)")
        left_out = [f"{names.get(i, i)}: {why[i]}" for i in pool if i in why]
        if left_out:
            st.caption(plain("Not offered: " + "; ".join(left_out)))
    if not go:
        return
    if not chosen:
        st.warning("Choose at least one run.")
        return
    if not attacks:
        st.warning("Choose at least one attack.")
        return
    try:
        done = wb.queue_stress_tests([root / i for i in chosen], attacks, settings, root=root,
                                     originals=wb.stress_originals(rows, root))
    except ValueError as exc:  # the attacks or settings (ConfigError)
        show_error(exc, "cannot stress-test")
        return
    n = len(done["queued"])
    head = (f"Queued {wb.plural(n, 'stress test')} ({', '.join(attacks)}"
            f"{_said(settings)})"
            + (f"; skipped {len(done['skipped'])}" if done["skipped"] else "") + ".")
    st.session_state["results.stress_done"] = (
        n > 0, head, [f"skipped {names.get(i, i)}: {w}" for i, w in done["skipped"].items()])
    st.rerun()
