"""The paraphrase attack's questions written by a normals backend where the data has no
paraphrased_question (docs/stress-tests.md#prompt-attacks)."""

from __future__ import annotations

import pytest

from sga_core.params import ConfigError, from_dict
from sga_core.stress import StressSettings


def test_a_reply_is_cleaned_to_one_question_and_echoes_are_left_out():
    from sga_core.stress.paraphrases import clean

    q = "Who wrote 'The Silent River'?"
    assert clean('Reworded question: "Which author penned The Silent River?"\nok', q) == \
        ("Which author penned The Silent River?", None)
    assert clean("\n\n  Question: Whose novel is The Silent River?", q)[0] == \
        "Whose novel is The Silent River?"
    assert clean("Who is the author of The Silent River? It was written by", q)[0] == \
        "Who is the author of The Silent River?"
    assert clean("   \n ", q) == (None, "the paraphraser gave an empty reply")
    assert clean("The Silent River was written by Basil.", q) == (
        None, "the paraphraser answered instead of asking (no question mark)")
    assert clean("who wrote the silent river", q) == (None, "the paraphraser repeated the "
                                                             "question")


def test_only_a_backend_with_a_prompt_can_paraphrase():
    with pytest.raises(ConfigError, match="'idk' writes answers without a prompt.*local"):
        from_dict(StressSettings, {"paraphrase_backend": "idk"}, "--")
    with pytest.raises(ConfigError, match="unknown normals backend 'gpt'"):
        from_dict(StressSettings, {"paraphrase_backend": "gpt"}, "--")
    with pytest.raises(ConfigError, match="paraphrase_base_url: the 'local' backend"):
        from_dict(StressSettings, {"paraphrase_backend": "local",
                                   "paraphrase_base_url": "http://x/v1"}, "--")
    with pytest.raises(ConfigError, match="choose a paraphrase_backend"):
        from_dict(StressSettings, {"paraphrase_model": "m"}, "--")
    ok = from_dict(StressSettings, {"paraphrase_backend": "openai",
                                    "paraphrase_base_url": "http://x/v1"}, "--")
    assert ok.paraphrase_backend == "openai"


def _forget(*tags):
    return [{"question": f"Which book did author [{t}] write?", "answer": f"Book {t}."}
            for t in tags]


def test_an_openai_compatible_server_writes_the_missing_paraphrases(
        tmp_path, tiny_model_dir, fake_openai, monkeypatch):
    from sga_core.stress.run import stress_model

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    forget = _forget("ask-a", "ask-b", "blank", "c", "answers")
    forget[3]["paraphrased_question"] = "The data's own paraphrase of c?"
    st = StressSettings(rouge=False, paraphrase_backend="openai",
                        paraphrase_base_url=fake_openai.base_url, paraphrase_model="para-m")
    res = stress_model(str(tiny_model_dir), tmp_path / "out", forget, original=None,
                       attacks=["paraphrase"], settings=st)["paraphrase"]
    case = res["cases"][0]
    # c keeps the data's paraphrase; the server reworded a and b; its blank reply and its
    # answer (not a question) are left out, each with why
    assert case["eval_rows"] == [0, 1, 3]
    asked = {s["index"]: s["question"] for s in res["samples"]}
    assert asked == {0: "Which book is by ask-a?", 1: "Which book is by ask-b?",
                     3: "The data's own paraphrase of c?"}
    assert case["info"]["from_data"] == 1 and case["info"]["generated"] == 2
    assert case["info"]["paraphraser"] == "openai: para-m"
    assert sorted(case["info"]["left_out"]) == ["2", "4"]
    assert "answered instead of asking" in case["info"]["left_out"]["4"]
    # one request per question without a paraphrase, greedy, with the paraphrase prompt
    assert len(fake_openai.bodies) == 4
    assert all(b["temperature"] == 0 and b["model"] == "para-m" for b in fake_openai.bodies)
    users = [b["messages"][-1]["content"] for b in fake_openai.bodies]
    assert all(u.startswith("Rewrite the question below") for u in users)
    assert any(forget[0]["question"] in u for u in users)


def test_the_local_paraphraser_is_greedy_so_every_run_is_asked_the_same(
        tmp_path, tiny_model_dir, speaking_tiny_model_dir):
    from sga_core.stress.run import stress_model

    forget = _forget("a", "b", "c")
    st = StressSettings(rouge=False, paraphrase_backend="local",
                        paraphrase_model=str(speaking_tiny_model_dir))
    runs = [stress_model(str(tiny_model_dir), tmp_path / f"out{i}", forget,
                         attacks=["paraphrase"], settings=st)["paraphrase"] for i in (0, 1)]
    asked = [{s["index"]: s["question"] for s in r["samples"]} for r in runs]
    assert asked[0] == asked[1]
    info = runs[0]["cases"][0]["info"]
    assert info == {"from_data": 0, "generated": 3, "left_out": {},
                    "paraphraser": f"local: {speaking_tiny_model_dir}"}
    assert sorted(asked[0]) == [0, 1, 2]
    for i, q in asked[0].items():
        assert q.strip() and q != forget[i]["question"]


def test_without_a_backend_rows_without_paraphrases_say_how_to_get_them(tmp_path,
                                                                        tiny_model_dir):
    from sga_core.stress.run import stress_model

    res = stress_model(str(tiny_model_dir), tmp_path / "out", _forget("a"),
                       attacks=["paraphrase"], settings=StressSettings(rouge=False))
    assert "a paraphrase_backend can write them" in res["paraphrase"]["recovery_reason"]
