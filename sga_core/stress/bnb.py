"""Real quantizers from ``bitsandbytes``: the unlearned model's linear layers swapped for the
library's own 4-bit (NF4) or 8-bit (LLM.int8) layers, as ``from_pretrained`` with a
``BitsAndBytesConfig`` swaps them (``transformers.integrations.bitsandbytes
.replace_with_bnb_linear``), then re-scored (docs/stress-tests.md#real-quantizers). The
simulated round-to-nearest attacks (:mod:`sga_core.stress.quantization`) stay beside them.

- **NF4** (``BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4")``): each
  weight matrix, flattened, is cut into blocks of ``blocksize`` (64) weights; a block is
  scaled by its absmax and each weight replaced by the nearest of the 16 NF4 levels
  (quantiles of a normal distribution, :data:`NF4_LEVELS`), ``w' = level · absmax``. The
  forward runs on the library's 4-bit kernels (compute in float32, HF's default; on a CPU
  the weights are dequantized by the library for each matmul, its bfloat16 fused kernel
  left off so the activations stay in float32).
- **LLM.int8** (``BitsAndBytesConfig(load_in_8bit=True)``): each output row of a weight is
  scaled by its absmax and rounded to int8 (``w' = round(127 · w / absmax) · absmax / 127``,
  in float16); at inference the inputs are quantized per row too, except the input columns
  holding a value above ``threshold`` (6.0), the outliers, which are multiplied in 16 bits.

As in HF's loader, the output head (and so the tied embedding) stays in full precision, and
so do the embeddings, norms and biases. On a GPU the layers move there and quantize with its
kernels; on a CPU with bitsandbytes' CPU backend (no GPU needed).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sga_core.params import param
from sga_core.stress.base import Attack, Case
from sga_core.stress.context import StressContext

#: the bitsandbytes release these attacks are written and tested against (requirements.txt)
BNB_VERSION = "0.50.2"

#: NF4's 16 levels (bitsandbytes ``get_4bit_type("nf4")``; Dettmers et al. 2023, QLoRA,
#: appendix E), in the order of their 4-bit codes
NF4_LEVELS = (-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
              -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
              0.07958029955625534, 0.16093020141124725, 0.24611230194568634,
              0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
              0.7229568362236023, 1.0)

#: HF's name (``BitsAndBytesConfig.quantization_method()``) of 8-bit loading, LLM.int8; any
#: other quant type is one of bitsandbytes' 4-bit formats (``bnb_4bit_quant_type``)
LLM_INT8 = "llm_int8"

#: the block sizes bitsandbytes' 4-bit quantizers take on every backend
BLOCKSIZES = (64, 128, 256, 512, 1024, 2048, 4096)


@dataclass
class Nf4Settings:
    """The NF4 attack's settings (BitsAndBytesConfig's, HF's defaults)."""

    nf4_blocksize: int = param(64, "NF4: weights per block sharing one absmax scale "
                               "(bitsandbytes; HF's BitsAndBytesConfig uses 64): 64, 128, "
                               "256, 512, 1024, 2048 or 4096.", min=64, max=4096)
    nf4_double_quant: bool = param(False, "NF4: also quantize the block scales to 8 bits "
                                   "(bnb_4bit_use_double_quant).")


@dataclass
class Int8Settings:
    """The LLM.int8 attack's settings (BitsAndBytesConfig's, HF's default)."""

    int8_threshold: float = param(6.0, "LLM.int8: input values above this magnitude mark "
                                  "their column as an outlier, multiplied in 16 bits "
                                  "(llm_int8_threshold; 0: no outliers).", min=0.0,
                                  max=1e4)


def _bnb():
    """bitsandbytes, imported without its note that an optional CPU kernel package
    (``kernels``) is missing: the attacks do not use that kernel."""
    logging.getLogger("bitsandbytes").setLevel(logging.ERROR)
    import bitsandbytes

    return bitsandbytes


def library_problem() -> str | None:
    """Why bitsandbytes cannot quantize here (None: it can): not installed, or a release
    without the layers these attacks use."""
    try:
        bnb = _bnb()
    except Exception as exc:  # ImportError, or a broken native library
        return (f"bitsandbytes cannot be imported ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else 'no message'}); install it with "
                f"pip install bitsandbytes=={BNB_VERSION}")
    missing = [n for n in ("Linear4bit", "Params4bit", "Linear8bitLt", "Int8Params")
               if not hasattr(bnb.nn, n)]
    if missing:
        return (f"bitsandbytes {getattr(bnb, '__version__', '?')} has no {', '.join(missing)}; "
                f"install bitsandbytes=={BNB_VERSION}")
    return None


