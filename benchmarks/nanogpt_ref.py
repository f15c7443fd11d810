"""A re-implementation of the block structure of Karpathy's nanoGPT ``model.py``, for ``bench_gpt.py``.

Written here from nanoGPT's description, not copied: ``c_attn`` one ``Linear(d, 3d)`` split into Q, K
and V, heads by ``view`` + ``transpose``, ``F.scaled_dot_product_attention(is_causal=True)`` with no
mask tensor, ``nn.GELU``, pre-norm blocks, ``lm_head`` tied to ``wte``, ``F.cross_entropy`` on a
flattened view inside ``forward``, AdamW with two weight-decay groups and no ``fused=`` (nanoGPT
asks for the fused kernel on CUDA only). Dropout is left out (nanoGPT's ``nn.Dropout(0.0)`` calls
would make it, if anything, slower). ``tests/test_gpt_fused.py`` checks that, given the course
model's weights, it computes the course's logits and loss.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.gpt.config import GPTConfig

# nanoGPT's shape: no biases, tied embeddings, exact GELU; 931,968 parameters
NANO = GPTConfig(d_vocab=1000, n_ctx=128, d_model=128, n_heads=4, n_layers=4, bias=False, activation="gelu")


class NanoAttention(nn.Module):
    """nanoGPT's causal self-attention: one Linear for Q, K and V, split, heads by view + transpose, SDPA."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.n_heads, self.d_model = cfg.n_heads, cfg.d_model
        self.c_attn = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=cfg.bias)
        self.c_proj = nn.Linear(cfg.d_model, cfg.d_model, bias=cfg.bias)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)
                   for t in self.c_attn(x).split(self.d_model, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class NanoMLP(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(cfg.d_model, cfg.d_mlp, bias=cfg.bias)
        self.gelu = nn.GELU(approximate="tanh" if cfg.activation == "gelu_tanh" else "none")
        self.c_proj = nn.Linear(cfg.d_mlp, cfg.d_model, bias=cfg.bias)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class NanoBlock(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.d_model, bias=cfg.bias)
        self.attn = NanoAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.d_model, bias=cfg.bias)
        self.mlp = NanoMLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGPT(nn.Module):
    """wte + wpe, pre-norm blocks, ln_f, lm_head tied to wte; ``forward(idx, targets)`` -> (logits, loss)."""

    def __init__(self, cfg: GPTConfig = NANO):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(cfg.d_vocab, cfg.d_model), wpe=nn.Embedding(cfg.n_ctx, cfg.d_model),
            h=nn.ModuleList(NanoBlock(cfg) for _ in range(cfg.n_layers)),
            ln_f=nn.LayerNorm(cfg.d_model, bias=cfg.bias)))
        self.lm_head = nn.Linear(cfg.d_model, cfg.d_vocab, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # tied
        for name, p in self.named_parameters():  # GPT-2's init, as nanoGPT's _init_weights and c_proj rule
            if p.ndim == 2:
                std = 0.02 / (2 * cfg.n_layers) ** 0.5 if name.endswith("c_proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx, targets):
        pos = torch.arange(0, idx.shape[1], dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

    def configure_optimizer(self, lr: float, betas: tuple[float, float], weight_decay: float):
        decay = [p for p in self.parameters() if p.dim() >= 2]
        rest = [p for p in self.parameters() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=lr, betas=betas)  # no fused= (nanoGPT asks for it on CUDA only)
