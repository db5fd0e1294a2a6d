"""Smoothed Gradient Ascent (SPEC 1): the forget answer and its K-1 normal answers in one
padded batch, each weighted by its label-smoothing coefficient."""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.config import param
from sga_core.losses import CONVENTIONS, sga_coefficients
from sga_core.methods import register
from sga_core.methods.base import Method, MethodData, SeqStats, Unit


@dataclass
class SGAConfig:
    r: float = param(-0.8, "Smoothing rate r (any real number <= 1; r = 0 is plain gradient "
                           "ascent, negative values learn the normal answers).",
                     min=-100.0, max=1.0, label="smoothing rate r")
    k: int = param(4, "K: label slots = the forget answer + K-1 normal answers.", min=1,
                   max=64, label="K")
    convention: str = param("label", "'label' smooths the GA label (SPEC 1, default); "
                                      "'objective' is the paper's literal equation 3.",
                            choices=CONVENTIONS)
    adaptive: bool = param(False, "Adaptive r: every `adaptive_every` steps set r to this "
                                  "batch's r* (SPEC 2), clipped to [r_min, r_max]; r above is "
                                  "the starting value. Costs a second backward pass on those "
                                  "steps.", advanced=True)
    adaptive_every: int = param(1, "Recompute r* every N steps (adaptive r).", min=1,
                                max=100000, advanced=True)
    r_min: float = param(-5.0, "Lower bound for adaptive r.", min=-100.0, max=1.0,
                         advanced=True)
    r_max: float = param(1.0, "Upper bound for adaptive r (at most 1).", min=-100.0, max=1.0,
                         advanced=True)


@register
class SGA(Method):
    name = "sga"
    title = "SGA (smoothed gradient ascent)"
    Config = SGAConfig
    needs = frozenset({"normals"})

    def adaptive_due(self, step: int) -> bool:
        """Whether optimizer step ``step`` (0-based) recomputes r from the gradients."""
        return bool(self.cfg.adaptive) and step % self.cfg.adaptive_every == 0

    def coefficients(self) -> tuple[float, float]:
        return sga_coefficients(self.cfg.r, self.cfg.k, self.cfg.convention)

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        k = self.cfg.k
        if k > 1 and data.normals is None:
            raise ValueError("SGA with K > 1 needs normal answers")
        if data.normals is not None and k > data.normals.k:
            raise ValueError(f"K={k} but the normal-answer table has only "
                             f"{data.normals.k - 1} answers per row (K={data.normals.k})")
        units = []
        for i, row in enumerate(data.forget):
            seqs = [enc.row(row, data.kind, role="forget", forget_index=i)]
            if k > 1:
                texts = data.normals.texts_for(i)[: k - 1]
                if len(texts) < k - 1 or any(not t.strip() for t in texts):
                    raise ValueError(f"forget row {i}: needs {k - 1} non-empty normal answers, "
                                     f"has {sum(1 for t in texts if t.strip())}")
                seqs += [enc.row(row, data.kind, answer=t, role="normal", forget_index=i, k=j + 1)
                         for j, t in enumerate(texts)]
            units.append(Unit(i, seqs))
        return units

    def seq_weights(self, stats: SeqStats) -> list[float]:
        c_f, c_n = self.coefficients()
        return [c_f if role == "forget" else c_n for role in stats.roles]

    def unit_losses(self, stats: SeqStats, n_units: int):
        return self.weighted_sum(stats, self.seq_weights(stats), n_units)
