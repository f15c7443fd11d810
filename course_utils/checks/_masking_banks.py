"""Banks for notebook 04's checks: correct implementations written differently (each must pass) and
the less central typical mistakes. Kept apart so ``masking_softmax_temperature.py`` stays readable."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from course_utils import sampling
from course_utils.checks.core import Alternative


# -- causal mask ----------------------------------------------------------------------------------
def _mask_by_comparison(n):
    pos = torch.arange(n)
    return pos[:, None] >= pos[None, :]  # (query, key): key at or before the query


def _mask_not_strict_upper(n):
    return ~torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)


def _mask_loops(n):
    return torch.tensor([[key <= query for key in range(n)] for query in range(n)], dtype=torch.bool).reshape(n, n)


CAUSAL_MASK_ALTERNATIVES = [
    Alternative("compare positions", _mask_by_comparison),
    Alternative("not the strict upper triangle", _mask_not_strict_upper),
    Alternative("float tril turned to bool", lambda n: torch.tril(torch.ones(n, n)).bool()),
    Alternative("Python loops", _mask_loops),
]


# -- masked softmax -------------------------------------------------------------------------------
def masked_fill_large_negative(scores, mask):
    return torch.softmax(scores.masked_fill(~mask, -1e9), dim=-1)


def _softmax_then_nan_to_num(scores, mask):
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1).nan_to_num(0.0)


def _float32(scores, mask):
    s = scores.float().masked_fill(~mask, float("-inf"))
    top = s.amax(dim=-1, keepdim=True).nan_to_num(0.0, neginf=0.0)
    e = (s - top).exp()
    total = e.sum(dim=-1, keepdim=True)
    return torch.where(total > 0, e / total.clamp_min(1e-30), 0.0)


def _in_place(scores, mask):
    scores.masked_fill_(~mask, float("-inf"))  # works on the caller's tensor
    top = scores.amax(dim=-1, keepdim=True)
    top[torch.isinf(top)] = 0.0
    scores.sub_(top).exp_()
    total = scores.sum(dim=-1, keepdim=True)
    return scores.div_(total.where(total > 0, torch.ones_like(total)))


def _logsumexp(scores, mask):
    filled = scores.masked_fill(~mask, float("-inf"))
    log_total = torch.logsumexp(filled, dim=-1, keepdim=True)
    return torch.where(mask, (filled - log_total).exp(), torch.zeros_like(scores))


def _big_negative_then_zero_empty_rows(scores, mask):
    return torch.softmax(scores.masked_fill(~mask, -1e30), dim=-1) * mask.any(dim=-1, keepdim=True)


MASKED_SOFTMAX_ALTERNATIVES = [
    Alternative("torch.softmax, then NaN to 0", _softmax_then_nan_to_num),
    Alternative("float32", _float32),
    Alternative("in place", _in_place),
    Alternative("log-sum-exp", _logsumexp),
    Alternative("big negative, then zero the empty rows", _big_negative_then_zero_empty_rows),
]


# -- softmax with temperature ---------------------------------------------------------------------
def greedy_all_ties(logits, t):
    if t == 0:
        return (logits == logits.amax(dim=-1, keepdim=True)).to(logits.dtype)
    return sampling.next_token_distribution(logits, t)


def greedy_split_ties(logits, t):
    hot = greedy_all_ties(logits, t)
    return hot / hot.sum(dim=-1, keepdim=True) if t == 0 else hot


def _torch_softmax_float_one_hot(logits, t):
    if t == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).float()  # float32 one-hot
    return torch.softmax(logits / t, dim=-1)  # torch's softmax shifts by the maximum itself


def _log_softmax_scatter(logits, t):
    if t == 0:
        return torch.zeros_like(logits).scatter(-1, logits.argmax(dim=-1, keepdim=True), 1.0)
    return (logits / t).log_softmax(dim=-1).exp()


def _float32_in_place(logits, t):
    x = logits.float().clone()
    if t == 0:
        return torch.eye(x.shape[-1])[x.argmax(dim=-1)]
    x -= x.amax(dim=-1, keepdim=True)
    x /= t
    x.exp_()
    return x / x.sum(dim=-1, keepdim=True)


TEMPERATURE_ALTERNATIVES = [
    Alternative("torch.softmax, float32 one-hot", _torch_softmax_float_one_hot),
    Alternative("log_softmax, scattered one-hot", _log_softmax_scatter),
    Alternative("float32, in place, eye rows", _float32_in_place),
]


# -- top-k / top-p --------------------------------------------------------------------------------
def _renormalise(p):
    return p / p.sum(dim=-1, keepdim=True)


def _topk_scatter(probs, top_k, top_p):
    if top_k is not None:
        keep = torch.zeros_like(probs, dtype=torch.bool).scatter(-1, probs.topk(top_k, dim=-1).indices, True)
        probs = _renormalise(probs * keep)
    if top_p is not None:
        sorted_probs, order = probs.sort(dim=-1, descending=True)
        keep_sorted = (sorted_probs.cumsum(dim=-1) - sorted_probs) < top_p
        probs = _renormalise(probs * torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted))
    return probs


def _threshold_and_ascending(probs, top_k, top_p):
    """Top-k by the k-th largest value; top-p the Hugging Face way (ascending, drop the bottom 1 - p)."""
    if top_k is not None:
        kth = probs.topk(top_k, dim=-1).values[..., -1:]
        probs = _renormalise(torch.where(probs >= kth, probs, 0.0))
    if top_p is not None:
        ascending, order = probs.sort(dim=-1)
        drop_sorted = ascending.cumsum(dim=-1) <= 1 - top_p
        drop_sorted[..., -1] = False  # the top token always stays
        probs = _renormalise(probs.masked_fill(torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted), 0.0))
    return probs


def _float32_loops(probs, top_k, top_p):
    rows = probs.float().reshape(-1, probs.shape[-1])
    out = torch.zeros_like(rows)
    for r, row in enumerate(rows):
        order = sorted(range(len(row)), key=lambda i: -row[i].item())
        kept = order[:top_k] if top_k is not None else order
        total = sum(row[i].item() for i in kept)
        if top_p is not None:
            running, nucleus = 0.0, []
            for i in kept:
                if running < top_p:
                    nucleus.append(i)
                running += row[i].item() / total
            kept = nucleus
        for i in kept:
            out[r, i] = row[i]
        out[r] /= out[r].sum()
    return out.reshape(probs.shape)


TOP_K_TOP_P_ALTERNATIVES = [
    Alternative("torch.topk and scatter", _topk_scatter),
    Alternative("k-th value threshold, ascending top-p", _threshold_and_ascending),
    Alternative("float32 Python loops", _float32_loops),
]


# -- cross-entropy --------------------------------------------------------------------------------
def _stable_log_probs(logits):
    top = logits.amax(dim=-1, keepdim=True)
    return logits - top - (logits - top).exp().sum(dim=-1, keepdim=True).log()  # (n, d_vocab)


def _picked(log_probs, targets):
    return log_probs.gather(-1, targets[:, None]).squeeze(-1)  # (n,)


def ce_naive(logits, targets):
    probs = logits.exp() / logits.exp().sum(dim=-1, keepdim=True)
    return -_picked(probs.log(), targets).mean()


def ce_sum(logits, targets):
    return -_picked(_stable_log_probs(logits), targets).sum()


def ce_no_minus(logits, targets):
    return _picked(_stable_log_probs(logits), targets).mean()


def ce_log2(logits, targets):
    return -_picked(_stable_log_probs(logits), targets).mean() / math.log(2)


def ce_wrong_dim(logits, targets):
    return -_picked(logits.log_softmax(dim=0), targets).mean()


def _ce_logsumexp(logits, targets):
    return (torch.logsumexp(logits, dim=-1) - logits[torch.arange(len(targets)), targets]).mean()


def _ce_nll(logits, targets):
    return F.nll_loss(F.log_softmax(logits, dim=-1), targets)


def _ce_float32_loop(logits, targets):
    total = 0.0
    for row, t in zip(logits.float(), targets.tolist()):
        top = row.max()
        total += (top + (row - top).exp().sum().log() - row[t]).item()
    return total / len(targets)  # a Python float


CROSS_ENTROPY_ALTERNATIVES = [
    Alternative("torch.logsumexp and indexing", _ce_logsumexp),
    Alternative("nll_loss of log_softmax", _ce_nll),
    Alternative("float32 loop returning a float", _ce_float32_loop),
    Alternative("the built-in", lambda logits, targets: F.cross_entropy(logits, targets)),
]
