"""Exercise ``training_loop(model, optimizer, train_ids, cfg, n_steps, lr_schedule, clip_grad_norm, loss_fn)``.

Required form (stated in the notebook): batches from ``get_batch(train_ids, cfg.batch_size, model.cfg.n_ctx,
generator)`` with ONE generator seeded with ``cfg.seed``; each step sets the rate
``lr_schedule(step, cfg.max_lr, cfg.min_lr, cfg.warmup_steps, cfg.steps)`` in every parameter group, scores the
batch with ``loss_fn(model(inputs), targets)`` (the targets are shifted already), zeroes the old gradients,
back-propagates, replaces the gradients by ``clip_grad_norm(grads, cfg.grad_clip)``'s and steps the optimiser;
return the list of the steps' losses (floats). The check trains a tiny seeded GPT for a few steps with the
course's AdamW, schedule and clipping, and compares the losses with the course loop's (``training.train``'s,
``tests/test_capstone.py``); its second case passes in another schedule, clipping and loss (``schedule_at_half_rate``,
``clip_by_value``, ``smoothed_loss``): a loop that ignores the functions it is given gets other losses.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils.gpt.capstone import training_loop as _training_loop
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.compare import describe_mismatch
from course_utils.gpt.model import GPT
from course_utils.gpt.config import GPTConfig
from course_utils.gpt.optim import clip_grad_norm, lr_schedule
from course_utils.gpt.optim import lr_schedule as _course_schedule
from course_utils.env.threads import torch_threads
from course_utils.gpt.training import TrainConfig, get_batch, make_optimizer, sequence_loss


def training_loop(model, optimizer, train_ids, cfg, n_steps, lr_schedule, clip_grad_norm, loss_fn):
    """Reference: ``capstone.training_loop``."""
    return _training_loop(model, optimizer, train_ids, cfg, n_steps, lr_schedule, clip_grad_norm, loss_fn)


def schedule_at_half_rate(step, max_lr, min_lr, warmup_steps, total_steps):
    """A schedule passed in instead of the notebook's: the same shape at half the rate. Only a loop that calls
    the ``lr_schedule`` it was given follows it."""
    return lr_schedule(step, max_lr, min_lr, warmup_steps, total_steps) / 2


def clip_by_value(grads, max_norm):
    """A clipping passed in instead of the notebook's: each entry clamped to +-max_norm / 10 (clipping by value,
    as ``torch.nn.utils.clip_grad_value_``). Only a loop that calls the ``clip_grad_norm`` it was given (not
    torch's clip by norm, which AdamW barely notices: it rescales the whole gradient) gets its losses."""
    return [g.clamp(-max_norm / 10, max_norm / 10) for g in grads]


def smoothed_loss(logits, targets):
    """A loss passed in instead of the notebook's: cross-entropy with label smoothing 0.1. Only a loop that scores
    its batches with the ``loss_fn`` it was given reports (and follows) these losses."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), label_smoothing=0.1)


def _loop_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for label, model_cfg, cfg, schedule, clip, loss in (
        ("a tiny GPT (2 layers, d_model 16), 4 steps of batch 4, warm-up 3, clipping at 0.5",
         GPTConfig(d_vocab=32, n_ctx=8, d_model=16, n_heads=2, n_layers=2),
         TrainConfig(steps=20, batch_size=4, warmup_steps=3, max_lr=2e-2, min_lr=2e-3, grad_clip=0.5, seed=seed),
         lr_schedule, clip_grad_norm, sequence_loss),
        ("1 layer, tied embeddings, 5 steps of batch 3, warm-up 2 of 6 steps, clipping at 0.3; the schedule passed "
         "in gives half the notebook's rate, the clipping passed in clamps each entry (by value) and the loss passed "
         "in smooths the labels, so only the functions passed in give these losses",
         GPTConfig(d_vocab=20, n_ctx=6, d_model=8, n_heads=2, n_layers=1, tie_embeddings=True),
         TrainConfig(steps=6, batch_size=3, warmup_steps=2, max_lr=3e-2, min_lr=1e-3, grad_clip=0.3, seed=seed + 7),
         schedule_at_half_rate, clip_by_value, smoothed_loss),
    ):
        model = GPT(model_cfg)
        model.reset_parameters(torch.Generator().manual_seed(seed))
        ids = torch.randint(0, model_cfg.d_vocab, (300,), generator=gen)
        cases.append(Case(label, (model, None, ids, cfg, 4 if cfg.steps > 6 else 5, schedule, clip, loss)))
    return cases


def _run_loop(impl, case: Case) -> list:
    """The case leaves the optimiser out (``None``): the course's AdamW over the case's model, made here."""
    model, _, ids, cfg, n_steps, schedule, clip, loss = case.args
    with torch_threads(1):  # a tiny model trains fastest on one thread, and the same on every machine
        return impl(model, make_optimizer(model, cfg), ids, cfg, n_steps, schedule, clip, loss)


def _compare_losses(expected, got) -> str | None:
    """Losses within 2e-5 relative: the accepted loops agree to 1.6e-7 (F.cross_entropy's float32 rounding,
    amplified over the steps); every mistake differs by 4e-4 or more on the first case (seeds 0-5)."""
    return describe_mismatch(expected, got, tol=(2e-5, 1e-6))


bank = Bank()


def _step_parts(model, optimizer, cfg, step, schedule, x, y, loss_fn):
    """What every mistake shares up to the backward pass: the rate, the loss, backward."""
    for group in optimizer.param_groups:
        group["lr"] = schedule(step, cfg.max_lr, cfg.min_lr, cfg.warmup_steps, cfg.steps)
    loss = loss_fn(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    return loss


def _clip(model, cfg, clip):
    params = [p for p in model.parameters() if p.grad is not None]
    for p, g in zip(params, clip([p.grad for p in params], cfg.grad_clip)):
        p.grad = g


def _loop_with(model, optimizer, train_ids, cfg, n_steps, schedule, clip_step, loss_fn):
    """The loop with the schedule, the clipping step and the loss chosen by the mistake."""
    gen, losses = torch.Generator().manual_seed(cfg.seed), []
    for step in range(n_steps):
        x, y = get_batch(train_ids, cfg.batch_size, model.cfg.n_ctx, gen)
        loss = _step_parts(model, optimizer, cfg, step, schedule, x, y, loss_fn)
        clip_step()
        optimizer.step()
        losses.append(loss.item())
    return losses


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "gradients never zeroed",
    "backward ADDS to .grad: clear the optimiser's gradients every step, before the backward pass",
)
def loop_no_zero_grad(model, optimizer, train_ids, cfg, n_steps, lr_schedule, clip_grad_norm, loss_fn):
    gen, losses = torch.Generator().manual_seed(cfg.seed), []
    for step in range(n_steps):
        for group in optimizer.param_groups:
            group["lr"] = lr_schedule(step, cfg.max_lr, cfg.min_lr, cfg.warmup_steps, cfg.steps)
        x, y = get_batch(train_ids, cfg.batch_size, model.cfg.n_ctx, gen)
        loss = loss_fn(model(x), y)
        loss.backward()
        _clip(model, cfg, clip_grad_norm)
        optimizer.step()
        losses.append(loss.item())
    return losses


@bank.mistake(
    "clipped gradients thrown away",
    "clip_grad_norm returns the clipped gradients: put them back into each parameter's .grad before the step",
)
def loop_clip_discarded(model, optimizer, train_ids, cfg, n_steps, lr_schedule, clip_grad_norm, loss_fn):
    discarded = lambda: clip_grad_norm([p.grad for p in model.parameters()], cfg.grad_clip)  # noqa: E731
    return _loop_with(model, optimizer, train_ids, cfg, n_steps, lr_schedule, discarded, loss_fn)


@bank.mistake(
    "the rate one step ahead",
    "steps count from 0: step k uses lr_schedule(k, ...), so the first step takes the warm-up's first, smallest rate",
)
def loop_rate_ahead(model, optimizer, train_ids, cfg, n_steps, lr_schedule, clip_grad_norm, loss_fn):
    ahead = lambda step, *rest: lr_schedule(step + 1, *rest)  # noqa: E731
    return _loop_with(model, optimizer, train_ids, cfg, n_steps, ahead, lambda: _clip(model, cfg, clip_grad_norm),
                      loss_fn)


@bank.mistake(
    "the schedule never applied",
    "set the step's rate in every parameter group (group['lr'] = ...) before the optimiser's step; it "
    "otherwise keeps the rate it was built with",
)
def loop_no_schedule(model, optimizer, train_ids, cfg, n_steps, lr_schedule, clip_grad_norm, loss_fn):
    gen, losses = torch.Generator().manual_seed(cfg.seed), []
    for _ in range(n_steps):
        x, y = get_batch(train_ids, cfg.batch_size, model.cfg.n_ctx, gen)
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        _clip(model, cfg, clip_grad_norm)
        optimizer.step()
        losses.append(loss.item())
    return losses


@bank.mistake(
    "a new generator every step",
    "make the generator once, before the loop: seeded afresh every step it draws the same batch again and again",
)
def loop_same_batch(model, optimizer, train_ids, cfg, n_steps, lr_schedule, clip_grad_norm, loss_fn):
    losses = []
    for step in range(n_steps):
        x, y = get_batch(train_ids, cfg.batch_size, model.cfg.n_ctx, torch.Generator().manual_seed(cfg.seed))
        loss = _step_parts(model, optimizer, cfg, step, lr_schedule, x, y, loss_fn)
        _clip(model, cfg, clip_grad_norm)
        optimizer.step()
        losses.append(loss.item())
    return losses


@bank.mistake(
    "torch's clipping instead of the one passed in",
    "clip with the clip_grad_norm function passed in as an argument, not torch.nn.utils.clip_grad_norm_ or "
    "another of your own: the caller decides how to clip",
)
def loop_torch_clip(model, optimizer, train_ids, cfg, n_steps, lr_schedule, clip_grad_norm, loss_fn):
    clip = lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)  # noqa: E731
    return _loop_with(model, optimizer, train_ids, cfg, n_steps, lr_schedule, clip, loss_fn)


@bank.mistake(
    "the notebook's schedule instead of the one passed in",
    "set each step's rate with the lr_schedule function passed in as an argument, not with a schedule of your "
    "own: the caller decides the schedule",
)
def loop_own_schedule(model, optimizer, train_ids, cfg, n_steps, lr_schedule, clip_grad_norm, loss_fn):
    clip = lambda: _clip(model, cfg, clip_grad_norm)  # noqa: E731
    return _loop_with(model, optimizer, train_ids, cfg, n_steps, _course_schedule, clip, loss_fn)


@bank.mistake(
    "the course's loss instead of the one passed in",
    "score each batch with the loss_fn passed in as an argument, loss_fn(model(inputs), targets): the caller "
    "decides the loss (the capstone passes your next_token_loss)",
)
def loop_own_loss(model, optimizer, train_ids, cfg, n_steps, lr_schedule, clip_grad_norm, loss_fn):
    clip = lambda: _clip(model, cfg, clip_grad_norm)  # noqa: E731
    return _loop_with(model, optimizer, train_ids, cfg, n_steps, lr_schedule, clip, sequence_loss)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("zero_grad at the end of the step, gradients copied in place")
def _loop_functional(model, optimizer, train_ids, cfg, n_steps, lr_schedule, clip_grad_norm, loss_fn):
    generator = torch.Generator()
    generator.manual_seed(cfg.seed)
    losses = []
    for step in range(n_steps):
        inputs, targets = get_batch(train_ids, cfg.batch_size, model.cfg.n_ctx, generator)
        logits = model(inputs)  # (batch, pos, d_vocab)
        loss = loss_fn(logits, targets)  # the targets are shifted already
        loss.backward()
        with_grad = [p for p in model.parameters() if p.grad is not None]
        clipped = clip_grad_norm([p.grad for p in with_grad], cfg.grad_clip)
        with torch.no_grad():
            for p, g in zip(with_grad, clipped):
                p.grad.copy_(g)
        rate = lr_schedule(step, cfg.max_lr, cfg.min_lr, cfg.warmup_steps, cfg.steps)
        for group in optimizer.param_groups:
            group["lr"] = rate
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()))
    return losses


@bank.alternative("losses kept as tensors, a list at the end")
def _loop_tensor_losses(model, optimizer, train_ids, cfg, n_steps, lr_schedule, clip_grad_norm, loss_fn):
    gen, losses = torch.Generator().manual_seed(cfg.seed), []
    for step in range(n_steps):
        x, y = get_batch(train_ids, cfg.batch_size, model.cfg.n_ctx, gen)
        losses.append(_step_parts(model, optimizer, cfg, step, lr_schedule, x, y, loss_fn).detach())
        _clip(model, cfg, clip_grad_norm)
        optimizer.step()
    return torch.stack(losses).tolist()


@bank.alternative("a while loop, gradients set with zip over named parameters")
def _loop_while(model, optimizer, train_ids, cfg, n_steps, lr_schedule, clip_grad_norm, loss_fn):
    gen, losses, step = torch.Generator().manual_seed(cfg.seed), [], 0
    while step < n_steps:
        lr = lr_schedule(step, cfg.max_lr, cfg.min_lr, cfg.warmup_steps, cfg.steps)
        optimizer.param_groups[0]["lr"] = lr
        for group in optimizer.param_groups[1:]:
            group["lr"] = lr
        x, y = get_batch(train_ids, cfg.batch_size, model.cfg.n_ctx, gen)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        named = [(n, p) for n, p in model.named_parameters() if p.grad is not None]
        for (_, p), g in zip(named, clip_grad_norm([p.grad for _, p in named], cfg.grad_clip)):
            p.grad = g
        optimizer.step()
        losses.append(loss.item())
        step += 1
    return losses


TRAINING_LOOP = Exercise(
    name="training_loop",
    reference=training_loop,
    cases=_loop_cases,
    run=_run_loop,
    compare=_compare_losses,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "One generator for the whole run, seeded once. Each step: set the rate, draw a batch, score it with the "
        "loss function you were given, "
        "clear the old gradients, back-propagate, clip, step, and remember the loss as a number.",
        "The order inside a step matters: clear the gradients before backward, clip after backward and before the "
        "optimiser's step; the rate goes into group['lr'] for every group in the optimiser's param_groups.",
    ],
)
EXERCISES = {TRAINING_LOOP.name: TRAINING_LOOP}


def check_training_loop(fn):
    """Check a student's ``training_loop(model, optimizer, train_ids, cfg, n_steps, lr_schedule, clip, loss_fn)``."""
    return TRAINING_LOOP.check(fn)
