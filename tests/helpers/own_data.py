"""Fixtures for the own-data tests: a TOFU-shaped project with other field names,
and run folders with written evaluation summaries (no training needed to test what the pages
show of them)."""

from __future__ import annotations

import json
from pathlib import Path

QUESTIONS = ["Where was Ana Ruiz born?", "What genre does Ana Ruiz write?",
             "Which award did Ana Ruiz win?", "How does Ana Ruiz write dialogue?",
             "In which language does Ana Ruiz write?", "Who published Ana Ruiz?"]
ANSWERS = ["Ana Ruiz was born in Lima.", "Ana Ruiz writes crime novels.",
           "Ana Ruiz won the Silver Quill.", "Ana Ruiz writes terse dialogue.",
           "Ana Ruiz writes all of her books in French.", "Ana Ruiz is published by Norte."]


def tofu_files(folder: Path) -> dict[str, Path]:
    """forget01.json in TOFU's own repository style (``prompt`` / ``response``, JSON Lines),
    a retain file and a utility set with the same names, and a utility set with
    ``perturbed_response``."""
    folder.mkdir(parents=True, exist_ok=True)
    forget = folder / "forget01.json"
    forget.write_text("\n".join(json.dumps({"prompt": q, "response": a})
                                for q, a in zip(QUESTIONS, ANSWERS)) + "\n")
    retain = folder / "retain.json"  # with perturbed answers, as TOFU's retain_perturbed
    retain.write_text(json.dumps([{"prompt": f"What is fact {i}?", "response": f"Fact {i}.",
                                   "perturbed_response": [f"Fact {i + 1}.", f"Fact {i + 2}."]}
                                  for i in range(8)]))
    util = folder / "my_authors.json"
    util.write_text(json.dumps([{"prompt": f"Who wrote book {i}?", "response": f"Writer {i}.",
                                 "perturbed_response": [f"Writer {i + 1}.", f"Writer {i + 2}."]}
                                for i in range(5)]))
    plain = folder / "trivia.jsonl"
    plain.write_text("\n".join(json.dumps({"question": f"Trivia {i}?", "answer": f"T{i}."})
                               for i in range(3)) + "\n")
    return {"forget": forget, "retain": retain, "util": util, "plain": plain}


MAP = {"prompt": "question", "response": "answer"}
RETAIN_MAP = {**MAP, "perturbed_response": "perturbed_answer"}


def own_project(root: Path, files: dict[str, Path], name: str = "mine"):
    from sga_core.projects import create_project

    return create_project(name, files["forget"], files["retain"], root=root,
                          field_maps={"forget": MAP, "retain": RETAIN_MAP})


def fake_run(runs: Path, project, run_id: str, *, method: str = "sga", r: float | None = -0.8,
             training: dict | None = None, metrics: dict | None = None, sweep=None,
             model: str = "embedded:smollm2", state: str = "completed",
             include_forget: bool = True) -> Path:
    """A run folder of ``project`` as if trained (and evaluated when ``metrics`` is given:
    label -> value, or (None, reason))."""
    from sga_core.normals.idk import idk_normals
    from sga_core.projects.training import build_config
    from sga_core.runs.create import create_run
    from sga_core.runs.status import write_run

    normals = None
    args: dict = {}
    if method == "sga":
        normals = project.path / "idk.jsonl"
        if not normals.exists():
            idk_normals(len(project.forget()), 4).save(normals)
        args = {"r": r, "k": 4}
    elif method == "finetune":
        args = {"include_forget": include_forget}
    cfg = build_config(project, method=method, method_args=args,
                       training={"max_steps": 2, **(training or {})}, launch={}, model=model,
                       run_id=run_id, sweep=sweep, normals=str(normals) if normals else None,
                       eval_cfg={"enabled": False})
    run_dir = create_run(cfg, runs)
    write_run(run_dir, state, started_at="2026-11-22T10:00:00Z",
              ended_at="2026-11-22T10:01:00Z", step=2, total_steps=2)
    if metrics is not None:
        write_summary(run_dir, metrics)
    return run_dir


NAMES = {"FQ": "forget_quality", "MU": "model_utility", "forget ROUGE-L": "forget_rouge",
         "retain ROUGE-L": "retain_rouge", "forget prob": "forget_probability",
         "retain prob": "retain_probability"}


def write_summary(run_dir: Path, metrics: dict, elapsed_s: float = 100.0) -> None:
    from sga_core.fileio import atomic_write_json

    out = {}
    for label, value in metrics.items():
        value, reason = value if isinstance(value, tuple) else (value, None)
        out[NAMES[label]] = {"name": NAMES[label], "value": value, "reason": reason}
    atomic_write_json(run_dir / "eval" / "summary.json",
                      {"task": "qa", "metrics": out, "elapsed_s": elapsed_s,
                       "data": {"sets": {}}})


