"""Banks for notebook 05's checks: correct implementations written differently (each must pass) and
typical mistakes. Kept apart so ``multihead_attention.py`` stays readable."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from course_utils import multihead
from course_utils.attention import scaled_dot_product_attention
from course_utils.checks.core import Alternative


# -- split / merge --------------------------------------------------------------------------------------
def _split_unflatten(x, n_heads):
    return x.unflatten(-1, (n_heads, -1)).transpose(1, 2)  # (batch, head, pos, d_head)


def _split_stack_slices(x, n_heads):
    d_head = x.shape[-1] // n_heads
    return torch.stack([x[..., h * d_head : (h + 1) * d_head] for h in range(n_heads)], dim=1)


def _split_view_permute(x, n_heads):
    batch, pos, d_model = x.shape
    return x.contiguous().view(batch, pos, n_heads, d_model // n_heads).permute(0, 2, 1, 3)


SPLIT_ALTERNATIVES = [
    Alternative("unflatten then transpose", _split_unflatten),
    Alternative("stack of column slices", _split_stack_slices),
    Alternative("view then permute", _split_view_permute),
]

MERGE_ALTERNATIVES = [
    Alternative("cat the heads", lambda z: torch.cat(list(z.unbind(dim=1)), dim=-1)),
    Alternative("permute then flatten", lambda z: z.permute(0, 2, 1, 3).flatten(start_dim=2)),
    Alternative("contiguous view", lambda z: z.transpose(1, 2).contiguous().view(z.shape[0], z.shape[2], -1)),
]


# -- the whole module ------------------------------------------------------------------------------------
def _project(x, W, b):
    return torch.einsum("bpm,hmd->bhpd", x, W) + b[:, None, :]  # (batch, head, pos, d_head)


def _heads_mask(mask):
    return mask[:, None] if mask is not None and mask.ndim == 3 else mask  # (batch, 1, q, k) for a 3-d mask


def attend(module, x, mask, scale, *, mask_on=True, softmax_dim=-1, out_bias=True):
    """A written-out multi-head forward with knobs for the typical mistakes."""
    q, k, v = (_project(x, getattr(module, f"W_{n}"), getattr(module, f"b_{n}")) for n in "QKV")
    scores = q @ k.transpose(-2, -1) * scale  # (batch, head, q_pos, k_pos)
    if mask is not None and mask_on:
        scores = scores.masked_fill(~_heads_mask(mask), float("-inf"))
    z = torch.softmax(scores, dim=softmax_dim) @ v  # (batch, head, q_pos, d_head)
    out = torch.einsum("bhpd,hdm->bpm", z, module.W_O)
    return out + module.b_O if out_bias else out


class CourseAttention(multihead.MultiHeadAttention):
    """Own projections, the course's attention function from notebook 03."""

    def forward(self, x, mask=None):
        q, k, v = (_project(x, getattr(self, f"W_{n}"), getattr(self, f"b_{n}")) for n in "QKV")
        z = scaled_dot_product_attention(q, k, v, _heads_mask(mask))
        return torch.einsum("bhpd,hdm->bpm", z, self.W_O) + self.b_O


class TorchSDPA(multihead.MultiHeadAttention):
    """PyTorch's fused kernel, whose boolean attn_mask means True = may attend, as in the course."""

    def forward(self, x, mask=None):
        q, k, v = (_project(x, getattr(self, f"W_{n}"), getattr(self, f"b_{n}")) for n in "QKV")
        z = F.scaled_dot_product_attention(q, k, v, attn_mask=_heads_mask(mask))
        return torch.einsum("bhpd,hdm->bpm", z, self.W_O) + self.b_O


class WideMatrices(multihead.MultiHeadAttention):
    """The heads' matrices side by side (PyTorch's storage), then split_heads / merge_heads."""

    def forward(self, x, mask=None):
        d_model = x.shape[-1]
        wide = [torch.cat(list(getattr(self, f"W_{n}")), dim=1) for n in "QKV"]  # (d_model, n_heads * d_head)
        q, k, v = (
            multihead.split_heads(x @ W + getattr(self, f"b_{n}").reshape(-1), self.n_heads)
            for W, n in zip(wide, "QKV")
        )
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~_heads_mask(mask), -1e9)
        z = scores.softmax(dim=-1) @ v
        return multihead.merge_heads(z) @ self.W_O.reshape(d_model, d_model) + self.b_O


