"""Exercise ``estimate_loss(model, ids, n_windows)``: the recipe's validation loss on fixed windows.

Required form (stated in the notebook): ``n_windows`` windows of ``model.cfg.n_ctx + 1`` tokens of ``ids``,
window k starting at ``torch.linspace(0, len(ids) - n_ctx - 1, n_windows).long()[k]``; the mean next-token
cross-entropy over every position of every window, as a number; the model runs in eval mode and without
gradients, and is left in the mode it was in. The check runs a tiny course GPT whose logits shift in
training mode and, by another shift, when autograd records them (``_traps.ModeTrapGPT``), so the loss itself
says which habit was missed, verified by the grader outside the student's kernel; one case starts in
training mode, the other in eval mode.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils.gpt.capstone import estimate_loss as _estimate_loss
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.compare import describe_mismatch
from course_utils.checks.shared import tiny_model
from course_utils.checks.traps import ModeTrapGPT, trapped
from course_utils.gpt.training import get_batch, sequence_loss


def estimate_loss(model, ids, n_windows):
    """Reference: ``capstone.estimate_loss``."""
    return _estimate_loss(model, ids, n_windows)


def _trap(seed: int, training: bool) -> ModeTrapGPT:
    """The case's tiny GPT as a ``ModeTrapGPT``: its loss is off unless it runs in eval mode without gradients."""
    return trapped(tiny_model(seed).train(training), ModeTrapGPT)


def _estimate_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    return [
        Case("a tiny GPT in training mode, 5 windows of 13 tokens out of 90",
             (_trap(seed, True), torch.randint(0, 23, (90,), generator=gen), 5)),
        Case("the same GPT in eval mode, 8 overlapping windows out of 40 tokens",
             (_trap(seed, False), torch.randint(0, 23, (40,), generator=gen), 8)),
    ]


def _run_estimate(impl, case: Case) -> dict:
    """The loss (a ``ModeTrapGPT`` shifts it unless the model ran in eval mode without gradients) and the mode
    the model was left in."""
    model, ids, n_windows = case.args
    loss = impl(model, ids, n_windows)
    return {"loss": float(loss), "left in training mode": model.training}


def _compare(expected: dict, got: dict) -> str | None:
    if got["left in training mode"] != expected["left in training mode"]:
        return (f"the model was {'in training' if expected['left in training mode'] else 'in eval'} mode before "
                "the call: put it back in that mode afterwards")
    return describe_mismatch(expected["loss"], got["loss"], tol=(1e-5, 1e-6))


bank = Bank()


def _windows(ids, n_ctx, n_windows):
    starts = torch.linspace(0, len(ids) - n_ctx - 1, n_windows).long()
    return ids[starts[:, None] + torch.arange(n_ctx + 1)]  # (n_windows, n_ctx + 1)


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "random windows",
    "evaluate on fixed windows spread evenly over ids (torch.linspace from the first token to the last start "
    "that fits): random ones give another number on every call",
)
@torch.no_grad()
def estimate_random_windows(model, ids, n_windows):
    was_training = model.training
    model.eval()
    x, y = get_batch(ids, n_windows, model.cfg.n_ctx, torch.Generator().manual_seed(0))
    loss = sequence_loss(model(x), y).item()
    model.train(was_training)
    return loss


@bank.mistake("left in eval mode", "note the model's training flag before switching to eval mode, and restore it at "
              "the end")
@torch.no_grad()
def estimate_left_in_eval(model, ids, n_windows):
    model.eval()
    windows = _windows(ids, model.cfg.n_ctx, n_windows)
    return sequence_loss(model(windows[:, :-1]), windows[:, 1:]).item()


@bank.mistake(
    "always back to training mode",
    "a model that was in eval mode before the call must stay in it: restore the mode it had, not always train()",
)
@torch.no_grad()
def estimate_always_train(model, ids, n_windows):
    model.eval()
    windows = _windows(ids, model.cfg.n_ctx, n_windows)
    loss = sequence_loss(model(windows[:, :-1]), windows[:, 1:]).item()
    model.train()
    return loss


