"""Exercise ``lr_schedule(step, max_lr, min_lr, warmup_steps, total_steps)``: linear warm-up, then cosine decay.

Required form (stated in the notebook): steps count from 0; during the first ``warmup_steps`` steps the rate
climbs linearly to ``max_lr`` (reaching it at step ``warmup_steps - 1``), then follows half a cosine from
``max_lr`` down to ``min_lr`` at step ``total_steps``; return a number. The check asks for every step of a
short schedule and for the steps of the course's 800-step run around its turning points, and compares
them with ``training.lr_at``.
"""

from __future__ import annotations

import math
import random

import numpy as np
import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.shared import keyed_uniform
from course_utils.gpt.optim import lr_schedule as _lr_schedule


def lr_schedule(step, max_lr, min_lr, warmup_steps, total_steps):
    """Reference: ``training.lr_at`` with the numbers spelled out (``optim.lr_schedule``)."""
    return _lr_schedule(step, max_lr, min_lr, warmup_steps, total_steps)


def _keyed_run(seed: int) -> tuple:
    """The course's run (4e-3 to 4e-4, warm-up 50 of 800) moved by the grader's key: rates x 0.5-2, warm-up 40-60,
    length 700-900."""
    scale = float(keyed_uniform(seed, 0.5, 2.0))
    warmup, total = int(keyed_uniform(seed, 40, 61, stream=1)), int(keyed_uniform(seed, 700, 901, stream=2))
    return 4e-3 * scale, 4e-4 * scale, warmup, total


def _keyed_steps(seed: int, warmup: int, total: int) -> list[int]:
    """Twelve steps: the first two, both sides of the warm-up's end, the last, and seven keyed ones in between."""
    inside = keyed_uniform(seed, 2, total - 1, (7,), stream=3).long().tolist()
    return sorted({0, 1, warmup - 2, warmup - 1, warmup, warmup + 1, total - 1, *inside})[:12]


def _schedule_cases(seed: int) -> list[Case]:
    warmup, total, top, bottom = 3, 24, 1e-2, 1e-3
    if seed:  # hidden cases: the short schedule drawn from random.Random(seed), which the grader keys by its secret
        rng = random.Random(seed)
        warmup, top = rng.randint(2, 9), rng.choice([3e-3, 6e-3, 1e-2, 3e-2])
        total, bottom = warmup + rng.randint(12, 30), top / rng.choice([5, 10, 20])
    course_steps, course = [0, 1, 24, 48, 49, 50, 51, 100, 300, 425, 600, 799], (4e-3, 4e-4, 50, 800)
    if seed:  # hidden: the run's rates scaled by 0.5-2, its warm-up and length moved, steps around the boundaries
        course = _keyed_run(seed)
        course_steps = _keyed_steps(seed, course[2], course[3])
    return [
        Case(f"every step of a {total}-step schedule, warm-up {warmup}, from {top:g} down to {bottom:g}",
             (list(range(total)), top, bottom, warmup, total)),
        Case(f"the course's run ({course[3]} steps, warm-up {course[2]}, {course[0]:.3g} to {course[1]:.3g}) at steps "
             + ", ".join(map(str, course_steps)), (course_steps, *course)),
    ]


def _run_steps(impl, case: Case) -> list:
    """The case's first argument is a list of steps: the rate at each of them, in order."""
    steps, *rest = case.args
    return [impl(step, *rest) for step in steps]


bank = Bank()


def _progress(step, warmup_steps, total_steps):
    return min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "warm-up off by one",
    "steps count from 0, and the first step should already move: the warm-up rate is max_lr·(step + 1)/warmup_steps",
)
def schedule_warmup_from_zero(step, max_lr, min_lr, warmup_steps, total_steps):
    if step < warmup_steps:
        return max_lr * step / warmup_steps
    return min_lr + 0.5 * (max_lr - min_lr) * (1 + math.cos(math.pi * _progress(step, warmup_steps, total_steps)))


@bank.mistake("cosine down to zero", "the cosine ends at min_lr, not at 0: it swings between max_lr and min_lr")
def schedule_to_zero(step, max_lr, min_lr, warmup_steps, total_steps):
    if step < warmup_steps:
        return max_lr * (step + 1) / warmup_steps
    return 0.5 * max_lr * (1 + math.cos(math.pi * _progress(step, warmup_steps, total_steps)))


@bank.mistake(
    "cosine over the whole run",
    "the cosine starts where the warm-up ends: its progress counts only the steps after the warm-up, out of the "
    "steps left after it",
)
def schedule_progress_from_zero(step, max_lr, min_lr, warmup_steps, total_steps):
    if step < warmup_steps:
        return max_lr * (step + 1) / warmup_steps
    return min_lr + 0.5 * (max_lr - min_lr) * (1 + math.cos(math.pi * step / total_steps))


@bank.mistake("linear decay", "after the warm-up the rate follows half a cosine, not a straight line")
def schedule_linear(step, max_lr, min_lr, warmup_steps, total_steps):
    if step < warmup_steps:
        return max_lr * (step + 1) / warmup_steps
    return max_lr - (max_lr - min_lr) * _progress(step, warmup_steps, total_steps)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("torch.cos on a tensor")
def _schedule_torch(step, max_lr, min_lr, warmup_steps, total_steps):
    if step < warmup_steps:
        return torch.tensor(max_lr * (step + 1) / warmup_steps)
    t = torch.tensor((step - warmup_steps) / (total_steps - warmup_steps), dtype=torch.float64)
    return min_lr + (max_lr - min_lr) * (1 + torch.cos(torch.pi * t)) / 2


@bank.alternative("cos² form with NumPy")
def _schedule_cos_squared(step, max_lr, min_lr, warmup_steps, total_steps):
    if step < warmup_steps:
        return (step + 1) / warmup_steps * max_lr
    half_angle = np.pi / 2 * (step - warmup_steps) / (total_steps - warmup_steps)
    return float(min_lr + (max_lr - min_lr) * np.cos(half_angle) ** 2)  # (1 + cos 2a) / 2 = cos² a


@bank.alternative("down from max_lr")
def _schedule_from_top(step, max_lr, min_lr, warmup_steps, total_steps):
    warm = min(1.0, (step + 1) / warmup_steps)
    if warm < 1.0 or step < warmup_steps:
        return warm * max_lr
    done = (step - warmup_steps) / (total_steps - warmup_steps)
    return max_lr - (max_lr - min_lr) * (1 - math.cos(done * math.pi)) / 2


LR_SCHEDULE = Exercise(
    name="lr_schedule",
    reference=lr_schedule,
    cases=_schedule_cases,
    run=_run_steps,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Two pieces joined at warmup_steps: a straight climb to max_lr, then a smooth descent to min_lr. "
        "Write each as a function of how far through its own piece the step is.",
        "The climb is max_lr·(step + 1)/warmup_steps. For the descent, let progress run from 0 where the warm-up "
        "ends to 1 at total_steps; then 0.5·(1 + cos(π·progress)) goes from 1 to 0, and scales the gap "
        "max_lr - min_lr.",
    ],
)
EXERCISES = {LR_SCHEDULE.name: LR_SCHEDULE}


def check_lr_schedule(fn):
    """Check a student's ``lr_schedule(step, max_lr, min_lr, warmup_steps, total_steps)``."""
    return LR_SCHEDULE.check(fn)