class Float32HeadLoop(multihead.MultiHeadAttention):
    """One head at a time, in float32, with torch.rsqrt for the scale."""

    def forward(self, x, mask=None):
        x32, out = x.float(), 0.0
        head_mask = _heads_mask(mask)
        for h in range(self.n_heads):
            q = x32 @ self.W_Q[h].float() + self.b_Q[h].float()  # (batch, pos, d_head)
            k = x32 @ self.W_K[h].float() + self.b_K[h].float()
            v = x32 @ self.W_V[h].float() + self.b_V[h].float()
            scores = (q @ k.transpose(-2, -1)) * torch.rsqrt(torch.tensor(float(q.shape[-1])))
            if head_mask is not None:
                scores = scores.masked_fill(~(head_mask[:, 0] if head_mask.ndim == 4 else head_mask), float("-inf"))
            out = out + (scores.softmax(dim=-1) @ v) @ self.W_O[h].float()
        return out + self.b_O.float()


MODULE_ALTERNATIVES = [
    Alternative("course attention function", CourseAttention),
    Alternative("F.scaled_dot_product_attention", TorchSDPA),
    Alternative("wide matrices, -1e9 fill", WideMatrices),
    Alternative("float32 loop over heads", Float32HeadLoop),
]


# -- head scores -----------------------------------------------------------------------------------------
def _stripe_mean(pattern, offset, first=0):
    return pattern.diagonal(offset=offset, dim1=-2, dim2=-1)[..., first:].mean(dim=(0, -1))  # (head,)


def prev_self(pattern):
    return _stripe_mean(pattern, 0)


def prev_next(pattern):
    return _stripe_mean(pattern, 1)


def prev_all_queries(pattern):
    return pattern.diagonal(offset=-1, dim1=-2, dim2=-1).sum(dim=-1).mean(dim=0) / pattern.shape[-1]


def prev_over_heads(pattern):
    return pattern.diagonal(offset=-1, dim1=-2, dim2=-1).mean()


def _prev_gather(pattern):
    n = pattern.shape[-1]
    q = torch.arange(1, n)
    return pattern[..., q, q - 1].mean(dim=(0, -1))


def _prev_shifted_eye(pattern):
    n = pattern.shape[-1]
    below = torch.diag(torch.ones(n - 1, dtype=pattern.dtype), -1)  # 1 at (q, q - 1)
    return (pattern * below).sum(dim=-1)[..., 1:].mean(dim=(0, -1))


def _prev_loops_float32(pattern):
    p = pattern.float()
    batch, heads, n, _ = p.shape
    return torch.tensor(
        [
            sum(p[b, h, q, q - 1].item() for b in range(batch) for q in range(1, n)) / (batch * (n - 1))
            for h in range(heads)
        ]
    )


PREVIOUS_TOKEN_ALTERNATIVES = [
    Alternative("advanced indexing", _prev_gather),
    Alternative("multiply by a shifted identity", _prev_shifted_eye),
    Alternative("float32 loops", _prev_loops_float32),
]


def ind_copy(pattern, half_len):
    return _stripe_mean(pattern, -half_len)


def ind_all_queries(pattern, half_len):
    return _stripe_mean(pattern, -(half_len - 1))


def ind_too_far(pattern, half_len):
    return _stripe_mean(pattern, -(half_len - 2), first=2)


def ind_over_heads(pattern, half_len):
    return pattern.diagonal(offset=-(half_len - 1), dim1=-2, dim2=-1)[..., 1:].mean()


def _ind_indexing(pattern, half_len):
    q = torch.arange(half_len, pattern.shape[-1])
    return pattern[..., q, q - half_len + 1].mean(dim=(0, -1))


def _ind_mask(pattern, half_len):
    n = pattern.shape[-1]
    qs, ks = torch.arange(n)[:, None], torch.arange(n)[None, :]
    target = (qs >= half_len) & (ks == qs - half_len + 1)  # (q_pos, k_pos)
    return (pattern * target).sum(dim=(-2, -1)).mean(dim=0) / (n - half_len)


def _ind_loops_float32(pattern, half_len):
    p = pattern.float()
    batch, heads, n, _ = p.shape
    picks = [
        [p[b, h, q, q - half_len + 1].item() for b in range(batch) for q in range(half_len, n)] for h in range(heads)
    ]
    return np.array([sum(row) / len(row) for row in picks])  # a NumPy array, one score per head


INDUCTION_ALTERNATIVES = [
    Alternative("advanced indexing", _ind_indexing),
    Alternative("a boolean target table", _ind_mask),
    Alternative("float32 loops returning a NumPy array", _ind_loops_float32),
]
