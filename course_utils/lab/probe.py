"""Call a student's function inside their kernel and bring back only plain data.

``StudentProxy(kernel, loop, name)`` stands for the student's function in grader code:
``proxy(x)`` sends the call (``kernel_code.probe_code``) to the kernel and turns the reply into a
value (``decode_reply``), or into the exception that says what went wrong (``StudentRaised``,
``NotDefined``, ``ProbeFailed``, ``ReferenceCalled``). Expected values and every comparison are
computed in the grader. The answer is read with ``torch.load(weights_only=True)``, which rebuilds
only tensors, numbers, strings and containers, so a hostile kernel cannot run code in the grader,
and its size is checked from shapes and dtypes before anything is converted (``check_size``).

Leaves out: the code that runs in the kernel (``kernel_code.py``), starting the kernel
(``kernel.py``) and judging (``grade.py``).
"""

from __future__ import annotations

import ast
import asyncio
import base64
import io
import json

import torch

from course_utils.lab.kernel_code import MAX_VALUE_BYTES, probe_code

MAX_REPLY_CHARS = 64 << 20


class StudentRaised(Exception):
    """The student's function raised; ``error_type`` is the name of what it raised, ``line`` the
    line of the student's own code (in its notebook cell) where it happened, if known."""

    def __init__(self, error_type: str, message: str, line: int | None = None, function: str | None = None):
        super().__init__(f"{error_type}: {message}")
        self.error_type, self.message, self.line, self.function = error_type, message, line, function


class NotDefined(Exception):
    """The notebook never defined the function (or its cell failed before the definition)."""


class ProbeFailed(Exception):
    """The probe itself failed in the kernel (e.g. the student broke pickle or torch there)."""


class ReferenceCalled(BaseException):
    """The course's reference code ran while the student's function was called (``name``: its
    function's name), or, with ``untraced``, the student's code switched the watch off.

    A ``BaseException``, so no ``except Exception`` in a check's ``run`` or an instructor test
    can swallow it."""

    def __init__(self, name: str = "", untraced: bool = False):
        super().__init__(name)
        self.name, self.untraced = name, untraced


def decode_reply(status: str, text: str):
    """Turn the kernel's reply into a value, or raise ``StudentRaised`` / ``NotDefined`` / ``ProbeFailed``."""
    if status != "ok":
        error_type, _, message = text.partition(": ")
        raise StudentRaised(error_type, message)  # a BaseException such as SystemExit escaped the call
    if len(text) > MAX_REPLY_CHARS:
        raise ProbeFailed(f"the answer was too large to bring back ({len(text):,} characters)")
    try:
        envelope = json.loads(ast.literal_eval(text))
    except (ValueError, SyntaxError, TypeError, MemoryError) as exc:
        raise ProbeFailed(f"the kernel sent back something unreadable ({type(exc).__name__})") from None
    kind = envelope.get("kind") if isinstance(envelope, dict) else None
    if kind == "missing":
        raise NotDefined()
    if kind == "raised":
        line, function = envelope.get("line"), envelope.get("function")
        raise StudentRaised(
            str(envelope.get("type")),
            str(envelope.get("message", "")),
            line if isinstance(line, int) and not isinstance(line, bool) else None,
            function if isinstance(function, str) and function.isidentifier() else None,
        )
    if kind == "origin":
        return {
            k: envelope.get(k) if isinstance(envelope.get(k), str) else None for k in ("module", "file", "fingerprint")
        }
    if kind == "reference":
        name = envelope.get("name")
        raise ReferenceCalled(name if isinstance(name, str) and name.isidentifier() else "")
    if kind == "untraced":
        raise ReferenceCalled(untraced=True)
    if kind == "too_large":
        raise StudentRaised(
            "ValueError",
            f"returned too much data for the grader ({envelope.get('message')}; "
            f"at most {MAX_VALUE_BYTES >> 20} MiB of tensors)",
        )
    if kind == "unsendable":
        raise StudentRaised("TypeError", f"returned a {envelope.get('type')}, which the grader cannot read back")
    if kind != "value":
        raise ProbeFailed("the kernel sent back something unreadable")
    try:
        value = torch.load(io.BytesIO(base64.b64decode(envelope["data"])), weights_only=True)
    except Exception as exc:
        raise StudentRaised("TypeError", f"returned a value the grader cannot read back ({str(exc)[:120]})") from None
    check_size(value)
    return value


def check_size(value, budget: int = MAX_VALUE_BYTES) -> int:
    """Raise ``StudentRaised`` if the tensors in ``value`` would take more than ``budget`` bytes, from
    their shapes and dtypes alone (an expanded tensor is small on the wire, huge once converted);
    return the bytes left. ``check_size(torch.zeros(1).expand(10**9))`` raises."""
    if isinstance(value, torch.Tensor):
        budget -= value.numel() * value.element_size()
        if budget < 0:
            raise StudentRaised(
                "ValueError",
                f"returned a tensor of shape {tuple(value.shape)}, too large for the grader "
                f"(at most {MAX_VALUE_BYTES >> 20} MiB of tensors)",
            )
    elif isinstance(value, (list, tuple)):
        for item in value:
            budget = check_size(item, budget)
    elif isinstance(value, dict):
        for item in value.values():
            budget = check_size(item, budget)
    return budget


class StudentProxy:
    """Calls the student's ``name`` in their kernel from grader code running in a worker thread.

    ``proxy(x)`` returns the plain value, or raises ``StudentRaised`` / ``NotDefined``;
    ``ProbeTimeout``, ``KernelDied`` and ``ReferenceCalled`` (BaseExceptions) pass through any
    ``except Exception``. ``watch``: the reference code to watch each call for (``probe_code``).
    """

    def __init__(
        self,
        kernel,
        loop: asyncio.AbstractEventLoop,
        name: str,
        runner: tuple[str, str] | None = None,
        watch: list[tuple[int, str]] | None = None,
    ):
        self.kernel, self.loop, self.name, self.runner, self.watch = kernel, loop, name, runner, watch
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        return self._send(probe_code(self.name, args, kwargs, None, self.watch))

    def run_remote(self, case):
        """For class exercises: the exercise's own ``run(cls, case)`` executed in the kernel."""
        if self.runner is None:
            raise ProbeFailed(f"no source file known for the exercise that checks `{self.name}`")
        return self._send(probe_code(self.name, (case,), {}, self.runner, self.watch))

    def origin(self) -> dict:
        """Where the student's object comes from: ``{'module', 'file', 'fingerprint'}``
        (see ``kernel_code.FINGERPRINT_CODE``)."""
        return self._send(probe_code(self.name, None, {}))

    def _send(self, code: str):
        future = asyncio.run_coroutine_threadsafe(self.kernel.send(code, "_course_lab_result"), self.loop)
        status, text = future.result()
        return decode_reply(status, text)
