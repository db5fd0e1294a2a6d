"""PDU, primal-dual unlearning (Entesari et al., "Constrained Entropic Unlearning: A
Primal-Dual Framework for Large Language Models", 2025, arXiv:2506.05314; open-unlearning's
``PDU``): flatten the model's output on the forget answers while a constraint holds the
retain loss at most ``retain_eps``,

    flat(y_f) = mean_t[ (max_v z_t,v - mean_v z_t,v)^2 ]        (logit margin, forget tokens)
    loss      = forget_weight * flat(y_f) + lambda * (nll(retain row) - retain_eps)

and the dual variable ``lambda`` (the retain preference) rises while the constraint is
broken and falls, never below 0, while it holds:

    lambda <- max(0, lambda + dual_step * (nll_retain - retain_eps))

after every optimizer step past the first ``dual_warmup_epochs`` epochs (before that, and with
``primal_dual`` off, lambda stays at its start ``retain_weight``). ``nll_retain`` is the step's
mean retain NLL over every process, so lambda is the same on each; a checkpoint keeps it.

Defaults are the TOFU recipe of open-unlearning's PDU (``community/methods/PDU/run.sh``,
"final best parameters"): lambda starts at 100 (its ``alpha``, "pref"), dual step 5,
retain_eps 0.3, forget weight (its ``gamma``) 1. That recipe warms up 5 of 10 epochs; the
workbench's runs last 3 epochs by default, so the warm-up here starts at 0 (the default of
open-unlearning's class): set it to half the run's epochs to follow the recipe. Choose
retain_eps a little above the original model's retain NLL (the authors' advice): below it the
constraint can never hold and lambda only grows.

Where we chose: the margin is taken at the positions that predict the answer's tokens and
averaged per forget row, the loss the mean over rows
(docs/spec.md#12-coefficients-and-the-loss); open-unlearning pairs each answer token's label
with the logits *at* that token (one position later) and averages over the batch's tokens.
Its retain NLL is the batch's token mean, the workbench's the mean over rows of each row's
mean. open-unlearning updates lambda inside its loss, so once per micro-batch (k times per
optimizer step with gradient accumulation k), on each process from that process's own retain
loss, and turns updates on only at an epoch's end; here lambda moves once per optimizer step,
from the global mean, and a warm-up may end mid-epoch (0.5: after half an epoch). With
accumulation k, open-unlearning's dual step behaves as k times this one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from sga_core.methods.base import (
    Method,
    MethodData,
    SeqStats,
    Unit,
    forget_with_retain,
    sequence_mean,
)
from sga_core.params import param


@dataclass
class PDUConfig:
    retain_eps: float = param(0.3, "The constraint: the retain NLL held at most this "
                                   "(choose a little above the original model's).",
                              min=0.0, max=100.0)
    retain_weight: float = param(100.0, "The dual variable lambda's start (the retain "
                                        "preference; OU's alpha).", min=0.0, max=1e6)
    dual_step: float = param(5.0, "Step size of lambda's update.", min=0.0, max=1e6)
    dual_warmup_epochs: float = param(0.0, "Epochs before lambda starts to move.", min=0.0,
                                      max=1000.0)
    primal_dual: bool = param(True, "Update lambda (off: a fixed retain weight).")
    forget_weight: float = param(1.0, "Weight of the logit-margin term (OU's gamma).",
                                 min=0.0, max=1000.0)


class PDU(Method):
    name = "pdu"
    rank = 48
    title = "PDU (primal-dual: flat forget logits, retain loss constrained)"
    Config = PDUConfig
    needs = frozenset({"retain"})
    needs_logits = True

    def __init__(self, cfg):
        super().__init__(cfg)
        self.dual = float(cfg.retain_weight)

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        return forget_with_retain(data, enc)

    def unit_losses(self, stats: SeqStats, n_units: int):
        import torch

        c = self.cfg
        z = stats.token_logits.float()
        margin = (z.max(dim=-1).values - z.mean(dim=-1)) ** 2
        values = torch.where(self.role_mask(stats, "forget"),
                             c.forget_weight * sequence_mean(stats, margin),
                             self.dual * (stats.mean_nll - c.retain_eps))
        return self.weighted_sum(stats, [1.0] * len(stats.roles), n_units, values)

    def step(self, trainer, batch: list[int], step: int) -> dict | None:
        out = trainer.train_step(batch)
        self.update_dual(out["retain_nll"], step / trainer.steps_per_epoch)
        return out

    def update_dual(self, retain_nll: float | None, epochs_done: float) -> None:
        """One dual step after an optimizer step taken when ``epochs_done`` epochs were
        complete, whose mean retain NLL was ``retain_nll``."""
        c = self.cfg
        if c.primal_dual and retain_nll is not None and epochs_done >= c.dual_warmup_epochs:
            self.dual = max(0.0, self.dual + c.dual_step * (retain_nll - c.retain_eps))

    def log_fields(self) -> dict:
        return {"retain_preference": self.dual}

    def explain(self) -> str | None:
        c = self.cfg
        moves = (f"rises by {c.dual_step:g} x (retain NLL - {c.retain_eps:g}) after each step"
                 + (f" past epoch {c.dual_warmup_epochs:g}" if c.dual_warmup_epochs else "")
                 + ", never below 0") if c.primal_dual else "stays fixed"
        return (f"Flattens the forget answers' logits (x{c.forget_weight:g}) while the retain "
                f"NLL is held at most {c.retain_eps:g}: its weight lambda starts at "
                f"{c.retain_weight:g} and {moves}.")

    def state_dict(self) -> dict:
        return {"cfg": dataclasses.asdict(self.cfg), "dual": self.dual}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.dual = float(state.get("dual", self.cfg.retain_weight))
