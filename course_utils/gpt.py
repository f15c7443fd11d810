"""A small decoder-only GPT, written to be read: embeddings, pre-norm blocks, final LayerNorm, unembedding.

Covers ``GPTConfig`` (the sizes, in the course's vocabulary), ``Block`` (LayerNorm -> multi-head
attention of notebook 05 -> add; LayerNorm -> MLP of notebook 06 -> add; a post-norm variant for
comparison), ``GPT`` (token and position embeddings ``W_E``/``W_pos``, the blocks, ``ln_final``
and the unembedding ``W_U``, optionally tied to ``W_E``), the residual stream split into every
block's writes, and a clear check of token ids and state dicts. GPT-2's initialisation (normal,
std 0.02; residual output projections scaled by 1/sqrt(2·n_layers)).
Leaves out dropout, the KV cache (``generation.py``), training (``training.py``) and GPT-2's
weights (``gpt2_weights.py``). The code follows its input's device; build, then ``.to()``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor, nn

from course_utils.layernorm import LayerNorm
from course_utils.masking import causal_mask
from course_utils.mlp import MLP
from course_utils.multihead import MultiHeadAttention

NORMS = ("pre", "post")
_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "gelu_tanh": lambda h: F.gelu(h, approximate="tanh")}


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


def _qkv_weight(attn: MultiHeadAttention) -> tuple[Tensor, Tensor | None]:
    """W_Q, W_K, W_V side by side as one (d_model, 3·head·d_head) matrix, and their biases as one row."""
    W_QKV = torch.cat([attn.W_Q, attn.W_K, attn.W_V])  # (3·head, d_model, d_head)
    W_QKV = W_QKV.permute(1, 0, 2).reshape(attn.d_model, -1)  # (d_model, 3·head·d_head)
    b_QKV = None if attn.b_Q is None else torch.cat([attn.b_Q, attn.b_K, attn.b_V]).reshape(-1)
    return W_QKV, b_QKV


def _linear(x: Tensor, W: Tensor, b: Tensor | None) -> Tensor:
    """``x @ W + b`` for a 2-d ``x``, in one kernel (``addmm``) when there is a bias."""
    return x @ W if b is None else torch.addmm(b, x, W)


def fused_qkv(attn: MultiHeadAttention, x: Float[Tensor, "batch pos d_model"]):
    """q, k, v of every head in one matmul over the module's W_Q, W_K, W_V side by side:
    3 × (batch, head, pos, d_head)."""
    batch, pos, d_model = x.shape
    W_QKV, b_QKV = _qkv_weight(attn)
    qkv = _linear(x.reshape(-1, d_model), W_QKV, b_QKV)  # (batch·pos, 3·head·d_head)
    return qkv.reshape(batch, pos, 3, attn.n_heads, -1).permute(2, 0, 3, 1, 4)  # (3, batch, head, pos, d_head)


def fused_out(
    attn: MultiHeadAttention, z: Float[Tensor, "batch head pos d_head"]
) -> Float[Tensor, "batch pos d_model"]:
    """The heads' outputs side by side, through W_O seen as one (head·d_head, d_model) matrix, plus b_O."""
    batch, _, pos, _ = z.shape
    out = _linear(z.transpose(1, 2).reshape(batch * pos, attn.d_model), attn.W_O.reshape(-1, attn.d_model), attn.b_O)
    return out.reshape(batch, pos, attn.d_model)


def fused_attention(
    attn: MultiHeadAttention, x: Float[Tensor, "batch pos d_model"]
) -> Float[Tensor, "batch pos d_model"]:
    """Causal ``attn(x)`` in three kernels: one matmul for Q, K and V, PyTorch's fused attention, one for W_O.

    Same numbers as ``attn(x, causal_mask(pos))`` (tested); it reads the module's own parameters.
    """
    q, k, v = fused_qkv(attn, x)
    return fused_out(attn, F.scaled_dot_product_attention(q, k, v, is_causal=True))  # (batch, pos, d_model)


def fused_mlp(mlp: MLP, x: Float[Tensor, "batch pos d_model"]) -> Float[Tensor, "batch pos d_model"]:
    """``mlp(x)`` with PyTorch's built-in activation (same numbers, tested)."""
    hidden = _linear(x.reshape(-1, x.shape[-1]), mlp.W_in, mlp.b_in)  # (batch·pos, d_mlp)
    return _linear(_ACTIVATIONS[mlp.activation](hidden), mlp.W_out, mlp.b_out).reshape(x.shape)


