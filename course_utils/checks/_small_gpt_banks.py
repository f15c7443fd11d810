"""Banks for notebook 09's checks: accepted alternatives (each must pass) and typical mistakes (each
must fail with its own hint). Kept apart so ``small_gpt.py`` stays readable."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from course_utils.checks.core import Alternative
from course_utils.gpt import fused_attention, fused_mlp
from course_utils.masking import causal_mask
from course_utils.sampling import sample_next_token


# -- LayerNorm ------------------------------------------------------------------------------------
def ln_unbiased(x, w, b, eps=1e-5):
    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps) * w + b  # var divides by n - 1


def ln_eps_outside(x, w, b, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)
    return centred / (centred.pow(2).mean(-1, keepdim=True).sqrt() + eps) * w + b


def ln_over_batch(x, w, b, eps=1e-5):
    centred = x - x.mean(0, keepdim=True)
    return centred / torch.sqrt(centred.pow(2).mean(0, keepdim=True) + eps) * w + b


def ln_no_affine(x, w, b, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)
    return centred / torch.sqrt(centred.pow(2).mean(-1, keepdim=True) + eps)


def ln_divide_by_variance(x, w, b, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)
    return centred / (centred.pow(2).mean(-1, keepdim=True) + eps) * w + b


LAYER_NORM_ALTERNATIVES = [
    Alternative("F.layer_norm", lambda x, w, b, eps=1e-5: F.layer_norm(x, x.shape[-1:], w, b, eps)),
    Alternative(
        "var(unbiased=False) and rsqrt",
        lambda x, w, b, eps=1e-5: (
            (x - x.mean(-1, keepdim=True)) * torch.rsqrt(x.var(-1, unbiased=False, keepdim=True) + eps) * w + b
        ),
    ),
    Alternative(
        "float32",
        lambda x, w, b, eps=1e-5: (
            (x.float() - x.float().mean(-1, keepdim=True))
            / torch.sqrt(x.float().var(-1, correction=0, keepdim=True) + eps)
            * w.float()
            + b.float()
        ),
    ),
    Alternative(
        "E[x²] - E[x]²",
        lambda x, w, b, eps=1e-5: (
            (x - x.mean(-1, keepdim=True))
            / torch.sqrt((x * x).mean(-1, keepdim=True) - x.mean(-1, keepdim=True) ** 2 + eps)
            * w
            + b
        ),
    ),
]


# -- a block's forward ----------------------------------------------------------------------------
def _attn(block, x):
    return block.attn(x, mask=causal_mask(x.shape[1], device=x.device))


def block_post_norm(block, x):
    h = block.ln1(x + _attn(block, x))
    return block.ln2(h + block.mlp(h))


def block_no_residual(block, x):
    h = _attn(block, block.ln1(x))
    return block.mlp(block.ln2(h))


def block_parallel(block, x):
    return x + _attn(block, block.ln1(x)) + block.mlp(block.ln2(x))  # MLP reads x, not x + attention


def block_no_mask(block, x):
    h = x + block.attn(block.ln1(x))
    return h + block.mlp(block.ln2(h))


def block_one_norm(block, x):
    h = x + _attn(block, block.ln1(x))
    return h + block.mlp(block.ln1(h))


def _block_tril(block, x):
    mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril()
    h = x + block.attn(block.ln1(x), mask=mask)
    return h + block.mlp(block.ln2(h))


def _block_in_place(block, x):
    x = x.clone()
    x += _attn(block, block.ln1(x))
    x += block.mlp(block.ln2(x))
    return x


BLOCK_ALTERNATIVES = [
    Alternative(
        "PyTorch's fused kernels",
        lambda block, x: (lambda h: h + fused_mlp(block.mlp, block.ln2(h)))(
            x + fused_attention(block.attn, block.ln1(x))
        ),
    ),
    Alternative("mask from tril", _block_tril),
    Alternative("in-place additions on a copy", _block_in_place),
]


# -- next-token loss ------------------------------------------------------------------------------
def loss_no_shift(logits, tokens):
    return F.cross_entropy(logits.flatten(0, 1), tokens.flatten())


def loss_shift_backwards(logits, tokens):
    return F.cross_entropy(logits[:, 1:].flatten(0, 1), tokens[:, :-1].flatten())


def loss_sum(logits, tokens):
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten(), reduction="sum")


def loss_probabilities(logits, tokens):
    return -torch.softmax(logits[:, :-1], -1).gather(-1, tokens[:, 1:, None]).mean()  # forgot the log


def _loss_log_softmax(logits, tokens):
    return -F.log_softmax(logits[:, :-1], dim=-1).gather(-1, tokens[:, 1:, None]).mean()


def _loss_logsumexp(logits, tokens):
    picked = logits[:, :-1].gather(-1, tokens[:, 1:, None]).squeeze(-1)
    return (torch.logsumexp(logits[:, :-1], dim=-1) - picked).mean()


def _loss_vocab_axis_second(logits, tokens):
    return F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:])  # (batch, d_vocab, pos) form


LOSS_ALTERNATIVES = [
    Alternative("log_softmax and gather", _loss_log_softmax),
    Alternative("logsumexp minus the right logit", _loss_logsumexp),
    Alternative("F.cross_entropy with the vocabulary as axis 1", _loss_vocab_axis_second),
]


# -- the sampling loop ----------------------------------------------------------------------------
def sample_last_token_only(model, prompt, n_new, temperature, generator):
    ids = prompt.clone()
    for _ in range(n_new):
        logits = model(ids[:, -1:])[:, -1]
        ids = torch.cat([ids, sample_next_token(logits, temperature, generator=generator)[:, None]], dim=1)
    return ids


def sample_first_position(model, prompt, n_new, temperature, generator):
    ids = prompt.clone()
    for _ in range(n_new):
        logits = model(ids[:, -model.cfg.n_ctx :])[:, 0]
        ids = torch.cat([ids, sample_next_token(logits, temperature, generator=generator)[:, None]], dim=1)
    return ids


def sample_always_greedy(model, prompt, n_new, temperature, generator):
    ids = prompt.clone()
    for _ in range(n_new):
        logits = model(ids[:, -model.cfg.n_ctx :])[:, -1]
        ids = torch.cat([ids, logits.argmax(-1, keepdim=True)], dim=1)
    return ids


def sample_no_crop(model, prompt, n_new, temperature, generator):
    ids = prompt.clone()
    for _ in range(n_new):
        logits = model(ids)[:, -1]
        ids = torch.cat([ids, sample_next_token(logits, temperature, generator=generator)[:, None]], dim=1)
    return ids


def _sample_list(model, prompt, n_new, temperature, generator):
    new = []  # one (batch, 1) tensor per step, joined once at the end
    for _ in range(n_new):
        window = torch.cat([prompt, *new], dim=1)[:, -model.cfg.n_ctx :]
        new.append(sample_next_token(model(window)[:, -1], temperature, generator=generator)[:, None])
    return torch.cat([prompt, *new], dim=1)


def _sample_while(model, prompt, n_new, temperature, generator):
    ids, n_ctx = prompt, model.cfg.n_ctx
    while ids.shape[1] < prompt.shape[1] + n_new:
        start = max(0, ids.shape[1] - n_ctx)
        nxt = sample_next_token(model(ids[:, start:])[:, -1, :], temperature, generator=generator)
        ids = torch.cat((ids, nxt.unsqueeze(1)), dim=1)
    return ids


def _sample_preallocated(model, prompt, n_new, temperature, generator):
    out = torch.zeros(prompt.shape[0], prompt.shape[1] + n_new, dtype=torch.long)
    out[:, : prompt.shape[1]] = prompt
    for end in range(prompt.shape[1], out.shape[1]):
        logits = model(out[:, max(0, end - model.cfg.n_ctx) : end])
        out[:, end] = sample_next_token(logits[:, -1], temperature, generator=generator)
    return out


SAMPLE_ALTERNATIVES = [
    Alternative("new tokens in a list, joined at the end", _sample_list),
    Alternative("preallocated output", _sample_preallocated),
    Alternative("a while loop", _sample_while),
]


# -- the KV-cache step ----------------------------------------------------------------------------
def kv_no_append(q, k_new, v_new, k_cache, v_cache):
    z = F.scaled_dot_product_attention(q, k_new, v_new, is_causal=True)
    return z, torch.cat([k_cache, k_new], 2), torch.cat([v_cache, v_new], 2)


def kv_top_left_mask(q, k_new, v_new, k_cache, v_cache):
    k, v = torch.cat([k_cache, k_new], 2), torch.cat([v_cache, v_new], 2)
    mask = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril()  # as if the queries came first
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask), k, v


def kv_no_scale(q, k_new, v_new, k_cache, v_cache):
    k, v = torch.cat([k_cache, k_new], 2), torch.cat([v_cache, v_new], 2)
    scores = (q @ k.transpose(-2, -1)).masked_fill(~causal_mask(q.shape[2], k.shape[2]), float("-inf"))
    return torch.softmax(scores, -1) @ v, k, v


def kv_new_first(q, k_new, v_new, k_cache, v_cache):
    k, v = torch.cat([k_new, k_cache], 2), torch.cat([v_new, v_cache], 2)
    n_q, n_k = q.shape[2], k.shape[2]
    mask = causal_mask(n_q, n_k)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask), k, v


def _kv_manual(q, k_new, v_new, k_cache, v_cache):
    k, v = torch.cat([k_cache, k_new], 2), torch.cat([v_cache, v_new], 2)
    n_q, n_k = q.shape[2], k.shape[2]
    allowed = torch.arange(n_k)[None, :] <= torch.arange(n_k - n_q, n_k)[:, None]  # (n_q, n_k)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, -1) @ v, k, v


def _kv_einsum(q, k_new, v_new, k_cache, v_cache):
    k, v = torch.cat([k_cache, k_new], dim=-2), torch.cat([v_cache, v_new], dim=-2)
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) * q.shape[-1] ** -0.5
    scores = scores + torch.zeros(q.shape[2], k.shape[2]).masked_fill(
        ~causal_mask(q.shape[2], k.shape[2]), float("-inf")
    )
    return torch.einsum("bhqk,bhkd->bhqd", scores.softmax(-1), v), k, v


def _kv_sdpa(q, k_new, v_new, k_cache, v_cache):
    k, v = torch.cat([k_cache, k_new], 2), torch.cat([v_cache, v_new], 2)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(q.shape[2], k.shape[2])), k, v


KV_ALTERNATIVES = [
    Alternative("masked scores by hand", _kv_manual),
    Alternative("einsum and an additive mask", _kv_einsum),
    Alternative("F.scaled_dot_product_attention", _kv_sdpa),
]
