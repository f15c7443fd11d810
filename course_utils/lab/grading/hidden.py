"""Instructor test modules passed with ``course-lab grade --hidden-tests DIR``.

Every ``*.py`` file in DIR is loaded in the grader process (never in a student's kernel) and may
define either or both of:

- ``EXERCISES = {"stable_softmax": Exercise(...)}`` -- more cases for an exercise, judged exactly
  like the course's checks (the ``Exercise``'s own ``reference``, ``compare`` and ``mistakes``);
- test functions ``def test_stable_softmax(student): ...`` (or ``test_stable_softmax__big_rows``)
  that receive a proxy: ``student(x)`` calls the student's function in their kernel and returns
  the plain value (tensors, numbers, containers); a failing ``assert`` fails the exercise with the
  assertion's message. If the student's function raises, ``student(x)`` raises ``StudentRaised``.

Example file::

    import torch
    def test_stable_softmax__rows_sum_to_one(student):
        out = student(torch.randn(4, 9, dtype=torch.float64))
        assert torch.allclose(out.sum(-1), torch.ones(4, dtype=torch.float64)), "rows must sum to 1"

**Hidden cases keyed by a secret.** A kernel can import the course's checks and call
``cases(1)``, so plain hidden seeds let a notebook precompute the reference's answers in one cell and
look them up in its function. The grader therefore draws the hidden cases' random inputs from
generators keyed by a secret (``case_key``: ``$COURSE_LAB_CASE_KEY``, else a random key made once in
``~/.config/course-lab/case-key``, mode 600) that never enters a sandbox: ``keyed_exercise(ex, key)``
builds ``cases(seed)`` for seed >= 1 with every ``torch.Generator``, ``random.Random`` and
``torch.manual_seed`` seed mixed with the key (shapes and hand-made values stay as the seed makes
them; seed 0, the public check, is untouched). The same key gives the same cases, so a rerun or a
resumed run grades alike.

Leaves out: running them (``grade.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.util
import os
import random
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

from course_utils.checks.core import Exercise


@dataclass
class HiddenTests:
    """Extra exercises and test functions by exercise name, with the file each came from."""

    exercises: dict[str, list[tuple[Exercise, str]]] = field(default_factory=dict)
    functions: dict[str, list[Callable]] = field(default_factory=dict)

    def for_exercise(self, name: str) -> tuple[list[tuple[Exercise, str]], list[Callable]]:
        return self.exercises.get(name, []), self.functions.get(name, [])


def _exercise_for_test(func_name: str, known: set[str]) -> str | None:
    rest = func_name[len("test_") :]
    for name in sorted(known, key=len, reverse=True):
        if rest == name or rest.startswith(name + "__"):
            return name
    return None


def load_hidden_tests(folder: Path | None, known_exercises: set[str]) -> HiddenTests:
    """Load every ``*.py`` in ``folder``; ``ValueError`` naming the file for a broken or unknown test."""
    tests = HiddenTests()
    if folder is None:
        return tests
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"hidden_tests must be a folder of .py files, got {folder}")
    for number, path in enumerate(sorted(folder.glob("*.py"))):
        spec = importlib.util.spec_from_file_location(f"_course_lab_hidden_{number}", path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise ValueError(f"{path}: could not load ({type(exc).__name__}: {exc})") from exc
        for name, exercise in getattr(module, "EXERCISES", {}).items():
            if name not in known_exercises:
                raise ValueError(f"{path}: EXERCISES names {name!r}, which is not a course exercise")
            if not isinstance(exercise, Exercise):
                raise ValueError(f"{path}: EXERCISES[{name!r}] must be an Exercise, got {type(exercise).__name__}")
            tests.exercises.setdefault(name, []).append((exercise, str(path)))
        for attr in sorted(vars(module)):
            func = getattr(module, attr)
            if attr.startswith("test_") and callable(func):
                target = _exercise_for_test(attr, known_exercises)
                if target is None:
                    raise ValueError(
                        f"{path}: {attr} does not name a course exercise (test_<exercise> or test_<exercise>__<what>)"
                    )
                tests.functions.setdefault(target, []).append(func)
    return tests


CASE_KEY_ENV = "COURSE_LAB_CASE_KEY"


def case_key() -> str:
    """The secret the hidden cases are keyed by: ``$COURSE_LAB_CASE_KEY``, else the key in
    ``$XDG_CONFIG_HOME/course-lab/case-key`` (``~/.config``), made (32 random bytes, mode 600) on first use."""
    if os.environ.get(CASE_KEY_ENV):
        return os.environ[CASE_KEY_ENV]
    path = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "course-lab" / "case-key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with (
            contextlib.suppress(FileExistsError),
            os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f,
        ):
            f.write(secrets.token_hex(32))
    return path.read_text().strip()


def _mix(key: str, seed):
    """A 63-bit seed from ``key`` and an integer ``seed``; anything else is left as it is."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        return seed
    return int.from_bytes(hashlib.sha256(f"{key}:{seed}".encode()).digest()[:8], "big") >> 1


@contextlib.contextmanager
def _keyed_generators(key: str):
    """Within the block, every ``torch.Generator().manual_seed(s)``, ``random.Random(s)`` and
    ``torch.manual_seed(s)`` uses ``_mix(key, s)`` instead of ``s``."""
    plain_generator, plain_random, plain_seed = torch.Generator, random.Random, torch.manual_seed

    class KeyedGenerator(plain_generator):
        def manual_seed(self, seed):
            return super().manual_seed(_mix(key, seed))

    class KeyedRandom(plain_random):
        def seed(self, a=None, version=2):
            super().seed(_mix(key, a), version)

    torch.Generator, random.Random = KeyedGenerator, KeyedRandom
    torch.manual_seed = lambda seed: plain_seed(_mix(key, seed))
    try:
        yield
    finally:
        torch.Generator, random.Random, torch.manual_seed = plain_generator, plain_random, plain_seed


def keyed_exercise(exercise: Exercise, key: str) -> Exercise:
    """``exercise`` whose hidden cases (seed >= 1) draw their random inputs from generators keyed by ``key``."""
    plain = exercise.cases

    def cases(seed: int):
        if seed == 0:
            return plain(seed)
        with _keyed_generators(f"{key}:{exercise.name}"):
            return plain(seed)

    return dataclasses.replace(exercise, cases=cases)
