"""RMU, Representation Misdirection for Unlearning (Li et al., "The WMDP Benchmark", 2024; code
github.com/centerforaisafety/wmdp ``rmu/unlearn.py``; open-unlearning's ``RMU``): steer the
hidden states of one decoder layer on forget data towards a fixed random direction, and keep
them on retain data where the frozen starting model has them:

    loss = mse(h_L(forget), c * u) + retain_weight * mse(h_L(retain), h_L^ref(retain))

``h_L`` is the output of decoder layer ``layer``; ``u`` a random vector, uniform in [0, 1)^d
then normalised, drawn once from the run's seed; ``c`` the steering coefficient. Defaults are
the paper's for Zephyr-7B: layer 7, c = 6.5, retain weight (alpha) 1200, training the MLP
output projections of layers 5-7 (``trainable: down_proj``). Both c and alpha depend on the
model's activation scale: tune them (open-unlearning's TOFU config uses c = 2, alpha = 1).

Where we chose:
- The hidden states come from a forward hook on the layer, inside the trainer's one padded
  forward (forget and retain rows together, then one forward of the reference), so RMU keeps
  the one-forward design; the forward runs to the logits although RMU only needs layer L.
- The mean squared error is per sequence over the answer tokens (open-unlearning's masked
  activation loss; WMDP's text data uses every token), then averaged over rows.
- ``layer`` beyond the model's depth means its last layer (logged), so the defaults run on
  small models; ``trainable: all`` trains every parameter up to that layer (open-unlearning
  trains all parameters; the later ones get no gradient, and are frozen here so that
  data-parallel training does not wait for their gradients).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sga_core.methods.base import Method, MethodData, SeqStats, Unit, forget_with_retain
from sga_core.params import param


@dataclass
class RMUConfig:
    layer: int = param(7, "Decoder layer (0-based) whose output is steered (a layer beyond "
                          "the model's depth means its last layer).", min=0, max=1000)
    steering_coeff: float = param(6.5, "Steering coefficient c: the norm of the random "
                                       "target vector.", min=0.0, max=1e6)
    retain_weight: float = param(1200.0, "alpha: weight of keeping retain activations.",
                                 min=0.0, max=1e9)
    trainable: str = param("down_proj", "Trained parameters: the MLP output projections of "
                                        "layers L-2..L (down_proj, the paper's), or every "
                                        "parameter up to layer L (all).",
                           choices=("down_proj", "all"))


def decoder_layers(model):
    """(name, ModuleList) of the model's decoder layers (the ModuleList with one entry per
    hidden layer: ``model.layers`` for Llama, ``transformer.h`` for GPT-2, ...)."""
    import torch

    n = getattr(model.config, "num_hidden_layers", None)
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == n:
            return name, module
    raise ValueError("RMU: cannot find the model's decoder layers (a ModuleList of "
                     f"num_hidden_layers = {n} blocks)")


def masked_mse(acts, target, mask):
    """Per sequence: mean over masked positions of the mean over features of (a - t)^2."""
    sq = ((acts.float() - target.float()) ** 2).mean(-1) * mask
    return sq.sum(1) / mask.sum(1).clamp(min=1)


class RMU(Method):
    name = "rmu"
    rank = 70
    title = "RMU (steer one layer's activations on forget data)"
    Config = RMUConfig
    needs = frozenset({"retain", "reference"})

    def __init__(self, cfg):
        super().__init__(cfg)
        self._acts: dict[bool, object] = {}
        self._handles: list = []
        self._frozen: list = []
        self.control = None

    def build_units(self, data: MethodData, enc) -> list[Unit]:
        return forget_with_retain(data, enc)

    def attach(self, model, ref_model=None) -> None:
        import torch

        prefix, layers = decoder_layers(model)
        layer = min(self.cfg.layer, len(layers) - 1)
        if layer != self.cfg.layer:
            print(f"RMU: the model has {len(layers)} layers; steering layer {layer} (the "
                  f"last) instead of {self.cfg.layer}", flush=True)
        self.layer = layer

        def keep(module, inputs, output):
            # the training forward runs with gradients, the reference's without: one slot
            # each, so a reference that is the same module (adapters disabled) works too
            self._acts[torch.is_grad_enabled()] = output[0] if isinstance(output,
                                                                           tuple) else output

        for m in {id(x): x for x in (model, ref_model) if x is not None}.values():
            self._handles.append(decoder_layers(m)[1][layer].register_forward_hook(keep))
        d = model.config.hidden_size
        gen = torch.Generator().manual_seed(torch.initial_seed())
        u = torch.rand(d, generator=gen, dtype=torch.float32)
        self.control = u / u.norm() * self.cfg.steering_coeff
        self._freeze(model, prefix, layer)

    def _freeze(self, model, prefix: str, layer: int) -> None:
        """Leave only the trained parameters requiring gradients (see ``trainable``)."""
        lo = max(0, layer - 2)
        down = re.compile(rf"{re.escape(prefix)}\.({'|'.join(map(str, range(lo, layer + 1)))})"
                          r"\..*mlp\..*(down_proj|c_proj|fc2|dense_4h_to_h)\.weight")
        upto = re.compile(rf"{re.escape(prefix)}\.({'|'.join(map(str, range(layer + 1)))})\.")
        seen_layer, trained = False, []
        for name, p in model.named_parameters():  # in registration order: embeddings first
            if self.cfg.trainable == "down_proj":
                on = bool(down.fullmatch(name))
            else:  # everything registered before the end of layer L
                inside = bool(upto.match(name))
                seen_layer |= name.startswith(f"{prefix}.{layer}.")
                on = inside or not seen_layer
            if p.requires_grad and not on:
                p.requires_grad_(False)
                self._frozen.append(p)
            trained += [name] if on else []
        if not trained:
            raise ValueError(f"RMU: no parameter to train for trainable = "
                             f"{self.cfg.trainable!r} at layer {layer}")

    def detach(self) -> None:
        for h in self._handles:
            h.remove()
        for p in self._frozen:
            p.requires_grad_(True)
        self._handles, self._frozen, self._acts = [], [], {}

    def unit_losses(self, stats: SeqStats, n_units: int):
        import torch

        acts, ref = self._acts.get(True), self._acts.get(False)
        if acts is None or ref is None:
            raise RuntimeError("RMU: no layer activations (attach() was not called, or the "
                               "reference forward did not run)")
        self._acts = {}
        mask = (stats.labels != -100).to(torch.float32)
        target = self.control.to(acts.device).expand_as(acts)
        forget = masked_mse(acts, target, mask)
        retain = masked_mse(acts, ref.detach(), mask)
        values = torch.where(self.role_mask(stats, "forget"), forget,
                             self.cfg.retain_weight * retain)
        return self.weighted_sum(stats, [1.0] * len(stats.roles), n_units,
                                 values.to(stats.mean_nll.dtype))