def _fused_pre_norm_block(block: "Block", x: Float[Tensor, "batch pos d_model"]) -> Float[Tensor, "batch pos d_model"]:
    """A pre-norm block for training: the maths of ``Block.forward`` in as few kernels (and copies) as possible.

    ``F.layer_norm``; one ``addmm`` for Q, K and V of every head; SDPA with ``is_causal``; one
    ``addmm`` that adds the residual stream to the heads' writes through W_O; the MLP in two
    ``addmm``. No argument checks: ``GPT.forward`` checked the tokens, the shapes follow from them.
    """
    attn, mlp, ln1, ln2 = block.attn, block.mlp, block.ln1, block.ln2
    batch, pos, d_model = x.shape
    x = x.reshape(batch * pos, d_model)  # the residual stream, one row per position
    W_QKV, b_QKV = _qkv_weight(attn)
    qkv = _linear(F.layer_norm(x, (d_model,), ln1.w, ln1.b, ln1.eps), W_QKV, b_QKV)  # (batch·pos, 3·d_model)
    q, k, v = qkv.view(batch, pos, 3, attn.n_heads, attn.d_head).permute(2, 0, 3, 1, 4)  # (batch, head, pos, d_head)
    z = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(batch * pos, d_model)
    x = torch.addmm(x, z, attn.W_O.reshape(d_model, d_model))  # x + the heads' writes, summed
    if attn.b_O is not None:
        x = x + attn.b_O
    hidden = _linear(F.layer_norm(x, (d_model,), ln2.w, ln2.b, ln2.eps), mlp.W_in, mlp.b_in)  # (batch·pos, d_mlp)
    x = torch.addmm(x, _ACTIVATIONS[mlp.activation](hidden), mlp.W_out)  # x + the MLP's write
    if mlp.b_out is not None:
        x = x + mlp.b_out
    return x.view(batch, pos, d_model)


class Block(nn.Module):
    """One causal transformer block. Pre-norm: ``x + attn(ln1(x))``, then ``+ mlp(ln2(·))``;
    post-norm: ``ln1(x + attn(x))`` ...

    ``impl="reference"`` runs the modules of notebooks 05 and 06 as written; ``"fused"`` the same
    maths through PyTorch's kernels, for training: a pre-norm block as ``_fused_pre_norm_block``
    (one matmul for Q, K and V, SDPA, the residual added inside the output matmuls), a post-norm one
    through ``fused_attention`` and ``fused_mlp``. The parameters are the same in both.
    """

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.norm = cfg.norm
        self.ln1 = LayerNorm(cfg.d_model, cfg.ln_eps, cfg.bias)
        self.attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, bias=cfg.bias)
        self.ln2 = LayerNorm(cfg.d_model, cfg.ln_eps, cfg.bias)
        self.mlp = MLP(cfg.d_model, cfg.d_mlp, activation=cfg.activation, bias=cfg.bias)

    def _sublayers(self, impl: str):
        if impl == "fused":
            return (lambda x: fused_attention(self.attn, x)), (lambda x: fused_mlp(self.mlp, x))
        if impl != "reference":
            raise ValueError(f"impl must be 'reference' or 'fused', got {impl!r}")
        return (lambda x: self.attn(x, mask=causal_mask(x.shape[1], device=x.device))), self.mlp

    def writes(self, x: Float[Tensor, "batch pos d_model"], impl: str = "reference"):
        """What a pre-norm block adds to the residual stream: (attention's write, MLP's write)."""
        attn, mlp = self._sublayers(impl)
        attn_out = attn(self.ln1(x))  # (batch, pos, d_model)
        return attn_out, mlp(self.ln2(x + attn_out))

    def forward(
        self, x: Float[Tensor, "batch pos d_model"], impl: str = "reference"
    ) -> Float[Tensor, "batch pos d_model"]:
        if impl == "fused" and self.norm == "pre":
            return _fused_pre_norm_block(self, x)
        if self.norm == "post":  # the 2017 arrangement: normalise after each addition
            attn, mlp = self._sublayers(impl)
            x = self.ln1(x + attn(x))
            return self.ln2(x + mlp(x))
        attn_out, mlp_out = self.writes(x, impl)
        return x + attn_out + mlp_out


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


