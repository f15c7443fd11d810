"""Importing any course_utils module changes nothing global: no seeding, no device choice, no
rcParams, no working directory or sys.path edits (STYLE.md: nothing happens at import)."""

import subprocess
import sys
import textwrap

import pytest


@pytest.mark.slow  # subprocesses or training: not in the quick loop (make test-fast)
def test_importing_every_module_has_no_side_effects():
    script = textwrap.dedent("""
        import os, pkgutil, importlib, random, sys
        import numpy as np, torch, matplotlib
        import course_utils
        before = (os.getcwd(), list(sys.path), torch.random.get_rng_state().clone(), np.random.get_state()[1].copy(),
                  random.getstate(), dict(matplotlib.rcParams), torch.get_default_dtype(), matplotlib.get_backend())
        names = [m.name for m in pkgutil.walk_packages(course_utils.__path__, "course_utils.")]
        for name in names:
            importlib.import_module(name)
        after = (os.getcwd(), list(sys.path), torch.random.get_rng_state(), np.random.get_state()[1],
                 random.getstate(), dict(matplotlib.rcParams), torch.get_default_dtype(), matplotlib.get_backend())
        problems = []
        for label, a, b in zip(["cwd", "sys.path", "torch RNG", "numpy RNG", "random", "rcParams", "default dtype", "backend"], before, after):
            same = bool((a == b).all()) if hasattr(a, "shape") else a == b
            if not same:
                problems.append(label)
        print(len(names), "modules;", "changed:", problems)
        sys.exit(1 if problems or len(names) < 20 else 0)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
