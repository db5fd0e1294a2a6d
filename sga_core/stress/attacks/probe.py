"""A probe reads one layer: is the answer still in the hidden states? Per layer
(`--probe-layers`, default 1/4, 1/2 and 3/4 of the depth) and per seed, a small readout
from that block's output to the vocabulary is trained, the unlearned model frozen, on the
RETAIN rows' answer tokens (next-token prediction; up to `--probe-rows` rows drawn by the
seed, `--probe-steps` Adam steps of `--probe-batch` tokens at `--probe-lr`); then every
forget answer is scored through it: its probability `exp(-mean NLL)` read at that layer is
the attacked value of the recovery. Lynch et al. 2024 ("Eight methods to evaluate robust
unlearning in LLMs") recover "forgotten" answers this way.

The readout is a tuned-lens translator (Belrose et al. 2023): ``logits = head(norm(h + A h
+ b))``, with the model's own final norm and unembedding, frozen, and only the affine ``A,
b`` trained, both starting at zero. Why this design:

- at step 0 it IS the logit lens (the layer view of Token probabilities), so training
  starts from what the lens reads and only learns the change of basis between the layer
  and the head, the gap a plain lens leaves at the early layers;
- it has ``H^2 + H`` parameters (0.3 M for SmolLM2-135M), not ``H x vocabulary`` (28 M),
  goes through the model's own unembedding, and never sees a forget row: a forget answer
  it reads was in the layer, not learned by the probe;
- it is cheap: the model runs once over the retain rows and once over the forget rows (the
  hidden states are kept), the training touches only the readout.

The recovery is the probe's own: the same probe (layer, seed, retain rows) is trained on the
Retained model and on the Original, and a case's recovery is ``(p_run - p_retained) /
(p_original - p_retained)`` of the forget answers' reading: 0 reads no more than a model
that never saw the forget set, 1 as much as the model that learned it. The two controls'
readings are cached beside their models once per rows and settings (the Retained model is
the run's ``eval.reference``, or ``--retained``). One case per layer and seed (``layer 8
seed 0``): the mean recovery over them with its interval, and the worst case (the layer
that reads most). No ROUGE-L: a layer's reading generates nothing.
QA and text data alike (a text row: its retain passage's tokens, its forget continuation).
"""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.params import param
from sga_core.stress.base import Attack, Case, list_problem

#: where the default layers sit, as shares of the depth
DEFAULT_SHARES = (0.25, 0.5, 0.75)
MAX_LAYER = 1000


@dataclass
class ProbeSettings:
    probe_layers: list[int] = param([], "Probe: the blocks read (1 = the first block's "
                                    "output; blank: 1/4, 1/2 and 3/4 of the depth).")
    probe_steps: int = param(100, "Probe: Adam steps training each readout.", min=1,
                             max=100_000)
    probe_lr: float = param(1e-3, "Probe: the readout's learning rate.", min=0.0, max=1.0)
    probe_rows: int = param(64, "Probe: retain rows trained on (drawn per seed; at most "
                            "all).", min=1, max=1_000_000)
    probe_batch: int = param(64, "Probe: answer tokens per training step.", min=1,
                             max=65_536)


def default_layers(depth: int) -> list[int]:
    """The blocks read when none are named: 1/4, 1/2 and 3/4 of ``depth`` (distinct)."""
    return sorted({min(depth, max(1, round(depth * s))) for s in DEFAULT_SHARES})


