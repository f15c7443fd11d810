"""Checks for notebook 00 (welcome), one file per exercise:

- ``stable_softmax``: the warm-up, a softmax over the last dimension that logits near ±10,000 cannot break.
"""

from course_utils.checks.welcome.stable_softmax import STABLE_SOFTMAX, check_stable_softmax

EXERCISES = {ex.name: ex for ex in (STABLE_SOFTMAX,)}

__all__ = ["EXERCISES", "STABLE_SOFTMAX", "check_stable_softmax"]
