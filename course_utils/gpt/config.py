"""What a small GPT is built from and what it accepts: its sizes, token ids, and weights that fit.

Covers ``GPTConfig`` (the sizes in the course's vocabulary, checked when it is made, and its
round trip through a plain dict for checkpoints), ``check_tokens`` (token ids as a (batch, pos)
integer tensor inside the vocabulary and the context) and ``check_state_dict`` (every missing,
unexpected or mis-shaped weight named before ``load_state_dict``).
``GPTConfig(d_vocab=1000).d_head`` -> ``32``; ``check_tokens(torch.tensor([1, 2]), cfg)`` -> ``[[1, 2]]``.
Leaves out the model itself (``gpt.py``, which re-exports all three) and GPT-2's weights (``gpt2_weights.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import torch
from jaxtyping import Int
from torch import Tensor, nn

NORMS = ("pre", "post")


@dataclass
class GPTConfig:
    """The model's sizes: ``GPTConfig(d_vocab=1000).d_head`` -> 32 (d_model 128 / 4 heads);
    d_mlp defaults to 4·d_model."""

    d_vocab: int = 2048
    n_ctx: int = 128
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 4
    d_mlp: int | None = None
    tie_embeddings: bool = True
    bias: bool = True
    activation: str = "gelu_tanh"
    norm: str = "pre"
    ln_eps: float = 1e-5
    init_std: float = 0.02

    def __post_init__(self):
        if self.d_mlp is None:
            self.d_mlp = 4 * self.d_model
        for name in ("d_vocab", "n_ctx", "d_model", "n_heads", "n_layers", "d_mlp"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"GPTConfig.{name} must be a positive int, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"GPTConfig.d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        if self.norm not in NORMS:
            raise ValueError(f"GPTConfig.norm must be one of {NORMS}, got {self.norm!r}")
        for name in ("tie_embeddings", "bias"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"GPTConfig.{name} must be a bool, got {getattr(self, name)!r}")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "GPTConfig":
        """Rebuild from ``to_dict()``; unknown keys are an error (a checkpoint from another model)."""
        if not isinstance(d, dict):
            raise TypeError(f"config must be a dict, got {type(d).__name__}")
        unknown = set(d) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"config has unknown fields {sorted(unknown)}")
        return cls(**d)


def check_tokens(tokens, cfg: GPTConfig) -> Int[Tensor, "batch pos"]:
    """Token ids as a (batch, pos) integer tensor, checked against the vocabulary and the context."""
    if (
        not isinstance(tokens, Tensor)
        or tokens.is_floating_point()
        or tokens.is_complex()
        or tokens.dtype == torch.bool
    ):
        raise TypeError(
            "tokens must be an integer torch.Tensor of token ids, "
            f"got {getattr(tokens, 'dtype', type(tokens).__name__)}"
        )
    if tokens.ndim == 1:
        tokens = tokens[None]  # (1, pos)
    if tokens.ndim != 2 or tokens.shape[1] == 0:
        raise ValueError(f"tokens must have shape (batch, pos) with pos >= 1, got {tuple(tokens.shape)}")
    if tokens.shape[1] > cfg.n_ctx:
        raise ValueError(f"the prompt has {tokens.shape[1]} tokens, longer than the context n_ctx={cfg.n_ctx}")
    low, high = int(tokens.min()), int(tokens.max())
    if low < 0 or high >= cfg.d_vocab:
        bad = low if low < 0 else high
        raise ValueError(f"unknown token id {bad}: ids must be in 0..{cfg.d_vocab - 1} (d_vocab={cfg.d_vocab})")
    return tokens


def check_state_dict(model: nn.Module, state_dict: dict) -> None:
    """Raise ValueError naming every missing, unexpected or mis-shaped entry before ``load_state_dict``."""
    if not isinstance(state_dict, dict):
        raise TypeError(f"state_dict must be a dict of tensors, got {type(state_dict).__name__}")
    expected = model.state_dict()
    problems = [f"missing {k}" for k in expected if k not in state_dict]
    problems += [f"unexpected {k}" for k in state_dict if k not in expected]
    problems += [
        f"{k}: checkpoint has shape {tuple(v.shape)}, the config needs {tuple(expected[k].shape)}"
        for k, v in state_dict.items()
        if k in expected and tuple(getattr(v, "shape", ())) != tuple(expected[k].shape)
    ]
    if problems:
        raise ValueError(
            "the weights do not match the model's config: "
            + "; ".join(problems[:6])
            + (f" (and {len(problems) - 6} more)" if len(problems) > 6 else "")
        )
