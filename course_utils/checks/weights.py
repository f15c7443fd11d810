"""Loading a check's seeded weights into a student's module, whichever equivalent way it stores them.

The class exercises (notebook 03's ``AttentionHead``, 05's ``MultiHeadAttention``) build the
student's module and copy seeded weights into it, so only the maths is compared. The course stores a
projection as a tensor used as ``x @ W_Q``. A module may hold the same map in another way:

- an ``nn.Linear`` named ``W_Q``: its weight is the transpose of the ``x @ W`` matrix (for several
  heads, head ``h`` owns output features ``h * d_head`` to ``(h + 1) * d_head``, as ``split_heads``
  and ``nn.MultiheadAttention`` have it) and its bias is the exercise's ``b_Q`` (zero where the
  exercise has no bias). That mapping is unambiguous, so it is accepted (``load_weights``);
- anything else (a fused QKV layer, whose order of q, k and v no name fixes: PyTorch and nanoGPT put
  the three blocks one after another, GPT-NeoX interleaves them head by head; a tensor of another
  shape; a missing name) cannot be loaded, and ``load_weights`` says in one line which convention
  the exercise asks for. ``run`` returns that line as ``convention_answer(line)``, and
  ``compare_or_convention`` turns it into a FAILED verdict, the same in the notebook and through the
  grader (the answer is plain data), instead of an internal error.

Leaves out: everything about one exercise (its shapes and words come in as ``Slot``s).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from course_utils.checks.compare import describe_mismatch
from course_utils.gpt.config import check_state_dict
from course_utils.tolerances import teaching_tolerance

CONVENTION = "weights not loaded"  # first item of the answer `run` returns when a module cannot take the weights


@dataclass(frozen=True)
class Slot:
    """One projection: ``Slot("W_Q", W_Q, W_Q, "(d_model, d_head)", "x @ W_Q")`` for a single head.

    ``value`` is in the course's layout, ``matrix`` is the same map as the (d_in, d_out) matrix of
    ``x @ matrix`` (an ``nn.Linear(d_in, d_out)`` holds its transpose); ``bias`` and ``bias_value``
    name the exercise's bias for it (None where it has none), ``bias_words`` its layout.
    """

    name: str
    value: Tensor
    matrix: Tensor
    words: str  # the layout's axes, e.g. "(n_heads, d_model, d_head)"
    usage: str  # how the exercise uses it, e.g. "x @ W_Q[h]"
    bias: str | None = None
    bias_value: Tensor | None = None
    bias_words: str = ""

    def convention(self) -> str:
        d_in, d_out = self.matrix.shape
        return (
            f"this exercise stores {self.name} as an nn.Parameter of shape {tuple(self.value.shape)} = {self.words}, "
            f"used as {self.usage} (an nn.Linear({d_in}, {d_out}) named {self.name} is accepted too)"
        )


def _fused_layer(module: nn.Module, slot: Slot) -> str | None:
    """The name of a layer or tensor three projections wide (a fused QKV), if the module has one."""
    wide = 3 * slot.matrix.shape[1]
    for name, sub in module.named_modules():
        if isinstance(sub, (nn.Linear, nn.MultiheadAttention)) and (
            getattr(sub, "out_features", None) == wide or isinstance(sub, nn.MultiheadAttention)
        ):
            return name
    for name, tensor in module.named_parameters():
        if wide in tensor.shape:
            return name
    return None


def _load_bias(module: nn.Module, slot: Slot, layer_bias: Tensor | None) -> str | None:
    own = getattr(module, slot.bias, None)
    if isinstance(own, Tensor):
        if tuple(own.shape) != tuple(slot.bias_value.shape):
            return (
                f"`self.{slot.bias}` has shape {tuple(own.shape)}: this exercise stores {slot.bias} as an "
                f"nn.Parameter of shape {tuple(slot.bias_value.shape)} = {slot.bias_words}"
            )
        own.copy_(slot.bias_value)
        if layer_bias is not None:
            layer_bias.zero_()  # the bias lives in self.b_Q: the layer's own stays out of the way
        return None
    if layer_bias is not None:
        layer_bias.copy_(slot.bias_value.reshape(-1))
        return None
    return (
        f"your module has no `{slot.bias}`: this exercise adds a bias {slot.bias} of shape "
        f"{tuple(slot.bias_value.shape)} = {slot.bias_words} (or an nn.Linear named {slot.name} may carry it)"
    )


def _load_one(module: nn.Module, slot: Slot) -> str | None:
    held = getattr(module, slot.name, None)
    if held is None:
        fused = _fused_layer(module, slot) if slot.name in ("W_Q", "W_K", "W_V") else None
        if fused is not None:
            return (
                f"you fused the projections into one layer (`self.{fused}`), whose order of q, k and v no name "
                f"fixes (nanoGPT stacks the blocks, GPT-NeoX interleaves them per head); keep W_Q, W_K, W_V "
                f"apart: {slot.convention()}"
            )
        return f"your module has no `{slot.name}`, and the check loads its weights by name: {slot.convention()}"
    if isinstance(held, nn.Linear):
        d_in, d_out = slot.matrix.shape
        if (held.in_features, held.out_features) != (d_in, d_out):
            return f"`self.{slot.name}` is an nn.Linear({held.in_features}, {held.out_features}): {slot.convention()}"
        held.weight.copy_(slot.matrix.T)  # (d_out, d_in): nn.Linear computes x @ weight.T
        if slot.bias is None:
            if held.bias is not None:
                held.bias.zero_()  # the exercise has no bias here
            return None
        return _load_bias(module, slot, held.bias)
    if not isinstance(held, Tensor):
        return f"`self.{slot.name}` is a {type(held).__name__}: {slot.convention()}"
    if tuple(held.shape) != tuple(slot.value.shape):
        return f"`self.{slot.name}` has shape {tuple(held.shape)}: {slot.convention()}"
    held.copy_(slot.value)
    return None if slot.bias is None else _load_bias(module, slot, None)


def load_weights(module: nn.Module, slots: list[Slot]) -> str | None:
    """Copy every slot's weights into ``module`` (tensors or ``nn.Linear`` layers); None, or what stops it."""
    with torch.no_grad():
        for slot in slots:
            problem = _load_one(module, slot)
            if problem is not None:
                return problem
    return None


