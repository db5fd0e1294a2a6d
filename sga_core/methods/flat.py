"""FLAT, Forget-data-only Loss AdjusTment (Wang et al., "LLM Unlearning via Loss Adjustment
with Only Forget Data", ICLR 2025; code github.com/UCSC-REAL/FLAT, ``get_contrastive_loss``;
SGA paper appendix A, eq. "FLAT").

Per forget row, with ``P(y|x)`` the mean *probability* (not log-probability) of the answer's
tokens, a template answer ``y_e`` and the forget answer ``y_f``:

    loss = -g*(P(y_e|x)) + f*(g*(P(y_f|x)))

the variational form of an f-divergence between the template and the forget answers, which
FLAT maximizes (the optimizer minimizes this loss). ``g*`` is the optimal variational function
and ``f*`` the convex conjugate of the chosen divergence (FLAT's Table 2 and its code):

    kl       g*(v) = v                     f*(g*(v)) = exp(v - 1)
    js       g*(v) = log 2 - log(1 + e^-v)  f*(g*(v)) = log(1 + e^v) - log 2
    tv       g*(v) = tanh(v) / 2           f*(g*(v)) = tanh(v) / 2
    pearson  g*(v) = v                     f*(g*(v)) = v^2 / 4 + v

No retain data and no reference model. The templates are SGA's normal answers (the same
normal-answer table): the first ``templates`` answers of the row, the template term averaged
over them (FLAT pairs one template, an "I don't know" answer on TOFU, with each forget row).

Where we chose:
- g* and f* are applied per forget row and the loss averaged over rows (the expectation of the
  paper's objective); FLAT's code applies them to the batch mean of the probabilities, which
  makes the loss depend on the batch size and the number of processes.
- ``P`` is the mean over the answer's tokens, the paper's "average token prediction
  probability"; FLAT's code sums token probabilities and divides by every position of the
  padded batch (prompt and padding included).
- Default divergence: ``pearson``, the variant the SGA paper's Table 1 reports on TOFU (FLAT's
  own shipped config uses total variation, for Harry Potter).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sga_core.methods.base import Method, MethodData, SeqStats, Unit
from sga_core.params import param

DIVERGENCES = ("kl", "js", "tv", "pearson")


@dataclass
class FLATConfig:
    divergence: str = param("pearson", "The f-divergence: kl (Kullback-Leibler), js "
                                       "(Jensen-Shannon), tv (total variation), pearson "
                                       "(Pearson chi^2).", choices=DIVERGENCES)
    templates: int = param(1, "Template answers per forget row: the first N normal answers "
                              "of the row (FLAT uses one).", min=1, max=63)


def template_term(p, divergence: str):
    """``g*(p)``: the template answer's term (the loss subtracts it)."""
    import torch

    if divergence in ("kl", "pearson"):
        return p
    if divergence == "js":
        return math.log(2.0) - torch.nn.functional.softplus(-p)
    if divergence == "tv":
        return torch.tanh(p) / 2
    raise ValueError(f"unknown divergence {divergence!r} (known: {list(DIVERGENCES)})")


def forget_term(p, divergence: str):
    """``f*(g*(p))``: the forget answer's term (the loss adds it)."""
    import torch

    if divergence == "kl":
        return torch.exp(p - 1.0)
    if divergence == "pearson":
        return p * p / 4 + p
    if divergence == "js":
        return torch.nn.functional.softplus(p) - math.log(2.0)
    if divergence == "tv":
        return torch.tanh(p) / 2
    raise ValueError(f"unknown divergence {divergence!r} (known: {list(DIVERGENCES)})")


def mean_token_prob(stats: SeqStats):
    """Mean probability of each sequence's scored tokens (``[n_seq]``), from the logits at
    the label positions (``stats.token_logits``)."""
    import torch
    import torch.nn.functional as F

    probs = (-F.cross_entropy(stats.token_logits.float(), stats.token_targets,
                              reduction="none")).exp().to(stats.mean_nll.dtype)
    sums = torch.zeros(len(stats.roles), dtype=probs.dtype, device=probs.device)
    return sums.index_add(0, stats.token_rows, probs) / \
        stats.n_tokens.clamp(min=1).to(probs.dtype)


class FLAT(Method):
    name = "flat"
    rank = 45
    title = "FLAT (f-divergence between template and forget answers)"
    Config = FLATConfig
    needs = frozenset({"normals"})
    needs_logits = True

    def explain(self) -> str:
        n = self.cfg.templates
        return (f"{self.cfg.divergence}: raise the mean token probability of the first {n} "
                f"normal answer{'s' if n > 1 else ''} (template), lower the forget answer's")

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        n = self.cfg.templates
        if data.normals is None:
            raise ValueError("FLAT needs normal answers (its templates)")
        units = []
        for i, row in enumerate(data.forget):
            texts = [t for t in data.normals.texts_for(i)[:n] if t.strip()]
            if len(texts) < n:
                raise ValueError(f"forget row {i}: FLAT needs {n} non-empty normal answers "
                                 f"(templates), has {len(texts)}")
            units.append(Unit(i, [enc.row(row, data.kind, role="forget", forget_index=i)] +
                              [enc.row(row, data.kind, answer=t, role="normal",
                                       forget_index=i, k=j + 1) for j, t in enumerate(texts)]))
        return units

    def unit_losses(self, stats: SeqStats, n_units: int):
        import torch

        div = self.cfg.divergence
        p = mean_token_prob(stats)
        forget = self.role_mask(stats, "forget")
        values = torch.where(forget, forget_term(p, div), -template_term(p, div))
        weights = [1.0 if r == "forget" else 1.0 / self.cfg.templates for r in stats.roles]
        return self.weighted_sum(stats, weights, n_units, values)