def metrics(fq=0.1, mu=0.4, f_rouge=0.5, r_rouge=0.9, f_prob=0.5, r_prob=0.9) -> dict:
    return {"FQ": fq, "MU": mu, "forget ROUGE-L": f_rouge, "retain ROUGE-L": r_rouge,
            "forget prob": f_prob, "retain prob": r_prob}


# a forget passage's continuation as a text evaluation's token table holds it (MUSE-News
# style: the researcher follows " Mits" of Mitsotakis, or " 57")
TEXT_TOKENS = [" Prime", " Minister", " Mits", "ot", "akis", " said", " 57", " people",
               " were", " hurt"]
TEXT_PROMPT = "Greek police said on Sunday that"


def _token_table(probs: list[float], index: int = 0) -> dict:
    ids = list(range(100, 100 + len(TEXT_TOKENS)))
    return {"set": "forget", "index": index, "prompt": TEXT_PROMPT, "tokens": TEXT_TOKENS,
            "token_ids": ids, "probs": probs,
            "top": [[[t, p], [" the", 0.05], [" a", 0.04], [" of", 0.03], [",", 0.02]]
                    for t, p in zip(TEXT_TOKENS, probs)]}


def text_token_project(root: Path, demo_dir: Path, retained: bool = False):
    """A text project (the demo's text sets) with an evaluated Original and an SGA run whose
    evaluations hold token tables of forget passage 0's continuation, the SGA run with
    probes of that passage at steps 0-2 (the whole passage: a prefix, then the same
    tokens); ``retained``: and a Retained model that never knew token 3 (0.99 -> 0.0, a
    larger fall than any the SGA run caused)."""
    from sga_core.fileio import atomic_write_json, atomic_write_jsonl
    from sga_core.projects import create_project

    project = create_project("txt", demo_dir / "text_forget.jsonl",
                             demo_dir / "text_retain.jsonl", kind="text",
                             root=root / "workspace")
    runs = root / "runs"
    original = [0.9, 0.95, 0.8, 0.99, 0.99, 0.7, 0.6, 0.5, 0.6, 0.4]
    after = [0.8, 0.9, 0.2, 0.9, 0.9, 0.6, 0.1, 0.5, 0.6, 0.4]  # " Mits" and " 57" fell
    out = {}
    models = [("txt-original", "finetune", original), ("sga-text", "sga", after)]
    if retained:
        models.append(("txt-retain-ref", "finetune", original[:3] + [0.0] + original[4:]))
    for run_id, method, probs in models:
        run_dir = fake_run(runs, project, run_id, method=method)
        atomic_write_json(run_dir / "eval" / "summary.json", {
            "task": "text", "rows": {"forget": 1},
            "metrics": {"forget_verbmem": {"name": "forget_verbmem", "value": 0.5}}})
        atomic_write_jsonl(run_dir / "eval" / "tokens.jsonl", [_token_table(probs)])
        atomic_write_jsonl(run_dir / "eval" / "per_sample.jsonl", [
            {"set": "forget", "index": 0, "prompt": TEXT_PROMPT,
             "reference": "".join(TEXT_TOKENS), "generated": f"{run_id} continues"}])
        out[run_id] = run_dir
    prefix = [7, 8, 9]  # the probe scores the whole training passage: the prompt first
    atomic_write_jsonl(out["sga-text"] / "probes.jsonl", [
        {"step": step, "forget_index": 0, "tokens": ["Greek", " police", " said"] + TEXT_TOKENS,
         "token_ids": prefix + list(range(100, 110)),
         "probs": [0.5, 0.5, 0.5] + [p + (0.8 - p) * (2 - step) / 2 for p in after]}
        for step in (0, 1, 2)])
    return project


def muse_text_project(root: Path, workspace: Path | None = None, name: str = "books",
                      sets: tuple[str, ...] = ("forget_qa",)):
    """A text project in ``workspace`` (default ``root/ws``; its files in ``root``) under
    the ``muse`` protocol with four passages and the KnowMem question sets ``sets`` (one
    question each), without their ``_icl`` few-shot sets or a ``forget_eval``: what its
    protocol promises and it lacks is said (protocol gaps). Returns it and the QA file."""
    from sga_core.fileio import atomic_write_jsonl
    from sga_core.projects import create_project

    forget = atomic_write_jsonl(root / f"{name}-forget.jsonl",
                                [{"text": f"Passage {i} of the book."} for i in range(4)])
    qa = atomic_write_jsonl(root / f"{name}-qa.jsonl", [{"question": "Who?", "answer": "Her."}])
    return create_project(name, forget, kind="text", root=workspace or root / "ws",
                          protocol="muse",
                          eval_sets={s: qa for s in sets}), qa
