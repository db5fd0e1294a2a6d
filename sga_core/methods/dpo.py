"""DPO for unlearning (Rafailov et al. 2023, as TOFU (Maini et al. 2024) and open-unlearning's
``DPO`` use it; SGA paper appendix A, eq. "DPO"): for each forget prompt a preferred answer
``y_e`` (a refusal, or a normal answer) and the dispreferred forget answer ``y_f``:

    loss = -(2/beta) * logsigmoid(beta * ((log p(y_e) - log p_ref(y_e))
                                          - (log p(y_f) - log p_ref(y_f))))
           + retain_weight * nll(retain row)

with sequence log-likelihoods and ``p_ref`` the frozen starting model (the trainer's reference).
``dpo-rt`` (``dpo_rt.py``) is the same with the retain term on.

Where we chose: the scale ``2/beta`` follows open-unlearning and FLAT's code (the SGA paper
writes ``2*beta``, which makes the loss vanish as beta -> 0); beta = 0.1 and the "I don't know"
templates as preferred answers are open-unlearning's TOFU defaults; ``preferred: normals``
takes the row's first normal answer instead (SGA's table).
"""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.methods.base import Method, MethodData, SeqStats, Unit, paired_retain
from sga_core.params import param


@dataclass
class DPOConfig:
    beta: float = param(0.1, "Inverse temperature beta.", min=1e-6, max=100.0)
    preferred: str = param("idk", "The preferred answer: an 'I don't know' template (idk) or "
                                  "the row's first normal answer (normals).",
                           choices=("idk", "normals"))
    retain_weight: float = param(0.0, "Weight of a retain NLL term (0 = plain DPO; DPO-RT "
                                      "uses 1).", min=0.0, max=1000.0)


def preferred_answer(data: MethodData, i: int, source: str) -> str:
    if source == "normals":
        if data.normals is None:
            raise ValueError("preferred = normals needs a normal-answer table")
        texts = [t for t in data.normals.texts_for(i) if t.strip()]
        if not texts:
            raise ValueError(f"forget row {i}: no normal answer to prefer")
        return texts[0]
    if not data.idk_templates:
        raise ValueError("no 'I don't know' templates available")
    return data.idk_templates[i % len(data.idk_templates)]


class DPO(Method):
    name = "dpo"
    rank = 50
    title = "DPO (prefer a refusal over the forget answer)"
    Config = DPOConfig
    needs = frozenset({"reference"})

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        units = []
        for i, row in enumerate(data.forget):
            win = preferred_answer(data, i, self.cfg.preferred)
            seqs = [enc.row(row, data.kind, role="forget", forget_index=i),
                    enc.row(row, data.kind, answer=win, role="normal", forget_index=i, k=1)]
            if self.cfg.retain_weight > 0:
                seqs.append(paired_retain(data, enc, i))
            units.append(Unit(i, seqs))
        return units

    def unit_losses(self, stats: SeqStats, n_units: int):
        import torch
        import torch.nn.functional as F

        log_ratio = -(stats.sum_nll - stats.ref.sum_nll)  # log p - log p_ref, per sequence
        sign = torch.tensor([1.0 if r == "normal" else -1.0 if r == "forget" else 0.0
                             for r in stats.roles], dtype=log_ratio.dtype,
                            device=log_ratio.device)
        margin = self.weighted_sum(stats, [1.0] * len(stats.roles), n_units, sign * log_ratio)
        b = self.cfg.beta
        dpo = -(2.0 / b) * F.logsigmoid(b * margin)
        retain = self.weighted_sum(stats, [self.cfg.retain_weight if r == "retain" else 0.0
                                           for r in stats.roles], n_units)
        return dpo + retain
