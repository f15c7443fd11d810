"""Checks for notebook 10 (train the GPT), one file per exercise:

- ``adamw_step``, ``lr_schedule``, ``clip_grad_norm``, ``training_loop``: the training recipe's parts, against
  ``torch.optim.AdamW``, ``training.lr_at``, ``clip_grad_norm_`` and ``training.train``'s first steps;
- ``estimate_loss``: the validation loss on fixed windows, in eval mode without gradients, the mode restored;

The tiny seeded models in the cases are ``checks.shared.tiny_model``.
"""

from course_utils.checks.train_gpt.adamw_step import ADAMW_STEP, check_adamw_step
from course_utils.checks.train_gpt.clip_grad_norm import CLIP_GRAD_NORM, check_clip_grad_norm
from course_utils.checks.train_gpt.estimate_loss import ESTIMATE_LOSS, check_estimate_loss
from course_utils.checks.train_gpt.lr_schedule import LR_SCHEDULE, check_lr_schedule
from course_utils.checks.train_gpt.training_loop import TRAINING_LOOP, check_training_loop

EXERCISES = {
    ex.name: ex
    for ex in (
        ADAMW_STEP,
        LR_SCHEDULE,
        CLIP_GRAD_NORM,
        TRAINING_LOOP,
        ESTIMATE_LOSS,
    )
}

__all__ = [
    "ADAMW_STEP",
    "CLIP_GRAD_NORM",
    "ESTIMATE_LOSS",
    "EXERCISES",
    "LR_SCHEDULE",
    "TRAINING_LOOP",
    "check_adamw_step",
    "check_clip_grad_norm",
    "check_estimate_loss",
    "check_lr_schedule",
    "check_training_loop",
]