class Probe(Attack):
    name = "probe"
    label = "layer probe"
    description = ("a readout of one layer's hidden states trained on retain answers (the "
                   "model frozen); the forget answers read through it")
    rank = 45
    default = False  # run when asked for
    #: what its cases' recovery runs between (a result's ``baselines``)
    baselines = ("the same probe (layer, seed, retain rows) read on the Retained model (0: "
                 "the floor, a model that never saw the forget set) and on the Original (1)")
    Settings = ProbeSettings
    info_fields = {"layer": int, "depth": int, "retain_rows": int, "retain_tokens": int,
                   "lens_prob": float, "train_loss": float}

    @classmethod
    def settings_problem(cls, settings) -> str | None:
        if not settings.probe_layers:
            return None
        return list_problem("probe_layers", settings.probe_layers, 1, MAX_LAYER, 50)

    @classmethod
    def case_words(cls, info: dict) -> str | None:
        if "layer" not in info:
            return None
        lens = info.get("lens_prob")
        said = f"; the plain logit lens read {lens:.3g}" if isinstance(lens, float) else ""
        return (f"read at layer {info['layer']} of {info.get('depth', '?')} by a probe "
                f"trained on {info.get('retain_tokens', 0)} answer tokens of "
                f"{info.get('retain_rows', 0)} retain rows{said}")

    def run(self, ctx) -> dict[str, list[Case]]:
        from sga_core.model.lens import LensUnsupported, lens_parts

        st = ctx.settings
        try:
            parts = lens_parts(ctx.model)
        except LensUnsupported as exc:
            return {self.name: [Case("", None, [], [], reason=f"not applicable: {exc}")]}
        depth = len(parts[0])
        layers = sorted(set(st.probe_layers)) or default_layers(depth)
        if layers[-1] > depth:
            return {self.name: [Case("", None, [], [], reason=(
                f"--probe-layers {layers[-1]}: the model has {depth} blocks (1..{depth})"))]}
        if not ctx.retain_rows:
            return {self.name: [Case("", None, [], [], reason=(
                "no retain rows: the probe is trained on the retain set's answers"))]}
        rows = list(range(len(ctx.forget_rows)))
        drawn = {s: _drawn(len(ctx.retain_rows), st.probe_rows, s) for s in st.seeds}
        # the floor and the ceiling: the same probes on the Retained model and the Original
        controls = {role: _control(ctx, spec, layers, drawn, role)
                    for role, spec in (("retained", ctx.retained), ("original", ctx.original))}
        read = _read(ctx, ctx.model, parts, layers, drawn, "probe")
        cases = []
        for layer in layers:
            for seed in st.seeds:
                scores, info = read[(layer, seed)]
                base = {role: [{"prob": p} for p in c["value"][f"{layer}/{seed}"]]
                        for role, c in controls.items() if c["value"] is not None}
                cases.append(Case(
                    f"layer {layer} seed {seed}", seed, rows, scores, drawn[seed], "retain",
                    info={**info, "depth": depth},
                    baselines={"unlearned": base.get("retained"),
                               "original": base.get("original"),
                               "reason": _missing(controls)}))
        return {self.name: cases}


def _missing(controls: dict) -> str | None:
    """Why the probe's recovery is undefined (a control model missing), or None."""
    said = []
    for role, c in controls.items():
        if c["value"] is None:
            name = "Retained model" if role == "retained" else "Original"
            flag = "--retained" if role == "retained" else "--original"
            said.append(f"no probe reading of the {name} ({c['reason'] or f'give {flag}'})")
    return "; ".join(said) or None


def _read(ctx, model, parts, layers: list[int], drawn: dict, stage: str) -> dict:
    """``(layer, seed)`` -> (per forget row its score through a probe trained on ``model``'s
    retain rows ``drawn[seed]`` at ``layer``, the case's info)."""
    rows = list(range(len(ctx.forget_rows)))
    forget = _hidden(ctx, model, parts, layers, [_forget_seq(ctx, i) for i in rows],
                     f"{stage}: reading the forget rows")
    used = sorted(set().union(*drawn.values()))
    retain = dict(zip(used, _hidden(ctx, model, parts, layers,
                                    [ctx.train_seq(ctx.retain_rows[i]) for i in used],
                                    f"{stage}: reading the retain rows")))
    out, total = {}, len(layers) * len(drawn)
    for layer in layers:
        lens = _score(ctx, parts, None, forget, layer)
        lens_prob = sum(s["prob"] for s in lens) / max(1, len(lens))
        for seed, picked in drawn.items():
            train = [retain[i] for i in picked]
            probe, loss = _train(ctx, parts, train, layer, seed)
            out[(layer, seed)] = (_score(ctx, parts, probe, forget, layer), {
                "layer": layer, "retain_rows": len(picked),
                "retain_tokens": sum(int(t["targets"].numel()) for t in train),
                "lens_prob": float(lens_prob), "train_loss": float(loss)})
            ctx.report(f"{stage}: training", len(out), total)
    return out


