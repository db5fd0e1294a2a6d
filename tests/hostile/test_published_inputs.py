"""Hostile published-model settings (sga_core/projects/published.py): each bad checkpoint
or eval log is refused with a message naming the role and what is wrong (never a
traceback), and the project's settings stay as they were."""

from __future__ import annotations

import pytest

from sga_core.assets import DEMO_DIR
from sga_core.projects import ProjectError, create_project
from sga_core.projects.published import named, set_published

BAD_LOGS = {
    "binary.json": (b"\xff\xfe\x00binary", "is not UTF-8 text"),
    "list.json": (b"[1, 2]", "must hold an object of metrics, got list"),
    "keys.json": (b'{"forget_truth_ratio": {"agg_value": 1, "value_by_index": {"a": '
                  b'{"score": 1}}}}', "row index 'a' is not a number"),
    "deep.json": (b"[" * 100000 + b"]" * 100000, "nested too deeply"),
    "other.json": (b'{"accuracy": 0.5}', "not an open-unlearning eval log"),
    "noscore.json": (b'{"forget_truth_ratio": {"agg_value": 1, "value_by_index": {}}}',
                     "value_by_index must be a non-empty object of rows"),
}


def test_bad_settings_are_refused_and_change_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    p = create_project("h", DEMO_DIR / "forget.jsonl", root=tmp_path / "ws")
    for name, (content, why) in BAD_LOGS.items():
        f = tmp_path / name
        f.write_bytes(content)
        with pytest.raises(ProjectError, match=why):
            set_published(p, reference_logs=str(f))
    (tmp_path / "empty").mkdir()
    cases = {"reference_logs": [(str(tmp_path / "empty"), "holds no open-unlearning eval "
                                 "log"), (str(tmp_path / "none.json"), "does not exist"),
                                ("x" * 300 + "/y", "too long")],
             "original": [(str(DEMO_DIR / "forget.jsonl"), "is not a folder"),
                          (str(DEMO_DIR), "config.json is missing"),
                          ("a/b/c", "neither a folder on this machine nor a hub id"),
                          ("x" * 300 + "/y", "too long"),
                          ("embedded:smollm2", "the base model")],
             "retained": [("org/name", "not in the local Hugging Face cache")]}
    for role, bad in cases.items():
        for value, why in bad:
            with pytest.raises(ProjectError, match=why):
                set_published(p, **{role: value})
    assert named(p) == {}
