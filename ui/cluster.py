"""SLURM in the pages (docs/slurm.md): where Train sends runs (this machine's queue, or the
cluster), the batch script a preview shows, the workspace's cluster profile form, and a
run's job, node and wait on the Runs page."""

from __future__ import annotations

from dataclasses import asdict

import streamlit as st

from sga_core import workbench as wb
from ui.forms import dataclass_form, kept
from ui.show import panel, plain, show_error

LOCAL, SLURM = "local", "slurm"
LABELS = {LOCAL: "this machine (local queue)", SLURM: "SLURM cluster (sbatch)"}


def backend_choice(key: str = "train.backend") -> str:
    """Where Launch sends runs: a choice when SLURM is offered here, else "local" with the
    reason SLURM is not offered."""
    why = wb.slurm_unavailable()
    if why:
        st.caption(plain(f"Runs go to this machine's queue. SLURM is not offered: {why}."))
        return LOCAL
    try:
        default = wb.load_cluster_profile().backend
    except wb.ConfigError as exc:
        show_error(exc, "the cluster profile cannot be read")
        default = LOCAL
    return kept(st.radio, key, default, label="run on", options=[LOCAL, SLURM],
                format_func=LABELS.get, horizontal=True,
                help="SLURM: each run is a batch job (a sweep or seed group one job array) "
                     "with the workspace's cluster profile (Runs page, Cluster profile)")


def chosen_backend(key: str = "train.backend") -> str:
    """Where the page's "run on" choice (drawn by :func:`backend_choice`, kept across
    reruns) sends work: SLURM only while it is offered here."""
    if st.session_state.get(key) != SLURM or wb.slurm_unavailable():
        return LOCAL
    return SLURM


def show_batch_script(backend: str, cfg, root) -> None:
    """Under the previewed command: the exact batch script a SLURM launch submits."""
    if backend != SLURM:
        return
    try:
        st.code(wb.slurm_preview(cfg, root), language="bash")
        st.caption("slurm.sh: kept in the run folder beside command.sh (`sbatch slurm.sh` "
                   "resubmits it by hand)")
    except (wb.ConfigError, ValueError) as exc:
        show_error(exc, "cannot write the batch script")


def profile_section() -> None:
    """The workspace's cluster profile (workspace/cluster.yaml), edited and saved."""
    with panel("Cluster profile (SLURM)", "cluster.profile_open"):
        why = wb.slurm_unavailable()
        if why:
            st.caption(plain(f"SLURM is not offered on this machine: {why}. The profile is "
                             "kept for when the workbench runs on a login node."))
        try:
            profile = asdict(wb.load_cluster_profile())
        except wb.ConfigError as exc:
            show_error(exc, "the cluster profile cannot be read; saving replaces it")
            profile = asdict(wb.ClusterProfile())
        values = dataclass_form(wb.ClusterProfile, profile, key="cluster.f", advanced=False)
        values.update(dataclass_form(wb.ClusterProfile, profile, key="cluster.fa",
                                     advanced=True))
        for name, label in (("extra_sbatch", "extra #SBATCH lines (one per line)"),
                            ("setup", "setup lines run before the command (module load, "
                                      "source .../activate)")):
            text = kept(st.text_area, f"cluster.f.{name}", "\n".join(profile[name]),
                        label=label)
            values[name] = [ln for ln in text.splitlines() if ln.strip()]
        if st.button("Save profile", key="cluster.save"):
            try:
                path = wb.save_cluster_profile(values)
                st.success(f"Saved {path.name}")
            except (wb.ConfigError, ValueError, OSError) as exc:
                show_error(exc, "cannot save the profile")


def job_caption(status: dict) -> None:
    """Where a job runs, as its backend says it (a SLURM job: its id, node, time waited and
    SLURM's reason while it waits); nothing for a job of this machine's queue."""
    where = wb.job_where(status)
    if where:
        st.caption(plain(where))
