"""The SGA paper's other baselines end to end (docs/spec.md#16-other-methods): launched from
the Train page, trained and evaluated by real processes, found on the Results and Token
probabilities pages. (The per-unit losses against their definitions are unit tests:
tests/unit/methods/test_paper_methods.py.)"""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_flat_and_sga_from_the_train_page_to_results_and_tokens(ui_env, tiny_model_dir):
    """As a new user would: launch FLAT and SGA on the demo from the Train page, wait for
    both to be trained and evaluated, and find both on the Results and Token probabilities
    pages."""
    from sga_core.runs.listing import list_runs
    from tests.helpers.ui import open_page, results_frame
    from tests.helpers.wait import wait_for

    at = open_page("app_pages/train.py")
    at.radio(key="train.model_mode").set_value("other model").run()
    at.text_input(key="train.model").set_value(str(tiny_model_dir)).run()
    at.number_input(key="train.f.t.max_steps").set_value(2).run()
    for name in ("flat", "sga"):
        at.selectbox(key="train.method").set_value(name).run()
        at.checkbox(key="train.idk_fallback").check().run()
        at.button(key="train.launch").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]

    def both_ended():
        runs = list_runs(ui_env / "runs")
        return len(runs) == 2 and all(r["eval_state"] in ("completed", "failed")
                                      for r in runs) and runs

    runs = wait_for(both_ended, 900, "both runs trained and evaluated", interval=2)
    assert sorted(r["method"] for r in runs) == ["flat", "sga"]
    assert all(r["state"] == "completed" and r["eval_state"] == "completed" for r in runs), runs
    at = open_page("app_pages/results.py")
    assert sorted(results_frame(at)["method"]) == ["flat", "sga"]
    at = open_page("app_pages/tokens.py")
    # the runs are offered under their readable names (method, then r)
    assert sorted(o.split()[0] for o in at.multiselect(key="tokens.runs").options) == \
        ["flat", "sga"]
    assert at.get("plotly_chart")  # the heatmap of both runs' answer-token probabilities
