"""Real 8-bit quantization with bitsandbytes' LLM.int8, as `BitsAndBytesConfig(load_in_8bit=True)`
loads a model: each weight row rounded to int8 by its absmax, the inputs quantized per row
at inference except the outlier columns (a value above `--int8-threshold`, 6.0), multiplied
in 16 bits; the head left in full precision; then re-scored
([Real quantizers](../stress-tests.md#real-quantizers))."""

from __future__ import annotations

from sga_core.stress.bnb import LLM_INT8, BitsAndBytesAttack, Int8Settings


class Int8(BitsAndBytesAttack):
    name = "int8"
    label = "LLM.int8 (bitsandbytes)"
    description = ("the linear layers quantized to 8 bits by bitsandbytes' LLM.int8 (outliers "
                   "above 6 kept in 16 bits), then re-scored")
    rank = 33
    default = False  # run when asked for: it needs bitsandbytes
    quant_type = LLM_INT8
    quantizer = "bitsandbytes LLM.int8"
    Settings = Int8Settings

    def options(self, st) -> dict:
        return {"threshold": st.int8_threshold}
