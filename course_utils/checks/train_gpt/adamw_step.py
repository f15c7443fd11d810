"""Exercise ``adamw_step(params, grads, m, v, step, lr, betas, eps, weight_decay)``: one AdamW update.

Required form (stated in the notebook): ``params``, ``grads``, ``m`` and ``v`` are dicts of tensors by
parameter name; ``step`` counts updates from 1; return the new ``(params, m, v)`` dicts. Weight decay is
decoupled (the parameter shrinks by ``lr * weight_decay`` of itself) and applies to matrices only
(``ndim >= 2``, the per-head biases ``b_Q``, ``b_K``, ``b_V`` included), as ``training.make_optimizer`` sets
``torch.optim.AdamW`` up. The check runs several
steps in a row, feeding each step's output into the next, and compares every step's parameters.
"""

from __future__ import annotations

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.shared import F64
from course_utils.gpt.optim import adamw_step as _adamw_step


def adamw_step(params, grads, m, v, step, lr, betas, eps, weight_decay):
    """Reference: ``optim.adamw_step`` (tested against ``torch.optim.AdamW``)."""
    return _adamw_step(params, grads, m, v, step, lr, betas, eps, weight_decay)


SHAPES = {"W_E": (5, 4), "blocks.0.attn.W_Q": (4, 2, 2), "blocks.0.attn.b_Q": (2, 2), "ln_final.w": (4,),
          "ln_final.b": (4,)}  # matrices and 2-d+ tensors are decayed; the 1-d scales and biases are not


def _adamw_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    rand = lambda shape: torch.randn(shape, generator=gen, dtype=F64)  # noqa: E731
    params = {k: rand(s) for k, s in SHAPES.items()}
    zeros = {k: torch.zeros(s, dtype=F64) for k, s in SHAPES.items()}
    grads = [{k: rand(s) for k, s in SHAPES.items()} for _ in range(3)]
    for g in grads:  # tokens 0 and 1 are in no batch (rows of W_E with no gradient), b_Q's gradients are tiny:
        g["W_E"][:2] = 0.0  # both are where eps decides the step
        g["blocks.0.attn.b_Q"] *= 1e-9
    later = [{k: 0.1 * rand(s) for k, s in SHAPES.items()} for _ in range(2)]
    m = {k: 0.1 * rand(s) for k, s in SHAPES.items()}
    v = {k: 0.01 * rand(s) ** 2 for k, s in SHAPES.items()}
    return [
        Case("3 steps from m = v = 0, lr 0.1, 0.05, 0.02, weight decay 0.1, two rows of W_E with no gradient, "
             "b_Q's gradients about 1e-9",
             (params, grads, zeros, zeros, 1, [0.1, 0.05, 0.02], (0.9, 0.95), 1e-8, 0.1)),
        Case("2 steps from step 6 (m and v already warm), lr 0.03, betas (0.8, 0.9), weight decay 0.5",
             ({k: p.clone() for k, p in params.items()}, later, m, v, 6, [0.03, 0.03], (0.8, 0.9), 1e-8, 0.5)),
    ]


def _run_steps(impl, case: Case) -> list[dict]:
    """Call ``impl`` once per step (the case holds a list of gradients and of rates), chaining its outputs;
    returns the parameters after each step."""
    params, grad_steps, m, v, first, lrs, betas, eps, wd = case.args
    copy = lambda d: {k: t.detach().clone() for k, t in d.items()}  # noqa: E731
    params, m, v = copy(params), copy(m), copy(v)
    after = []
    for i, (grads, lr) in enumerate(zip(grad_steps, lrs)):
        params, m, v = impl(params, copy(grads), m, v, first + i, lr, betas, eps, wd)
        after.append(copy(params))
    return after


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
def _adam(p, g, m, v, step, lr, betas, eps, correct=True):
    m = betas[0] * m + (1 - betas[0]) * g
    v = betas[1] * v + (1 - betas[1]) * g * g
    m_hat, v_hat = (m / (1 - betas[0] ** step), v / (1 - betas[1] ** step)) if correct else (m, v)
    return lr * m_hat / (v_hat.sqrt() + eps), m, v