class GPT(nn.Module):
    """``GPT(GPTConfig(d_vocab=50))(torch.tensor([[1, 2, 3]]))`` -> logits of shape (1, 3, 50).

    Row ``i`` of the logits scores every token as the one after position ``i``. ``impl="fused"``
    runs the same maths through PyTorch's kernels (fused attention, ``addmm``, ``F.layer_norm``;
    same numbers up to float rounding, gradients too, tested), for training; the default is readable.
    """

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        if not isinstance(cfg, GPTConfig):
            raise TypeError(f"cfg must be a GPTConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        self.W_E = nn.Parameter(torch.empty(cfg.d_vocab, cfg.d_model))
        self.W_pos = nn.Parameter(torch.empty(cfg.n_ctx, cfg.d_model))
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_final = LayerNorm(cfg.d_model, cfg.ln_eps, cfg.bias)
        self.W_U = None if cfg.tie_embeddings else nn.Parameter(torch.empty(cfg.d_model, cfg.d_vocab))
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """GPT-2's initialisation, drawn in sorted-name order from ``generator`` (a CPU one) or the global seed.

        Only this draw decides the weights (not the order the sub-modules were built in), so
        ``model.reset_parameters(torch.Generator().manual_seed(0))`` always gives the same model.
        """
        residual_std = self.cfg.init_std / math.sqrt(2 * self.cfg.n_layers)
        for name, p in sorted(self.named_parameters()):
            leaf = name.rsplit(".", 1)[-1]
            if leaf == "w":  # LayerNorm scale
                p.fill_(1.0)
            elif leaf.startswith("b_") or leaf == "b":
                p.zero_()
            elif p.device.type != "meta":
                std = residual_std if leaf in ("W_O", "W_out") else self.cfg.init_std
                p.copy_(torch.randn(p.shape, generator=generator) * std)  # drawn on the CPU, copied to p's device

    def unembedding(self) -> Float[Tensor, "d_model d_vocab"]:
        """W_U, or W_Eᵀ when the embeddings are tied."""
        return self.W_E.T if self.W_U is None else self.W_U

    def embed(self, tokens: Int[Tensor, "batch pos"], start: int = 0) -> Float[Tensor, "batch pos d_model"]:
        """Token embedding plus the position embedding of positions ``start .. start + pos - 1``."""
        return self.W_E[tokens] + self.W_pos[start : start + tokens.shape[1]]  # (batch, pos, d_model)

    def unembed(self, x: Float[Tensor, "batch pos d_model"]) -> Float[Tensor, "batch pos d_vocab"]:
        return self.ln_final(x) @ self.unembedding()  # (batch, pos, d_vocab)

    def forward(self, tokens: Int[Tensor, "batch pos"], impl: str = "reference") -> Float[Tensor, "batch pos d_vocab"]:
        tokens = check_tokens(tokens, self.cfg)
        if impl == "fused" and self.cfg.norm == "pre":
            return self._fused_forward(tokens)
        x = self.embed(tokens)  # (batch, pos, d_model)
        for block in self.blocks:
            x = block(x, impl=impl)
        return self.unembed(x)

    def _fused_forward(self, tokens: Int[Tensor, "batch pos"]) -> Float[Tensor, "batch pos d_vocab"]:
        """``forward`` of a pre-norm model through PyTorch's kernels (``_fused_pre_norm_block``), for training."""
        x = F.embedding(tokens, self.W_E) + self.W_pos[: tokens.shape[1]]  # (batch, pos, d_model)
        for block in self.blocks:
            x = _fused_pre_norm_block(block, x)
        ln = self.ln_final
        return F.layer_norm(x, (ln.d_model,), ln.w, ln.b, ln.eps) @ self.unembedding()  # (batch, pos, d_vocab)

    def residual_writes(self, tokens: Int[Tensor, "batch pos"]) -> dict[str, Float[Tensor, "batch pos d_model"]]:
        """Everything written into the residual stream, in order; their sum is the final stream (pre-norm only)."""
        if self.cfg.norm != "pre":
            raise ValueError("residual_writes needs a pre-norm model: post-norm rescales the stream after every block")
        tokens = check_tokens(tokens, self.cfg)
        writes = {"W_E": self.W_E[tokens], "W_pos": self.W_pos[: tokens.shape[1]].expand(tokens.shape[0], -1, -1)}
        x = writes["W_E"] + writes["W_pos"]
        for i, block in enumerate(self.blocks):
            writes[f"blocks.{i}.attn"], writes[f"blocks.{i}.mlp"] = block.writes(x)
            x = x + writes[f"blocks.{i}.attn"] + writes[f"blocks.{i}.mlp"]
        return writes

    @torch.no_grad()
    def patterns(self, tokens: Int[Tensor, "batch pos"]) -> list[Float[Tensor, "batch head q_pos k_pos"]]:
        """Every layer's attention pattern on ``tokens`` (for notebook 05's viewer), one tensor per layer."""
        tokens = check_tokens(tokens, self.cfg)
        mask = causal_mask(tokens.shape[1], device=tokens.device)
        x, found = self.embed(tokens), []
        for block in self.blocks:
            found.append(block.attn.pattern(block.ln1(x) if block.norm == "pre" else x, mask))
            x = block(x)
        return found

    def num_params(self) -> int:
        """Distinct parameters (a tied W_E counts once): ``sum(p.numel() for p in model.parameters())``."""
        return sum(p.numel() for p in self.parameters())


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


@torch.no_grad()
def stream_rms(model: GPT, tokens: Int[Tensor, "batch pos"]) -> list[float]:
    """Root-mean-square size of the residual stream after the embedding and after every block."""
    x = model.embed(check_tokens(tokens, model.cfg))
    sizes = [float(x.pow(2).mean().sqrt())]
    for block in model.blocks:
        x = block(x)
        sizes.append(float(x.pow(2).mean().sqrt()))
    return sizes
