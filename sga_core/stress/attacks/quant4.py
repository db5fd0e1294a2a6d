"""Round-to-nearest weight quantization at 4 bits, simulated in torch (groups of
`--quant-group-size`, symmetric unless `--no-quant-symmetric`;
[Quantization](../stress-tests.md#quantization)), then re-scored. Zhang et al. (ICLR 2025)
found 4 bits to undo much of GA-style unlearning."""

from __future__ import annotations

from sga_core.stress.quantization import RoundToNearest


class Quant4(RoundToNearest):
    name = "quant4"
    label = "4-bit RTN"
    description = "the weights rounded to 4 bits (RTN, groups of 128), then re-scored"
    bits = 4
    rank = 30