def quantize_bnb(model, quant_type: str, device: str = "cpu", *, blocksize: int = 64,
                 double_quant: bool = False, threshold: float = 6.0,
                 tally: list | None = None) -> list[str]:
    """Swap ``model``'s Linear layers (all but the output head, as
    :func:`~sga_core.stress.quantization.quantized_modules` lists them) for bitsandbytes'
    ``Linear4bit`` of the 4-bit format ``quant_type`` (its ``bnb_4bit_quant_type``: NF4 or
    FP4) or, for :data:`LLM_INT8`, ``Linear8bitLt``, their weights quantized by the library
    on ``device``; returns the names of the layers swapped. ``tally``: a list that gets, per
    layer, how many of its weights the quantizer changed and how many it has (counted one
    layer at a time, so no second copy of the weights is held)."""
    import torch

    from sga_core.stress.quantization import quantized_modules

    bnb = _bnb()
    four_bit = quant_type != LLM_INT8
    if four_bit:
        try:
            bnb.functional.get_4bit_type(quant_type, device="cpu")
        except NotImplementedError:
            raise ValueError(f"quant_type must be a 4-bit format of bitsandbytes or "
                             f"{LLM_INT8!r}, got {quant_type!r}") from None
    if blocksize not in BLOCKSIZES:
        raise ValueError(f"blocksize must be one of {list(BLOCKSIZES)}, got {blocksize}")
    mods = quantized_modules(model)
    if four_bit and str(device).startswith("cpu"):
        odd = next(((n, m) for n, m in mods if m.in_features % blocksize), None)
        if odd is not None:
            raise ValueError(
                f"bitsandbytes' CPU kernel dequantizes {quant_type.upper()} wrongly where a "
                f"layer's input width is not a multiple of the block size: {odd[0]} has "
                f"{odd[1].in_features} inputs, blocks of {blocksize} (run it on a GPU, or with "
                f"a block size that divides every width)")
    names = []
    for name, lin in mods:
        w = lin.weight.detach()
        bias = lin.bias is not None
        if four_bit:  # as replace_with_bnb_linear with BitsAndBytesConfig's defaults
            new = bnb.nn.Linear4bit(lin.in_features, lin.out_features, bias, torch.float32,
                                    compress_statistics=double_quant, quant_type=quant_type,
                                    quant_storage=torch.uint8, device="meta")
            new.weight = bnb.nn.Params4bit(w.clone(), requires_grad=False,
                                           blocksize=blocksize, compress_statistics=double_quant,
                                           quant_type=quant_type, quant_storage=torch.uint8,
                                           module=new).to(device)
            # the CPU backend's fused kernel (avx512bf16 machines) casts the inputs to
            # bfloat16; without it the forward is the library's dequantize + a float32
            # matmul, as on a GPU with HF's float32 compute dtype
            new.support_avx512bf16_for_cpu = False
        else:
            new = bnb.nn.Linear8bitLt(lin.in_features, lin.out_features, bias,
                                      has_fp16_weights=False, threshold=threshold,
                                      device="meta")
            new.weight = bnb.nn.Int8Params(w.to("cpu").clone(), requires_grad=False,
                                           has_fp16_weights=False).to(device)
        if bias:
            new.bias = torch.nn.Parameter(lin.bias.detach().clone(), requires_grad=False)
        new.requires_grad_(False)
        new.train(lin.training)
        if tally is not None:
            tally.append((int((dequantized(new) != w.to(torch.float32)).sum()), w.numel()))
        model.set_submodule(name, new)
        names.append(name)
    return names


def dequantized(module):
    """The float32 weight ``[out, in]`` a bitsandbytes layer made of
    :func:`quantize_bnb` holds, as the library dequantizes it (before its first forward: the
    CPU backend may repack the 4-bit weight then)."""
    import torch

    bnb = _bnb()
    w = module.weight
    if isinstance(w, bnb.nn.Params4bit):
        return bnb.functional.dequantize_4bit(w.data, w.quant_state).to(torch.float32)
    return (w.CB.to(torch.float32) * w.SCB.to(torch.float32).unsqueeze(1) / 127)


class BitsAndBytesAttack(Attack):
    """A real quantization attack: a copy's linear layers swapped for bitsandbytes' (its
    ``quant_type``), then re-scored like any attacked model."""

    quant_type = ""
    quantizer = ""  # how the case's info names it
    info_fields = {"quantizer": str, "layers_quantized": int, "weights_changed": float}

    @classmethod
    def case_words(cls, info: dict) -> str | None:
        if "quantizer" not in info:
            return None
        return (f"{info['quantizer']}: {info.get('layers_quantized', 0)} linear layers, "
                f"{info.get('weights_changed', 0.0):.1%} of their weights changed")

    def options(self, st) -> dict:
        return {}

    def run(self, ctx: StressContext) -> dict[str, list[Case]]:
        import copy

        from sga_core.evaluation.common import free_memory

        problem = library_problem()
        if problem:
            return {self.name: [Case("", None, [], [], reason=f"{self.label} needs "
                                     f"bitsandbytes: {problem}")]}
        ctx.report(f"{self.name}: quantizing the weights ({self.quantizer})", 0, 1)
        model = copy.deepcopy(ctx.model)
        try:
            tally: list[tuple[int, int]] = []
            try:
                names = quantize_bnb(model, self.quant_type, ctx.device, tally=tally,
                                     **self.options(ctx.settings))
            except ValueError as exc:  # a model this quantizer cannot take here
                return {self.name: [Case("", None, [], [], reason=f"{self.label}: {exc}")]}
            except (RuntimeError, NotImplementedError) as exc:
                return {self.name: [Case("", None, [], [], reason=(
                    f"bitsandbytes could not quantize on {ctx.device}: "
                    f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"))]}
            total = sum(n for _, n in tally)
            share = sum(c for c, _ in tally) / total if total else 0.0
            rows = list(range(len(ctx.forget_rows)))
            scores = ctx.score(model, rows, stage=self.name)
        finally:
            del model
            free_memory()
        return {self.name: [Case("", None, rows, scores, info={
            "quantizer": self.quantizer, "layers_quantized": len(names),
            "weights_changed": round(share, 6)})]}
