"""Before/after probe (docs/decisions/007-ui-never-loads-a-model.md): any question, answered
greedily by the original model and by chosen runs, with each answer token's probability. Runs as a
project job (sga_core.projects.jobs); models are loaded one at a time in the job process."""

from __future__ import annotations

import sys

from sga_core.fileio import atomic_write_json, read_json
from sga_core.projects import jobs as bgjob

NAME = "probe"


def start(project, question: str, models: dict[str, str], kind: str = "qa",
          max_new_tokens: int = 48):
    if not question.strip():
        raise ValueError("type a question (or a text prefix) first")
    if not models:
        raise ValueError("choose at least one model")
    return bgjob.start(project, NAME, "sga_core.projects.probe_job",
                       {"question": question, "models": models, "kind": kind,
                        "max_new_tokens": int(max_new_tokens)}, clear=("result.json",))


def status(project) -> dict:
    return bgjob.status(project, NAME)


def result(project) -> dict | None:
    return read_json(bgjob.job_dir(project, NAME) / "result.json", default=None)


def answer_with_probs(model, enc, question: str, kind: str, max_new_tokens: int) -> dict:
    from sga_core.evaluation.inputs import generate_answers
    from sga_core.model.forward import token_records

    answer = generate_answers(model, enc, [question], max_new_tokens, kind=kind)[0]
    seq = enc.qa(question, answer) if kind == "qa" else enc.text(question, answer)
    rec = token_records(model, enc, [seq])[0]
    return {"answer": answer, **shown_tokens(rec, set(enc.tok.all_special_ids))}


def shown_tokens(rec: dict, special_ids: set[int]) -> dict:
    """A token record without its special tokens (the end of text the answer is scored
    with, a chat template's end token such as <|im_end|>): the answer as a person reads it,
    like the decoded answer beside it. An empty answer keeps its end token: that the model
    ended at once, and how sure it was, is the whole answer then."""
    keep = [i for i, t in enumerate(rec["token_ids"]) if t not in special_ids]
    if not keep and rec["token_ids"]:
        keep = [len(rec["token_ids"]) - 1]
    return {key: [values[i] for i in keep] for key, values in rec.items()}


def ask(project, spec: dict) -> dict:
    from sga_core.model.encoding import Encoder
    from sga_core.model.loading import load_model, load_tokenizer

    out = {}
    items = list(spec["models"].items())
    for i, (label, path) in enumerate(items):
        bgjob.update(project, NAME, done=i, total=len(items), current=label)
        enc = Encoder(load_tokenizer(path))
        model = load_model(path).eval()
        out[label] = answer_with_probs(model, enc, spec["question"], spec["kind"],
                                       spec["max_new_tokens"])
        del model
    atomic_write_json(bgjob.job_dir(project, NAME) / "result.json",
                      {"question": spec["question"], "kind": spec["kind"], "answers": out})
    return {"done": len(items), "total": len(items)}


def main(argv=None) -> int:
    return bgjob.run_job(NAME, ask, argv)


if __name__ == "__main__":
    sys.exit(main())
