"""The built-in demo project: fictitious authors (QA) and two real-world utility sets,
from the files shipped with the workbench (:data:`sga_core.assets.DEMO_DIR`)."""

from __future__ import annotations

from sga_core.projects.create import create_project
from sga_core.projects.project import Project


def create_demo_project(name: str = "demo", root=None, overwrite: bool = False) -> Project:
    """The built-in demo: fictitious authors (QA), with the two real-world utility sets.
    Replacing an existing demo (``overwrite``, the Data page's confirmed reset) keeps its
    normal-answer history, the table it had as the newest version
    (:func:`~sga_core.projects.create.carry_history`)."""
    from sga_core.assets import DEMO_DIR as demo

    return create_project(name, demo / "forget.jsonl", demo / "retain.jsonl", kind="qa",
                          root=root, overwrite=overwrite,
                          eval_sets={"real_authors": demo / "real_authors.jsonl",
                                     "world_facts": demo / "world_facts.jsonl"},
                          meta={"demo": True}, keep_history=True)