def _each(params, grads, m, v, update):
    out = [{}, {}, {}]
    for k in params:
        out[0][k], out[1][k], out[2][k] = update(params[k], grads[k], m[k], v[k])
    return tuple(out)


@bank.mistake(
    "L2-coupled decay",
    "AdamW's decay is decoupled: shrink the parameter itself by lr·weight_decay of it, outside the moments; "
    "adding weight_decay·p to the gradient is Adam with L2, which the moments then rescale",
)
def adamw_l2(params, grads, m, v, step, lr, betas, eps, weight_decay):
    def update(p, g, m, v):
        g = g + weight_decay * p if p.ndim >= 2 else g
        u, m, v = _adam(p, g, m, v, step, lr, betas, eps)
        return p - u, m, v
    return _each(params, grads, m, v, update)


@bank.mistake(
    "no bias correction",
    "m and v start at zero, so early on they are too small: divide them by 1 - beta1**step and 1 - beta2**step "
    "(step counts from 1) before using them",
)
def adamw_no_bias_correction(params, grads, m, v, step, lr, betas, eps, weight_decay):
    def update(p, g, m, v):
        u, m, v = _adam(p, g, m, v, step, lr, betas, eps, correct=False)
        return (p * (1 - lr * weight_decay) if p.ndim >= 2 else p) - u, m, v
    return _each(params, grads, m, v, update)


@bank.mistake(
    "decay on every parameter",
    "decay only the tensors with 2 or more dimensions; the 1-d ones (LayerNorm's scale and shift, b_O, the MLP's "
    "biases) are not decayed",
)
def adamw_decay_all(params, grads, m, v, step, lr, betas, eps, weight_decay):
    def update(p, g, m, v):
        u, m, v = _adam(p, g, m, v, step, lr, betas, eps)
        return p * (1 - lr * weight_decay) - u, m, v
    return _each(params, grads, m, v, update)


@bank.mistake(
    "eps inside the square root",
    "eps is added after the square root, sqrt(v̂) + eps; it only matters where the gradients are tiny or zero",
)
def adamw_eps_inside(params, grads, m, v, step, lr, betas, eps, weight_decay):
    def update(p, g, m, v):
        m, v = betas[0] * m + (1 - betas[0]) * g, betas[1] * v + (1 - betas[1]) * g * g
        u = lr * (m / (1 - betas[0] ** step)) / (v / (1 - betas[1] ** step) + eps).sqrt()
        return (p * (1 - lr * weight_decay) if p.ndim >= 2 else p) - u, m, v
    return _each(params, grads, m, v, update)


@bank.mistake(
    "decay chosen by name",
    "choose by the number of dimensions (p.ndim >= 2), not by the name: the per-head biases b_Q, b_K, b_V are 2-d, "
    "and the course's recipe decays them",
)
def adamw_decay_by_name(params, grads, m, v, step, lr, betas, eps, weight_decay):
    out = ({}, {}, {})
    for k, p in params.items():
        u, out[1][k], out[2][k] = _adam(p, grads[k], m[k], v[k], step, lr, betas, eps)
        decay = p.ndim >= 2 and not k.split(".")[-1].startswith("b_")
        out[0][k] = (p * (1 - lr * weight_decay) if decay else p) - u
    return out


@bank.mistake(
    "decay without the learning rate",
    "the decay is scaled by the learning rate too: p·(1 - lr·weight_decay), not p·(1 - weight_decay)",
)
def adamw_decay_no_lr(params, grads, m, v, step, lr, betas, eps, weight_decay):
    def update(p, g, m, v):
        u, m, v = _adam(p, g, m, v, step, lr, betas, eps)
        return (p * (1 - weight_decay) if p.ndim >= 2 else p) - u, m, v
    return _each(params, grads, m, v, update)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("torch.optim.AdamW with two parameter groups")
