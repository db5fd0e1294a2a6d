"""The Train page's "Sweep over <setting>" panel: one run per value of the method's sweep
setting (r for SGA), each repeated over the form's seeds."""

from __future__ import annotations

import streamlit as st

from sga_core import workbench as wb
from ui.forms import kept
from ui.show import panel, plain, show_error


def sweep_panel(method: str, param: str, make_cfg, root, backend: str = "local") -> None:
    """``make_cfg(run_id, sweep_group, value)`` builds each run's config from the form;
    ``backend``: the local queue, or SLURM (the sweep as one job array)."""
    # the open state lives in the session: a rerun that redraws the page above it (Enter in
    # its field, a preview) does not fold the panel away under the person
    with panel(f"Sweep over {param}", "train.sweep_open"):
        # each method's own values, within its setting's bounds (SGA's box keeps its key)
        sweep_key = "train.sweep_values" if method == "sga" else f"train.sweep_values.{method}"
        text = kept(st.text_input, sweep_key, wb.sweep_default(method),
                    label=f"{param} values: a list ({wb.sweep_default(method)}) or "
                          "a range start:stop:step", help="each value runs once per seed of "
                                                          "'repeat over seeds' (Training, "
                                                          "above)")
        sweep_name = kept(st.text_input, "train.sweep_name", "sweep", label="sweep name")
        if st.button("Queue sweep", key="train.sweep"):
            try:
                group, queued = wb.queue_sweep(lambda g, v: make_cfg("", g, v),
                                               wb.parse_sweep_values(text, method),
                                               sweep_name, root, backend)
                st.success(f"Queued {wb.plural(len(queued), 'run')} as sweep "
                           f"**{plain(group)}**: " +
                           ", ".join(q.name for q in queued))
            except (wb.ConfigError, ValueError) as exc:
                show_error(exc, "cannot queue sweep")
