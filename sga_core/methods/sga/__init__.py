"""Smoothed Gradient Ascent (docs/spec.md#1-the-sga-objective; paper: "Label Smoothing Improves
Gradient Ascent in LLM Unlearning"): the forget answer and its K-1 normal answers in one padded
batch, each weighted by its label-smoothing coefficient. Loss per forget sample:
``c_forget(r, K) * nll(y_f|x) + sum_k c_normal(r, K) * nll(y_k|x)`` with
``c_forget = -(1 - r + r/K)`` and ``c_normal = -r/K`` (``label``) or ``+r/K`` (``objective``).
r = 0 is gradient ascent. Adaptive r (docs/spec.md#22-adaptive-r) recomputes r* from each batch's
gradients."""

from __future__ import annotations

from dataclasses import dataclass

from sga_core.methods.base import Method, MethodData, SeqStats, StopTraining, Unit
from sga_core.model.losses import CONVENTIONS, describe_coefficients, sga_coefficients
from sga_core.params import param


@dataclass
class SGAConfig:
    r: float = param(-0.8, "Smoothing rate r (any real number <= 1; r = 0 is plain gradient "
                           "ascent, negative values learn the normal answers).",
                     min=-100.0, max=1.0, label="smoothing rate r", slider=(-10.0, 1.0))
    k: int = param(4, "K: label slots = the forget answer + K-1 normal answers.", min=1,
                   max=64, label="K")
    convention: str = param("label", "'label' smooths the GA label "
                                      "(docs/spec.md#13-conventions, default); "
                                      "'objective' is the paper's literal equation 3.",
                            choices=CONVENTIONS)
    adaptive: bool = param(False, "Adaptive r: every `adaptive_every` steps set r to this "
                                  "batch's r* (docs/spec.md#22-adaptive-r), clipped to "
                                  "[r_min, r_max]; r above is the starting value. Costs a second "
                                  "backward pass on those steps.", advanced=True)
    adaptive_every: int = param(1, "Recompute r* every N steps (adaptive r).", min=1,
                                max=100000, advanced=True)
    r_min: float = param(-5.0, "Lower bound for adaptive r.", min=-100.0, max=1.0,
                         advanced=True)
    r_max: float = param(1.0, "Upper bound for adaptive r (at most 1).", min=-100.0, max=1.0,
                         advanced=True)

    def settings_problem(self) -> str | None:
        if self.r_min > self.r_max:
            return (f"r_min ({self.r_min!r}) is above r_max ({self.r_max!r}): adaptive r is "
                    "clipped to [r_min, r_max], so r_min must be at most r_max")
        return None


class SGA(Method):
    name = "sga"
    rank = 0
    title = "SGA (smoothed gradient ascent)"
    Config = SGAConfig
    needs = frozenset({"normals"})
    sweep_param = "r"
    sweep_default = "-1, -0.8, -0.4, 0, 0.4"

    @classmethod
    def id_parts(cls, args: dict) -> list[str]:
        return super().id_parts(args) + ([f"k{args['k']}"] if args.get("k") else [])

    def explain(self) -> str:
        return describe_coefficients(self.cfg.r, self.cfg.k, self.cfg.convention)

    def log_fields(self) -> dict:
        return {"r": self.cfg.r}

    def check_training(self, training, distributed_type: str) -> None:
        if not self.cfg.adaptive:
            return
        if training.grad_accum > 1:
            raise ValueError("adaptive r needs grad_accum = 1 (it combines two gradients per "
                             "step)")
        if distributed_type == "DEEPSPEED":
            raise ValueError("adaptive r edits gradients directly, which DeepSpeed does not "
                             "allow; use DDP or FSDP")

    def step(self, trainer, batch: list[int], step: int) -> dict | None:
        """On adaptive steps: set r to this batch's clipped r* (:mod:`.adaptive`) and apply the
        SGA gradient at that r, assembled from the forget and normal gradients."""
        if not self.adaptive_due(step):
            return None
        import torch

        from sga_core.methods.sga.adaptive import adaptive_gradient

        acc, cfg = trainer.acc, self.cfg
        local = trainer.local_part(batch)
        units = [trainer.units[i] for i in (local or batch[:1])]
        info = adaptive_gradient(
            trainer.model, units, k=cfg.k, convention=cfg.convention,
            bounds=(cfg.r_min, cfg.r_max), fallback_r=cfg.r, pad_id=trainer.enc.pad_id,
            device=acc.device, scale=acc.num_processes / len(batch), backward=acc.backward,
            reduce=lambda x: acc.reduce(x, "sum"), weight=1.0 if local else 0.0)
        f_sum, f_n, n_sum, n_n = info["sums"].tolist()
        forget_nll, normal_nll = f_sum / f_n, n_sum / n_n
        loss = info["c_f"] * forget_nll + (cfg.k - 1) * info["c_n"] * normal_nll
        if not torch.isfinite(torch.tensor(loss)):
            raise StopTraining("diverged", "the loss became non-finite (NaN/inf)")
        cfg.r = info["r"]  # later fixed-r steps use it too
        grad_norm = trainer.apply_update(loss)
        tokens = acc.reduce(torch.tensor([float(info["tokens"]) if local else 0.0],
                                         dtype=torch.float64, device=acc.device), "sum")
        return {"loss": loss, "forget_nll": forget_nll, "normal_nll": normal_nll,
                "retain_nll": None, "tokens": tokens.item(), "r_star": info["r_star"],
                "grad_norm": float(grad_norm) if grad_norm is not None else None}

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