@bank.mistake(
    "gradients recorded",
    "an evaluation needs no gradients: run the model under torch.no_grad(), or autograd keeps every activation",
)
def estimate_with_grad(model, ids, n_windows):
    was_training = model.training
    model.eval()
    windows = _windows(ids, model.cfg.n_ctx, n_windows)
    loss = sequence_loss(model(windows[:, :-1]), windows[:, 1:]).item()
    model.train(was_training)
    return loss


@bank.mistake(
    "training mode",
    "switch the model to evaluation mode (its eval method) before the forward pass: layers such as dropout behave "
    "differently in training mode (the check's model does too)",
)
@torch.no_grad()
def estimate_in_training_mode(model, ids, n_windows):
    windows = _windows(ids, model.cfg.n_ctx, n_windows)
    return sequence_loss(model(windows[:, :-1]), windows[:, 1:]).item()


@bank.mistake(
    "neither eval mode nor no_grad",
    "two habits of every evaluation are missing: evaluation mode (the model's eval method) before the forward "
    "pass, and the forward pass inside torch.no_grad()",
)
def estimate_neither(model, ids, n_windows):
    windows = _windows(ids, model.cfg.n_ctx, n_windows)
    return sequence_loss(model(windows[:, :-1]), windows[:, 1:]).item()


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("inference_mode, one window at a time, the mean of their losses")
def _estimate_per_window(model, ids, n_windows):
    n_ctx, was_training = model.cfg.n_ctx, model.training
    model.eval()
    losses = []
    with torch.inference_mode():
        for start in torch.linspace(0, len(ids) - n_ctx - 1, n_windows).long().tolist():
            window = ids[start : start + n_ctx + 1][None]  # (1, n_ctx + 1)
            losses.append(F.cross_entropy(model(window[:, :-1])[0], window[0, 1:]))
    model.train(was_training)
    return torch.stack(losses).mean()


@bank.alternative("chunks of 2 windows, a weighted sum, try/finally for the mode")
@torch.no_grad()
def _estimate_chunked(model, ids, n_windows):
    windows = _windows(ids, model.cfg.n_ctx, n_windows)
    was_training = model.training
    model.eval()
    try:
        total = sum(len(w) * sequence_loss(model(w[:, :-1]), w[:, 1:]) for w in windows.split(2))
    finally:
        model.train(was_training)
    return float(total) / n_windows


@bank.alternative("unfold into every window, then pick the starts")
def _estimate_unfold(model, ids, n_windows):
    n_ctx = model.cfg.n_ctx
    starts = torch.linspace(0, len(ids) - n_ctx - 1, n_windows).long()
    windows = ids.unfold(0, n_ctx + 1, 1)[starts]  # (n_windows, n_ctx + 1)
    mode = model.training
    model.eval()
    with torch.no_grad():
        logits = model(windows[:, :-1])
    model.train(mode)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), windows[:, 1:].reshape(-1)).item()


ESTIMATE_LOSS = Exercise(
    name="estimate_loss",
    reference=estimate_loss,
    cases=_estimate_cases,
    run=_run_estimate,
    compare=_compare,
    run_in_kernel=True,  # run reads what the call did to the model, so it runs beside the student's code
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Three things: the same windows every time (evenly spaced starts), a forward pass that records nothing for "
        "backward and runs the model as it runs at test time, and the model left as you found it.",
        "torch.linspace gives the evenly spaced starts (truncate them to integers); index ids with each start plus "
        "0 .. n_ctx to get the windows. Note the model's training flag, switch it to evaluation mode, run it inside "
        "a no_grad block, then switch it back to the mode you noted.",
    ],
)
EXERCISES = {ESTIMATE_LOSS.name: ESTIMATE_LOSS}


def check_estimate_loss(fn):
    """Check a student's ``estimate_loss(model, ids, n_windows)``."""
    return ESTIMATE_LOSS.check(fn)
