"""Can this experiment measure forgetting? (docs/measurability.md): the Original and the
Retained compared on the forget-side metrics with paired bootstrap intervals. Hand-built
evaluations: where the two are equal, the verdict is "not measurable" (the banner's text,
nothing ranked); where the Original memorised the forget set, it is measurable."""

from __future__ import annotations

from pathlib import Path

from sga_core.fileio import atomic_write_json, atomic_write_jsonl
from sga_core.report.measurable import (
    NOT_MEASURABLE,
    can_rank,
    measurability,
    separates,
    table_verdict,
)


def write_eval(run_dir: Path, task: str, metrics: dict, records: list[dict],
               reference: dict | None = None) -> Path:
    rows: dict[str, int] = {}
    for r in records:
        rows[r["set"]] = rows.get(r["set"], 0) + 1
    atomic_write_jsonl(run_dir / "eval" / "per_sample.jsonl", records)
    atomic_write_json(run_dir / "eval" / "summary.json", {
        "task": task, "rows": rows, "reference": reference or {},
        "metrics": {k: {"name": k, "value": v, "reason": None} for k, v in metrics.items()}})
    return run_dir


def qa_run(run_dir: Path, probs: list[float], rouges: list[float]) -> Path:
    recs = [{"set": "forget", "index": i, "question": f"q{i}", "answer": "a",
             "generated": "g", "probability": p, "rouge_l_recall": r}
            for i, (p, r) in enumerate(zip(probs, rouges))]
    return write_eval(run_dir, "qa", {"forget_probability": sum(probs) / len(probs),
                                      "forget_rouge": sum(rouges) / len(rouges)}, recs)


def text_run(run_dir: Path, verbmem: list[float], forget_mink: list[float],
             holdout_mink: list[float], ref_auc: float | None) -> Path:
    """A text evaluation: VerbMem per forget row, Min-K% scores of forget and holdout rows;
    ``ref_auc`` None = the run is its own reference (the Retained: PrivLeak 0)."""
    from sga_core.metrics.muse import auc, privleak

    recs = [{"set": "forget", "index": i, "prompt": f"p{i}", "reference": "c", "generated": "g",
             "rouge_l_f1": v, "min_k_score": m}
            for i, (v, m) in enumerate(zip(verbmem, forget_mink))]
    recs += [{"set": "holdout", "index": i, "reference": f"h{i}", "min_k_score": m}
             for i, m in enumerate(holdout_mink)]
    a = auc(forget_mink, holdout_mink).value
    pl = privleak(a, a if ref_auc is None else ref_auc).value
    return write_eval(run_dir, "text", {"forget_verbmem": sum(verbmem) / len(verbmem),
                                        "mia_auc": a, "privleak": pl}, recs,
                      {"mia_auc": a if ref_auc is None else ref_auc})


SPREAD = [0.1, 0.3, 0.2, 0.5, 0.4, 0.15, 0.35, 0.25, 0.45, 0.05]


def test_an_original_equal_to_the_retained_cannot_measure_forgetting(tmp_path):
    o = qa_run(tmp_path / "o", SPREAD, SPREAD)
    r = qa_run(tmp_path / "r", SPREAD, SPREAD)
    v = measurability(o, r)
    assert v["measurable"] is False and v["message"] == NOT_MEASURABLE
    assert "no forgetting can be measured; train the Original longer" in v["message"]
    assert {x["metric"] for x in v["rows"]} == {"forget_probability", "forget_rouge"}
    assert all(x["lo"] <= 0 <= x["hi"] and not x["separates"] for x in v["rows"])
    assert can_rank(v) is False


def test_an_original_that_memorised_can_measure_forgetting(tmp_path):
    o = qa_run(tmp_path / "o", [p + 0.5 for p in SPREAD], SPREAD)  # much likelier answers
    r = qa_run(tmp_path / "r", SPREAD, SPREAD)
    v = measurability(o, r)
    assert v["measurable"] is True and v["message"] is None and can_rank(v)
    by = {x["metric"]: x for x in v["rows"]}
    assert by["forget_probability"]["separates"] and by["forget_probability"]["lo"] > 0
    assert not by["forget_rouge"]["separates"]  # one metric that separates is enough


def test_a_difference_on_the_wrong_side_does_not_count(tmp_path):
    # the Original LESS likely than the Retained on its own forget answers: not memorisation
    o = qa_run(tmp_path / "o", SPREAD, SPREAD)
    r = qa_run(tmp_path / "r", [p + 0.5 for p in SPREAD], SPREAD)
    assert measurability(o, r)["measurable"] is False
    assert not separates({"metric": "forget_probability", "lo": -0.6, "hi": -0.4}, "qa")
    assert separates({"metric": "privleak", "lo": -90.0, "hi": -40.0}, "text")


def test_text_runs_use_verbmem_and_privleak(tmp_path):
    holdout = [-3.0 - 0.1 * i for i in range(10)]
    same = [-3.05 - 0.1 * i for i in range(10)]  # forget texts scored like the holdout
    r = text_run(tmp_path / "r", SPREAD, same, holdout, None)
    ref = measurability(text_run(tmp_path / "o1", SPREAD, same, holdout, None), r)
    assert ref["measurable"] is False
    assert {x["metric"] for x in ref["rows"]} == {"forget_verbmem", "privleak"}
    # an Original whose forget texts are far likelier than the holdout's: PrivLeak near -100
    from sga_core.metrics.muse import auc

    o = text_run(tmp_path / "o2", SPREAD, [-0.5 - 0.01 * i for i in range(10)], holdout,
                 auc(same, holdout).value)
    v = measurability(o, r)
    by = {x["metric"]: x for x in v["rows"]}
    assert v["measurable"] is True and by["privleak"]["separates"], by
    assert by["privleak"]["original"] < -50 and abs(by["privleak"]["retained"]) < 1e-9


def test_no_verdict_without_both_evaluations(tmp_path):
    o = qa_run(tmp_path / "o", SPREAD, SPREAD)
    v = measurability(o, tmp_path / "none")
    assert v["measurable"] is None and "Retained is not evaluated" in v["reason"]
    assert can_rank(v)
    rows = [{"run": "Original", "run_id": "o"}, {"run": "sga r=-0.8", "run_id": "x"}]
    assert "no evaluated Retained row" in table_verdict(rows, tmp_path)["reason"]
    rows.append({"run": "Retained", "run_id": "r"})
    qa_run(tmp_path / "r", SPREAD, SPREAD)
    assert table_verdict(rows, tmp_path)["measurable"] is False
