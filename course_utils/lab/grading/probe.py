"""Call a student's function inside their kernel and bring back only plain data.

``StudentProxy(kernel, loop, name)`` stands for the student's function in grader code:
``proxy(x)`` sends the call (``kernel_code.probe_code``) to the kernel and turns the reply into a
value (``decode_reply``), or into the exception that says what went wrong (``StudentRaised``,
``NotDefined``, ``ProbeFailed``, ``ReferenceCalled``). Expected values and every comparison are
computed in the grader. The answer is read with ``torch.load(weights_only=True)``, which rebuilds
only tensors, numbers, strings and containers, so a hostile kernel cannot run code in the grader.
Every step is bounded before it starts (``bounded.py``): the reply's length, its JSON's depth, the
archive's records (stored, not compressed, their total size), then the value's items, depth and
tensor bytes from shapes and dtypes, dense strided tensors only (``check_size``). A reply that breaks
one of these is a clean 0 for that exercise (``StudentRaised`` or ``ProbeFailed``), never a fault of
the grader.

Leaves out: the code that runs in the kernel (``kernel_code.py``), starting the kernel
(``kernel.py``) and judging (``grade.py``).
"""

from __future__ import annotations

import ast
import asyncio
import base64
import io

import torch

from course_utils.lab.grading.bounded import check_archive, check_value, loads_bounded
from course_utils.lab.grading.kernel_code import probe_code
from course_utils.lab.limits import MAX_JSON_DEPTH, MAX_REPLY_CHARS, MAX_VALUE_BYTES


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


def _envelope(text: str) -> dict:
    """The kernel's JSON envelope inside the reply's text (the repr of a str), read at a bounded cost."""
    if len(text) > MAX_REPLY_CHARS:
        raise ProbeFailed(f"the answer was too large to bring back ({len(text):,} characters)")
    try:
        literal = ast.literal_eval(text) if text[:1] in ("'", '"') else None
        if not isinstance(literal, str):
            raise ProbeFailed("the kernel sent back something unreadable (not a string)")
        envelope = loads_bounded(literal, MAX_JSON_DEPTH)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        why = f"{type(exc).__name__}: {str(exc)[:80]}"
        raise ProbeFailed(f"the kernel sent back something unreadable ({why})") from None
    return envelope if isinstance(envelope, dict) else {}


def decode_reply(status: str, text: str):
    """Turn the kernel's reply into a value, or raise ``StudentRaised`` / ``NotDefined`` / ``ProbeFailed``."""
    if status != "ok":
        error_type, _, message = text.partition(": ")
        raise StudentRaised(error_type, message)  # a BaseException such as SystemExit escaped the call
    envelope = _envelope(text)
    kind = envelope.get("kind")
    if kind == "missing":
        raise NotDefined()
    if kind == "raised":
        line, function = envelope.get("line"), envelope.get("function")
        raise StudentRaised(
            str(envelope.get("type"))[:100],
            str(envelope.get("message", ""))[:500],
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
            f"returned too much data for the grader ({str(envelope.get('message'))[:200]}; "
            f"at most {MAX_VALUE_BYTES >> 20} MiB of tensors)",
        )
    if kind == "unsendable":
        kind = str(envelope.get("type"))[:100]
        raise StudentRaised("TypeError", f"returned a {kind}, which the grader cannot read back")
    if kind != "value" or not isinstance(envelope.get("data"), str):
        raise ProbeFailed("the kernel sent back something unreadable")
    try:
        data = base64.b64decode(envelope["data"], validate=True)
    except ValueError:
        raise ProbeFailed("the kernel sent back something unreadable (not base64)") from None
    try:
        check_archive(data)
        value = torch.load(io.BytesIO(data), weights_only=True)
    except Exception as exc:
        raise StudentRaised("TypeError", f"returned a value the grader cannot read back ({str(exc)[:120]})") from None
    check_size(value)
    return value


def check_size(value, budget: int = MAX_VALUE_BYTES) -> int:
    """Raise ``StudentRaised`` if the tensors in ``value`` would take more than ``budget`` bytes, from
    their shapes and dtypes alone (an expanded tensor is small on the wire, huge once converted), if it
    holds too many items or levels, or a tensor that is not dense and strided (``bounded.check_value``);
    return the bytes left. ``check_size(torch.zeros(1).expand(10**9))`` raises."""
    try:
        return check_value(value, budget)
    except ValueError as exc:
        raise StudentRaised(
            "ValueError",
            f"returned {exc}; the grader accepts only dense tensors, numbers, strings and containers of them",
        ) from None


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
