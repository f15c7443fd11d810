"""The KV cache itself: what the readable step (``kv_cache.py``) and the fast one (``kv_cache_fused.py``) share.

Covers ``KVCache`` (per layer, the keys and values of every position seen so far) and ``_Buffers``
(the fast path's storage, allocated once for the positions to come so a step writes in place).
Both paths import it; neither imports the other.
Leaves out the steps that fill them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor, nn


@dataclass
class KVCache:
    """Per layer, the keys and values of every position seen so far, each (batch, head, pos, d_head).

    The fused path (``impl="fused"``) keeps them in buffers allocated ahead (``keys[layer]`` is then
    a view of the filled part), so a step writes its new position in place instead of copying the
    whole cache with ``torch.cat``; a cache reused for two different continuations gets a copy.
    """

    keys: list[Tensor] = field(default_factory=list)
    values: list[Tensor] = field(default_factory=list)
    _buffers: _Buffers | None = field(default=None, repr=False, compare=False)

    @property
    def length(self) -> int:
        return 0 if not self.keys else self.keys[0].shape[2]



class _Buffers:
    """K and V storage of every layer, (batch, head, capacity, d_head) each; ``filled`` positions hold data."""

    __slots__ = ("keys", "values", "filled")

    def __init__(self, keys: list[Tensor], values: list[Tensor], filled: int):
        self.keys, self.values, self.filled = keys, values, filled

    @property
    def capacity(self) -> int:
        return self.keys[0].shape[2]

    @classmethod
    def allocate(
        cls, model: nn.Module, batch: int, capacity: int, like: Tensor, cache: KVCache | None = None
    ) -> _Buffers:
        """Empty buffers for ``capacity`` positions on ``like``'s device and dtype, holding a copy of ``cache``."""
        cfg = model.cfg
        shape = (batch, cfg.n_heads, capacity, cfg.d_head)
        keys = [torch.empty(shape, dtype=like.dtype, device=like.device) for _ in range(cfg.n_layers)]
        values = [torch.empty(shape, dtype=like.dtype, device=like.device) for _ in range(cfg.n_layers)]
        filled = 0 if cache is None else cache.length
        for old, new in zip((*cache.keys, *cache.values) if filled else (), (*keys, *values)):
            new[:, :, :filled] = old
        return cls(keys, values, filled)

    def view(self, end: int) -> KVCache:
        """A ``KVCache`` of the first ``end`` positions, sharing this storage."""
        return KVCache([k[:, :, :end] for k in self.keys], [v[:, :, :end] for v in self.values], self)
