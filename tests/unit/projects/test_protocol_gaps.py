"""What a text project's evaluation does differently from its protocol's summary for want of
a set is said beside the protocol's line (a MUSE-Books subset that lost its VerbMem
passages, a project without MUSE's few-shot ``_icl`` sets): the summary alone promised
few-shot KnowMem and the benchmark's VerbMem."""

from __future__ import annotations

from sga_core.projects import create_project
from sga_core.projects.eval_sets import protocol_gaps
from tests.helpers.own_data import muse_text_project


def test_a_muse_project_without_icl_or_forget_eval_says_so(tmp_path):
    p, qa = muse_text_project(tmp_path)
    forget = p.forget_path
    gaps = protocol_gaps(p)
    assert len(gaps) == 2, gaps
    assert "KnowMem is asked zero-shot on forget_qa" in gaps[0]
    assert "forget_qa_icl" in gaps[0]
    assert "no forget_eval set" in gaps[1] and "not the benchmark's numbers" in gaps[1]
    # with its few-shot examples and the VerbMem passages, it is as the summary says
    p.add_eval_set("forget_qa_icl", qa, confirm_role=True)
    p.add_eval_set("forget_eval", forget, confirm_role=True)
    assert protocol_gaps(p) == []
    # a protocol that promises neither has no gap to name
    assert protocol_gaps(p, "demo") == []


def test_a_qa_project_has_no_text_gaps(tmp_path, demo_dir):
    p = create_project("qa", demo_dir / "forget.jsonl", root=tmp_path / "ws")
    assert protocol_gaps(p) == []
