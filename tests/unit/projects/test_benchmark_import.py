"""Benchmark import (TOFU, MUSE-News through Hugging Face ``datasets``; the copyright task
from your own text files) and the protocols' evaluations on the tiny model, offline.

The fixtures are folders shaped like the hub configs (TOFU's one-split configs as
``<config>.json`` JSON lines, MUSE-News as ``<config>/<split>.jsonl``), built from the demo
corpus; the "hub" path replaces :func:`sga_core.data.hub.hub_rows` with a reader of the same
folders; no test touches the network. lm-evaluation-harness runs in-process on tiny local
tasks (YAML files written here).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sga_core.data.hub import HubError, Part, get_benchmark
from sga_core.evaluation import EvalSettings, evaluate_model
from sga_core.fileio import read_jsonl
from sga_core.projects.benchmarks import import_benchmark, import_copyright

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "assets" / "demo"


def _write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _demo(name: str, n: int | None = None) -> list[dict]:
    return read_jsonl(DEMO / f"{name}.jsonl")[:n]


@pytest.fixture(scope="module")
def tofu_folder(tmp_path_factory) -> Path:
    """TOFU's configs as its hub repository stores them: <config>.json, JSON lines."""
    d = tmp_path_factory.mktemp("tofu-hub")
    _write(d / "forget10_perturbed.json", _demo("forget"))
    _write(d / "retain90.json", [{"question": r["question"], "answer": r["answer"]}
                                 for r in _demo("retain")])
    _write(d / "retain_perturbed.json", _demo("retain", 12))
    _write(d / "real_authors_perturbed.json", _demo("real_authors", 8))
    _write(d / "world_facts_perturbed.json", _demo("world_facts", 8))
    return d


@pytest.fixture(scope="module")
def muse_folder(tmp_path_factory) -> Path:
    """MUSE-News's configs as <config>/<split>.jsonl (raw, verbmem, knowmem, privleak)."""
    d = tmp_path_factory.mktemp("muse-hub")
    forget = _demo("text_forget")
    _write(d / "raw" / "forget.jsonl", [{"text": r["text"]} for r in forget])
    _write(d / "raw" / "retain1.jsonl", [{"text": r["text"]} for r in _demo("text_retain")])
    _write(d / "verbmem" / "forget.jsonl", [{"prompt": r["prompt"], "gt": r["continuation"]}
                                            for r in forget[:4]])
    _write(d / "privleak" / "holdout.jsonl", [{"text": r["text"]}
                                              for r in _demo("text_holdout", 4)])
    qa = _demo("text_forget_qa")
    _write(d / "knowmem" / "forget_qa.jsonl", qa[2:])
    _write(d / "knowmem" / "forget_qa_icl.jsonl", qa[:2])
    rqa = _demo("text_retain_qa")
    _write(d / "knowmem" / "retain_qa.jsonl", rqa[2:])
    _write(d / "knowmem" / "retain_qa_icl.jsonl", rqa[:2])
    return d


def test_tofu_import_from_a_folder_writes_a_ready_project(tmp_path, tofu_folder):
    p = import_benchmark("tofu", variant="forget10", folder=tofu_folder, root=tmp_path)
    assert p.name == "tofu-forget10" and p.kind == "qa"
    assert p.meta["protocol"] == "tofu" and p.meta["n_forget"] == 10
    assert set(p.eval_sets()) == {"retain_eval", "real_authors", "world_facts"}
    assert p.forget()[0]["perturbed_answer"] and p.forget()[0]["paraphrased_answer"]
    from sga_core.projects.training import default_eval

    assert default_eval(p, tmp_path / "runs")["protocol"] == "tofu"


def test_tofu_parts_follow_the_forget_split():
    parts = get_benchmark("tofu").parts("forget01")
    assert parts[:2] == [Part("forget", "forget01_perturbed"), Part("retain", "retain99")]
    with pytest.raises(HubError, match="forget01, forget05, forget10"):
        get_benchmark("tofu").parts("forget20")


