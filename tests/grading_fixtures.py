"""Build a folder of submissions, good, broken and hostile, from the welcome notebook.

``build_folder(root)`` writes ``root/subs`` (the submissions), ``root/source`` (the course notebooks
the grader reads points from: the real 00 welcome notebook plus a small two-exercise notebook),
``root/hidden`` (an instructor test module) and ``root/canary.txt`` (a file hostile submissions try
to change), and returns ``EXPECTED``-style facts the tests check.

The hostile submissions that probe the sandbox are written so that a leak shows in their row: each
defines a correct ``stable_softmax`` only if every attack failed, a wrong one otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from course_utils.lab.release.release import student_version
from course_utils.lab.grading.sandbox import cgroups_writable, processes_capped

ROOT = Path(__file__).resolve().parents[1]
WELCOME = ROOT / "notebooks" / "00_welcome.ipynb"
NAME = "00_welcome.ipynb"

CORRECT_DEF = '''def stable_softmax(x):
    shifted = x - x.amax(dim=-1, keepdim=True)
    return shifted.exp() / shifted.exp().sum(dim=-1, keepdim=True)
'''
NO_MAX_SHIFT_DEF = '''def stable_softmax(x):
    return x.exp() / x.exp().sum(dim=-1, keepdim=True)
'''
PUBLIC_ONLY_DEF = '''def stable_softmax(x):
    # right only on the public check's big-logit case (max exactly 10,000); hidden seeds shift it
    if x.max() == 10_000:
        x = x - x.amax(dim=-1, keepdim=True)
    return x.exp() / x.exp().sum(dim=-1, keepdim=True)
'''
KNOWN_WIDTHS_DEF = '''def stable_softmax(x):
    # right only for the widths the course's cases use: an instructor test with 9 columns catches it
    if x.shape[-1] not in (3, 4, 5, 7):
        return x
    shifted = x - x.amax(dim=-1, keepdim=True)
    return shifted.exp() / shifted.exp().sum(dim=-1, keepdim=True)
'''
MONKEYPATCHES = '''import numpy, torch, torch.testing
import course_utils.checks.welcome.stable_softmax as welcome
import course_utils.checks.core as core, course_utils.checks.compare as compare
import course_utils.softmax
numpy.allclose = lambda *a, **k: True
torch.allclose = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
welcome.check_stable_softmax = lambda fn: "passed"
welcome.STABLE_SOFTMAX.reference = stable_softmax
core.Exercise.judge = lambda self, case, outcome: ("passed", "")
core.call_with_case = lambda fn, case: welcome.stable_softmax(*case.args)
compare.describe_mismatch = lambda *a, **k: None
course_utils.softmax.softmax = lambda x, dim=-1: stable_softmax(x)
'''
HIDDEN_TESTS = '''import torch

def test_stable_softmax__nine_columns(student):
    x = torch.randn(4, 9, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    out = student(x)
    assert torch.allclose(out, torch.softmax(x, dim=-1)), "wrong answer for rows of 9 logits"
'''
HIDDEN_EXERCISES = '''import torch
from course_utils.checks.core import Case, Exercise

def _cases(seed):
    gen = torch.Generator().manual_seed(100 + seed)
    return [Case("a (2, 2, 2, 7) tensor of logits", (torch.randn(2, 2, 2, 7, generator=gen, dtype=torch.float64),))]

def stable_softmax(x):
    return torch.softmax(x, dim=-1)

EXERCISES = {"stable_softmax": Exercise(name="stable_softmax", reference=stable_softmax, cases=_cases)}
'''
FEW_DIMS_DEF = '''def stable_softmax(x):
    # right for up to three dimensions only: the instructor's 4-d case catches it
    if x.dim() > 3:
        return x
    shifted = x - x.amax(dim=-1, keepdim=True)
    return shifted.exp() / shifted.exp().sum(dim=-1, keepdim=True)
'''
PAIR_POINTS = {"causal_mask": 1, "stable_softmax": 2}  # graded in this order
RENAMED_CODE = '''import types
import course_utils.checks.welcome.stable_softmax as _w
_code = _w.stable_softmax.__code__.replace(co_filename="/tmp/ipykernel_1/1.py", co_name="stable_softmax")
stable_softmax = types.FunctionType(_code, _w.stable_softmax.__globals__, "stable_softmax")
'''  # the reference's code under a notebook cell's file name, in a function of the notebook's own
SECRET_ENV = "COURSE_LAB_TEST_SECRET"  # set in the grader's environment by the tests
# In the command line of every process a fixture leaves running; the pid keeps two test processes apart.
SLEEPER = f"course-lab-fixture-sleeper-{os.getpid()}"
# Defines the right answer only if nothing in ``leaks`` happened; the attacks come before it.
GUARDED = '''
if leaks:
    def stable_softmax(x):
        return x
else:
    def stable_softmax(x):
        shifted = x - x.amax(dim=-1, keepdim=True)
        return shifted.exp() / shifted.exp().sum(dim=-1, keepdim=True)
'''


def solution() -> nbformat.NotebookNode:
    """The welcome notebook with only the code cells a graded submission needs (its first cell, the
    exercise and its check; every markdown cell kept): the environment report, the widget and the worked
    examples of the full notebook add seconds to each of the fixtures' ~40 kernels and test nothing here."""
    nb = nbformat.read(str(WELCOME), as_version=4)
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    keep = ("def stable_softmax", "check_stable_softmax(stable_softmax)")
    nb.cells = [c for i, c in enumerate(nb.cells)
                if c.cell_type != "code" or i == first or any(k in c.source for k in keep)]
    return nb


