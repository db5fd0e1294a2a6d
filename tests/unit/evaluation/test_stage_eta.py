"""Every stage of an evaluation reports progress before it ends, even a stage of a single
batch (a CPU evaluation of a few rows is one batch per stage), so each can show an ETA
(``eval_progress``: the stage's time so far / done x what is left): scoring reports after
every forward, the first batch in two halves; generation after every token
("<stage> (tokens)"); the token table and the reference's stages as well. Only loading a
model is one step."""

from __future__ import annotations

import pytest

from sga_core.evaluation import EvalSettings, evaluate_model

ONE_STEP = ("loading the model", "loading the reference model")


def _heard(model, out, forget, retain, sets, reference, task, st) -> dict[str, list]:
    heard: dict[str, list[tuple[int, int]]] = {}

    def progress(stage, done, total):
        heard.setdefault(stage, []).append((done, total))

    evaluate_model(str(model), out, forget, retain, sets, reference=str(reference),
                   task=task, settings=st, progress=progress)
    return heard


def _check_every_stage(heard: dict[str, list], expected: set[str]) -> None:
    assert expected <= set(heard), sorted(heard)
    for stage, calls in heard.items():
        done, total = calls[-1]
        assert done == total and total > 0, f"{stage} never reached its total: {calls}"
        if stage in ONE_STEP:
            continue
        between = [d for d, t in calls if 0 < d < t]
        assert between, f"{stage}: nothing between 0 and {total} (no ETA before it ends)"


@pytest.fixture(scope="module")
def reference_dir(tmp_path_factory):
    from sga_core.model.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("reference") / "model", seed=1)


def test_every_text_stage_of_one_batch_reports_before_it_ends(tiny_model_dir, reference_dir,
                                                             demo_dir, tmp_path):
    sets = {n: str(demo_dir / f"text_{n}.jsonl") for n in ("holdout", "forget_qa",
                                                           "retain_qa")}
    st = EvalSettings(protocol="muse", batch_size=64, max_new_tokens=4, max_rows=4)
    heard = _heard(tiny_model_dir, tmp_path / "eval", str(demo_dir / "text_forget.jsonl"),
                   str(demo_dir / "text_retain.jsonl"), sets, reference_dir, "text", st)
    _check_every_stage(heard, {
        "reference: scoring texts", "scoring texts", "verbatim continuations (tokens)",
        "answering forget_qa (tokens)", "answering retain_qa (tokens)",
        "token probabilities"})
    # "scoring texts 0/12" moves within its one batch: forget, holdout and retain, 4 each
    assert heard["scoring texts"][0] == (0, 12) and (6, 12) in heard["scoring texts"]
    # generation counts tokens: 4 forget prefixes x MUSE's 128 VerbMem tokens at the most
    assert heard["verbatim continuations (tokens)"][-1] == (4 * 128, 4 * 128)


def test_every_qa_stage_of_one_batch_reports_before_it_ends(tiny_model_dir, reference_dir,
                                                           demo_dir, tmp_path):
    sets = {n: str(demo_dir / f"{n}.jsonl") for n in ("real_authors", "world_facts")}
    st = EvalSettings(batch_size=64, max_new_tokens=3, max_rows=4)
    heard = _heard(tiny_model_dir, tmp_path / "eval", str(demo_dir / "forget.jsonl"),
                   str(demo_dir / "retain.jsonl"), sets, reference_dir, "qa", st)
    _check_every_stage(heard, {
        "reference: scoring forget answers", "scoring answers",
        "generating answers (tokens)", "scoring forget tokens", "token probabilities"})