def test_import_through_datasets_uses_the_hub_configs(tmp_path, muse_folder, monkeypatch):
    """The `datasets` path (hub or local cache): each part is asked for by repo, config and
    split, exactly as MUSE's configs name them."""
    from sga_core.data import hub

    asked = []

    def fake_hub_rows(repo, config, split):
        asked.append((repo, config, split))
        path = muse_folder / config / f"{split}.jsonl"
        if not path.exists():  # as datasets says it
            raise ValueError(f'Unknown split "{split}". Should be one of [...].')
        return read_jsonl(path)

    monkeypatch.setattr(hub, "hub_rows", fake_hub_rows)
    p = import_benchmark("muse-news", root=tmp_path)
    assert p.kind == "text" and p.meta["protocol"] == "muse"
    assert ("muse-bench/MUSE-News", "knowmem", "forget_qa_icl") in asked
    assert ("muse-bench/MUSE-News", "raw", "retain1") in asked
    assert set(p.eval_sets()) == {"forget_eval", "holdout", "forget_qa", "forget_qa_icl",
                                  "retain_qa", "retain_qa_icl"}


def test_offline_without_a_copy_names_the_dataset_and_the_fix(tmp_path, monkeypatch):
    """The real `datasets` loader, offline, with an empty cache: a one-line message naming
    the dataset and what to do; nothing is written."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf" / "datasets"))
    with pytest.raises(HubError) as err:
        import_benchmark("tofu", root=tmp_path / "ws")
    msg = str(err.value)
    assert "locuslab/TOFU" in msg and "forget10_perturbed" in msg
    assert "--online" in msg and "--from-folder" in msg
    assert not (tmp_path / "ws" / "tofu-forget10").exists()
    with pytest.raises(HubError, match="forget01_perturbed.json"):  # a folder without it
        import_benchmark("tofu", variant="forget01", folder=tmp_path, root=tmp_path / "ws")


def test_cli_import_prints_the_project_and_the_next_step(tmp_path, tofu_folder, capsys):
    from sga_core.cli import main

    rc = main(["import", "tofu", "--from-folder", str(tofu_folder), "--workspace",
               str(tmp_path), "--name", "t10"])
    out = capsys.readouterr().out
    assert rc == 0 and "project t10" in out and "--eval-protocol tofu" in out
    assert ("project set-models t10 --original open-unlearning/tofu_Llama-3.2-1B-Instruct_full"
            " --retained open-unlearning/tofu_Llama-3.2-1B-Instruct_retain90") in out
    rc = main(["import", "muse-news", "--workspace", str(tmp_path / "empty")])
    assert rc == 2
    assert "muse-bench/MUSE-News" in capsys.readouterr().err


def _evaluate(model, project, out, protocol, reference=None, **kw):
    sets = {n: str(p) for n, p in project.eval_sets().items()}
    return evaluate_model(str(model), out, str(project.forget_path),
                          str(project.retain_path), sets, reference, task=project.kind,
                          settings=EvalSettings(protocol=protocol, batch_size=8, **kw))


@pytest.mark.slow
def test_tofu_project_evaluates_under_the_tofu_protocol(tmp_path, tofu_folder, tiny_model_dir):
    p = import_benchmark("tofu", folder=tofu_folder, root=tmp_path)
    ref = tmp_path / "ref"
    shutil.copytree(tiny_model_dir, ref)
    proto, st, options = EvalSettings(protocol="tofu").resolve()
    assert (st.max_new_tokens, st.max_retain_rows, st.max_length) == (200, 0, 512)
    assert options["epsilon"] == 1e-10 and options["tr_denominator"] == "tofu"
    # the whole protocol but shorter answers (200 tokens of a random tiny model only cost
    # time here; the lengths are the protocol's, checked above)
    s = _evaluate(tiny_model_dir, p, tmp_path / "eval", "tofu", str(ref), max_new_tokens=8)
    assert s["protocol"]["name"] == "tofu" and s["protocol"]["epsilon"] == 1e-10
    assert s["rows"]["retain"] == 12  # every retain_perturbed row (retain_eval)
    m = s["metrics"]
    for key in ("forget_quality", "model_utility", "forget_truth_ratio",
                "forget_extraction_strength", "forget_exact_memorization"):
        assert m[key]["value"] is not None, key
    # the same demo data under the demo protocol: 48 tokens, 40 retain rows at most
    assert EvalSettings().resolve()[1].max_new_tokens == 48  # the demo's own
    assert EvalSettings().resolve()[0].fast is True


def test_muse_project_evaluates_under_the_muse_protocol(tmp_path, muse_folder, tiny_model_dir):
    from sga_core.data import hub

    p = import_benchmark("muse-news", folder=muse_folder, root=tmp_path)
    assert hub.folder_file(muse_folder, Part("x", "raw", "forget")) is not None
    s = _evaluate(tiny_model_dir, p, tmp_path / "eval", "muse", str(tiny_model_dir))
    m = s["metrics"]
    assert s["rows"]["forget"] == 4  # the verbmem rows (forget_eval)
    for key in ("forget_verbmem", "forget_knowmem", "retain_knowmem", "mia_auc",
                "forget_extraction_strength"):
        assert m[key]["value"] is not None, key
    assert m["privleak"]["value"] == 0.0 or m["privleak"]["reason"]  # itself: 0
    rows = read_jsonl(tmp_path / "eval" / "per_sample.jsonl")
    knowmem = [r for r in rows if r["set"] == "forget_qa"]
    # MUSE's ICL format: the two forget_qa_icl examples, then the question
    assert knowmem[0]["prompt"].count("Question: ") == 3
    assert knowmem[0]["prompt"].endswith("\nAnswer: ")
    assert all("\n\n" not in r["generated"] for r in knowmem)  # cut at the stop strings


LOCAL_TASKS = {
    "local_ppl.yaml": """task: local_ppl
