"""Exercise ``swiglu_width(d_model, multiple_of=64)``: the hidden width of a Llama-style SwiGLU MLP.

Required form (stated in the notebook): Meta's ``int(2 * 4 * d_model / 3)`` (two thirds of a GELU MLP's
4·d_model, so that three matrices hold what the GELU MLP's two do) rounded UP to a multiple of
``multiple_of``; a whole number. Checked exactly against ``course_utils.llama.swiglu_width``.
"""

from __future__ import annotations

import math
import random

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.llama.feed_forward import swiglu_width as _course_width


def swiglu_width(d_model, multiple_of=64):
    """Reference: int(2 * 4 * d_model / 3) rounded up to a multiple of ``multiple_of``."""
    return _course_width(d_model, multiple_of)


def _meta(d_model: int) -> int:
    return int(2 * 4 * d_model / 3)


def _draw(rng: random.Random, multiple_of: int, keep) -> int:
    """A d_model from ``rng`` (a multiple of 8, as real widths are) for which ``keep(int(8/3 d), d)`` holds.

    The first hidden case has a remainder above half a multiple (there "nearest" is right and "down" is
    not), the second one below (there "nearest" and "down" agree, and "nearest" is named first)."""
    while True:
        d = 8 * rng.randint(8, 1024)
        if keep(_meta(d), d):
            return d


def _width_cases(seed: int) -> list[Case]:
    if not seed:
        return [
            Case("Llama 2 7B: d_model 4096, multiple_of 256", (4096, 256)),
            Case("d_model 512, the default multiple_of (64): 1365 rounds up", (512,)),
            Case("d_model 768, multiple_of 64: int(2 * 4 * 768 / 3) = 2048 is a multiple already", (768, 64)),
            Case("d_model 100, multiple_of 8", (100, 8)),
            Case("d_model 100, multiple_of 1 (no rounding)", (100, 1)),
        ]
    rng = random.Random(seed)  # keyed by the grader's secret
    m = rng.choice((32, 64, 128, 256))
    low = _draw(rng, 64, lambda w, d: 1 < w % 64 < 32)
    high = _draw(rng, m, lambda w, d: w % m > m // 2)
    exact = _draw(rng, m, lambda w, d: w % m == 0)
    plain = _draw(rng, 1, lambda w, d: w % 64 != 0)
    small = _draw(rng, 8, lambda w, d: w % 8 > 4)  # as many cases as seed 0's: the grader numbers them alike
    return [
        Case(f"d_model {high}, multiple_of {m}", (high, m)),
        Case(f"d_model {low}, the default multiple_of (64)", (low,)),
        Case(f"d_model {exact}, multiple_of {m}: int(2 * 4 * d_model / 3) is a multiple already", (exact, m)),
        Case(f"d_model {plain}, multiple_of 1 (no rounding)", (plain, 1)),
        Case(f"d_model {small}, multiple_of 8", (small, 8)),
    ]


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("rounded to the nearest", "round UP, even when the width is just past a multiple (Meta's code does)")
def _nearest(d_model, multiple_of=64):
    return round(_meta(d_model) / multiple_of) * multiple_of


@bank.mistake("rounded down", "round UP to the next multiple: a narrower MLP would hold fewer parameters than the "
              "GELU MLP it replaces")
def _down(d_model, multiple_of=64):
    return _meta(d_model) // multiple_of * multiple_of


@bank.mistake("4 · d_model", "the GELU MLP's 4·d_model is the starting point: take two thirds of it, then round up")
def _four(d_model, multiple_of=64):
    return -(-4 * d_model // multiple_of) * multiple_of


@bank.mistake("one multiple too many", "a width that is a multiple already stays as it is: round up to the NEXT "
              "multiple only when there is a remainder")
def _one_more(d_model, multiple_of=64):
    return (_meta(d_model) // multiple_of + 1) * multiple_of


@bank.mistake("multiple_of ignored", "round up to the multiple_of you are given (64 is only its default)")
def _always_64(d_model, multiple_of=64):
    return -(-_meta(d_model) // 64) * 64


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("integer division: 8 * d_model // 3")
def _integer(d_model, multiple_of=64):
    return -(-(8 * d_model // 3) // multiple_of) * multiple_of


@bank.alternative("math.ceil")
def _ceil(d_model, multiple_of=64):
    hidden = int(2 * 4 * d_model / 3)
    return multiple_of * math.ceil(hidden / multiple_of)


@bank.alternative("Meta's (hidden + multiple_of - 1) // multiple_of")
def _meta_style(d_model, multiple_of=64):
    hidden = int(2 * (4 * d_model) / 3)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


@bank.alternative("add the missing remainder")
def _remainder(d_model, multiple_of=64):
    hidden = int(2 * 4 * d_model / 3)
    return hidden + (-hidden) % multiple_of


SWIGLU_WIDTH = Exercise(
    name="swiglu_width",
    reference=swiglu_width,
    cases=_width_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    tolerance="exact",
    hints=[
        "Start from the GELU MLP's width, 4·d_model, take two thirds of it, make it a whole number "
        "(dropping the fraction), and only then round to the hardware-friendly multiple, upwards.",
        "Rounding n up to a multiple of m: how many whole m's fit in n, plus one more only if something is left "
        "over, times m. math.ceil of a division, or floor division of a negated number, does it.",
    ],
)
EXERCISES = {SWIGLU_WIDTH.name: SWIGLU_WIDTH}


def check_swiglu_width(fn):
    """Check a student's ``swiglu_width(d_model, multiple_of=64)``."""
    return SWIGLU_WIDTH.check(fn)
