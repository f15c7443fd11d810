"""Call a student's function inside their kernel and bring back only plain data.

What runs in the kernel is a minimal call of the student's own object, ``NAME(*args, **kwargs)``,
where ``NAME`` is the object the notebook itself defined (remembered by ``snapshot_code`` right
after the defining cell, so a later import of the reference under the same name does not count),
on inputs the grader sends (pickled, base64 in the code text). No course code is imported on that
path, so redefining ``course_utils``, ``numpy.allclose`` or ``torch.testing`` in the kernel changes
nothing: expected values and every comparison are computed in the grader. The answer comes back
through ``torch.save`` and is read with ``torch.load(weights_only=True)``, which rebuilds only
tensors, numbers, strings and containers, so a hostile kernel cannot run code in the grader.
NumPy values are turned into tensors in the kernel first.

For an exercise that wants a class (``Exercise.wants_class``), the exercise's own ``run`` must
construct and drive the object in the kernel; it is loaded there from its source file as a fresh
module, never from the kernel's (patchable) ``sys.modules``.

Each graded call is watched for the course's reference: a trace function (``sys.settrace``, and
``threading.settrace`` for threads started during the call) notes any frame whose code has the
first line and digest (``FINGERPRINT_CODE``) of the exercise's reference code, so a wrapper
(``def f(x): return reference(x)``, a lambda, ``functools.partial``, a closure, a class attribute,
``getattr(module, "name")``) is caught however it reaches it. Like ``origin``, this is worked out in
the kernel, which the student controls: it catches imports and wrappers, not a student who sets out
to sabotage the interpreter (a trace function switched off during the call is reported).

Leaves out: starting the kernel (``kernel.py``) and judging (``grade.py``).
"""

from __future__ import annotations

import ast
import asyncio
import base64
import io
import json
import pickle

import torch

MAX_REPLY_CHARS = 64 << 20
MAX_VALUE_BYTES = 32 << 20  # the most tensor data one answer may hold (checked in the kernel and here)

# A function's fingerprint: its byte code, names, local names and first line, recursively, whatever
# its __module__, name or file say (the first line keeps a student's own textbook two-liner apart
# from the same two lines in the course's module). The same source runs in the kernel (on the
# student's object) and here (on course code).
FINGERPRINT_CODE = r"""
def _course_lab_feed(digest, code):
    import types
    digest.update(code.co_code)
    digest.update(repr((code.co_names, code.co_varnames, code.co_firstlineno)).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _course_lab_feed(digest, const)

def _course_lab_code_digest(code):
    import hashlib
    digest = hashlib.sha256()
    _course_lab_feed(digest, code)
    return digest.hexdigest()

def _course_lab_unwrap(obj):
    # through decorators (functools.wraps sets __wrapped__: @torch.no_grad() on a student's function
    # must not give it the fingerprint of torch's wrapper, which course functions share) and partials
    for _ in range(100):
        inner = getattr(obj, "__wrapped__", None)
        if inner is None:
            inner = getattr(obj, "func", None)
        if inner is None or inner is obj:
            break
        obj = inner
    return obj

def _course_lab_fingerprint(obj):
    import hashlib, types
    if isinstance(obj, type):
        members = [_course_lab_unwrap(getattr(v, "__func__", v)) for k, v in sorted(vars(obj).items())]
        codes = [m.__code__ for m in members if isinstance(m, types.FunctionType)]
    else:
        obj = _course_lab_unwrap(obj)
        codes = [obj.__code__] if isinstance(obj, types.FunctionType) else []
    if not codes:
        return None, None
    digest = hashlib.sha256()
    for code in codes:
        _course_lab_feed(digest, code)
    return codes[0].co_filename, digest.hexdigest()
"""