def _control(ctx, spec: str | None, layers: list[int], drawn: dict, role: str) -> dict:
    """The probe's readings of a control model (``role``: "retained" or "original"):
    ``{"value": {"<layer>/<seed>": [prob per forget row]} or None, "reason"}``, cached
    beside that model once per rows, settings and encoding
    (:func:`sga_core.evaluation.reference.reference_value`)."""
    import hashlib
    import json

    from sga_core.evaluation.reference import reference_value, resolve_reference
    from sga_core.evaluation.run import load_model_and_tokenizer

    if not spec:
        return {"value": None, "reason": None}
    ref = resolve_reference(spec)
    st = ctx.settings
    seqs = [_forget_seq(ctx, i) for i in range(len(ctx.forget_rows))] + \
        [ctx.train_seq(ctx.retain_rows[i]) for i in sorted(set().union(*drawn.values()))]
    digest = hashlib.sha256(json.dumps([[q.input_ids, q.labels] for q in seqs]).encode())
    key = "probe-" + hashlib.sha256(json.dumps({
        "layers": layers, "drawn": {str(k): v for k, v in drawn.items()},
        "steps": st.probe_steps, "lr": st.probe_lr, "batch": st.probe_batch,
        "dtype": ctx.dtype, "device": ctx.device, "seqs": digest.hexdigest()},
        sort_keys=True).encode()).hexdigest()[:24]

    def compute(model, tok):
        from sga_core.model.lens import LensUnsupported, lens_parts

        if tok.get_vocab() != ctx.enc.tok.get_vocab():
            return None
        try:
            parts = lens_parts(model)
        except LensUnsupported:
            return None
        if len(parts[0]) < layers[-1]:
            return None
        read = _read(ctx, model, parts, layers, drawn, f"probe: the {role} model")
        return {f"{layer}/{seed}": [s["prob"] for s in scores]
                for (layer, seed), (scores, _) in read.items()}

    got = reference_value(ref, "probe_readings", key, compute, load=load_model_and_tokenizer,
                          dtype=ctx.dtype, device=ctx.device)
    if got["value"] is None and not got["reason"]:
        got["reason"] = f"the {role} model's tokenizer or layers are not this model's"
    return got


def _forget_seq(ctx, i: int):
    """Forget row ``i`` encoded as the stress scoring encodes it (its answer scored)."""
    from sga_core.stress.scoring import _without_end

    row = ctx.forget_rows[i]
    if ctx.kind == "text":
        return _without_end(ctx.enc.text(row["question"], row["answer"], role="eval"))
    return ctx.enc.qa(row["question"], row["answer"], role="eval")


def _drawn(n: int, most: int, seed: int) -> list[int]:
    """``min(n, most)`` retain rows drawn by ``seed`` (sorted)."""
    import random

    return sorted(random.Random(seed).sample(range(n), min(n, most)))


def _hidden(ctx, model, parts, layers: list[int], seqs, stage: str) -> list[dict]:
    """Per sequence: its scored tokens' ids (``targets``) and, per block of ``layers``, the
    block's output at the positions that predict them (``[n, H]``): one forward of
    the frozen model through the batched inference loop. Kept in the model's dtype (a
    bfloat16 model's take half the memory); the probe reads them in float32."""
    from sga_core.evaluation.inputs import counter
    from sga_core.model.forward import per_sequence
    from sga_core.model.lens import block_outputs

    def keep(box, res):
        rows = res.rows
        picked = {L: box["h"][L - 1][:, :-1][res.mask.to(box["h"][L - 1].device)]
                  for L in layers}
        return [{"targets": res.targets[rows == r],
                 **{L: picked[L][(rows == r).to(picked[L].device)] for L in layers}}
                for r in range(res.shape[0])]

    with block_outputs(parts[0]) as box:
        return per_sequence(model, seqs, ctx.enc.pad_id, lambda res: keep(box, res),
                            ctx.device, ctx.batch_size,
                            on_batch=counter(ctx.progress, stage, len(seqs)))


