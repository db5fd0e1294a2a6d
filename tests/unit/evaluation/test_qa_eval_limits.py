"""``eval.max_rows`` on a QA (TOFU-style) evaluation: the forget, retain and extra sets are cut
to the same evenly spaced subset, each row keeps its own index, and Forget Quality compares
the model's truth ratios with the reference's on exactly those rows (the reference's value is
keyed by the rows, so a cached value for the whole set never serves a subset, nor the other
way round)."""

from __future__ import annotations

import shutil

import pytest
from scipy.stats import ks_2samp

from sga_core.evaluation import EvalSettings, evaluate_model
from sga_core.fileio import read_jsonl

FORGET_IDS = [0, 3, 6]  # 3 evenly spaced of the demo's 10 forget rows


@pytest.fixture(scope="module")
def reference_weights(tmp_path_factory):
    """A retain reference with other weights than the evaluated tiny model, so its truth
    ratios differ from the model's (the same weights would give Forget Quality 1)."""
    from sga_core.model.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("reference") / "model", seed=1)


@pytest.fixture()
def reference_dir(reference_weights, tmp_path):
    """The reference, with a value cache of this test's own (none yet)."""
    return shutil.copytree(reference_weights, tmp_path / "reference")


def _evaluate(model, out, demo_dir, reference, **settings):
    sets = {n: str(demo_dir / f"{n}.jsonl") for n in ("real_authors", "world_facts")}
    st = EvalSettings(max_new_tokens=2, batch_size=16, **settings)
    return evaluate_model(str(model), out, str(demo_dir / "forget.jsonl"),
                          str(demo_dir / "retain.jsonl"), sets, reference=str(reference),
                          task="qa", settings=st)


def test_a_qa_subset_keeps_its_rows_own_indices(tiny_model_dir, reference_dir, demo_dir,
                                                tmp_path):
    out = tmp_path / "eval"
    summ = _evaluate(tiny_model_dir, out, demo_dir, reference_dir, max_rows=3,
                     max_retain_rows=2)
    assert summ["task"] == "qa" and summ["settings"]["max_rows"] == 3
    assert summ["rows"] == {"forget": 3, "retain": 2, "real_authors": 3, "world_facts": 3}
    assert summ["rows_of"] == {"forget": 10, "retain": 110, "real_authors": 20,
                               "world_facts": 20}
    by_set: dict[str, list[int]] = {}
    for s in read_jsonl(out / "per_sample.jsonl"):
        by_set.setdefault(s["set"], []).append(s["index"])
    assert by_set["forget"] == FORGET_IDS
    assert by_set["real_authors"] == by_set["world_facts"] == [0, 6, 13]
    # max_rows takes rows 0, 36, 73 of retain; the demo's max_retain_rows (2) then applies
    assert by_set["retain"] == [0, 36]
    assert summ["retain_rows_total"] == 110 and summ["retain_indices"] == [0, 36]
    assert [t["index"] for t in read_jsonl(out / "tokens.jsonl")] == FORGET_IDS


def test_forget_quality_of_a_subset_is_against_the_reference_on_the_same_rows(
        tiny_model_dir, reference_dir, demo_dir, tmp_path):
    # the whole set first: the reference's truth ratios of all 10 forget rows are cached
    full = _evaluate(tiny_model_dir, tmp_path / "full", demo_dir, reference_dir)
    assert full["reference"]["n_truth_ratios"] == 10
    assert full["reference"]["source"] == "computed"
    ref_tr = _reference_truth_ratios(reference_dir, demo_dir)
    assert len(ref_tr) == 10

    sub = _evaluate(tiny_model_dir, tmp_path / "sub", demo_dir, reference_dir, max_rows=4)
    ids = [0, 2, 5, 7]  # 4 evenly spaced of 10
    # the cached whole-set value is not for these rows: computed again, on these 4
    assert sub["reference"]["source"] == "computed"
    assert sub["reference"]["n_truth_ratios"] == 4
    own = sub["forget_truth_ratios"]
    assert own == pytest.approx([full["forget_truth_ratios"][i] for i in ids])
    fq = sub["metrics"]["forget_quality"]["value"]
    assert fq == pytest.approx(ks_2samp(own, [ref_tr[i] for i in ids]).pvalue)
    assert fq != pytest.approx(ks_2samp(own, ref_tr).pvalue)  # not against all 10 rows

    # and the other way round: the subset's cached value never serves the whole set
    again = _evaluate(tiny_model_dir, tmp_path / "again", demo_dir, reference_dir)
    assert again["reference"]["source"] == "reference cache"
    assert again["reference"]["n_truth_ratios"] == 10
    assert again["metrics"]["forget_quality"]["value"] == pytest.approx(
        full["metrics"]["forget_quality"]["value"])


def _reference_truth_ratios(reference_dir, demo_dir) -> list[float]:
    """The reference model's forget truth ratios of every forget row, computed here."""
    from sga_core.data import load_qa
    from sga_core.evaluation import load_model_and_tokenizer
    from sga_core.evaluation.qa import reference_truth_ratios

    model, tok = load_model_and_tokenizer(str(reference_dir))
    st = EvalSettings(batch_size=16).resolve()[1]
    return reference_truth_ratios(model, st.encoder(tok, model),
                                  load_qa(demo_dir / "forget.jsonl"), 16)
