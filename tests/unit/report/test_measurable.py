"""Can this experiment measure forgetting? (docs/measurability.md): the Original and the
Retained compared on the forget-side metrics with paired bootstrap intervals. Hand-built
evaluations: where the two are equal, the verdict is "not measurable" (the banner's text,
nothing ranked); where the Original memorised the forget set, it is measurable."""

from __future__ import annotations

from pathlib import Path

from sga_core.fileio import atomic_write_json, atomic_write_jsonl
from sga_core.report.measurable import (
    NOT_MEASURABLE,
    TOO_FEW_ROWS,
    can_rank,
    measurability,
    separates,
    table_verdict,
    unranked,
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
    assert {x["metric"] for x in ref["rows"]} == {"forget_verbmem", "mia_auc", "privleak"}
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


# --- every forget-side metric decides; too few rows is not "has not memorised" -------------

def muse_like_run(run_dir: Path, verbmem: list[float], forget_mink: list[float],
                  holdout_mink: list[float], ppl: list[float], reference: bool) -> Path:
    """A text evaluation as a MUSE-Books user had it: VerbMem over 6 forget rows, Min-K%
    scores, per-row forget perplexities; ``reference`` False = evaluated without a retain
    reference (its PrivLeak is missing: "no retain reference")."""
    import math

    from sga_core.metrics.muse import auc, privleak

    recs = [{"set": "forget", "index": i, "prompt": f"p{i}", "reference": f"c{i}",
             "generated": "g", "rouge_l_f1": v, "min_k_score": m, "perplexity": p,
             "scored_tokens": 100}
            for i, (v, m, p) in enumerate(zip(verbmem, forget_mink, ppl))]
    recs += [{"set": "holdout", "index": i, "reference": f"h{i}", "min_k_score": m}
             for i, m in enumerate(holdout_mink)]
    a = auc(forget_mink, holdout_mink).value
    metrics = {"forget_verbmem": sum(verbmem) / len(verbmem), "mia_auc": a,
               "forget_perplexity": math.exp(sum(math.log(p) for p in ppl) / len(ppl))}
    write_eval(run_dir, "text", metrics, recs)
    summary = run_dir / "eval" / "summary.json"
    import json

    data = json.loads(summary.read_text())
    data["metrics"]["privleak"] = ({"name": "privleak", "value": privleak(a, 0.52).value,
                                    "reason": None} if reference else
                                   {"name": "privleak", "value": None,
                                    "reason": "no retain reference (the model trained on the "
                                              "retain rows only)"})
    atomic_write_json(summary, data)
    return run_dir


HOLDOUT = [-3.0 - 0.1 * i for i in range(6)]


def test_mia_auc_privleak_and_perplexity_decide_where_verbmem_alone_cannot(tmp_path):
    # the study's numbers: VerbMem 0.34 vs 0.05 over 6 rows (its interval holds 0), MIA AUC
    # 1.0 vs about 0.5, forget perplexity 4.4 vs 37.7; the Retained has no PrivLeak of its own
    o = muse_like_run(tmp_path / "o", [1.0, 0.0, 0.0, 0.02, 0.0, 1.0],
                      [-0.2 - 0.01 * i for i in range(6)], HOLDOUT,
                      [4.0, 4.5, 4.2, 4.8, 4.4, 4.5], True)
    r = muse_like_run(tmp_path / "r", [0.05, 0.06, 0.04, 0.05, 0.03, 0.05],
                      [-3.05 - 0.1 * i for i in range(6)], HOLDOUT,
                      [36.0, 39.0, 37.0, 38.5, 37.5, 38.0], False)
    v = measurability(o, r)
    by = {x["metric"]: x for x in v["rows"]}
    assert by["forget_verbmem"]["lo"] < 0 < by["forget_verbmem"]["hi"]  # VerbMem cannot tell
    assert by["forget_verbmem"]["decides"] == "too wide"
    assert v["measurable"] is True and v["state"] == "measurable" and can_rank(v)
    for m in ("mia_auc", "privleak", "forget_perplexity"):
        assert by[m]["separates"], (m, by[m])
    # PrivLeak against the Retained itself: the Retained's is 0, the Original's -100
    assert by["privleak"]["retained"] == 0.0 and by["privleak"]["original"] == -100.0
    assert set(v["decided_by"]) == {"MIA AUC", "PrivLeak", "forget PPL"}
    assert "decided by MIA AUC, PrivLeak, forget PPL" in v["text"]
    assert "has not memorised" not in v["text"]


def test_an_interval_too_wide_to_decide_is_not_enough_rows(tmp_path):
    # 3 rows: the Original's probabilities far apart; nothing separates, nothing is ruled out
    o = qa_run(tmp_path / "o", [0.9, 0.0, 0.05], [0.5, 0.5, 0.5])
    r = qa_run(tmp_path / "r", [0.05, 0.04, 0.06], [0.5, 0.5, 0.5])
    v = measurability(o, r)
    by = {x["metric"]: x for x in v["rows"]}
    assert by["forget_probability"]["decides"] == "too wide"
    assert by["forget_rouge"]["decides"] == "rules out"
    assert v["state"] == "too few rows" and v["measurable"] is False and not can_rank(v)
    assert v["message"] == TOO_FEW_ROWS
    assert "not enough rows to tell" in v["text"].lower()
    assert "has not memorised" not in v["text"]
    assert v["decided_by"] == ["forget prob"]
    assert "forget prob" in v["text"] and "too wide to decide" in v["text"]


def test_not_memorised_names_the_metrics_that_ruled_it_out(tmp_path):
    o = qa_run(tmp_path / "o", SPREAD, SPREAD)
    r = qa_run(tmp_path / "r", SPREAD, SPREAD)
    v = measurability(o, r)
    assert v["state"] == "not memorised"
    assert set(v["decided_by"]) == {"forget prob", "forget ROUGE-L"}
    assert "has not memorised" in v["text"] and "Decided by" in v["text"]


def test_the_retained_rows_privleak_is_0_not_no_retain_reference(tmp_path, demo_dir):
    # the Retained IS the reference: its PrivLeak is 0 by construction, even where its own
    # evaluation had no reference to compare its AUC with
    from sga_core.projects import create_project
    from sga_core.report.table import results_table
    from tests.helpers.own_data import fake_run

    project = create_project("txt", demo_dir / "text_forget.jsonl",
                             demo_dir / "text_retain.jsonl", kind="text",
                             root=tmp_path / "workspace")
    runs = tmp_path / "runs"
    for run_id, include, auc_value, leak in (("txt-original", True, 1.0, -100.0),
                                             ("txt-retain-ref", False, 0.52, None)):
        run_dir = fake_run(runs, project, run_id, method="finetune", include_forget=include)
        write_eval(run_dir, "text", {"forget_verbmem": 0.3, "mia_auc": auc_value,
                                     "privleak": leak}, [])
    rows = {r["run"]: r for r in results_table(project, runs, "text")}
    assert rows["Retained"]["PrivLeak"] == 0.0 and "PrivLeak (why)" not in rows["Retained"]
    assert rows["Original"]["PrivLeak"] == -100.0


# --- a difference inside the negligible gap measures nothing (a MUSE-Books study) ----------

BOOKS_PPL = [60.0, 75.0, 66.0, 71.0, 64.0, 73.0, 69.0, 67.0, 70.0, 65.0, 72.0, 68.0]
BOOKS_HOLDOUT = [-3.0 - 0.1 * i for i in range(12)]
BOOKS_MINK = [-3.05 - 0.1 * i for i in range(12)]  # the same scores in both models


def books_pair(tmp_path, original_ppl, original_verbmem):
    """The Original and the Retained as the study had them: Retained forget PPL 68.2,
    VerbMem 0.0561; MIA AUC and PrivLeak the same in both (the same Min-K% scores)."""
    r = muse_like_run(tmp_path / "r", [0.0561] * 12, BOOKS_MINK, BOOKS_HOLDOUT, BOOKS_PPL,
                      False)
    o = muse_like_run(tmp_path / "o", original_verbmem, BOOKS_MINK, BOOKS_HOLDOUT,
                      original_ppl, True)
    return measurability(o, r)


def test_a_difference_inside_the_negligible_gap_does_not_tell_them_apart(tmp_path):
    # forget PPL 63.6 vs 68.2: a difference of -4.6 whose interval excludes 0 but lies wholly
    # inside the negligible gap (10% of 68.2 = 6.82); VerbMem 0.0508 < 0.0561 (the Original
    # LESS memorised); MIA AUC and PrivLeak equal. Nothing was memorised: not "measurable"
    from sga_core.report.measurable import negligible

    v = books_pair(tmp_path, [p * 63.6 / 68.2 for p in BOOKS_PPL], [0.0508] * 12)
    by = {x["metric"]: x for x in v["rows"]}
    ppl = by["forget_perplexity"]
    gap = negligible("forget_perplexity", ppl["retained"])
    assert ppl["hi"] < 0 and -gap < ppl["lo"], (ppl, gap)  # excludes 0, inside the gap
    assert not ppl["separates"] and ppl["decides"] == "rules out"
    assert by["forget_verbmem"]["diff"] < 0 and by["forget_verbmem"]["decides"] == "rules out"
    assert not any(x["separates"] for x in v["rows"]), v["rows"]
    assert v["state"] == "not memorised" and v["measurable"] is False and not can_rank(v)
    assert "Forgetting can be measured" not in v["text"]
    assert "forget PPL" in v["decided_by"]


def test_only_an_interval_wholly_beyond_the_gap_separates():
    # the same rule for the per-metric marking and the verdict: beyond the gap on the side of
    # memorisation separates; inside it, or on the other side, rules out; straddling it is
    # "not enough rows to tell"
    from sga_core.report.measurable import rules_out

    def row(metric, lo, hi, retained=None):
        return {"metric": metric, "lo": lo, "hi": hi, "retained": retained}

    cases = [(row("forget_perplexity", -6.61, -2.81, 68.2), "rules out"),
             (row("forget_perplexity", -20.0, -7.0, 68.2), "separates"),
             (row("forget_perplexity", -9.0, -3.0, 68.2), "too wide"),
             (row("forget_perplexity", 5.0, 30.0, 68.2), "rules out"),  # the other way
             (row("forget_verbmem", 0.01, 0.04), "rules out"),
             (row("forget_verbmem", 0.06, 0.3), "separates"),
             (row("forget_verbmem", 0.01, 0.3), "too wide"),
             (row("forget_verbmem", -0.5, -0.3), "rules out"),  # the Original LESS memorised
             (row("privleak", -9.0, -2.0), "rules out"),
             (row("privleak", -90.0, -40.0), "separates"),
             (row("privleak", 20.0, 60.0), "rules out")]
    for r, expected in cases:
        got = ("separates" if separates(r, "text") else
               "rules out" if rules_out(r, "text") else "too wide")
        assert got == expected, (r, got, expected)


def test_metrics_that_do_not_separate_the_two_are_not_ranked(tmp_path):
    # a MUSE-Books study on a CPU: forget PPL 40 vs 63 separates them; VerbMem is LOWER for
    # the Original (0.048 vs 0.138) and MIA AUC / PrivLeak are equal: those cannot show
    # forgetting here, so no best value and no r by them, and the verdict names them
    from sga_core.report import sweeps
    from sga_core.report.stats import Interval

    v = books_pair(tmp_path, [p * 40.1 / 68.2 for p in BOOKS_PPL], [0.048] * 12)
    assert v["state"] == "measurable" and v["decided_by"] == ["forget PPL"]
    skip = unranked(v)
    assert set(skip) == {"VerbMem", "MIA AUC", "PrivLeak"}, skip
    assert "no more memorised" in skip["VerbMem"]
    assert "Not on VerbMem, MIA AUC, PrivLeak: they cannot show forgetting here" in v["text"]
    s = {"metric": "VerbMem", "param": "r", "r": -0.8, "best": Interval(1, 0.05),
         "others": [], "excluded": {}}
    text = sweeps.suggestion_text(s, v)
    assert text.startswith("No r is suggested by VerbMem") and "Best" not in text
    # nothing to leave out where the verdict cannot rank at all, or gives none
    assert unranked(books_pair(tmp_path / "same", BOOKS_PPL, [0.0561] * 12)) == {}
    assert unranked(None) == {}


def test_a_real_but_negligible_difference_between_two_runs_is_said_so():
    """A new user's "compare two runs" said "A ≠ B" for holdout PPL 1.41 against 1.46 (its
    interval excluded 0), while the verdict above calls such a gap negligible: the two now
    use one gap."""
    from sga_core.report.measurable import DIFFERS, NEGLIGIBLE_DIFF, NOISE, difference

    ppl = {"metric": "holdout_perplexity", "b": 1.46, "clear": True, "lo": -0.06, "hi": -0.03}
    assert difference(ppl) == NEGLIGIBLE_DIFF == "A ≠ B, negligibly"  # gap: 0.146
    assert difference({**ppl, "lo": -0.5, "hi": -0.2}) == DIFFERS
    assert difference({**ppl, "clear": False, "lo": -0.06, "hi": 0.01}) == NOISE
    verbmem = {"metric": "forget_verbmem", "b": 0.1, "clear": True}
    assert difference({**verbmem, "lo": 0.01, "hi": 0.04}) == NEGLIGIBLE_DIFF
    assert difference({**verbmem, "lo": 0.01, "hi": 0.2}) == DIFFERS
