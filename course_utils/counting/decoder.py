"""A decoder-only model built from a ``ModelConfig`` out of plain ``torch.nn`` layers: a measuring instrument.

Covers every option of ``course_utils.counting.parameters.ModelConfig`` (biases, LayerNorm/RMSNorm/none,
learned positions, tied embeddings, grouped-query attention, GELU/ReLU/SwiGLU/GeGLU MLPs, a top-k
mixture of experts that really routes each token through ``experts_per_token`` experts), so that
``sum(p.numel())`` and ``torch.utils.flop_counter.FlopCounterMode`` can be read off a real module of
any shape the counter describes. Attention is written out (scores, causal mask, softmax, mix) so
that its two matrix products are visible to the FLOP counter.

``count_by_category`` reads a built model's parameters back into ``counting``'s categories by their
names (``blocks.0.attn.W_Q.bias`` -> ``query``), so a real module can be compared with the formulas
category by category.

Leaves out: rotary/sinusoidal positions are not applied (they have no parameters and no matrix
products), dropout, initialisation schemes, training and generation. The course's own model, for
training and reading, is ``course_utils.gpt.model``. Build on ``torch.device("meta")`` to count without memory.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor, nn

from course_utils.counting.parameters import CATEGORIES, ModelConfig
from course_utils.validate import index_tensor

_ACTIVATIONS = {"gelu": F.gelu, "relu": F.relu, "swiglu": F.silu, "geglu": F.gelu}


def _norm(cfg: ModelConfig) -> nn.Module:
    if cfg.norm == "layernorm":
        return nn.LayerNorm(cfg.d_model, bias=cfg.bias)
    return nn.RMSNorm(cfg.d_model) if cfg.norm == "rmsnorm" else nn.Identity()


class Attention(nn.Module):
    """Causal multi-head attention with ``n_kv_heads`` key/value heads shared by groups of query heads."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.d_head = cfg.n_heads, cfg.kv_heads, cfg.d_head
        self.W_Q = nn.Linear(cfg.d_model, cfg.n_heads * cfg.d_head, bias=cfg.bias)
        self.W_K = nn.Linear(cfg.d_model, cfg.kv_heads * cfg.d_head, bias=cfg.bias)
        self.W_V = nn.Linear(cfg.d_model, cfg.kv_heads * cfg.d_head, bias=cfg.bias)
        self.W_O = nn.Linear(cfg.n_heads * cfg.d_head, cfg.d_model, bias=cfg.bias)

    def forward(self, x: Float[Tensor, "batch pos d_model"]) -> Float[Tensor, "batch pos d_model"]:
        batch, pos, _ = x.shape
        q = self.W_Q(x).view(batch, pos, self.n_heads, self.d_head).transpose(1, 2)  # (batch, head, pos, d_head)
        k = self.W_K(x).view(batch, pos, self.n_kv_heads, self.d_head).transpose(1, 2)  # (batch, kv_head, pos, d_head)
        v = self.W_V(x).view(batch, pos, self.n_kv_heads, self.d_head).transpose(1, 2)
        group = self.n_heads // self.n_kv_heads
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)  # (batch, head, pos, d_head)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.d_head)  # (batch, head, q_pos, k_pos)
        future = torch.ones(pos, pos, dtype=torch.bool, device=x.device).triu(1)
        pattern = scores.masked_fill(future, float("-inf")).softmax(-1)
        z = (pattern @ v).transpose(1, 2).reshape(batch, pos, -1)  # (batch, pos, head·d_head)
        return self.W_O(z)


