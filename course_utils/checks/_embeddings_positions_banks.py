"""Typical mistakes and accepted alternatives for the notebook-02 checks (``checks/embeddings_positions.py``).

Each function is one way a student might write ``embedding_lookup``, ``sinusoidal_encoding`` or
``rope_rotate``: the mistakes are wrong (each check must recognise it and show its hint), the
alternatives are right but written differently from the reference (each check must accept it).
Nothing here is graded directly.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from course_utils.positions import sinusoid_frequencies


def lookup_columns(token_ids, W_E):
    return W_E.T[token_ids % W_E.shape[1]]


def lookup_one_based(token_ids, W_E):
    return W_E[token_ids - 1]


def lookup_unique(token_ids, W_E):
    return W_E[token_ids.unique()]


def lookup_f_embedding(token_ids, W_E):
    return F.embedding(token_ids, W_E)


def lookup_index_select(token_ids, W_E):
    rows = torch.index_select(W_E, 0, token_ids.reshape(-1))  # (n_ids, d_model)
    return rows.reshape(*token_ids.shape, W_E.shape[1])


def lookup_one_hot(token_ids, W_E):
    return F.one_hot(token_ids, W_E.shape[0]).to(W_E.dtype) @ W_E


def lookup_loop(token_ids, W_E):
    rows = [W_E[int(i)] for i in token_ids.flatten()]
    return torch.stack(rows).reshape(*token_ids.shape, W_E.shape[1])


def lookup_module(token_ids, W_E):
    return torch.nn.Embedding.from_pretrained(W_E)(token_ids)


def table(n_ctx, d_model, exponent, first, second, start=0):
    angles = torch.arange(start, start + n_ctx, dtype=torch.float64)[:, None] * exponent  # (n_ctx, d_model // 2)
    pe = torch.stack([first(angles), second(angles)], dim=-1)  # (n_ctx, d_model // 2, 2)
    return pe.reshape(n_ctx, d_model).float()


def sin_cos_swapped(n_ctx, d_model):
    return table(n_ctx, d_model, sinusoid_frequencies(d_model), torch.cos, torch.sin)


def exponent_per_dimension(n_ctx, d_model):
    j = torch.arange(d_model, dtype=torch.float64)
    angles = torch.arange(n_ctx, dtype=torch.float64)[:, None] / 10000 ** (j / d_model)  # (n_ctx, d_model)
    return torch.where(j.long() % 2 == 0, angles.sin(), angles.cos()).float()


def halves_not_interleaved(n_ctx, d_model):
    angles = torch.arange(n_ctx, dtype=torch.float64)[:, None] * sinusoid_frequencies(d_model)
    return torch.cat([angles.sin(), angles.cos()], dim=-1).float()  # (n_ctx, d_model)


def positions_from_one(n_ctx, d_model):
    return table(n_ctx, d_model, sinusoid_frequencies(d_model), torch.sin, torch.cos, start=1)


def multiplies_by_the_divisor(n_ctx, d_model):
    return table(n_ctx, d_model, 1 / sinusoid_frequencies(d_model), torch.sin, torch.cos)


def sinusoidal_float32_power(n_ctx, d_model):
    pos = torch.arange(n_ctx, dtype=torch.float32)[:, None]  # (n_ctx, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)
    angles = pos / 10000 ** (two_i / d_model)  # (n_ctx, d_model // 2), all in float32
    pe = torch.zeros(n_ctx, d_model)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe


def sinusoidal_torch_pow(n_ctx, d_model):
    two_i = torch.arange(0, d_model, 2).float()
    angles = torch.arange(n_ctx).float().unsqueeze(1) / torch.pow(torch.tensor(10000.0), two_i / d_model)
    return torch.stack([angles.sin(), angles.cos()], dim=2).flatten(1)  # (n_ctx, d_model)


def sinusoidal_exp_log(n_ctx, d_model):
    div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))  # (d_model // 2,)
    pe = torch.empty(n_ctx, d_model)
    pe[:, 0::2] = torch.sin(torch.arange(n_ctx).float()[:, None] * div_term)
    pe[:, 1::2] = torch.cos(torch.arange(n_ctx).float()[:, None] * div_term)
    return pe


def sinusoidal_numpy_loops(n_ctx, d_model):
    pe = np.zeros((n_ctx, d_model), dtype=np.float32)
    for pos in range(n_ctx):
        for i in range(d_model // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            pe[pos, 2 * i], pe[pos, 2 * i + 1] = math.sin(angle), math.cos(angle)
    return pe


def rope_with(x, sign=1.0, freqs=None, halves=False):
    d, n = x.shape[-1], x.shape[-2]
    freqs = sinusoid_frequencies(d) if freqs is None else freqs
    angles = sign * torch.arange(n, dtype=torch.float64)[:, None] * freqs  # (pos, d // 2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    if halves:
        a, b = x[..., : d // 2], x[..., d // 2 :]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).reshape(x.shape)


def rope_backwards(x):
    return rope_with(x, sign=-1.0)


def rope_one_frequency(x):
    return rope_with(x, freqs=torch.ones(x.shape[-1] // 2, dtype=torch.float64))


def rope_halves(x):
    return rope_with(x, halves=True)


def rope_exponent_without_two(x):
    d = x.shape[-1]
    return rope_with(x, freqs=10000 ** (-torch.arange(d // 2, dtype=torch.float64) / d))


def rope_float32_angles(x):
    d, n = x.shape[-1], x.shape[-2]
    angles = torch.arange(n, dtype=torch.float32)[:, None] / 10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)


def rope_complex(x):
    d, n = x.shape[-1], x.shape[-2]
    theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    turn = torch.polar(
        torch.ones(n, d // 2, dtype=torch.float64), torch.arange(n, dtype=torch.float64)[:, None] * theta
    )
    z = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * turn).reshape(x.shape).to(x.dtype)


def rope_rotate_half(x):
    d, n = x.shape[-1], x.shape[-2]
    angles = torch.arange(n)[:, None] * 10000 ** (-torch.arange(0, d, 2) / d)  # (pos, d // 2), float32
    cos = angles.cos().repeat_interleave(2, dim=-1).to(x.dtype)  # (pos, d): each angle twice
    sin = angles.sin().repeat_interleave(2, dim=-1).to(x.dtype)
    partner = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).reshape(x.shape)  # (-b, a) per pair
    return x * cos + partner * sin


def rope_rotation_matrices(x):
    d, n = x.shape[-1], x.shape[-2]
    angles = torch.arange(n, dtype=torch.float64)[:, None] * sinusoid_frequencies(d)  # (pos, d // 2)
    c, s = angles.cos(), angles.sin()
    R = torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2).to(x.dtype)  # (pos, d // 2, 2, 2)
    pairs = x.reshape(*x.shape[:-1], d // 2, 2)  # (..., pos, d // 2, 2)
    return torch.einsum("pkij,...pkj->...pki", R, pairs).reshape(x.shape)
