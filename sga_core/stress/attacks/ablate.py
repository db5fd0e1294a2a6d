"""Directional ablation, a white-box attack (Arditi et al. 2024, "Refusal in language models is
mediated by a single direction"; Arditi, "Unlearning via RMU is mostly shallow", 2024; Łucki
et al. 2024, "An Adversarial Perspective on Machine Unlearning for AI Safety"): at one layer
(`--ablate-layers`, default the middle one), the difference of the mean residual stream of
the unlearned model and of the Original over the forget prompts' tokens, normalised, is the
direction the unlearning wrote; it is projected out of every layer's residual stream
(`h - (h·d) d`, at the embeddings and after every block; `--ablate-where from_layer`: from
that layer on only) and the forget answers re-scored.
Held-out rows (`--ablate-split`): per seed the direction is fit on half the forget rows and
the other half re-scored, or each row is re-scored with the direction of all the others.
Needs the Original (`--original`)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from sga_core.params import param
from sga_core.stress.base import Attack, Case, list_problem, seeded_rows
from sga_core.stress.context import StressContext

#: a mean difference smaller than this share of the Original's mean activation is no
#: direction: the two models read the forget prompts alike at that layer
MIN_NORM = 1e-6
MAX_LAYER = 1000
NO_ORIGINAL = ("needs the Original (give --original): the direction is the difference "
               "between this model's activations and the Original's")


@dataclass
class AblateSettings:
    """The ablation attack's settings."""

    ablate_layers: list[int] | None = param(
        None, "Ablation: the layers (1 = after the first block, as the layer view counts "
        "them) whose residual stream the direction is taken from, each its own cases "
        "(empty: the middle one, (L + 1) // 2 of L).")
    ablate_tokens: str = param(
        "prompt", "Ablation: the positions averaged: the prompt's tokens (its first, the "
        "attention sink, left out), the prompt's last token only (the one that predicts "
        "the answer), or the prompt and the answer.", choices=("prompt", "last", "all"))
    ablate_split: str = param(
        "half", "Ablation: the held-out rows: half (per seed, the direction fit on half "
        "the forget rows and the others re-scored) or loo (each row re-scored with the "
        "direction of all the others).", choices=("half", "loo"))
    ablate_where: str = param(
        "all", "Ablation: where the direction is projected out: every layer's residual "
        "stream (the embeddings and every block's output, as Arditi et al.), or only from "
        "the layer it was taken at on (the blocks before it untouched).",
        choices=("all", "from_layer"))


