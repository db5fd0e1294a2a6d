"""The set name suggested for an uploaded evaluation file always passes the set-name rule
(it names the set's metrics), whatever the file is called."""

from __future__ import annotations

import pytest

from sga_core.projects.eval_sets import SET_NAME_RE, check_set_name, suggest_set_name


@pytest.mark.parametrize("filename, expected", [
    ("my_authors.json", "my_authors"),
    ("My Authors (v2).JSONL", "my_authors_v2"),
    ("Données réelles.csv", "donnees_reelles"),
    ("forget.jsonl", "forget_set"),  # the project's own data keeps its name
    ("retain.parquet", "retain_set"),
    ("日本語.parquet", "set"),
    ("__.csv", "set"),
    ("C:\\Users\\me\\World-Facts.json", "world_facts"),
    ("x" * 60 + ".json", "x" * 40),
    ("a" * 39 + "-b.json", "a" * 39),  # cut at 40, never ending in '_'
])
def test_suggested_names_follow_the_set_name_rule(filename, expected):
    name = suggest_set_name(filename)
    assert name == expected
    assert SET_NAME_RE.match(name) and check_set_name(name) == name


@pytest.mark.parametrize("stem", ["", ".", "..", " ", "\x00\x1b[31m", "../../etc/passwd",
                                  "a\u202eb", "Ω≈ç√", "1" * 500, "e\u0301", "_-_-_", "😀 set"])
def test_odd_file_names_give_valid_names(stem):
    name = suggest_set_name(f"{stem}.jsonl")
    assert check_set_name(name) == name