class MLP(nn.Module):
    """``down(act(up(x)))``, or gated ``down(act(gate(x)) * up(x))`` for SwiGLU/GeGLU."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.act = _ACTIVATIONS[cfg.mlp]
        self.W_up = nn.Linear(cfg.d_model, cfg.mlp_width, bias=cfg.bias)
        self.W_gate = nn.Linear(cfg.d_model, cfg.mlp_width, bias=cfg.bias) if cfg.gated else None
        self.W_down = nn.Linear(cfg.mlp_width, cfg.d_model, bias=cfg.bias)

    def forward(self, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_model"]:
        hidden = self.act(self.W_up(x)) if self.W_gate is None else self.act(self.W_gate(x)) * self.W_up(x)
        return self.W_down(hidden)


class MixtureOfExperts(nn.Module):
    """A router scores ``n_experts`` MLPs; each token runs through its top ``experts_per_token``."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.k = cfg.experts_per_token
        self.router = nn.Linear(cfg.d_model, cfg.n_experts, bias=False)
        self.experts = nn.ModuleList(MLP(cfg) for _ in range(cfg.n_experts))

    def forward(self, x: Float[Tensor, "batch pos d_model"]) -> Float[Tensor, "batch pos d_model"]:
        flat = x.reshape(-1, x.shape[-1])  # (token, d_model)
        top_scores, top_experts = self.router(flat).topk(self.k, dim=-1)  # (token, k)
        weights = top_scores.softmax(-1)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            rows, slot = (top_experts == e).nonzero(as_tuple=True)  # the tokens routed to expert e
            out = out.index_add(0, rows, expert(flat[rows]) * weights[rows, slot, None])
        return out.view_as(x)


class DecoderBlock(nn.Module):
    """Pre-norm block: ``x + attn(norm1(x))``, then ``+ mlp(norm2(·))``."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.norm1, self.attn, self.norm2 = _norm(cfg), Attention(cfg), _norm(cfg)
        self.mlp = MixtureOfExperts(cfg) if cfg.n_experts > 1 else MLP(cfg)

    def forward(self, x: Float[Tensor, "batch pos d_model"]) -> Float[Tensor, "batch pos d_model"]:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Decoder(nn.Module):
    """Tokens -> logits:
    ``Decoder(GPT2_SMALL.with_(n_layers=1))(torch.zeros(1, 5, dtype=torch.long)).shape`` -> (1, 5, 50257)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        if not isinstance(cfg, ModelConfig):
            raise TypeError(f"cfg must be a ModelConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        self.W_E = nn.Embedding(cfg.d_vocab, cfg.d_model)
        self.W_pos = nn.Embedding(cfg.n_ctx, cfg.d_model) if cfg.positions == "learned" else None
        self.blocks = nn.ModuleList(DecoderBlock(cfg) for _ in range(cfg.n_layers))
        self.norm_final = _norm(cfg)
        self.W_U = None if cfg.tie_embeddings else nn.Linear(cfg.d_model, cfg.d_vocab, bias=False)

    def forward(self, tokens: Int[Tensor, "batch pos"]) -> Float[Tensor, "batch pos d_vocab"]:
        index_tensor("tokens", tokens, self.cfg.d_vocab)
        if tokens.ndim != 2 or tokens.shape[1] > self.cfg.n_ctx:
            raise ValueError(
                f"tokens must have shape (batch, pos) with pos <= n_ctx={self.cfg.n_ctx}, got {tuple(tokens.shape)}"
            )
        x = self.W_E(tokens)  # (batch, pos, d_model)
        if self.W_pos is not None:
            x = x + self.W_pos(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        x = self.norm_final(x)
        return x @ self.W_E.weight.T if self.W_U is None else self.W_U(x)


CATEGORY_OF_MODULE = {  # the module that holds a parameter -> its category in ``counting.CATEGORIES``
    "W_E": "embedding", "W_pos": "positions", "W_Q": "query", "W_K": "key", "W_V": "value", "W_O": "output",
    "W_up": "mlp_up", "W_gate": "mlp_gate", "W_down": "mlp_down", "router": "router", "W_U": "unembedding",
    "norm1": "norms", "norm2": "norms", "norm_final": "norms",
}  # fmt: skip


def count_by_category(model: nn.Module) -> dict[str, int]:
    """A ``Decoder``'s parameters by category, from ``named_parameters`` (a shared tensor counted once).

    ``count_by_category(Decoder(cfg))`` equals ``counting.count_parameters(cfg)`` for every config
    (tested on the meta device); ``blocks.0.mlp.experts.3.W_up.weight`` counts under ``mlp_up``.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    counts = dict.fromkeys(CATEGORIES, 0)
    for name, parameter in model.named_parameters():
        holder = name.split(".")[-2]  # blocks.0.attn.W_Q.weight -> W_Q
        if holder not in CATEGORY_OF_MODULE:
            raise ValueError(f"model has a parameter {name!r} outside the Decoder's layout")
        counts[CATEGORY_OF_MODULE[holder]] += parameter.numel()
    return {**counts, "total": sum(counts.values())}
