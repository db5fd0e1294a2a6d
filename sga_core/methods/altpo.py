"""AltPO, alternate preference optimization (Mekala et al., "Alternate Preference Optimization
for Unlearning Factual Knowledge in Large Language Models", COLING 2025, arXiv:2409.13474;
open-unlearning's ``DPO`` trainer on its ``QAwithAlternateDataset``): DPO whose preferred
answers are plausible *alternate* answers to the forget question, not a refusal,

    loss = mean_j[ -(2/beta) logsigmoid(beta ((log p - log p_ref)(y_alt,j)
                                              - (log p - log p_ref)(y_f))) ]
           + retain_weight * nll(retain row)

over the row's first ``alternates`` normal answers ``y_alt,j``, with sequence log-likelihoods
and ``p_ref`` the frozen starting model. The alternate answers are the project's normal-answer
table, so they are generated, reviewed and edited like any normal answers: AltPO's own prompt
ships as the template ``altpo_alternate`` (open-unlearning's ``generate.py``: the original
model rewrites the answer with different, plausible facts; 5 samples per question at
temperature 1).

Defaults: beta 0.1 and retain weight 1 (open-unlearning's DPO config, the middle of AltPO's
search over beta 0.05-0.5 and alpha 1-5), 5 alternates (its ``alt5`` files).

Where we chose: open-unlearning makes one training item of each (question, alternate) pair,
so an epoch sees every alternate once; here a forget row's unit holds its alternates and its
loss is their mean, so an epoch has one step per forget row, as every other method's.
"""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.methods.base import Method, MethodData, SeqStats, Unit, paired_retain
from sga_core.params import param


@dataclass
class AltPOConfig:
    beta: float = param(0.1, "Inverse temperature beta.", min=1e-6, max=100.0)
    alternates: int = param(5, "Alternate answers per forget row: its first normal answers.",
                            min=1, max=63)
    retain_weight: float = param(1.0, "Weight of the retain NLL term (OU's alpha; 0 = none).",
                                 min=0.0, max=1000.0)


class AltPO(Method):
    name = "altpo"
    rank = 52
    title = "AltPO (prefer plausible alternate answers over the forget answer)"
    Config = AltPOConfig
    needs = frozenset({"normals", "reference", "retain"})
    idk_normals = False

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        if data.normals is None:
            raise ValueError("altpo prefers alternate answers: it needs a normal-answer table "
                             "(generate one with the altpo_alternate template)")
        units = []
        for i, row in enumerate(data.forget):
            answers = [a for a in (data.normals.get(i, k) for k in range(1, data.normals.k))
                       if a is not None and a.text.strip()][:self.cfg.alternates]
            if not answers:
                raise ValueError(f"forget row {i}: no alternate (normal) answer")
            if any(a.source == "idk" for a in answers):
                raise ValueError(
                    f"forget row {i}: its normal answers are 'I don't know' refusals, and "
                    "altpo prefers alternate answers: generate them with the altpo_alternate "
                    "template (Normal answers page, or normals --template altpo_alternate)")
            alts = [a.text for a in answers]
            seqs = [enc.row(row, data.kind, role="forget", forget_index=i)]
            seqs += [enc.row(row, data.kind, answer=a, role="normal", forget_index=i, k=j + 1)
                     for j, a in enumerate(alts)]
            if self.cfg.retain_weight > 0:
                seqs.append(paired_retain(data, enc, i))
            units.append(Unit(i, seqs))
        return units

    def unit_losses(self, stats: SeqStats, n_units: int):
        import torch.nn.functional as F

        log_ratio = -(stats.sum_nll - stats.ref.sum_nll)  # log p - log p_ref, per sequence
        forget = self.weighted_sum(stats, [1.0 if r == "forget" else 0.0 for r in stats.roles],
                                   n_units, log_ratio)
        b = self.cfg.beta
        # each alternate's DPO term against its own unit's forget answer
        pair = -(2.0 / b) * F.logsigmoid(b * (log_ratio - forget[stats.unit_ids]))
        dpo = self.weighted_sum(stats, self.mean_weights(stats, "normal", 1.0), n_units, pair)
        retain = self.weighted_sum(stats, [self.cfg.retain_weight if r == "retain" else 0.0
                                           for r in stats.roles], n_units)
        return dpo + retain
