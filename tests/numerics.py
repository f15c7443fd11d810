"""Claims about trained models, with their margins, on every numerics path this CPU offers.

PyTorch's CPU build picks its SIMD path in three places, each with a documented switch read when the
process starts: ATen's kernels (``ATEN_CPU_CAPABILITY``), MKL's BLAS (``MKL_ENABLE_INSTRUCTIONS``) and
oneDNN (``ONEDNN_MAX_CPU_ISA``). A float32 training run rounds differently on each, so a claim about a
trained model must hold on all of them, with room to spare (CONTRIBUTING, "Claims about trained
models"; issue 36: a claim of notebook 07 held on AVX-512 and failed on AVX2).

- ``Margins`` (the ``margins`` fixture of conftest.py): a claim test states each claim with its margin,
  ``margins.check("claim", margin)``; it fails when the margin is not positive and records the margin,
  for the run's summary and for ``run_on_path``.
- ``PATHS`` and ``paths_here()``: the native path, the lowest (``default`` / SSE4.2), and AVX2 forced
  where the CPU has AVX-512.
- ``run_on_path(path, targets)``: runs pytest on ``targets`` in a fresh process on that path and returns
  its exit code, output and the margins its claims recorded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARGINS_FILE = "COURSE_MARGINS_FILE"  # where a claim test in a subprocess appends its margins (JSON lines)

PATHS = {
    "native": {},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "lowest": {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "ONEDNN_MAX_CPU_ISA": "SSE41"},
}


def native_capability() -> str:
    """What torch reports on this CPU with no switch set (``AVX512``, ``AVX2``, ``DEFAULT``, ...)."""
    env = {k: v for k, v in os.environ.items() if k not in PATHS["lowest"]}
    code = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def other_paths(capability: str | None = None) -> dict[str, str | None]:
    """Which other path each pass takes, so that every path this CPU offers is checked once with a full pass:
    ``"notebooks"`` (every stored output and in-notebook claim, tests/test_lab_env.py) and ``"claims"`` (every
    claim test with all its seeds, tests/test_numerics_matrix.py). On an AVX-512 CPU the notebooks take AVX2 and
    the claims the lowest path; with AVX2 native both take the lowest; with nothing wider, neither runs
    (``None``). ``other_paths("AVX512")`` -> ``{"notebooks": "avx2", "claims": "lowest"}``."""
    here = paths_here(capability)
    others = [p for p in here if p != "native"]
    return {"notebooks": others[0] if others else None, "claims": "lowest" if "lowest" in here else None}


def paths_here(capability: str | None = None) -> list[str]:
    """The paths to try on this CPU: native, the lowest, and AVX2 where the native path is wider."""
    capability = native_capability() if capability is None else capability
    paths = ["native"]
    if capability.upper().startswith("AVX512"):
        paths.append("avx2")
    if capability.upper() != "DEFAULT":
        paths.append("lowest")
    return paths


class Margins:
    """Records each claim's margin (> 0: it holds) and fails the test on the first that does not hold."""

    def __init__(self, record_property):
        self._record = record_property
        self.found: list[tuple[str, float]] = []

    def check(self, claim: str, margin: float) -> None:
        margin = float(margin)
        self.found.append((claim, margin))
        self._record("margins", list(self.found))
        target = os.environ.get(MARGINS_FILE)
        if target:
            with open(target, "a") as out:
                out.write(json.dumps({"claim": claim, "margin": margin}) + "\n")
        assert margin > 0, f"claim does not hold: {claim} (margin {margin:.4g})"

    def above(self, claim: str, value: float, bound: float) -> None:
        """The claim "value > bound"; its margin is value - bound."""
        self.check(claim, float(value) - float(bound))

    def below(self, claim: str, value: float, bound: float) -> None:
        """The claim "value < bound"; its margin is bound - value."""
        self.check(claim, float(bound) - float(value))


def run_on_path(path: str, targets: list[str], timeout: float = 900) -> tuple[int, str, list[dict]]:
    """pytest over ``targets`` in a fresh process on numerics path ``path``: (exit code, output, margins)."""
    if path not in PATHS:
        raise ValueError(f"path must be one of {sorted(PATHS)}, got {path!r}")
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "margins.jsonl"
        env = {**os.environ, **PATHS[path], MARGINS_FILE: str(record), "PYTHONHASHSEED": "0"}
        for var in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_CURRENT_TEST"):
            env.pop(var, None)
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=",
                   "-q", "--rootdir", str(ROOT), *targets]
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        margins = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    return done.returncode, done.stdout + done.stderr, margins