class Ablate(Attack):
    name = "ablate"
    label = "directional ablation"
    description = ("the direction between the model's and the Original's activations on "
                   "forget prompts projected out of every layer (white-box; needs the "
                   "Original)")
    rank = 35
    default = False  # loads the Original a second time: run when asked for
    Settings = AblateSettings
    info_fields = {"layer": int, "split": str, "fit_rows": int, "gap_norm": float,
                   "tokens": str, "ablated": str}

    @classmethod
    def settings_problem(cls, settings) -> str | None:
        if settings.ablate_layers is None:
            return None
        return list_problem("ablate_layers", settings.ablate_layers, 1, MAX_LAYER, 20)

    @classmethod
    def case_words(cls, info: dict) -> str | None:
        if "layer" not in info:
            return None
        fit = ("each row's from all the others" if info.get("split") == "leave-one-out"
               else f"fit on {info.get('fit_rows', 0)} other rows")
        out = ("every layer" if info.get("ablated", "all") == "all"
               else f"layer {info['layer']} on")
        return (f"direction at layer {info['layer']} ({fit}, {info.get('tokens')} tokens; "
                f"mean activations {info.get('gap_norm', 0):.3g} apart), projected out of "
                f"{out}")

    def run(self, ctx: StressContext) -> dict[str, list[Case]]:
        from sga_core.model.lens import LensUnsupported, lens_parts

        n, st = len(ctx.forget_rows), ctx.settings

        def refused(reason):
            return {self.name: [Case("", None, [], [], reason=reason)]}

        if not ctx.original:
            return refused(NO_ORIGINAL)
        if n < 2:
            return refused(f"needs at least 2 forget rows (the direction is fit on some and "
                           f"measured on the others), the forget set has {n}")
        try:
            blocks = lens_parts(ctx.model)[0]
        except LensUnsupported as exc:
            return refused(f"not applicable: {exc}")
        layers = list(dict.fromkeys(st.ablate_layers or [(len(blocks) + 1) // 2]))
        bad = [v for v in layers if v > len(blocks)]
        if bad:
            return refused(f"--ablate-layers {bad[0]}: the model has {len(blocks)} layers "
                           f"(1..{len(blocks)})")
        acts = activation_sums(ctx, layers)
        if isinstance(acts, str):
            return refused(acts)
        cases = []
        for k, layer in enumerate(layers):
            named = f"layer {layer} " if len(layers) > 1 else ""
            info = {"layer": layer, "tokens": st.ablate_tokens, "ablated": st.ablate_where}
            if st.ablate_split == "loo":
                cases.append(self._loo(ctx, blocks, acts, k, f"{named}leave-one-out", info))
                continue
            for seed in st.seeds:
                fit = seeded_rows(n, 0.5, seed)
                rows = [i for i in range(n) if i not in set(fit)]
                d, norm = direction(acts, k, fit)
                label = f"{named}seed {seed}"
                if d is None:
                    cases.append(Case(label, seed, [], [], fit, "forget", reason=norm))
                    continue
                with ablated(blocks, d, where(st, layer)):
                    scores = ctx.score(ctx.model, rows, stage=f"{self.name} {label}")
                cases.append(Case(label, seed, rows, scores, fit, "forget", info={
                    **info, "split": "half", "fit_rows": len(fit), "gap_norm": norm}))
        return {self.name: cases}

    def _loo(self, ctx, blocks, acts, k, label, info) -> Case:
        n = len(ctx.forget_rows)
        scores, norms = [], []
        for i in range(n):
            d, norm = direction(acts, k, [j for j in range(n) if j != i])
            if d is None:
                return Case(label, None, [], [], list(range(n)), "forget", reason=norm)
            norms.append(norm)
            with ablated(blocks, d, where(ctx.settings, info["layer"])):
                scores += ctx.score(ctx.model, [i], stage=f"{self.name} {label}")
            ctx.report(f"{self.name} {label}", i + 1, n)
        return Case(label, None, list(range(n)), scores, list(range(n)), "forget", info={
            **info, "split": "leave-one-out", "fit_rows": n - 1,
            "gap_norm": sum(norms) / n})


def activation_sums(ctx: StressContext, layers: list[int]):
    """Per model ("unlearned", "original"): per forget row, the sum of its residual stream
    at each of ``layers`` over the positions ``ctx.settings.ablate_tokens`` names (float64,
    ``[H]`` each) and how many positions (None for a row with no scored token); or why the
    Original cannot be read alike (a string)."""
    from sga_core.evaluation.common import free_memory
    from sga_core.evaluation.run import load_model_and_tokenizer
    from sga_core.model.lens import LensUnsupported, lens_parts
    from sga_core.stress.scoring import scored_seqs

    rows = ctx.forget_rows
    seqs = scored_seqs(ctx.enc, [r["question"] for r in rows], [r["answer"] for r in rows],
                       ctx.kind)
    out = {}
    om, otok = load_model_and_tokenizer(ctx.original, dtype=ctx.dtype, device=ctx.device)
    try:
        if otok.get_vocab() != ctx.enc.tok.get_vocab():
            return ("the Original's tokenizer is not this model's: the two must read the same "
                    "prompts")
        try:
            o_blocks = lens_parts(om)[0]
        except LensUnsupported as exc:
            return f"the Original: {exc}"
        if len(o_blocks) != len(lens_parts(ctx.model)[0]) or _width(om) != _width(ctx.model):
            return "the Original's layers or width are not this model's"
        out["original"] = _sums(ctx, om, seqs, layers, "ablate: the Original's activations")
    finally:
        del om
        free_memory()
    out["unlearned"] = _sums(ctx, ctx.model, seqs, layers, "ablate: the model's activations")
    return out


def _width(model):
    return getattr(getattr(model, "config", None), "hidden_size", None)


def _sums(ctx, model, seqs, layers, stage) -> list:
    from functools import partial

    from sga_core.evaluation.inputs import counter
    from sga_core.model.forward import per_sequence
    from sga_core.model.lens import block_outputs, lens_parts

    blocks = lens_parts(model)[0]
    with block_outputs([blocks[v - 1] for v in layers]) as box:
        return per_sequence(model, seqs, ctx.enc.pad_id,
                            partial(_row_sums, box, ctx.settings.ablate_tokens),
                            ctx.device, ctx.batch_size,
                            on_batch=counter(ctx.progress, stage, len(seqs)))


def _row_sums(box, tokens: str, res) -> list:
    """Per sequence of the batch ``res``: ``(sums per layer, positions)``. Position ``t`` of
    the mask scores token ``t + 1``, so the prompt ends at the first scored position."""
    out = []
    for r in range(res.shape[0]):
        scored = res.mask[r].nonzero().flatten()
        if not len(scored):
            out.append(None)
            continue
        first, last = int(scored[0]), int(scored[-1])
        lo = min(1, first)  # the first token (an attention sink) left out
        lo, hi = {"prompt": (lo, first + 1), "last": (first, first + 1),
                  "all": (lo, last + 2)}[tokens]
        out.append(([h[r, lo:hi].double().sum(0).cpu() for h in box["h"]], hi - lo))
    return out


def direction(acts: dict, k: int, fit: list[int]):
    """``(unit direction, norm)`` of the mean difference (unlearned minus Original) at the
    ``k``-th layer over the rows ``fit``, or ``(None, why)`` where it is no direction."""
    got = [(acts["unlearned"][i], acts["original"][i]) for i in fit
           if acts["unlearned"][i] is not None and acts["original"][i] is not None]
    count = sum(u[1] for u, _ in got)
    if not count:
        return None, "no scored token on the rows the direction is fit on"
    mu_u = sum(u[0][k] for u, _ in got) / count
    mu_o = sum(o[0][k] for _, o in got) / count
    diff = mu_u - mu_o
    norm = float(diff.norm())
    if not norm > MIN_NORM * max(float(mu_o.norm()), 1e-12):
        return None, ("no direction: the model's mean activations equal the Original's on "
                      "these rows (the unlearning changed nothing there)")
    return (diff / norm).float(), norm


def where(settings, layer: int) -> int:
    """The first layer ablated: 0 (the embeddings on) for ``ablate_where: all``, else the
    layer the direction was taken at."""
    return 0 if settings.ablate_where == "all" else layer


@contextlib.contextmanager
def ablated(blocks, d, start: int = 0):
    """While open, ``d`` (a unit vector) is projected out of the residual stream: with
    ``start`` 0 the first block's input (the embeddings) and every block's output, so no
    layer reads or writes along it (Arditi et al. ablate it from every layer); else the
    outputs of blocks ``start..L`` (1-based) only."""
    on: dict = {}  # the direction on each device it meets (copied once, not per forward)

    def proj(h):
        u = on.get(h.device)
        if u is None:
            u = on[h.device] = d.to(h.device)
        x = h.float()
        return (x - (x @ u).unsqueeze(-1) * u).to(h.dtype)

    def post(module, args, out):
        return (proj(out[0]), *out[1:]) if isinstance(out, tuple) else proj(out)

    def pre(module, args, kwargs):
        if args:
            return (proj(args[0]), *args[1:]), kwargs
        if "hidden_states" in kwargs:
            return args, {**kwargs, "hidden_states": proj(kwargs["hidden_states"])}
        return None

    handles = [blocks[0].register_forward_pre_hook(pre, with_kwargs=True)] if not start \
        else []
    handles += [b.register_forward_hook(post) for b in blocks[max(start, 1) - 1:]]
    try:
        yield
    finally:
        for h in handles:
            h.remove()