_KERNEL_CODE = (
    FINGERPRINT_CODE
    + r"""
def _course_lab_probe(name, payload, runner, watch):
    import base64, io, json, pickle, sys, threading
    import torch
    saved = globals().get("_course_lab_saved")
    if not isinstance(saved, dict) or name not in saved:
        return json.dumps({"kind": "missing"})
    target = saved[name]
    if payload is None:
        where, fingerprint = _course_lab_fingerprint(target)
        return json.dumps({"kind": "origin", "module": str(getattr(target, "__module__", "")), "file": where,
                           "fingerprint": fingerprint})
    args, kwargs = pickle.loads(base64.b64decode(payload))
    call = lambda: target(*args, **kwargs)
    if runner is not None:
        import importlib.util
        spec = importlib.util.spec_from_file_location("_course_lab_fresh", runner[0])
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        call = lambda: module.EXERCISES[runner[1]].run(target, args[0])
    # Watch the call (and the conversion of its answer) for the course's reference: a trace function
    # sees every Python frame that starts in this thread, and threads started meanwhile; a frame
    # whose code is one of `watch` (first line, digest of its code) is the reference running.
    seen, tracer = [], None
    if watch:
        lines, digests = {line for line, _ in watch}, {digest for _, digest in watch}
        def tracer(frame, event, arg):
            code = frame.f_code
            if code.co_firstlineno in lines and not seen and _course_lab_code_digest(code) in digests:
                seen.append(code.co_name)
            return None
        old_trace, old_thread_trace = sys.gettrace(), threading.gettrace()
        threading.settrace(tracer)
        sys.settrace(tracer)
    try:
        reply = _course_lab_answer(call, torch)
    finally:
        if tracer is not None:
            kept = sys.gettrace() is tracer
            sys.settrace(old_trace)
            threading.settrace(old_thread_trace)
    if tracer is not None and seen:
        return json.dumps({"kind": "reference", "name": str(seen[0])})
    if tracer is not None and not kept:
        return json.dumps({"kind": "untraced"})
    return reply

def _course_lab_answer(call, torch):
    import base64, decimal, io, json, numbers, sys
    try:
        value = call()
    except Exception as exc:
        line, function, tb = None, None, exc.__traceback__
        library = ("site-packages", "dist-packages", "/torch/", "/numpy/", "course_utils", sys.prefix, sys.base_prefix)
        while tb is not None:  # the innermost frame of the student's own code (a notebook cell)
            code = tb.tb_frame.f_code
            if code is not call.__code__ and not code.co_name.startswith("_course_lab_") \
                    and not any(part in code.co_filename for part in library):
                line, function = tb.tb_lineno, code.co_name
            tb = tb.tb_next
        return json.dumps({"kind": "raised", "type": type(exc).__name__, "message": str(exc)[:500], "line": line,
                           "function": function})
    budget = [MAX_BYTES]
    def plain(v):
        mod = type(v).__module__ or ""
        if isinstance(v, (numbers.Real, decimal.Decimal)) and not isinstance(v, (int, float)):
            return float(v)  # an exact Fraction or a Decimal: a float is what the checks compare
        if mod == "numpy" and hasattr(v, "shape") and v.shape != ():
            v = torch.from_numpy(v)
        elif mod == "numpy" and hasattr(v, "item"):
            return v.item()
        if isinstance(v, torch.Tensor):
            budget[0] -= v.numel() * v.element_size()
            if budget[0] < 0:
                raise OverflowError(f"a tensor of shape {tuple(v.shape)}")
            # a fresh, compact copy: a view would send its whole storage, an expanded one a lie
            return v.detach().clone(memory_format=torch.contiguous_format)
        if isinstance(v, (list, tuple)):
            return type(v)(plain(x) for x in v) if type(v) in (list, tuple) else [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v
    buffer = io.BytesIO()
    try:
        torch.save(plain(value), buffer)
    except OverflowError as exc:
        return json.dumps({"kind": "too_large", "message": str(exc)[:200]})
    except Exception as exc:
        return json.dumps({"kind": "unsendable", "type": type(value).__name__, "message": str(exc)[:200]})
    return json.dumps({"kind": "value", "data": base64.b64encode(buffer.getvalue()).decode()})

_course_lab_result = _course_lab_probe({name!r}, {payload!r}, {runner!r}, {watch!r})
""".replace("MAX_BYTES", str(MAX_VALUE_BYTES))
)


_SNAPSHOT_CODE = r"""
if not isinstance(globals().get("_course_lab_saved"), dict):
    _course_lab_saved = {}
for _course_lab_name in {names!r}:
    _course_lab_obj = globals().get(_course_lab_name)
    if _course_lab_obj is not None and ({overwrite!r} or _course_lab_name not in _course_lab_saved):
        _course_lab_saved[_course_lab_name] = _course_lab_obj
"""


def snapshot_code(names: list[str], overwrite: bool) -> str:
    """Kernel code that remembers what ``names`` are bound to (``overwrite=False``: only names not yet seen).

    Run after each cell that defines one, so a later ``from course_utils... import name`` (which
    notebooks do so later cells use the reference) cannot stand in for the student's answer; run
    once more at the end for names no cell defined, so an imported reference can be recognised
    (``origin``) and flagged."""
    if not all(n.isidentifier() for n in names):
        raise ValueError(f"names must be Python identifiers, got {names!r}")
    return _SNAPSHOT_CODE.replace("{names!r}", repr(list(names))).replace("{overwrite!r}", repr(bool(overwrite)))


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


def probe_code(
    name: str,
    args: tuple,
    kwargs: dict,
    runner: tuple[str, str] | None = None,
    watch: list[tuple[int, str]] | None = None,
) -> str:
    """The code sent to the kernel: ``probe_code('f', (1,), {})`` calls ``f(1)`` there.

    ``watch``: ``(first line, code digest)`` of the course's reference code for the exercise
    (``grade.reference_codes``); if any of it runs during the call, the reply says so instead of
    giving the value (``decode_reply`` raises ``ReferenceCalled``)."""
    if not name.isidentifier():
        raise ValueError(f"name must be a Python identifier, got {name!r}")
    payload = None if args is None else base64.b64encode(pickle.dumps((tuple(args), dict(kwargs)))).decode()
    watch = [(int(line), str(digest)) for line, digest in watch or ()]
    if not all(len(digest) == 64 and all(c in "0123456789abcdef" for c in digest) for _, digest in watch):
        raise ValueError("watch digests must be sha256 hex digests")
    return (
        _KERNEL_CODE.replace("{name!r}", repr(name))
        .replace("{payload!r}", repr(payload))
        .replace("{runner!r}", repr(runner))
        .replace("{watch!r}", repr(watch))
    )


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
        """Where the student's object comes from: ``{'module', 'file', 'fingerprint'}`` (see ``FINGERPRINT_CODE``)."""
        return self._send(probe_code(self.name, None, {}))

    def _send(self, code: str):
        future = asyncio.run_coroutine_threadsafe(self.kernel.send(code, "_course_lab_result"), self.loop)
        status, text = future.result()
        return decode_reply(status, text)
