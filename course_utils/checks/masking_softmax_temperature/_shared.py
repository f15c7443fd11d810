"""What several notebook-04 exercises share beyond ``checks.shared``: the float64 shorthand, and the toy
language model that the generation and beam-search checks decode from."""

from __future__ import annotations

import torch

F64 = torch.float64


class TableModel:
    """A toy language model for the decoding checks: each position's logits come from a seeded table
    indexed by that token and the one before it (``TableModel(6, seed)(ids)`` -> (pos, 6) float64).

    ``eos_bonus`` raises every logit of token 0 (the end of sequence in the checks), so that sampled
    and searched sequences do stop within a few tokens.
    """

    def __init__(self, d_vocab: int, seed: int, eos_bonus: float = 0.0):
        gen = torch.Generator().manual_seed(seed)
        self.table = 1.5 * torch.randn(d_vocab, d_vocab, d_vocab, generator=gen, dtype=F64)
        self.table[..., 0] += eos_bonus

    @classmethod
    def from_table(cls, table: torch.Tensor) -> "TableModel":
        """A model with a hand-made (d_vocab, d_vocab, d_vocab) table: row [before, token] is the logits after them."""
        model = cls.__new__(cls)
        model.table = table.to(F64)
        return model

    def __call__(self, ids: torch.Tensor) -> torch.Tensor:
        before = torch.cat([ids[:1], ids[:-1]])  # the token before each position (the first repeats itself)
        return self.table[before, ids]  # (pos, d_vocab)

    def __eq__(self, other) -> bool:  # a copy holds the same table: the check's "changed in place" test compares
        return isinstance(other, TableModel) and torch.equal(self.table, other.table)

    __hash__ = None

    def __repr__(self) -> str:
        first = ", ".join(f"{x:.3f}" for x in self.table.flatten()[:3].tolist())  # tells seeded tables apart
        return f"TableModel(d_vocab={self.table.shape[-1]}, logits {first}, ...)"
