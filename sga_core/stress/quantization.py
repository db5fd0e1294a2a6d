"""Round-to-nearest (RTN) weight quantization, simulated in torch (quantize, then dequantize
back to the model's dtype), so it runs on a CPU and a GPU alike
(docs/stress-tests.md#quantization); the quantization attacks (:mod:`sga_core.stress.attacks`)
subclass :class:`RoundToNearest` with their number of bits.

Zhang et al., "Catastrophic Failure of LLM Unlearning via Quantization" (ICLR 2025), show
that rounding an unlearned model's weights to 4 bits brings back much of what GA-style
unlearning removed: the unlearning's weight change is small next to the rounding step, so
the unlearned and the original weights fall into the same bucket. Their RTN is the
symmetric absmax quantizer ``Q(w) = Δ · round(w / Δ)`` with ``Δ = max|w| / 2^(N-1)``;
grouped quantizers (GPTQ, AWQ) in their experiments use groups of 128 weights. Here:

- each ``nn.Linear`` weight ``[out, in]`` is cut into groups of ``group_size`` consecutive
  weights along the input dimension (a last, shorter group where ``in`` is not a multiple);
- symmetric (default): ``Δ = max|w_g| / (2^(N-1) - 1)``, ``q = clamp(round(w/Δ),
  -2^(N-1), 2^(N-1) - 1)``, ``w' = q · Δ``. The denominator is ``2^(N-1) - 1`` (not the
  paper's ``2^(N-1)``) so the group's largest weight stays on the signed N-bit grid instead
  of being clipped; the step differs by a factor 8/7 at 4 bits, 128/127 at 8 bits;
- asymmetric: ``Δ = (max - min) / (2^N - 1)``, zero point ``z = round(-min/Δ)``,
  ``q = clamp(round(w/Δ) + z, 0, 2^N - 1)``, ``w' = (q - z) · Δ``;
- ``round`` is torch's (halves to even); a group of zeros stays zero;
- the embeddings, the norms, the biases and the output head are left as they are (the
  ``bitsandbytes`` 4- and 8-bit loaders the paper's code uses skip the head too).

So every weight moves by at most ``Δ/2`` (:func:`max_error`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.params import param
from sga_core.stress.base import Attack, Case
from sga_core.stress.context import StressContext


@dataclass
class QuantSettings:
    """The quantization attacks' settings."""

    quant_group_size: int = param(128, "Quantization: weights per group along the input "
                                  "dimension.", min=1, max=2**20)
    quant_symmetric: bool = param(True, "Quantization: symmetric absmax (else asymmetric "
                                  "min-max with a zero point).")


def quantize_dequantize(w, bits: int, group_size: int = 128, symmetric: bool = True):
    """``w`` ([out, in]) rounded to ``bits`` per group of ``group_size`` along the input
    dimension and turned back into floats (``w``'s dtype)."""
    import torch

    if bits < 2 or bits > 16:
        raise ValueError(f"bits must be between 2 and 16, got {bits}")
    if group_size < 1:
        raise ValueError(f"group_size must be at least 1, got {group_size}")
    if w.dim() != 2:
        raise ValueError(f"expected a 2-D weight [out, in], got shape {tuple(w.shape)}")
    x = w.detach().to(torch.float32)
    out = torch.empty_like(x)
    for start in range(0, x.shape[1], group_size):
        g = x[:, start:start + group_size]
        out[:, start:start + group_size] = _qdq(g, bits, symmetric)
    return out.to(w.dtype)


def group_steps(w, bits: int, group_size: int = 128, symmetric: bool = True):
    """The step Δ of each group, ``[out, n_groups]``."""
    import torch

    x = w.detach().to(torch.float32)
    cols = []
    for start in range(0, x.shape[1], group_size):
        cols.append(_scale(x[:, start:start + group_size], bits, symmetric)[0].squeeze(1))
    return torch.stack(cols, dim=1)


def max_error(w, bits: int, group_size: int = 128, symmetric: bool = True):
    """Per weight, the most RTN may move it: half its group's step, ``[out, in]``."""
    steps = group_steps(w, bits, group_size, symmetric)
    return (steps / 2).repeat_interleave(group_size, dim=1)[:, :w.shape[1]]


def _scale(g, bits: int, symmetric: bool):
    import torch

    if symmetric:
        qmax = 2 ** (bits - 1) - 1
        step = g.abs().amax(dim=1, keepdim=True) / qmax
        return torch.where(step > 0, step, torch.ones_like(step)), None
    lo = g.amin(dim=1, keepdim=True)
    hi = g.amax(dim=1, keepdim=True)
    step = (hi - lo) / (2 ** bits - 1)
    step = torch.where(step > 0, step, torch.ones_like(step))
    return step, torch.round(-lo / step)


def _qdq(g, bits: int, symmetric: bool):
    import torch

    step, zero = _scale(g, bits, symmetric)
    if symmetric:
        q = torch.clamp(torch.round(g / step), -(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        return q * step
    q = torch.clamp(torch.round(g / step) + zero, 0, 2 ** bits - 1)
    return (q - zero) * step


def quantized_modules(model) -> list[tuple[str, object]]:
    """The ``nn.Linear`` modules RTN rounds: all but the output head."""
    import torch

    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    return [(n, m) for n, m in model.named_modules()
            if isinstance(m, torch.nn.Linear) and m is not head]


def quantize_model(model, bits: int, group_size: int = 128, symmetric: bool = True) -> int:
    """Round ``model``'s Linear weights in place (see the module's docstring); returns how
    many weight matrices were rounded."""
    import torch

    mods = quantized_modules(model)
    with torch.no_grad():
        for _, m in mods:
            m.weight.copy_(quantize_dequantize(m.weight, bits, group_size, symmetric))
    return len(mods)


class RoundToNearest(Attack):
    """A quantization attack: the weights of a copy rounded to ``bits``, then re-scored."""

    bits = 0
    Settings = QuantSettings

    def run(self, ctx: StressContext) -> dict[str, list[Case]]:
        import copy

        from sga_core.evaluation.common import free_memory

        st = ctx.settings
        ctx.report(f"{self.name}: rounding the weights", 0, 1)
        model = copy.deepcopy(ctx.model)
        try:
            quantize_model(model, self.bits, st.quant_group_size, st.quant_symmetric)
            rows = list(range(len(ctx.forget_rows)))
            scores = ctx.score(model, rows, stage=self.name)
        finally:
            del model
            free_memory()
        return {self.name: [Case("", None, rows, scores)]}
