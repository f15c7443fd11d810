"""A small decoder-only GPT, written to be read: embeddings, pre-norm blocks, final LayerNorm, unembedding.

Covers ``Block`` (LayerNorm -> multi-head attention of notebook 05 -> add; LayerNorm -> MLP of
notebook 06 -> add; a post-norm variant for comparison), ``GPT`` (token and position embeddings
``W_E``/``W_pos``, the blocks, ``ln_final`` and the unembedding ``W_U``, optionally tied to ``W_E``),
the residual stream split into every block's writes, and ``stream_rms``. GPT-2's initialisation
(normal, std 0.02; residual output projections scaled by 1/sqrt(2·n_layers)).
``GPT(GPTConfig(d_vocab=50))(torch.tensor([[1, 2, 3]]))`` -> logits of shape (1, 3, 50).
Beside it: ``gpt_config.py`` (``GPTConfig``, the checks of token ids and state dicts; all three can be
imported from here too) and ``gpt_fused.py`` (the same maths through PyTorch's kernels, ``impl="fused"``).
Leaves out dropout, the KV cache (``generation.py``), training (``training.py``) and GPT-2's
weights (``gpt2_weights.py``). The code follows its input's device; build, then ``.to()``.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor, nn

from course_utils.gpt.config import GPTConfig, check_tokens
from course_utils.gpt.config import check_state_dict  # noqa: F401 (notebook 09 imports it from here)
from course_utils.gpt.fused import _fused_pre_norm_block, fused_attention, fused_mlp
from course_utils.layernorm import LayerNorm
from course_utils.masking import causal_mask
from course_utils.mlp import MLP
from course_utils.attention.multihead import MultiHeadAttention


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
        """nanoGPT's GPT-2 initialisation (``initialise``), in sorted-name order from ``generator`` or the global seed.

        Only this draw decides the weights (not the order the sub-modules were built in), so
        ``model.reset_parameters(torch.Generator().manual_seed(0))`` always gives the same model.
        """
        initialise(self, self.cfg.init_std, self.cfg.n_layers, generator)

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


@torch.no_grad()
def stream_rms(model: GPT, tokens: Int[Tensor, "batch pos"]) -> list[float]:
    """Root-mean-square size of the residual stream after the embedding and after every block."""
    x = model.embed(check_tokens(tokens, model.cfg))
    sizes = [float(x.pow(2).mean().sqrt())]
    for block in model.blocks:
        x = block(x)
        sizes.append(float(x.pow(2).mean().sqrt()))
    return sizes


@torch.no_grad()
def initialise(model: nn.Module, init_std: float, n_layers: int, generator: torch.Generator | None = None) -> None:
    """nanoGPT's GPT-2 initialisation of any model named as the course names its weights.

    In sorted-name order: a norm's gain ``w`` 1, biases (``b``, ``b_*``) 0, the residual stream's output
    projections ``W_O`` and ``W_out`` normal with std ``init_std / sqrt(2 * n_layers)``, every other weight
    normal with std ``init_std``, drawn on the CPU from ``generator`` (or the global seed) and copied to
    the weight's device (a meta weight is skipped). ``GPT`` and ``llama.Llama`` both use it.
    """
    residual_std = init_std / math.sqrt(2 * n_layers)
    for name, p in sorted(model.named_parameters()):
        leaf = name.rsplit(".", 1)[-1]
        if leaf == "w":  # a norm's gain
            p.fill_(1.0)
        elif leaf.startswith("b_") or leaf == "b":
            p.zero_()
        elif p.device.type != "meta":
            std = residual_std if leaf in ("W_O", "W_out") else init_std
            p.copy_(torch.randn(p.shape, generator=generator) * std)  # drawn on the CPU, copied to p's device
