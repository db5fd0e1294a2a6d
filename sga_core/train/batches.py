"""What each optimizer step trains on: the run's data as the method's units, the global batches
of every epoch in data order, where a resumed run continues in that order, and how a global
batch is cut into micro-batches and into each process's share.

Every process builds the same global batches (same seed) and takes its share of each
(:func:`shard`); the order depends only on the seed, the epoch and the forget rows
(:mod:`sga_core.train.order`, docs/decisions/004-seeds-and-data-order.md). Nothing here
touches the model: the loop that trains on these batches is :mod:`sga_core.train.trainer`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

from sga_core.config import TrainConfig
from sga_core.methods import MethodData, Unit


def load_method_data(cfg: TrainConfig) -> MethodData:
    """The run's forget and retain rows, its normal answers and the "I don't know" templates,
    as the method builds its units from them."""
    from sga_core.assets import idk_templates
    from sga_core.data import NormalTable, load_dataset

    forget = load_dataset(cfg.resolve(cfg.data.forget), kind=cfg.data.task)
    retain = (load_dataset(cfg.resolve(cfg.data.retain), kind=cfg.data.task).rows
              if cfg.data.retain else [])
    normals = NormalTable.load(cfg.resolve(cfg.data.normals)) if cfg.data.normals else None
    return MethodData(kind=forget.kind, forget=forget.rows, retain=retain, normals=normals,
                      idk_templates=idk_templates())


def steps_per_epoch(n_units: int, batch_size: int) -> int:
    """The number of global batches (optimizer steps) in one epoch of ``n_units`` units."""
    return math.ceil(n_units / batch_size)


def make_batches(units: list[Unit], batch_size: int, seed: int, epoch: int,
                 group_by_length: bool = True) -> list[list[int]]:
    """Global batches (lists of unit positions) for one epoch, identical on every process.

    With ``group_by_length``, shuffled units are sorted by length inside windows of 16
    batches, cut into batches, and the batches shuffled again (as HF's length grouping does).
    The length is :attr:`Unit.sort_len` (the forget row's own length in training: see
    :func:`sga_core.train.order.set_order_lengths`), so the order depends only on the seed,
    the epoch and the forget rows.
    """
    rng = random.Random(seed * 1_000_003 + epoch)
    order = list(range(len(units)))
    rng.shuffle(order)
    if group_by_length:
        window = batch_size * 16
        grouped = []
        for s in range(0, len(order), window):
            chunk = sorted(order[s:s + window], key=lambda i: -units[i].sort_len)
            grouped += chunk
        order = grouped
    batches = [order[s:s + batch_size] for s in range(0, len(order), batch_size)]
    if group_by_length:
        rng.shuffle(batches)
    return batches


def batches_from(units: list[Unit], batch_size: int, seed: int, step: int,
                 group_by_length: bool = True) -> Iterator[list[int]]:
    """The global batches of the steps after the first ``step`` steps, epoch after epoch and
    without end: where a run that has done ``step`` steps (a resume from a checkpoint at
    ``step``) continues in the data order. Step ``s`` trains on batch ``s mod
    steps_per_epoch`` of epoch ``s // steps_per_epoch`` (:func:`make_batches`), so a resumed
    run sees the batches the uninterrupted run would have seen."""
    epoch, skip = divmod(step, steps_per_epoch(len(units), batch_size))
    while True:
        yield from make_batches(units, batch_size, seed, epoch, group_by_length)[skip:]
        epoch, skip = epoch + 1, 0


def micro_batches(batch: list[int], grad_accum: int) -> list[list[int]]:
    """Exactly ``grad_accum`` micro-batches of a global batch (some may be empty when the
    batch is smaller), so accelerate's accumulation counter syncs at the last one of every
    step."""
    n = len(batch)
    return [batch[j * n // grad_accum:(j + 1) * n // grad_accum] for j in range(grad_accum)]


def shard(batch: list[int], rank: int, world: int) -> list[int]:
    """Process ``rank``'s share of a (micro-)batch split over ``world`` processes."""
    return batch[rank::world]
