"""The prompt attacks, the registry, the writer lock and the Results table's reader."""

from __future__ import annotations

import pytest

from sga_core.params import ConfigError
from sga_core.stress import StressSettings


def test_attack_names_parse_and_unknown_ones_are_named():
    from sga_core.stress.run import attack_names, parse_attacks

    assert parse_attacks("relearn, quant4") == ["relearn", "quant4"]
    assert parse_attacks("all") == attack_names()
    with pytest.raises(ConfigError, match="unknown attack quant3"):
        parse_attacks("quant3")


def test_templates_need_a_question_placeholder(tmp_path):
    from sga_core.stress.attacks.roleplay import load_templates, wrap

    shipped = load_templates()
    assert shipped and all("{question}" in t["text"] for t in shipped)
    bad = tmp_path / "t.yaml"
    bad.write_text("templates:\n  - name: x\n    text: no placeholder\n")
    with pytest.raises(ConfigError, match="no \\{question\\} placeholder"):
        load_templates(bad)
    assert wrap("Say {question} {x}", "Q?") == "Say Q? {x}"


def test_prompt_attacks_on_the_tiny_model(tmp_path, tiny_model_dir, demo_dir):
    from sga_core.data import load_qa
    from sga_core.stress.run import stress_model

    forget = load_qa(demo_dir / "forget.jsonl")[:4]
    forget[1] = {**forget[1], "paraphrased_question": "Reworded: " + forget[1]["question"]}
    retain = load_qa(demo_dir / "retain.jsonl")[:6]
    res = stress_model(str(tiny_model_dir), tmp_path / "out", forget, retain,
                       original=str(tiny_model_dir),
                       attacks=["paraphrase", "fewshot", "roleplay", "quant8"],
                       settings=StressSettings(seeds=[0, 1], fewshot_k=2, rouge=False))
    para = res["paraphrase"]["cases"][0]
    assert para["eval_rows"] == [1]
    assert res["paraphrase"]["samples"][0]["question"].startswith("Reworded: ")
    few = res["fewshot"]["samples"][0]["question"]
    assert few.count("Question:") == 3 and few.endswith(forget[0]["question"])
    assert len(res["roleplay"]["cases"]) == 3  # the shipped templates
    # the model is its own Original here: every gap is 0, so every recovery is undefined
    for r in res.values():
        assert r["recovery"] is None and "gap ~0" in r["recovery_reason"]


def test_a_forget_set_without_paraphrases_says_not_applicable(tmp_path, tiny_model_dir,
                                                              demo_dir):
    from sga_core.stress.results import read_results, recovery_text
    from sga_core.stress.run import stress_model

    res = stress_model(str(tiny_model_dir), tmp_path / "out", str(demo_dir / "forget.jsonl"),
                       attacks=["paraphrase"], settings=StressSettings(rouge=False))
    assert "not applicable" in res["paraphrase"]["recovery_reason"]
    assert read_results(None, tmp_path / "out")["paraphrase"]["attack"] == "paraphrase"
    assert recovery_text(res["paraphrase"]).startswith("undefined: not applicable")


def test_a_second_writer_is_refused(tmp_path):
    from sga_core.stress.run import writer_lock

    with writer_lock(tmp_path / "s"):
        with pytest.raises(ConfigError, match="another stress test"):
            with writer_lock(tmp_path / "s"):
                pass
    with writer_lock(tmp_path / "s"):  # released
        pass


def test_stress_table_rows_and_bands(tmp_path):
    from sga_core.fileio import atomic_write_json
    from sga_core.report.stress import recovery_band, stress_table
    from sga_core.runs.folder import STRESS_DIR

    run = tmp_path / "r1"
    for key, mean in (("quant4", 0.9), ("relearn-10", 0.1), ("relearn-50", None)):
        atomic_write_json(run / STRESS_DIR / f"{key}.json", {
            "attack": key, "recovery_reason": None if mean is not None else "gap ~0",
            "summary": {"probability": {"recovery": {"n": 1, "mean": mean}}}})
    rows, cols = stress_table([{"run": "SGA r=0", "path": str(run), "collapsed": False},
                               {"run": "no stress", "path": str(tmp_path / "none")}])
    assert cols == ["relearn-10", "relearn-50", "quant4"]
    assert len(rows) == 1 and rows[0]["quant4"] == 0.9 and rows[0]["relearn-50"] is None
    assert rows[0]["relearn-50 (text)"].startswith("undefined")
    assert [recovery_band(v) for v in (0.1, 0.5, 0.9, None)] == [
        "held", "partly back", "back", "undefined"]