def _adamw_torch(params, grads, m, v, step, lr, betas, eps, weight_decay):
    ps = {k: torch.nn.Parameter(p.clone()) for k, p in params.items()}
    groups = [{"params": [p for p in ps.values() if p.ndim >= 2], "weight_decay": weight_decay},
              {"params": [p for p in ps.values() if p.ndim < 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps)
    for k, p in ps.items():
        p.grad = grads[k].clone()
        opt.state[p] = {"step": torch.tensor(float(step - 1)), "exp_avg": m[k].clone(), "exp_avg_sq": v[k].clone()}
    opt.step()
    return ({k: p.detach() for k, p in ps.items()}, {k: opt.state[p]["exp_avg"] for k, p in ps.items()},
            {k: opt.state[p]["exp_avg_sq"] for k, p in ps.items()})


@bank.alternative("torch's arrangement: step size lr / (1 - b1^t), denominator sqrt(v) / sqrt(1 - b2^t) + eps")
def _adamw_folded(params, grads, m, v, step, lr, betas, eps, weight_decay):
    b1, b2 = betas
    new = ({}, {}, {})
    for k, p in params.items():
        new[1][k] = m[k].lerp(grads[k], 1 - b1)
        new[2][k] = v[k] * b2 + (1 - b2) * grads[k].square()
        denom = new[2][k].sqrt() / (1 - b2**step) ** 0.5 + eps
        shrunk = p * (1 - lr * weight_decay) if p.dim() > 1 else p
        new[0][k] = shrunk - (lr / (1 - b1**step)) * new[1][k] / denom
    return new


@bank.alternative("in place, returning the same dicts")
def _adamw_in_place(params, grads, m, v, step, lr, betas, eps, weight_decay):
    for k, p in params.items():
        m[k].mul_(betas[0]).add_(grads[k], alpha=1 - betas[0])
        v[k].mul_(betas[1]).addcmul_(grads[k], grads[k], value=1 - betas[1])
        if p.ndim >= 2:
            p.mul_(1 - lr * weight_decay)
        p.sub_(lr * (m[k] / (1 - betas[0] ** step)) / ((v[k] / (1 - betas[1] ** step)).sqrt() + eps))
    return params, m, v


@bank.alternative("float32")
def _adamw_float32(params, grads, m, v, step, lr, betas, eps, weight_decay):
    b1, b2 = betas
    out = ({}, {}, {})
    for k in params:
        p, g = params[k].float(), grads[k].float()
        out[1][k] = b1 * m[k].float() + (1 - b1) * g
        out[2][k] = b2 * v[k].float() + (1 - b2) * g**2
        step_dir = (out[1][k] / (1 - b1**step)) / (torch.sqrt(out[2][k] / (1 - b2**step)) + eps)
        out[0][k] = p - lr * weight_decay * p * (p.ndim >= 2) - lr * step_dir
    return out


ADAMW_STEP = Exercise(
    name="adamw_step",
    reference=adamw_step,
    cases=_adamw_cases,
    run=_run_steps,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Per parameter, three moves: update the two running averages (of the gradient and of its square), "
        "correct them for having started at zero, then step against the gradient's direction, scaled by the "
        "square root of the second average. Weight decay is a separate, fourth move.",
        "The corrections divide by 1 - beta**step with step counting from 1; the decay multiplies the parameter "
        "by 1 - lr·weight_decay, outside m and v, and only where p.ndim >= 2 (the rule make_optimizer uses).",
    ],
)
EXERCISES = {ADAMW_STEP.name: ADAMW_STEP}


def check_adamw_step(fn):
    """Check a student's ``adamw_step(params, grads, m, v, step, lr, betas, eps, weight_decay)``."""
    return ADAMW_STEP.check(fn)
