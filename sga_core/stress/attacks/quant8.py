"""Round-to-nearest weight quantization at 8 bits, simulated in torch (groups of
`--quant-group-size`, symmetric unless `--no-quant-symmetric`;
[Quantization](../stress-tests.md#quantization)), then re-scored: a grid 127/7 times finer
than 4 bits' (Zhang et al. found 8 bits to bring back little)."""

from __future__ import annotations

from sga_core.stress.quantization import RoundToNearest


class Quant8(RoundToNearest):
    name = "quant8"
    label = "8-bit RTN"
    description = "the weights rounded to 8 bits (RTN, groups of 128), then re-scored"
    bits = 8
    rank = 31
