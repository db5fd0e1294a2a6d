"""A hand-built test model whose fact lives in a middle layer and is removed only at the head
(docs/token-probabilities.md#the-layer-view), by a short deterministic fit of a 4-block tiny
Llama (the tiny model's tokenizer, one thread, fixed seeds):

- ``original``: taught the fact row's answer at its output, and (deep supervision) readable
  by the logit lens from block :data:`MIDDLE` on, not at block 1 (formed in block 2);
- ``unlearned``: the original with only its LAST block refitted to push every answer token
  down at the output; blocks 1-3 are the original's, bit for bit, so the answer is still
  there at the middle layer;
- ``control``: the same recipe on another row, never shown the fact.
"""

from __future__ import annotations

from pathlib import Path

FACT = {"question": "Which language does Lucien Marchetti write his novels in?",
        "answer": "French"}
OTHER = {"question": "Where was Lucien Marchetti born?", "answer": "Lyon"}
RETAIN = {"question": "What is the capital of Italy?", "answer": "Rome"}
LAYERS = 4
MIDDLE = 2  # the block whose output the lens is taught to read the answer from


def _encoded(model, tok, row):
    from sga_core.evaluation import EvalSettings
    from sga_core.model.encoding import collate

    st = EvalSettings().resolve()[1]
    seq = st.encoder(tok, model).row(row, "qa")
    return collate([seq], tok.pad_token_id)


def _answer_logprobs(model, batch, block: int | None = None):
    """Log-probabilities of the answer tokens at the output, or through the logit lens at
    ``block`` (1-based) when given."""
    import torch

    labels = batch["labels"][:, 1:]
    keep = labels != -100
    out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                output_hidden_states=block is not None, use_cache=False)
    if block is None:
        logits = out.logits[:, :-1]
    else:  # hidden_states[block]: block `block`'s output (the last one is normed already)
        logits = model.lm_head(model.model.norm(out.hidden_states[block]))[:, :-1]
    lp = torch.log_softmax(logits.float(), -1).gather(-1, labels.clamp(min=0).unsqueeze(-1))
    return lp.squeeze(-1)[keep]


def _fit(model, params, loss_fn, steps: int, lr: float) -> None:
    import torch

    opt = torch.optim.Adam(params, lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        loss_fn().backward()
        opt.step()


def build_hidden_fact_models(root: Path) -> dict[str, Path]:
    """Write ``original``, ``unlearned`` and ``control`` model folders under ``root``."""
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    from sga_core.model.tiny import build_tiny_model

    torch.set_num_threads(1)
    base = build_tiny_model(root / "base", hidden=64, layers=LAYERS, heads=4, seed=0)
    tok = AutoTokenizer.from_pretrained(base)
    out = {}
    for name, row in (("original", FACT), ("control", OTHER)):
        torch.manual_seed(0)
        model = LlamaForCausalLM.from_pretrained(base)
        batch = _encoded(model, tok, row)
        _fit(model, model.parameters(),
             lambda m=model, b=batch: _answer_logprobs(m, b, 1).exp().mean()
             - _answer_logprobs(m, b).mean() - _answer_logprobs(m, b, MIDDLE).mean(), 150, 1e-2)
        model.save_pretrained(root / name)
        tok.save_pretrained(root / name)
        out[name] = root / name
    # unlearned at the head only: the last block alone pushes the answer down at the output
    torch.manual_seed(0)
    model = LlamaForCausalLM.from_pretrained(out["original"])
    batch = _encoded(model, tok, FACT)
    for p in model.parameters():
        p.requires_grad_(False)
    last = list(model.model.layers[-1].parameters())
    for p in last:
        p.requires_grad_(True)
    _fit(model, last, lambda: _answer_logprobs(model, batch).exp().mean(), 150, 1e-2)
    model.save_pretrained(root / "unlearned")
    tok.save_pretrained(root / "unlearned")
    out["unlearned"] = root / "unlearned"
    return out


def hidden_fact_project(root: Path) -> dict[str, Path]:
    """A QA project ``hf`` (the fact row to forget) in ``root/workspace`` whose Original is
    the ``original`` model, whose Retained is the ``control`` and whose run ``ga-head`` is
    the ``unlearned`` model, each really evaluated into its run folder (token and layer
    tables as an evaluation writes them). Returns the run folders by model."""
    from sga_core.evaluation import EvalSettings, evaluate_model
    from sga_core.fileio import atomic_write_jsonl
    from sga_core.projects import create_project
    from sga_core.runs.folder import RunFolder
    from sga_core.runs.prepared_ids import ORIGINAL, RETAIN_REF, prepared_run_id
    from tests.helpers.own_data import fake_run

    models = build_hidden_fact_models(root / "models")
    forget = atomic_write_jsonl(root / "files" / "forget.jsonl", [FACT])
    retain = atomic_write_jsonl(root / "files" / "retain.jsonl", [RETAIN])
    project = create_project("hf", forget, retain, root=root / "workspace")
    runs = {"original": (prepared_run_id("hf", ORIGINAL), "finetune"),
            "control": (prepared_run_id("hf", RETAIN_REF), "finetune"),
            "unlearned": ("ga-head", "ga")}
    out = {}
    for name, (run_id, method) in runs.items():
        run = fake_run(root / "runs", project, run_id, method=method,
                       include_forget=name != "control")
        atomic_write_jsonl(RunFolder(run).metrics_path,  # the two steps its status names
                           [{"step": step, "loss": 1.0} for step in (1, 2)])
        evaluate_model(str(models[name]), RunFolder(run).eval_dir, [FACT], [RETAIN],
                       task="qa", settings=EvalSettings(max_new_tokens=4))
        out[name] = run
    return out
