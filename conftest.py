"""Shared test configuration: GPU skipping, and a per-notebook execution-time report."""

from __future__ import annotations

import functools
import os
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
NOTEBOOK_DIR = ROOT / "notebooks"
_notebook_seconds: dict[str, float] = defaultdict(float)
_margins: dict[tuple[str, str], float] = {}  # (claim, numerics path) -> smallest margin seen (tests/numerics.py)


@pytest.fixture
def margins(record_property):
    """State a claim about a trained model with its margin: ``margins.check("claim", margin)`` (tests/numerics.py)."""
    from tests.numerics import Margins

    return Margins(record_property)


def pytest_configure(config):
    """A student's own model saved by notebook 09 (``notebooks/student/my_small_gpt/``) is ignored by this
    process and everything it starts, nbval's kernels included, so notebook 13's stored outputs are compared
    with the course's model on a developer's machine too (``COURSE_IGNORE_STUDENT_CHECKPOINT``, docs/testing.md).

    Inside a pytest-xdist worker, share the cores between the workers: torch here and everything
    this worker starts (notebook kernels, the grader, the student runs) use cores // workers threads.
    Two workers each training with two threads on two cores spin against each other (notebook 09's
    training then passed nbval's cell timeout)."""
    os.environ.setdefault("COURSE_IGNORE_STUDENT_CHECKPOINT", "1")
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if workers.isdigit() and int(workers) > 0:
        threads = max(1, (os.cpu_count() or 1) // int(workers))
        os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(threads)
        import torch

        torch.set_num_threads(threads)


def pytest_report_header(config):
    """The CPU and the SIMD path torch takes on it (RESULTS_ci.md records both for every run)."""
    try:
        import platform

        import torch

        model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("model name")), platform.processor() or platform.machine())
    except (ImportError, OSError):
        return None
    switches = {k: os.environ[k] for k in ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA")
                if k in os.environ}
    return (f"CPU: {model}, {os.cpu_count()} cores; torch {torch.__version__}, capability "
            f"{torch.backends.cpu.get_cpu_capability()}" + (f", switches {switches}" if switches else ""))


def pytest_collection_modifyitems(config, items):
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU; none on this machine")
    for item in items:
        if "gpu" in item.keywords and not has_cuda:
            item.add_marker(skip_gpu)


try:
    import xdist.scheduler
except ImportError:  # pytest-xdist is a test extra; without it everything runs in one process
    pass
else:

    def pytest_xdist_make_scheduler(config, log):
        """`make test` runs on three workers. A notebook's cells share one kernel, so one worker runs all
        of them in order; the browser tests share one JupyterLab and one Chromium, so they stay on one
        worker too; so do the grader's and the sandbox's tests, which look for leftover processes and
        cgroups machine-wide and would see the other worker's graders. A test file with a module-scoped
        fixture (five checkpoints read, a tokenizer trained once) is one unit: split test by test, a worker
        that alternates between files builds the fixture again each time it comes back (notebook 09's
        readings were built twice in CI, 44 s each). Every other test is its own unit, except that
        test_release.py's cheap fixture is rebuilt rather than tying its ten student runs to one worker.
        (xdist's `loadgroup` marks do this by editing node ids, which pytest 9 no longer reads, so the
        units are named here instead.)"""

        @functools.lru_cache(maxsize=None)
        def shares_a_module_fixture(path: str) -> bool:
            if path == "tests/test_release.py":
                return False
            try:
                return 'scope="module"' in (ROOT / path).read_text()
            except OSError:
                return False

        class CourseScheduling(xdist.scheduler.LoadScopeScheduling):
            def _split_scope(self, nodeid: str) -> str:
                path = nodeid.split("::", 1)[0]
                if path.endswith(".ipynb"):
                    return path
                if path.startswith("tests/browser/"):
                    return "browser"
                if path in ("tests/test_grade.py", "tests/test_grade_class.py", "tests/test_sandbox.py",
                            "tests/test_lab_env_grader.py"):
                    return "grader"
                if shares_a_module_fixture(path):
                    return path
                return nodeid

        return CourseScheduling(config, log)


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        _notebook_seconds[path] += report.duration
    for name, value in getattr(report, "user_properties", ()):
        if name == "margins" and report.when == "call":
            for claim, margin, *where in value:  # (claim, margin) natively, (claim, margin, path) from the matrix
                key = (claim, where[0] if where else "native")
                _margins[key] = min(margin, _margins.get(key, margin))


def pytest_terminal_summary(terminalreporter):
    if _margins:
        terminalreporter.section("claims about trained models: smallest margin over seeds (> 0 holds; tests/numerics.py)")
        for (claim, path), margin in sorted(_margins.items(), key=lambda item: (item[0][0], item[0][1])):
            terminalreporter.write_line(f"{margin:+11.4g}  {path:<7} {claim}")
    if not _notebook_seconds:
        return
    workers = getattr(terminalreporter.config.option, "numprocesses", None) or 0
    if workers:  # the targets are for a notebook alone on the machine; here it shared the cores
        terminalreporter.section(f"notebook execution time (on one of {workers} test workers, sharing the cores; "
                                 "the targets hold for a notebook run alone: TEST_WORKERS=1 make test)")
    else:
        terminalreporter.section("notebook execution time (target: under 60 s each on 2 CPU cores unless the notebook says)")
    for path, seconds in sorted(_notebook_seconds.items()):
        target = _time_target(ROOT / path)
        flag = "" if workers or seconds < target else f"   <-- over its {target:.0f} s target"
        terminalreporter.write_line(f"{seconds:7.1f} s  {path}{flag}")


def _time_target(path: Path) -> float:
    """A notebook's time budget: ``metadata.course.time_target_s`` (09 trains a model: 210 s), else 60 s."""
    import json

    try:
        return float(json.loads(path.read_text())["metadata"].get("course", {}).get("time_target_s", 60))
    except (OSError, ValueError, KeyError):
        return 60.0
