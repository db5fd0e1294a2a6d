"""A deterministic peak-memory measure for CPU tensors: a dispatch mode that counts the bytes
of every storage an operation creates while that storage lives (freed storages are subtracted
when they are released). It counts tensors made inside the block only (not the model's
weights), and gives the same figure on every run: no allocator or RSS noise."""

from __future__ import annotations

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


class PeakTensorMemory(TorchDispatchMode):
    """``with PeakTensorMemory() as pm: ...`` then ``pm.peak`` (bytes)."""

    def __init__(self):
        super().__init__()
        self.live: dict[int, int] = {}
        self.current = 0
        self.peak = 0

    def _free(self, key: int) -> None:
        self.current -= self.live.pop(key, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        # a view of an input (a transposed weight, a slice) allocates nothing
        inputs = {a.untyped_storage().data_ptr() for a in tree_flatten((args, kwargs))[0]
                  if isinstance(a, torch.Tensor)}
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.device.type == "cpu":
                storage = t.untyped_storage()
                key = storage.data_ptr()
                if key and key not in self.live and key not in inputs:
                    self.live[key] = storage.nbytes()
                    self.current += storage.nbytes()
                    self.peak = max(self.peak, self.current)
                    weakref.finalize(storage, self._free, key)
        return out
