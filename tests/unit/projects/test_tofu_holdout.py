"""TOFU's holdout splits (locuslab/TOFU configs ``holdout01``, ``holdout05``, ``holdout10``,
one split ``train``, rows ``{question, answer}``; open-unlearning
``configs/data/datasets/TOFU_MIA.yaml``) imported with TOFU as the project's ``holdout``
evaluation set: from a folder of the hub's files, through ``datasets`` (the hub or its
cache: :func:`sga_core.data.hub.hub_rows` replaced by a reader of the same files), and
without them (a note; refused under ``strict``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sga_core.data.hub import HubError, Part, get_benchmark
from sga_core.fileio import read_jsonl
from sga_core.projects.benchmarks import import_benchmark, import_with

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "assets" / "demo"


def _write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _qa(rows: list[dict]) -> list[dict]:
    return [{"question": r["question"], "answer": r["answer"]} for r in rows]


def _tofu(d: Path, split: str, holdout: bool) -> Path:
    """TOFU's configs as its hub repository stores them: <config>.json, JSON lines."""
    forget = read_jsonl(DEMO / "forget.jsonl")
    retain = read_jsonl(DEMO / "retain.jsonl")
    _write(d / f"{split}_perturbed.json", forget)
    _write(d / f"retain{100 - int(split[-2:]):02d}.json", _qa(retain))
    _write(d / "retain_perturbed.json", retain[:12])
    _write(d / "real_authors_perturbed.json", read_jsonl(DEMO / "real_authors.jsonl")[:8])
    _write(d / "world_facts_perturbed.json", read_jsonl(DEMO / "world_facts.jsonl")[:8])
    if holdout:  # questions about authors never trained on: the shape of holdout10.json
        _write(d / f"holdout{split[-2:]}.json", _qa(retain[-7:]))
    return d


def test_the_holdout_split_matches_the_forget_split():
    for split, holdout in (("forget01", "holdout01"), ("forget05", "holdout05"),
                           ("forget10", "holdout10")):
        part = get_benchmark("tofu").parts(split)[-1]
        assert part == Part("holdout", holdout, "train", optional=True,
                            purpose=part.purpose, lacking=part.lacking)


@pytest.mark.parametrize("split", ["forget05", "forget10"])
def test_tofu_imports_its_holdout_split_as_the_holdout_set(tmp_path, split):
    folder = _tofu(tmp_path / "tofu", split, holdout=True)
    p = import_benchmark("tofu", variant=split, folder=folder, root=tmp_path / "ws")
    assert "holdout" in p.eval_sets()
    rows = read_jsonl(p.eval_sets()["holdout"])
    assert rows == _qa(read_jsonl(DEMO / "retain.jsonl")[-7:])
    assert not [n for n in p.meta["import_notes"] if "holdout" in n]


def test_tofu_holdout_through_datasets_asks_for_the_published_config(tmp_path, monkeypatch):
    from sga_core.data import hub

    folder = _tofu(tmp_path / "tofu", "forget01", holdout=True)
    asked = []

    def fake_hub_rows(repo, config, split):
        asked.append((repo, config, split))
        path = folder / f"{config}.json"
        if not path.exists():  # as datasets says it
            raise ValueError(f"BuilderConfig '{config}' not found.")
        return read_jsonl(path)

    monkeypatch.setattr(hub, "hub_rows", fake_hub_rows)
    p = import_with("tofu", "t01", {"split": "forget01"}, root=tmp_path / "ws")
    assert ("locuslab/TOFU", "holdout01", "train") in asked
    assert read_jsonl(p.eval_sets()["holdout"])[0].keys() == {"question", "answer"}


def test_without_the_holdout_split_the_rest_imports_and_says_so(tmp_path):
    folder = _tofu(tmp_path / "tofu", "forget10", holdout=False)
    p = import_with("tofu", None, {"from_folder": str(folder)}, root=tmp_path / "ws")
    assert "holdout" not in p.eval_sets() and "retain_eval" in p.eval_sets()
    notes = "\n".join(p.meta["import_notes"])
    assert "holdout10/train" in notes and "no MIA AUC or PrivLeak" in notes
    with pytest.raises(HubError) as err:  # strict: refused, nothing written
        import_with("tofu", "strict", {"from_folder": str(folder), "strict": True},
                    root=tmp_path / "ws")
    assert "holdout10" in str(err.value) and "strict" in str(err.value)
    assert not (tmp_path / "ws" / "strict").exists()


def test_a_qa_holdout_set_is_a_role_of_qa_projects():
    from sga_core.projects.eval_sets import role_words, set_kind

    assert set_kind("qa", "holdout") == "qa" and set_kind("text", "holdout") == "text"
    words = role_words("qa", "holdout", "tofu")
    assert words.startswith("holdout for MIA AUC") and "TOFU: holdout10" in words
