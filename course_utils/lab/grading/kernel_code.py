"""The Python text the grader sends into a student's kernel: a call of their function, and a snapshot.

What runs in the kernel is a minimal call of the student's own object, ``NAME(*args, **kwargs)``,
where ``NAME`` is the object the notebook itself defined (remembered by ``snapshot_code`` right
after the defining cell, so a later import of the reference under the same name does not count),
on inputs the grader sends (pickled, base64 in the code text). No course code is imported on that
path, so redefining ``course_utils``, ``numpy.allclose`` or ``torch.testing`` in the kernel changes
nothing. The answer goes back through ``torch.save`` in a JSON envelope (``probe.decode_reply``
reads it); NumPy values are turned into tensors in the kernel first, and at most
``MAX_VALUE_BYTES`` of tensors are sent.

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

Everything here is text, exec'd in the kernel as it stands: it may use only what the kernel has
(the standard library, torch) and names starting ``_course_lab_``.

Leaves out: sending it and reading the reply (``probe.py``), starting the kernel (``kernel.py``).
"""

from __future__ import annotations

import base64
import pickle

from course_utils.lab.limits import MAX_VALUE_BYTES, MAX_VALUE_DEPTH, MAX_VALUE_ITEMS  # checked here and in the grader

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

def _course_lab_script_file(obj):
    # a TorchScript function or module (torch.jit.trace / torch.jit.script) runs no Python frame: the
    # files its graph was compiled from (source ranges), and its qualified name, say where it came from
    import re
    try:
        graph = getattr(obj, "inlined_graph", None) or getattr(obj, "graph", None)
        names = [str(getattr(obj, "qualified_name", "") or getattr(obj, "original_name", ""))]
        files = re.findall(r"# (\S+\.py):\d+", str(graph)) if graph is not None else []
    except Exception:
        return None
    course = [f for f in files if "course_utils" in f]
    course += [f"<torchscript>/course_utils/{n}" for n in names if "course_utils" in n.split(".")]
    return course[0] if course else None

def _course_lab_uses_script(obj):
    # the course file of a TorchScript object bound to the name, or one its function reaches (a global
    # name, a closure cell, a default), else None
    import types
    found = _course_lab_script_file(obj)
    if found or not isinstance(obj, types.FunctionType):
        return found
    reached = [obj.__globals__.get(n) for n in obj.__code__.co_names] + list(obj.__defaults__ or ())
    for cell in obj.__closure__ or ():
        try:
            reached.append(cell.cell_contents)
        except ValueError:  # an empty cell
            pass
    for value in reached:
        if type(value).__module__.startswith("torch.jit"):
            found = _course_lab_script_file(value)
            if found:
                return found
    return None

def _course_lab_fingerprint(obj):
    import hashlib, types
    script = _course_lab_uses_script(_course_lab_unwrap(obj))
    if script:
        return script, None
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
    budget, items = [MAX_BYTES], [MAX_ITEMS]
    def plain(v, depth=0):
        items[0] -= 1  # every visit counts: shared containers count once per path, as the grader counts
        if items[0] < 0 or depth > MAX_DEPTH:
            raise OverflowError(f"more than MAX_ITEMS items or MAX_DEPTH levels of containers")
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
            kept = [plain(x, depth + 1) for x in v]
            return tuple(kept) if type(v) is tuple else kept
        if isinstance(v, dict):
            return {k: plain(x, depth + 1) for k, x in v.items()}
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
    .replace("MAX_ITEMS", str(MAX_VALUE_ITEMS))
    .replace("MAX_DEPTH", str(MAX_VALUE_DEPTH))
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


def probe_code(
    name: str,
    args: tuple,
    kwargs: dict,
    runner: tuple[str, str] | None = None,
    watch: list[tuple[int, str]] | None = None,
) -> str:
    """The code sent to the kernel: ``probe_code('f', (1,), {})`` calls ``f(1)`` there.

    ``watch``: ``(first line, code digest)`` of the course's reference code for the exercise
    (``uses_reference.reference_codes``); if any of it runs during the call, the reply says so instead of
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
