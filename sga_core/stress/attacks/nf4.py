"""Real 4-bit quantization with bitsandbytes' NF4, as `BitsAndBytesConfig(load_in_4bit=True,
bnb_4bit_quant_type="nf4")` loads a model: blocks of `--nf4-blocksize` (64) weights, each
scaled by its absmax onto the 16 NF4 levels (normal quantiles), the head left in full
precision; then re-scored ([Real quantizers](../stress-tests.md#real-quantizers)). Zhang et
al. (ICLR 2025) found real 4-bit quantizers to undo more of GA-style unlearning than
round-to-nearest (`quant4`)."""

from __future__ import annotations

from sga_core.stress.bnb import BLOCKSIZES, BitsAndBytesAttack, Nf4Settings


class Nf4(BitsAndBytesAttack):
    name = "nf4"
    label = "NF4 (bitsandbytes)"
    description = ("the linear layers quantized to 4-bit NF4 by bitsandbytes (blocks of 64), "
                   "then re-scored")
    rank = 32
    default = False  # run when asked for: it needs bitsandbytes
    quant_type = "nf4"
    quantizer = "bitsandbytes NF4"
    Settings = Nf4Settings

    @classmethod
    def settings_problem(cls, settings) -> str | None:
        if settings.nf4_blocksize not in BLOCKSIZES:
            return (f"nf4_blocksize: {settings.nf4_blocksize} is not one of "
                    f"{', '.join(map(str, BLOCKSIZES))}")
        return None

    def options(self, st) -> dict:
        return {"blocksize": st.nf4_blocksize, "double_quant": st.nf4_double_quant}