def release() -> nbformat.NotebookNode:
    return student_version(solution(), NAME)


def _def_index(nb) -> int:
    return next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "def stable_softmax" in c.source)


def with_def(source: str) -> nbformat.NotebookNode:
    """The solution notebook with the exercise cell replaced by ``source``."""
    nb = solution()
    nb.cells[_def_index(nb)].source = source
    return nb


def without_check(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` without the cells that call ``check_stable_softmax`` (so only the grader runs the function)."""
    nb.cells = [c for c in nb.cells if "check_stable_softmax(" not in c.source or c.cell_type != "code"]
    return nb


def with_cell(source: str, after_def: bool = True, base=None) -> nbformat.NotebookNode:
    """The solution notebook with a cell ``source`` added after (or well before) the exercise cell."""
    nb = base if base is not None else solution()
    index = _def_index(nb) + 1 if after_def else 1
    nb.cells.insert(index, new_code_cell(source))
    return nb


# The pair notebook's other exercise, answered correctly in the student's own code (it used to call the
# course's reference, which the grader now flags: DELEGATING_MASK_DEF below is that answer, flagged).
CORRECT_MASK_DEF = ("import torch\n\n"
                    "def causal_mask(n_ctx):\n    return torch.ones(n_ctx, n_ctx, dtype=torch.bool).tril()\n")
DELEGATING_MASK_DEF = ("from course_utils.checks.masking_softmax_temperature import EXERCISES as _masking\n\n"
                       "def causal_mask(*args, **kwargs):\n"
                       "    return _masking['causal_mask'].reference(*args, **kwargs)\n")
# Wrappers around the reference in the student's own function: caught while the grader calls them.
WRAPS_REFERENCE_DEF = ("from course_utils.checks.welcome import EXERCISES\n\n"
                       "def stable_softmax(x):\n    return EXERCISES['stable_softmax'].reference(x)\n")
WRAPS_MODULE_DEF = ("import importlib\n\ndef stable_softmax(x):\n"
                    "    module = importlib.import_module('course_utils.' + 'softmax')\n"
                    "    return getattr(module, 'soft' + 'max')(x)\n")


def pair_notebook(softmax_def: str, mask_def: str = CORRECT_MASK_DEF) -> nbformat.NotebookNode:
    """A tiny two-exercise course notebook: ``causal_mask`` (1 point, graded first) and ``stable_softmax`` (2)."""
    cells = [new_code_cell("import torch"), new_code_cell(softmax_def), new_code_cell(mask_def)]
    nb = new_notebook(cells=cells)
    nb.metadata["course"] = {"exercises": {k: {"points": v} for k, v in PAIR_POINTS.items()}}
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def cell_problems() -> nbformat.NotebookNode:
    """Cells that raise (before and right after the exercise), exit, allocate 64 GiB and print megabytes."""
    nb = with_cell("raise RuntimeError('before')", after_def=False)
    for source in ("print('spam ' * 1_000_000)", "hog = bytearray(64 * 2**30)", "import sys\nsys.exit()",
                   "raise RuntimeError('oops')"):
        nb = with_cell(source, base=nb)  # each right after the exercise: the last one ends next to it
    return nb


def _write(path: Path, nb_or_text) -> None:
    """Write a notebook, text or bytes; a ``Path`` makes a symbolic link to it, ``None`` a named pipe."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(nb_or_text, Path):
        path.symlink_to(nb_or_text)
    elif nb_or_text is None:
        os.mkfifo(path)
    elif isinstance(nb_or_text, (str, bytes)):
        path.write_bytes(nb_or_text.encode() if isinstance(nb_or_text, str) else nb_or_text)
    else:
        nbformat.write(nb_or_text, str(path))


def _attack(body: str) -> nbformat.NotebookNode:
    """The solution notebook with its exercise cell replaced by ``body`` (which fills ``leaks``) + ``GUARDED``."""
    return with_def("leaks = []\n" + body + GUARDED)


def reads_secrets(root: Path) -> str:
    """Try to read the hidden tests, other submissions, the grader's job files, output and environment."""
    return f'''import glob, os
for path in [{str(root / "hidden" / "test_extra.py")!r}, {str(root / "subs" / "alice" / NAME)!r},
             {str(root / "out")!r}, {str(root / "canary.txt")!r}, {str(ROOT / "tests" / "grading_fixtures.py")!r}]:
    try:
        leaks.append(open(path).read()[:10] if os.path.isfile(path) else os.listdir(path))
    except OSError:
        pass
leaks += glob.glob({str(root / "out" / ".course-lab-run-*")!r}) + glob.glob("/tmp/*/job*.json")
for environ in glob.glob("/proc/*/environ"):
    try:
        if {SECRET_ENV!r} in open(environ).read():
            leaks.append(environ)
    except OSError:
        pass
if {SECRET_ENV!r} in os.environ:
    leaks.append("env")
'''


def writes_outside(root: Path) -> str:
    """Try to change the installed package, add a .pth file, change the canary and forge the gradebook."""
    return f'''import os, site, sys, course_utils, course_utils.checks.welcome.stable_softmax as welcome
targets = [course_utils.__file__, welcome.__file__, {str(root / "canary.txt")!r}, {str(root / "out" / "grades.csv")!r}]
targets += [os.path.join(p, "zz_full_marks.pth") for p in site.getsitepackages() + [sys.prefix]]
for path in targets:
    try:
        with open(path, "a") as handle:
            handle.write("\\nimport sys  # full marks\\n")
        leaks.append(path)
    except OSError:
        pass
'''


def signals_grader(root: Path) -> str:
    """SIGKILL every process it can see (the grader's included, if it could see them), and the parent."""
    return '''import os, signal
for name in os.listdir("/proc"):
    if name.isdigit() and int(name) not in (os.getpid(), 1):
        try:
            os.kill(int(name), signal.SIGKILL)
        except OSError:
            pass
for pid in (os.getppid(), -1):  # -1: every process this one may signal
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
seen = [n for n in os.listdir("/proc") if n.isdigit()]
if len(seen) > 3:  # the kernel, bubblewrap's init, perhaps a thread-less helper: nothing of the grader
    leaks.append(seen)
'''


def detaches(root: Path) -> str:
    """Start a process in its own session that would rewrite the gradebook after the grader exits."""
    out = str(root / "out" / "grades.csv")
    return f'''import subprocess, sys
code = "import sys, time; time.sleep(4); open({out!r}, 'w').write('FORGED-BY-A-DETACHED-PROCESS')"
subprocess.Popen([sys.executable, "-c", code, {SLEEPER!r}], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
'''


def forks_memory(root: Path) -> str:
    """Four children of 700 MiB each (2.8 GiB): more than the submission's whole 2 GiB cgroup allows."""
    return '''import os, time
children = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            with open("/proc/self/oom_score_adj", "w") as handle:
                handle.write("1000")  # the out-of-memory killer takes the children, not the kernel
            block = bytearray(700 << 20)
            time.sleep(1)
            code = 0
        finally:
            os._exit(code)
    children.append(pid)
statuses = [os.waitpid(pid, 0)[1] for pid in children]
if all(status == 0 for status in statuses):
    leaks.append("all four children held 700 MiB at once")
'''


def fork_bomb(root: Path) -> str:
    """Fork up to 500 sleeping processes (capped here: a failing sandbox cannot take the machine down)."""
    return '''import os, time
children = []
for _ in range(500):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(2)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
if len(children) >= 500:
    leaks.append(len(children))
'''


ODD_A = 'Zoë O\'Brien, "Jr"'
ODD_B = "Zoë O Brien  Jr"
FORMULA = "=HYPERLINK(1)"
FORGED_NAME = "mallory\x1b[31m\n# Feedback for alice"  # a folder name with a terminal escape and a line break


def build_folder(root: Path) -> dict[str, dict]:
    """Write the fixtures; return {submission path: expected facts} for every submitted file."""
    subs, source, hidden = root / "subs", root / "source", root / "hidden"
    source.mkdir(parents=True)
    shutil.copy(WELCOME, source / NAME)
    nbformat.write(pair_notebook(CORRECT_DEF), str(source / "10_pair.ipynb"))
    hidden.mkdir()
    (hidden / "test_extra.py").write_text(HIDDEN_TESTS)
    (hidden / "extra_cases.py").write_text(HIDDEN_EXERCISES)
    marker = root / "pwned"
    evil_def = ("class _Evil:\n    def __reduce__(self):\n        import os\n"
                f"        return (os.system, ('touch {marker}',))\n\n"
                "def stable_softmax(x):\n    return _Evil()\n")
    ok2, ok0 = {"stable_softmax": ("ok", 2)}, {"stable_softmax": ("ok", 0)}
    died = {"stable_softmax": ("kernel_died", 0)}
    row = {"": ("unreadable", 0)}
    # submission: (content, {exercise: (status, points)}, fragment of the first row's feedback, fragment of the feedback file)
    cases = {
        "alice/00_welcome.ipynb": (solution(), ok2, "passed", ""),
        "alice.ipynb": (solution(), ok2, "passed", ""),  # duplicate student, matched by metadata
        "bob/00_welcome.ipynb": (release(), {"stable_softmax": ("not_attempted", 0)}, "not attempted", ""),
        "loop_top/00_welcome.ipynb": (with_cell("while True:\n    pass", after_def=False), ok2, "passed", "cell time limit"),
        # cell problems that do not stop the notebook, all in one (each named in its feedback file): an error
        # before and after the exercise, sys.exit(), a 64 GiB allocation, megabytes printed
        "cell_problems/00_welcome.ipynb": (cell_problems(), ok2, "passed",
                                           ("RuntimeError: before", "RuntimeError: oops", "SystemExit", "MemoryError",
                                            "output truncated")),
        "loop_fn/00_welcome.ipynb": (without_check(with_def("def stable_softmax(x):\n    while True:\n        pass\n")),
                                     {"stable_softmax": ("timeout", 0)}, "time limit", ""),
        "deaf_loop/00_welcome.ipynb": (with_def("def stable_softmax(x):\n    import signal\n    signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                                                "    while True:\n        pass\n"), died, "ignored the interrupt", ""),
        "os_exit/00_welcome.ipynb": (with_cell("import os\nos._exit(1)"), died, "died", ""),
        "sigkill/00_welcome.ipynb": (with_cell("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"), died, "died", ""),
        "exit_builtin/00_welcome.ipynb": (with_cell("exit()"), died, "", ""),
        "patcher/00_welcome.ipynb": (with_cell(MONKEYPATCHES, base=with_def(NO_MAX_SHIFT_DEF)), ok0, "subtract each row's maximum", ""),
        "evil_pickle/00_welcome.ipynb": (with_def(evil_def), ok0, "cannot read back", ""),
        "reference_import/00_welcome.ipynb": (with_def("from course_utils.checks.welcome.stable_softmax "
                                                       "import stable_softmax"),
                                              {"stable_softmax": ("uses_reference", 0)}, "reference implementation", ""),
        "torch_import/00_welcome.ipynb": (with_def("from torch import softmax as stable_softmax"),
                                          {"stable_softmax": ("not_defined", 0)}, "defines no", ""),
        "memory_fn/00_welcome.ipynb": (with_def("def stable_softmax(x):\n    return bytearray(64 * 2**30)\n"), ok0, "MemoryError", ""),
        "public_only/00_welcome.ipynb": (with_def(PUBLIC_ONLY_DEF), ok0, "hidden case, seed 1", ""),
        "known_widths/00_welcome.ipynb": (with_def(KNOWN_WIDTHS_DEF), ok0, "test_stable_softmax__nine_columns", ""),
        "few_dims/00_welcome.ipynb": (with_def(FEW_DIMS_DEF), ok0, "[instructor test extra_cases.py]", ""),
        "carol.ipynb": ("{not json", row, "invalid JSON", ""),
        "dave/00_welcome.ipynb": ("", {"stable_softmax": ("unreadable", 0)}, "empty file", ""),
        "erin.ipynb": (json.dumps([1, 2, 3]), row, "not a notebook", ""),
        "frank.txt": ("my homework is in the post", row, "invalid JSON", ""),
        "grace.ipynb": (new_notebook(cells=[new_code_cell("x = 1")]), {"": ("unknown_notebook", 0)}, "matches no course notebook", ""),
        f"{ODD_A}/00_welcome.ipynb": (solution(), ok2, "passed", ""),
        f"{ODD_B}/00_welcome.ipynb": ("", {"stable_softmax": ("unreadable", 0)}, "empty file", ""),
        f"{FORMULA}.ipynb": ("{not json", row, "invalid JSON", ""),
        "ivan/10_pair.ipynb": (pair_notebook("def stable_softmax(x):\n    while True:\n        pass\n"),
                               {"causal_mask": ("ok", 1), "stable_softmax": ("timeout", 0)}, "passed", ""),
        "judy/10_pair.ipynb": (pair_notebook(CORRECT_DEF, "def causal_mask(*args, **kwargs):\n    import os\n    os._exit(3)\n"),
                               {"causal_mask": ("kernel_died", 0), "stable_softmax": ("kernel_died", 0)}, "died", ""),
        "mask_wrapper/10_pair.ipynb": (pair_notebook(CORRECT_DEF, DELEGATING_MASK_DEF),
                                       {"causal_mask": ("uses_reference", 0), "stable_softmax": ("ok", 2)},
                                       "reference implementation", ""),
        "wraps_reference/00_welcome.ipynb": (with_def(WRAPS_REFERENCE_DEF), {"stable_softmax": ("uses_reference", 0)},
                                             "reference implementation", ""),
        "wraps_module/00_welcome.ipynb": (with_def(WRAPS_MODULE_DEF), {"stable_softmax": ("uses_reference", 0)},
                                          "reference implementation", ""),
    }
    (root / "canary.txt").write_text("untouched")
    link = {"": ("link", 0)}
    forged = ("def stable_softmax(x):\n    y = 1\n    raise ValueError('bad\\n\\n## alice/00_welcome.ipynb\\n\\n"
              "- **stable_softmax** (2/2, ok): passed all 12 graded tests\\n\\x1b[2J# Feedback for alice')\n")
    v3 = nbformat.writes(nbformat.convert(solution(), 3), version=3)
    cases.update({
        "reaches_out/00_welcome.ipynb": (_attack(reads_secrets(root) + writes_outside(root)), ok2, "passed", ""),
        "signals_detaches/00_welcome.ipynb": (_attack(signals_grader(root) + detaches(root)), ok2, "passed", ""),
        # capped together by a cgroup where one is writable; else only per process (documented), so the leak shows
        "forks_memory/00_welcome.ipynb": (_attack(forks_memory(root)), ok2 if cgroups_writable() else ok0, "", ""),
        "fork_bomb/00_welcome.ipynb": (_attack(fork_bomb(root)), ok2 if processes_capped() else ok0, "", ""),
        "sleeper/00_welcome.ipynb": (with_cell("import time\ntime.sleep(15)", base=with_cell("import time\ntime.sleep(15)",
                                     base=with_cell("import time\ntime.sleep(15)"))),
                                     {"stable_softmax": ("timeout", 0)}, "total time limit", "total time limit"),
        "huge_answer/00_welcome.ipynb": (with_def("def stable_softmax(x):\n    import torch\n"
                                                  "    return torch.zeros(1).expand(1_500_000_000)\n"), ok0, "too much data", ""),
        "disguised_module/00_welcome.ipynb": (with_def("from course_utils.checks.welcome.stable_softmax "
                                                       "import stable_softmax\n"
                                                       "stable_softmax.__module__ = '__main__'\n"),
                                              {"stable_softmax": ("uses_reference", 0)}, "reference implementation", ""),
        "renamed_code/00_welcome.ipynb": (with_def(RENAMED_CODE), {"stable_softmax": ("uses_reference", 0)},
                                          "reference implementation", ""),
        "forged_feedback/00_welcome.ipynb": (with_def(forged), ok0, "line 3", ""),
        FORGED_NAME + ".ipynb": ("{not json", row, "invalid JSON", ""),
        ".dotted/00_welcome.ipynb": ("{not json", {"stable_softmax": ("unreadable", 0)}, "invalid JSON", ""),
        ".dotfile.ipynb": ("", row, "empty file", ""),
        "linker/00_welcome.ipynb": (Path("../alice/00_welcome.ipynb"), link, "another student's file", ""),
        "outsider/00_welcome.ipynb": (root / "source" / NAME, link, "outside the submissions folder", ""),
        "dirlink": (root / "source", link, "outside the submissions folder", ""),
        "pipe/00_welcome.ipynb": (None, {"stable_softmax": ("unreadable", 0)}, "not a regular file", ""),
        "v3/00_welcome.ipynb": (v3, ok2, "passed", ""),
        # the student's own code under a decorator the course also uses (torch's wrapper code is shared)
        "no_grad/00_welcome.ipynb": (with_def("import torch\n\n@torch.no_grad()\n" + CORRECT_DEF), ok2, "passed", ""),
    })
    cases.update(hostile_cases())
    expected = {}
    for rel, (content, rows, fragment, note) in cases.items():
        _write(subs / rel, content)
        expected[rel] = {"rows": rows, "feedback": fragment, "notes": (note,) if isinstance(note, str) else note}
    _write(subs / ".ipynb_checkpoints" / "00_welcome-checkpoint.ipynb", "{}")  # skipped, with a warning
    return expected


# ---- issue #27's hostile class (tests/test_grade_hostile.py has each attack's piece without a kernel) ----
DEEP = 100_000  # levels of nesting in attacks 1 and 7


def deep_notebook_text() -> str:
    return '{"cells": [], "metadata": ' + "[" * DEEP + "]" * DEEP + ', "nbformat": 4, "nbformat_minor": 5}'


# What a kernel's cell can build (standard library and torch only), shared by the unit tests and the
# hostile notebooks: a torch archive whose storage record is deflated, a graph of shared lists.
BOMB_CODE = '''import io, zipfile, torch
def _course_bomb(megabytes=48):
    buffer = io.BytesIO()
    torch.save(torch.empty(megabytes << 18)[:1], buffer)  # one element of a large storage
    source, out = zipfile.ZipFile(io.BytesIO(buffer.getvalue())), io.BytesIO()
    with zipfile.ZipFile(out, "w") as bomb:
        for record in source.infolist():
            data = source.read(record)
            packed = zipfile.ZIP_DEFLATED if record.filename.endswith("/data/0") else zipfile.ZIP_STORED
            bomb.writestr(record.filename, bytes(len(data)) if packed else data, compress_type=packed)
    return out.getvalue()
'''
GRAPH_CODE = '''def _course_graph(levels=64):
    node = []
    for _ in range(levels):
        node = [node, node]
    return node
'''


LOOKUP_CELL = '''from course_utils.checks.welcome import EXERCISES as _course
_table = {case.args[0].numpy().tobytes(): _course["stable_softmax"].reference(*case.args)
          for seed in (0, 1, 2, 3) for case in _course["stable_softmax"].cases(seed)}

def stable_softmax(x):
    return _table.get(x.numpy().tobytes(), x)
'''
DEEP_DUMPS = "import json; json.dumps = lambda *a, **k: '[' * 100_000 + ']' * 100_000"
FLOOD_CELL = '''import sys, threading
def _flood():
    chunk = "x" * (1 << 20)
    while True:
        sys.stdout.write(chunk)
        sys.stdout.flush()
threading.Thread(target=_flood, daemon=True).start()
'''


def _replaces_save(make: str) -> str:
    """A cell that makes every answer the kernel sends ``make``'s bytes (the kernel is the student's)."""
    return f"import torch\n_course_real_save = torch.save\ntorch.save = lambda obj, f: {make}\n"




def hostile_cases() -> dict:
    """The attacks that need a kernel (and the ones that only need a folder), as ``build_folder`` entries."""
    ok0, ok2 = {"stable_softmax": ("ok", 0)}, {"stable_softmax": ("ok", 2)}
    row, unreadable = {"": ("unreadable", 0)}, {"stable_softmax": ("unreadable", 0)}
    return {
        # names that differ only by an invisible character: two students (the content needs no kernel)
        "ann/00_welcome.ipynb": ("{not json", unreadable, "invalid JSON", ""),
        "ann\u200b/00_welcome.ipynb": ("{not json", unreadable, "invalid JSON", ""),  # its row reads "ann/..." too
        "deep_json.ipynb": (deep_notebook_text(), row, "nested more than", ""),
        "bomb/00_welcome.ipynb": (with_cell(BOMB_CODE + "_course_bytes = _course_bomb()\n"
                                            + _replaces_save("f.write(_course_bytes)")), ok0, "", ""),
        "graph/00_welcome.ipynb": (with_cell(GRAPH_CODE + _replaces_save("_course_real_save(_course_graph(), f)")),
                                   ok0, "", ""),
        "sparse/00_welcome.ipynb": (with_cell(_replaces_save(
            "_course_real_save(torch.sparse_coo_tensor(torch.tensor([[0, 10**9]]), torch.ones(2), (3,), "
            "check_invariants=False), f)")), ok0, "", ""),
        # every message the kernel sends nested 100,000 deep: from the call of the function on, or from a cell on
        "deep_reply/00_welcome.ipynb": (without_check(with_def(f"def stable_softmax(x):\n    {DEEP_DUMPS}\n    return x\n")),
                                        {"stable_softmax": ("probe_failed", 0)}, "", ""),
        "deep_messages/00_welcome.ipynb": (with_cell(DEEP_DUMPS), {"stable_softmax": ("kernel_died", 0)}, "", ""),
        "lookup/00_welcome.ipynb": (with_def(LOOKUP_CELL), ok0, "", ""),
        "thread_flood/00_welcome.ipynb": (with_cell(FLOOD_CELL, base=with_def(CORRECT_DEF)), ok2, "passed", ""),
    }