dataset_path: json
dataset_kwargs:
  data_files:
    test: {docs}
test_split: test
output_type: loglikelihood_rolling
doc_to_text: ""
doc_to_target: "{{{{text}}}}"
metric_list:
  - metric: word_perplexity
""",
    "local_mc.yaml": """task: local_mc
dataset_path: json
dataset_kwargs:
  data_files:
    test: {mc}
test_split: test
output_type: multiple_choice
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{label}}}}"
doc_to_choice: "{{{{choices}}}}"
metric_list:
  - metric: acc
""",
}


@pytest.fixture(scope="module")
def lm_tasks(tmp_path_factory) -> Path:
    """Two tiny lm-eval tasks on local files: a rolling perplexity (like wikitext) and a
    multiple-choice accuracy (like the zero-shot tasks)."""
    d = tmp_path_factory.mktemp("lm-tasks")
    _write(d / "docs.jsonl", [{"text": r["text"]} for r in _demo("text_holdout", 3)])
    _write(d / "mc.jsonl", [{"question": r["question"], "choices": [r["answer"],
                                                                    r["perturbed_answer"][0]],
                             "label": 0} for r in _demo("real_authors", 4)])
    for name, text in LOCAL_TASKS.items():
        (d / name).write_text(text.format(docs=d / "docs.jsonl", mc=d / "mc.jsonl"))
    return d


@pytest.mark.slow
def test_lm_eval_runs_in_process_on_a_tiny_local_task(tiny_model_dir, lm_tasks):
    from sga_core.evaluation import load_model_and_tokenizer
    from sga_core.evaluation.utility import run_lm_eval

    model, tok = load_model_and_tokenizer(str(tiny_model_dir))
    res = run_lm_eval(model, tok, ["local_ppl", "local_mc", "no_such_task"], batch_size=4,
                      include_path=str(lm_tasks))
    assert res["local_ppl"]["word_perplexity,none"] > 1
    assert 0 <= res["local_mc"]["acc,none"] <= 1
    assert "not an lm-eval task" in res["no_such_task"]["error"]


@pytest.mark.slow
def test_copyright_task_on_the_demo_text_as_the_book(tmp_path, tiny_model_dir, lm_tasks,
                                                     monkeypatch):
    """The demo's text data as the "book": BLEU, ROUGE-L recall, the FQ gap against a
    retained model, and perplexities (a local rolling-perplexity lm-eval task standing in for
    Wikitext, which is not cached offline: its column says so)."""
    from sga_core.model.tiny import build_tiny_model

    book, retain = tmp_path / "book.txt", tmp_path / "retain.txt"
    book.write_text("\n\n".join(r["text"] for r in _demo("text_forget")), encoding="utf-8")
    retain.write_text("\n\n".join(r["text"] for r in _demo("text_retain")), encoding="utf-8")
    p = import_copyright("hp", book, retain, model=str(tiny_model_dir), segment_tokens=96,
                         prompt_tokens=24, root=tmp_path)
    rows = p.forget()
    tok_len = len(__import__("transformers").AutoTokenizer.from_pretrained(
        tiny_model_dir)(rows[0]["prompt"] + " " + rows[0]["continuation"])["input_ids"])
    assert p.meta["protocol"] == "copyright" and len(rows) >= 3 and tok_len <= 96 + 2
    retained = build_tiny_model(tmp_path / "retained", seed=1)
    from dataclasses import replace

    from sga_core import protocols

    full = protocols.PROTOCOLS["copyright"]
    assert full.completion_new_tokens == 400 and len(full.lm_eval_tasks) == 10
    # shorter completions and only Wikitext of its utility tasks (each of the nine zero-shot
    # tasks would only fail offline the same way)
    monkeypatch.setitem(protocols.PROTOCOLS, "copyright",
                        replace(full, completion_new_tokens=24, lm_eval_tasks=("wikitext",)))
    s = _evaluate(tiny_model_dir, p, tmp_path / "eval", "copyright", str(retained),
                  lm_eval_tasks=("local_ppl",), lm_eval_include=str(lm_tasks))
    m = s["metrics"]
    assert 0 <= m["forget_bleu"]["value"] <= 100
    assert 0 <= m["forget_completion_rouge"]["value"] <= 1
    ref = s["reference"]["completion_scores"]
    assert m["fq_gap"]["value"] == pytest.approx(
        abs(m["forget_bleu"]["value"] - ref["bleu"])
        + abs(m["forget_completion_rouge"]["value"] - ref["rouge"]))
    assert m["lm_local_ppl"]["value"] > 1 and m["retain_perplexity"]["value"] > 1
    assert m["wikitext_perplexity"]["value"] is None
    assert "wikitext" in m["wikitext_perplexity"]["reason"]
    assert m["zero_shot_accuracy"]["value"] is None
    assert "forget_verbmem" not in m  # MUSE's metrics are not the copyright protocol's


def test_data_page_imports_a_benchmark_from_a_folder(ui_env, tofu_folder):
    """The Data page's panel: TOFU from a folder becomes the chosen project, with its
    protocol shown; a folder without the files says what is missing, nothing is imported."""
    from tests.helpers.ui import open_page, shown
    from tests.helpers.wait import wait_for

    def until(done, timeout: float = 120):  # the import runs as a job: wait for its end
        if not done():
            wait_for(lambda: (at.run(), done())[1], timeout,
                     lambda: f"the import job to end: {[e.value for e in at.error]}",
                     interval=0.3)

    at = open_page("app_pages/data.py")
    at.radio(key="bench.source").set_value("folder").run()
    at.text_input(key="bench.folder").set_value(str(ui_env / "nothing"))
    at.button(key="bench.go").click().run()
    until(lambda: at.error)
    errors = " ".join(shown(e.value) for e in at.error)
    assert "Nothing was imported" in errors and "no such folder" in errors
    at.text_input(key="bench.folder").set_value(str(tofu_folder))
    at.text_input(key="bench.name").set_value("tofu-ui")
    at.button(key="bench.go").click().run()
    until(lambda: at.session_state["project"] == "tofu-ui")
    assert not at.exception, at.exception
    text = " ".join(shown(c.value) for c in at.caption)
    assert at.selectbox(key="data.protocol.tofu-ui").value == "tofu"
    assert "TOFU protocol: follows" in text
    assert (ui_env / "workspace" / "tofu-ui" / "project.json").exists()
