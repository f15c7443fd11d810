"""The sandbox's mounts, run for real with bubblewrap: a course installed under /tmp (a clone, a venv)
stays visible inside the kernel's private /tmp, read-only, and the rest of /tmp stays private."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from course_utils.lab import sandbox

pytestmark = pytest.mark.skipif(sandbox.isolation_problem() is not None,
                                reason=f"no sandbox here: {sandbox.isolation_problem()}")

PROBE = r"""
import os, sys
folder, secret = sys.argv[1], sys.argv[2]
print("course:", open(os.path.join(folder, "marker.txt")).read())
try:
    open(os.path.join(folder, "written.txt"), "w").write("x")
    print("course folder: writable")
except OSError:
    print("course folder: read-only")
print("grader's /tmp file visible:", os.path.exists(secret))
open("/tmp/scratch.txt", "w").write("ok")
print("private /tmp: writable")
"""


@pytest.fixture
def course_under_tmp():
    folder = tempfile.mkdtemp(prefix="course-under-tmp-", dir="/tmp")
    os.chmod(folder, 0o755)  # like a clone: world-readable, so the kernel may get a uid of its own
    with open(os.path.join(folder, "marker.txt"), "w") as handle:
        handle.write("seen")
    secret = tempfile.NamedTemporaryFile(prefix="grader-secret-", dir="/tmp", delete=False)
    secret.close()
    yield folder, secret.name
    shutil.rmtree(folder, ignore_errors=True)
    os.unlink(secret.name)


def test_a_course_under_tmp_is_bound_over_the_private_tmp(monkeypatch, course_under_tmp):
    folder, secret = course_under_tmp
    real_paths = sandbox._read_only_paths()
    monkeypatch.setattr(sandbox, "_read_only_paths", lambda: [*real_paths, folder])
    jail = sandbox.Jail(memory_mb=1024, processes=64)
    try:
        argv = jail.command([sys.executable, "-I", "-S", "-c", PROBE, folder, secret], env={})
        result = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                                env=sandbox.launcher_environment())
    finally:
        jail.close()
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["course: seen", "course folder: read-only",
                                          "grader's /tmp file visible: False", "private /tmp: writable"]
    assert not os.path.exists(os.path.join(folder, "written.txt"))