def convention_answer(message: str) -> tuple[str, str]:
    """What ``run`` returns for a module that cannot take the weights: plain data, so the grader brings it back."""
    return (CONVENTION, message)


def convention_message(answer) -> str | None:
    """The line inside a ``convention_answer``, or None for any other answer."""
    if isinstance(answer, tuple) and len(answer) == 2 and answer[0] == CONVENTION and isinstance(answer[1], str):
        return answer[1]
    return None


def compare_or_convention(tolerance: str = "float32"):
    """An ``Exercise.compare``: a ``convention_answer`` fails with its own line, anything else is compared."""
    tol = teaching_tolerance(tolerance)

    def compare(expected, got) -> str | None:
        message, wanted = convention_message(got), convention_message(expected)
        if message is not None or wanted is not None:
            return None if message == wanted else (message or "the module did not take the check's weights")
        return describe_mismatch(expected, got, tol=tol)

    return compare


def load_course_state(module: nn.Module, state: dict[str, Tensor], layout: str) -> str | None:
    """Load ``state`` (a course module's weights, by name) into the student's ``module``, made float64 first.

    None when it loads, else one line on what stops it: persistent state that is not a parameter (nanoGPT
    registers its causal mask as a buffer) is named as such, not blamed on the parameter names; a name or
    shape that differs points at ``layout``, the course module whose names the notebook lists.
    """
    parameters = {name for name, _ in module.named_parameters()}
    extra = [name for name in module.state_dict() if name not in state and name not in parameters]
    if extra:
        names = ", ".join(f"`{name}`" for name in extra[:4])
        return (
            f"your module's state_dict holds {names} besides its parameters (a buffer registered as persistent?); "
            "the module holds no other persistent state: build it in forward, or register it with "
            "register_buffer(..., persistent=False)"
        )
    try:
        check_state_dict(module.double(), state)
    except ValueError as error:
        return (
            f"{error}; the check loads the course's weights by name, so keep the parameter names and shapes "
            f"the notebook lists (those of {layout})"
        )
    module.load_state_dict(state)
    return None
