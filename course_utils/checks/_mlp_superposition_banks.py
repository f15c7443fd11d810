"""Typical mistakes and accepted alternatives for notebook 06's checks (kept apart so that
``mlp_superposition.py`` stays readable). Each mistake is a realistic wrong answer; each
alternative a differently written correct one."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from course_utils import mlp

F64 = torch.float64
_C = math.sqrt(2.0 / math.pi)


def _unit(v):
    return v / v.norm(dim=1, keepdim=True)


def _mlp_no_residual(x, W_in, b_in, W_out, b_out):
    return mlp.gelu_tanh(x @ W_in + b_in) @ W_out + b_out


def _mlp_exact_gelu(x, W_in, b_in, W_out, b_out):
    return x + F.gelu(x @ W_in + b_in) @ W_out + b_out


def _mlp_relu(x, W_in, b_in, W_out, b_out):
    return x + torch.relu(x @ W_in + b_in) @ W_out + b_out


def _mlp_bias_after_act(x, W_in, b_in, W_out, b_out):
    return x + (mlp.gelu_tanh(x @ W_in) + b_in) @ W_out + b_out


def _mlp_einsum(x, W_in, b_in, W_out, b_out):
    hidden = F.gelu(torch.einsum("...d,dm->...m", x, W_in) + b_in, approximate="tanh")
    return x + torch.einsum("...m,md->...d", hidden, W_out) + b_out


def _mlp_linear(x, W_in, b_in, W_out, b_out):
    return x + F.linear(F.gelu(F.linear(x, W_in.T, b_in), approximate="tanh"), W_out.T, b_out)


def _mlp_float32_flat(x, W_in, b_in, W_out, b_out):
    flat = x.float().reshape(-1, x.shape[-1])  # (batch * pos, d_model)
    hidden = torch.addmm(b_in.float(), flat, W_in.float())
    out = torch.addmm(b_out.float(), F.gelu(hidden, approximate="tanh"), W_out.float())
    return (flat + out).reshape(x.shape)


def _gelu_wrong_constant(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(math.pi / 2) * (x + 0.044715 * x**3)))


def _gelu_no_half(x):
    return x * (1 + torch.tanh(_C * (x + 0.044715 * x**3)))


def _gelu_square(x):
    return 0.5 * x * (1 + torch.tanh(_C * (x + 0.044715 * x**2)))


def _gelu_exact(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def _gelu_sigmoid(x):
    return x * torch.sigmoid(2 * _C * (x + 0.044715 * x.pow(3)))


def _gelu_builtin(x):
    return F.gelu(x, approximate="tanh")


def _gelu_numpy_f32(x):
    a = x.numpy().astype(np.float32)
    return torch.from_numpy(0.5 * a * (1 + np.tanh(np.float32(_C) * (a + np.float32(0.044715) * a * a * a))))


def _angles_with_diagonal(v):
    dev = torch.rad2deg(torch.arccos((_unit(v) @ _unit(v).T).clamp(-1, 1))) - 90
    return torch.stack([dev.square().mean().sqrt(), dev.abs().max()])


def _angles_unnormalised(v):
    i, j = torch.triu_indices(len(v), len(v), 1)
    dev = torch.rad2deg(torch.arccos((v @ v.T)[i, j])) - 90
    return torch.stack([dev.square().mean().sqrt(), dev.abs().max()])


def _angles_radians(v):
    i, j = torch.triu_indices(len(v), len(v), 1)
    dev = torch.arccos((_unit(v) @ _unit(v).T)[i, j].clamp(-1, 1)) - math.pi / 2
    return torch.stack([dev.square().mean().sqrt(), dev.abs().max()])


def _angles_mean_abs(v):
    i, j = torch.triu_indices(len(v), len(v), 1)
    dev = torch.rad2deg(torch.arccos((_unit(v) @ _unit(v).T)[i, j].clamp(-1, 1))) - 90
    return torch.stack([dev.abs().mean(), dev.abs().max()])


def _angles_arcsin(v):
    cos = F.normalize(v, dim=1) @ F.normalize(v, dim=1).T
    dev = torch.rad2deg(torch.asin(cos[torch.ones_like(cos, dtype=torch.bool).triu(1)]))
    return torch.stack([dev.pow(2).mean().sqrt(), dev.abs().max()])


def _angles_pdist(v):
    d = torch.pdist(F.normalize(v, dim=1))  # |u - w|² = 2 - 2 cos, for every pair i < j
    dev = torch.rad2deg(torch.arccos((1 - d**2 / 2).clamp(-1, 1))) - 90
    return torch.stack([torch.sqrt(torch.mean(dev * dev)), torch.max(torch.abs(dev))])


def _angles_loop_f32(v):
    u = _unit(v.float())
    devs = [
        math.degrees(math.acos(max(-1.0, min(1.0, float(u[i] @ u[j]))))) - 90
        for i in range(len(u))
        for j in range(i + 1, len(u))
    ]
    devs = np.array(devs)
    return np.array([np.sqrt(np.mean(devs**2)), np.abs(devs).max()])


def _welch_no_sqrt(n, d):
    return max(0.0, (n - d) / (d * (n - 1)))


def _welch_swapped(n, d):
    return math.sqrt(max(0.0, (n - d) / (n * (d - 1)))) if d > 1 else float("inf")


def _welch_numpy_no_case(n, d):
    with np.errstate(invalid="ignore"):
        return float(np.sqrt((n - d) / (d * (n - 1))))


def _welch_max(n, d):
    return math.sqrt(max(0.0, (n / d - 1) / (n - 1)))


def _welch_torch(n, d):
    return torch.tensor((n - d) / (d * (n - 1)), dtype=F64).clamp_min(0).sqrt()


def _welch_numpy(n, d):
    return np.float32(np.sqrt(np.maximum(0.0, (n - d) / (d * (n - 1.0)))))


def _toy_no_relu(x, W, b):
    return torch.einsum("ihf,bih->bif", W, torch.einsum("ihf,bif->bih", W, x)) + b


def _toy_bias_after_relu(x, W, b):
    return torch.relu(torch.einsum("ihf,bih->bif", W, torch.einsum("ihf,bif->bih", W, x))) + b


def _toy_no_bias(x, W, b):
    return torch.relu(torch.einsum("ihf,bih->bif", W, torch.einsum("ihf,bif->bih", W, x)))


def _toy_matmul(x, W, b):
    xt = x.transpose(0, 1)  # (inst, batch, feat)
    h = xt @ W.transpose(-1, -2)  # (inst, batch, hidden)
    return torch.relu(h @ W + b[:, None]).transpose(0, 1)


def _toy_gram(x, W, b):
    gram = W.transpose(-1, -2) @ W  # (inst, feat, feat): WᵀW
    return F.relu(torch.einsum("ifg,big->bif", gram, x) + b)


def _toy_loop_f32(x, W, b):
    return torch.stack(
        [
            F.relu(F.linear(F.linear(x[:, i].float(), W[i].float()), W[i].T.float(), b[i].float()))
            for i in range(W.shape[0])
        ],
        dim=1,
    )


def _loss_no_importance(x, x_hat, importance):
    return (x - x_hat).square().sum(-1).mean(0)


def _loss_mean_features(x, x_hat, importance):
    return (importance * (x - x_hat) ** 2).mean(dim=(0, 2))


def _loss_importance_squared(x, x_hat, importance):
    return (importance * (x - x_hat)).square().sum(-1).mean(0)


def _loss_sum_batch(x, x_hat, importance):
    return (importance * (x - x_hat) ** 2).sum(dim=(0, 2))


def _loss_einsum(x, x_hat, importance):
    diff = x - x_hat
    return torch.einsum("if,bif,bif->i", importance, diff, diff) / x.shape[0]


def _loss_reordered(x, x_hat, importance):
    return (importance * ((x - x_hat) ** 2).mean(0)).sum(-1)


def _loss_f32_mse(x, x_hat, importance):
    w = importance.float().sqrt()
    return torch.stack(
        [
            F.mse_loss(w[i] * x[:, i].float(), w[i] * x_hat[:, i].float(), reduction="sum") / x.shape[0]
            for i in range(x.shape[1])
        ]
    )


def _dim_norm_not_squared(W):
    norms = W.norm(dim=-2, keepdim=True)
    return norms.squeeze(-2) / ((W / norms).transpose(-1, -2) @ W).square().sum(-1)


def _dim_excludes_self(W):
    norms = W.norm(dim=-2, keepdim=True)
    overlaps = ((W / norms).transpose(-1, -2) @ W).square()
    return norms.squeeze(-2) ** 2 / (overlaps.sum(-1) - overlaps.diagonal(dim1=-2, dim2=-1))


def _dim_both_normalised(W):
    unit = W / W.norm(dim=-2, keepdim=True)
    return W.norm(dim=-2) ** 2 / (unit.transpose(-1, -2) @ unit).square().sum(-1)


def _dim_wrong_axis(W):
    norms = W.norm(dim=-1, keepdim=True)  # per hidden unit, not per feature
    return norms.squeeze(-1) ** 2 / ((W / norms) @ W.transpose(-1, -2)).square().sum(-1)


def _dim_quartic(W):
    norms = torch.linalg.vector_norm(W, dim=-2)
    return norms**4 / (W.transpose(-1, -2) @ W).pow(2).sum(-1)


def _dim_einsum(W):
    unit = F.normalize(W, dim=-2)
    dots = torch.einsum("...hi,...hj->...ij", unit, W)
    return torch.einsum("...hi,...hi->...i", W, W) / torch.einsum("...ij,...ij->...i", dots, dots)


def _dim_loop_f32(W):
    flat = W.float().reshape(-1, *W.shape[-2:])  # (inst, hidden, feat)
    out = torch.empty(flat.shape[0], flat.shape[-1])
    for k, w in enumerate(flat):
        for i in range(w.shape[1]):
            wi = w[:, i]
            out[k, i] = wi.dot(wi) / sum(float(wi.dot(w[:, j]) / wi.norm()) ** 2 for j in range(w.shape[1]))
    return out.reshape(W.shape[:-2] + W.shape[-1:])