class _Translator:
    """``h + A h + b`` (A, b float32, from zero): the probe's trained part."""

    def __init__(self, width: int, device):
        import torch

        self.A = torch.zeros(width, width, device=device, requires_grad=True)
        self.b = torch.zeros(width, device=device, requires_grad=True)

    def __call__(self, h):
        h = h.float()
        return h + h @ self.A.T + self.b


def _logits(parts, probe, h):
    """The vocabulary logits of hidden states ``h`` ``[n, H]``: through ``probe`` (None: the
    plain logit lens), then the model's final norm and head (soft-capped as the model)."""
    import torch

    _, norm, head, softcap = parts
    x = probe(h) if probe is not None else h
    w = head.weight
    out = head(norm(x.to(w.dtype))).float()
    return torch.tanh(out / softcap) * softcap if softcap else out


def _train(ctx, parts, train: list[dict], layer: int, seed: int):
    """A translator trained on ``train``'s tokens at ``layer`` (Adam, minibatches of tokens
    drawn by ``seed``); the model's own weights get no gradient. Returns (probe, the last
    steps' mean loss)."""
    import torch
    import torch.nn.functional as F

    st = ctx.settings
    h = torch.cat([t[layer] for t in train])
    y = torch.cat([t["targets"] for t in train]).to(h.device)
    probe = _Translator(h.shape[1], h.device)
    opt = torch.optim.Adam([probe.A, probe.b], lr=st.probe_lr)
    gen = torch.Generator().manual_seed(seed)
    n, bs = h.shape[0], min(st.probe_batch, h.shape[0])
    losses = []
    for _ in range(st.probe_steps):
        pick = torch.randperm(n, generator=gen)[:bs].to(h.device)
        loss = F.cross_entropy(_logits(parts, probe, h[pick]), y[pick])
        if not torch.isfinite(loss):
            break
        # only the probe's gradients: the model's parameters are not touched, not even .grad
        opt.zero_grad(set_to_none=True)
        probe.A.grad, probe.b.grad = torch.autograd.grad(loss, [probe.A, probe.b])
        opt.step()
        losses.append(loss.item())
    tail = losses[-10:]
    return probe, (sum(tail) / len(tail) if tail else float("nan"))


def _score(ctx, parts, probe, forget: list[dict], layer: int) -> list[dict]:
    """Per forget row: ``prob`` = exp(-mean NLL) of its answer read at ``layer`` through
    ``probe`` (None: the plain lens), and its token record (the probe's probabilities and
    top-5, as the stress scoring keeps them: Token probabilities shows attacked models)."""
    import math

    import torch

    from sga_core.model.forward import _mean_nll, _records
    from sga_core.model.labelhead import LabelOutput

    class Read:  # the head a LabelOutput applies: the probe, the norm and the model's head
        # what LabelOutput asks of a head's weight: the vocabulary, and the dtype it casts
        # the hidden states to (float32: the probe's own)
        weight = torch.empty(parts[2].weight.shape[0], 0)

        def __call__(self, h):
            return _logits(parts, probe, h)

    out = []
    with torch.no_grad():
        for t in forget:
            y, h = t["targets"], t[layer]
            n = int(y.numel())
            res = LabelOutput(targets=y.to(h.device),
                              rows=torch.zeros(n, dtype=torch.long, device=h.device),
                              shape=(1, n),
                              mask=torch.ones(1, n, dtype=torch.bool, device=h.device),
                              hidden=h, head=Read())
            nll = _mean_nll(res)[0] if n else float("nan")
            rec = _records(ctx.enc, 5, res)[0]
            out.append({"prob": math.exp(-nll) if math.isfinite(nll) else float("nan"),
                        "tokens": rec})
    return out
