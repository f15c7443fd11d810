"""The sandbox, run for real with bubblewrap: a course installed under /tmp (a clone, a venv) stays
visible inside the kernel's private /tmp, read-only, and the rest of /tmp stays private; once sealed,
the socket folder takes no new file and its mode cannot be changed back; run by root, the kernel
never runs as root (inside or as the host sees it), cannot read root-only files and cannot make a
user namespace of its own. And the cgroup v2 bookkeeping, run against a fake tree of plain files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from course_utils.lab.grading import bwrap, cgroups, sandbox

needs_bwrap = pytest.mark.skipif(sandbox.isolation_problem() is not None,
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


@needs_bwrap
def test_a_course_under_tmp_is_bound_over_the_private_tmp(monkeypatch, course_under_tmp):
    folder, secret = course_under_tmp
    real_paths = bwrap._read_only_paths()
    monkeypatch.setattr(bwrap, "_read_only_paths", lambda: [*real_paths, folder])
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


DATA_PROBE = r"""
import json, os, sys
manifest = sys.argv[1]
print("manifest sha256:", json.load(open(manifest))["sha256"])
try:
    open(os.path.join(os.path.dirname(manifest), "written.txt"), "w").write("x")
    print("data folder: writable")
except OSError:
    print("data folder: read-only")
"""


@needs_bwrap
def test_the_course_data_folder_is_visible_read_only():
    """Notebooks 01 and 09 read the corpus manifest and the trained checkpoint from data/: a graded
    kernel sees that folder (read-only), though not the repository around it."""
    from course_utils.corpus import DATA_DIR, MANIFEST, manifest

    assert str(DATA_DIR.resolve()) in bwrap._read_only_paths()
    assert str(DATA_DIR.resolve().parent) not in bwrap._read_only_paths()
    jail = sandbox.Jail(memory_mb=1024, processes=64)
    try:
        argv = jail.command([sys.executable, "-I", "-S", "-c", DATA_PROBE, str(MANIFEST.resolve())], env={})
        result = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=sandbox.launcher_environment())
    finally:
        jail.close()
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"manifest sha256: {manifest()['sha256']}", "data folder: read-only"]
    assert not (DATA_DIR / "written.txt").exists()


# Runs in the jail: writes into the socket folder (as a kernel makes its sockets), waits for the
# test to seal the folder, then tries to write, rename and chmod there.
SEAL_PROBE = r"""
import os, sys
folder = sys.argv[1]
print("uid:", os.getuid(), os.geteuid())
try:
    open("/etc/shadow").read()
    print("shadow: readable")
except OSError:
    print("shadow: unreadable")
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print("new user namespace:", "denied" if libc.unshare(0x10000000) != 0 else "allowed")  # CLONE_NEWUSER
open(os.path.join(folder, "before"), "w").write("x")
sys.stdin.readline()  # the test seals the folder, then sends a line
def attempt(name, action):
    try:
        action()
        print(name + ": allowed")
    except OSError:
        print(name + ": denied")
attempt("create", lambda: open(os.path.join(folder, "after"), "w").write("x"))
attempt("rename", lambda: os.rename(os.path.join(folder, "before"), os.path.join(folder, "moved")))
attempt("chmod", lambda: os.chmod(folder, 0o777))
attempt("create after chmod", lambda: open(os.path.join(folder, "after2"), "w").write("x"))
"""


def _run_sealed_probe() -> dict:
    jail = sandbox.Jail(memory_mb=1024, processes=64)
    try:
        argv = jail.command([sys.executable, "-I", "-S", "-c", SEAL_PROBE, jail.sockets], env={})
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=sandbox.launcher_environment())
        before = os.path.join(jail.sockets, "before")
        deadline = time.monotonic() + 60
        while not os.path.exists(before) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        host_uids = []  # the jailed probe's uids, as the host sees them
        for candidate in psutil.process_iter(["cmdline", "uids"]):
            cmdline = candidate.info["cmdline"] or []
            if len(cmdline) > 4 and cmdline[4] == SEAL_PROBE and candidate.info["uids"] is not None:
                host_uids.append(tuple(candidate.info["uids"]))
        file_owner = os.stat(before).st_uid if os.path.exists(before) else None
        jail.seal()
        stdout, stderr = proc.communicate("sealed\n", timeout=60)
        left = sorted(os.listdir(jail.sockets))
        mode = os.stat(jail.sockets).st_mode & 0o777
    finally:
        jail.close()
    assert proc.returncode == 0, stderr
    return {"lines": stdout.splitlines(), "host_uids": host_uids, "file_owner": file_owner, "left": left,
            "mode": mode, "sockets": jail.sockets}


@pytest.fixture(scope="module")
def sealed_probe():
    return _run_sealed_probe()


@needs_bwrap
def test_a_sealed_socket_folder_takes_no_new_file(sealed_probe):
    lines = sealed_probe["lines"]
    assert "create: denied" in lines and "rename: denied" in lines and "create after chmod: denied" in lines, lines
    if os.geteuid() == 0:  # run by another user, the kernel shares the folder's owner (see sandbox.py)
        assert "chmod: denied" in lines, lines
        assert sealed_probe["mode"] == 0o555
    assert sealed_probe["left"] == ["before"]
    assert not os.path.exists(sealed_probe["sockets"])  # close() removes it, sealed or not


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="run by another user, the kernel is that user's uid outside")
def test_run_by_root_the_kernel_is_never_root(sealed_probe):
    lines = sealed_probe["lines"]
    uid_line = next(line for line in lines if line.startswith("uid:"))
    assert "0" not in uid_line.split()[1:], lines  # not root inside
    assert "shadow: unreadable" in lines, lines
    assert "new user namespace: denied" in lines, lines  # seccomp_filter.py, as bwrap's --disable-userns would
    assert sealed_probe["host_uids"], "the jailed probe was not found among the host's processes"
    assert all(0 not in uids for uids in sealed_probe["host_uids"]), sealed_probe["host_uids"]
    assert sealed_probe["file_owner"] not in (None, 0)  # what it writes is not root's either


# ---- cgroup v2, on a fake tree ----------------------------------------------------------------

V2_FILES = ("cgroup.procs", "cgroup.kill", "memory.max", "memory.swap.max", "pids.max", "cgroup.events")


@pytest.fixture
def fake_v2(tmp_path, monkeypatch):
    """A cgroup v2 root made of plain files, with ``cgroups`` pointed at it (``$COURSE_LAB_CGROUP_ROOT``).

    The kernel's part is played here: a new group gets its interface files, and removing one removes
    them. So this tests the grader's bookkeeping (which files it writes, in which order, what it
    joins, kills and removes), not enforcement: real cgroup v2 limits cannot be tested on this
    machine, whose memory and pids controllers are mounted as cgroup v1 (its unified mount has none)."""
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids rdma misc\n")
    (root / "cgroup.subtree_control").write_text("cpu\n")
    (root / "cgroup.procs").write_text("")
    made, dropped = [], {}

    def new_group(group):
        group.mkdir()
        for name in V2_FILES:
            (group / name).write_text("max\n" if name.endswith(".max") else "")
        made.append(group)

    def drop_group(group):
        dropped[group.name] = {p.name: p.read_text() for p in group.iterdir()}
        for p in group.iterdir():
            p.unlink()
        group.rmdir()

    monkeypatch.setenv(cgroups.CGROUP_ROOT_ENV, str(root))
    monkeypatch.setattr(cgroups, "_new_group", new_group)
    monkeypatch.setattr(cgroups, "_drop_group", drop_group)
    return {"root": root, "made": made, "dropped": dropped}


def test_cgroup_v2_groups_are_made_limited_joined_killed_and_removed(fake_v2):
    root = fake_v2["root"]
    assert cgroups.cgroup_layout() == "v2" and cgroups.cgroups_writable() and cgroups.cgroup_parents() == [root]
    jail = sandbox.Jail(memory_mb=512, processes=32)
    try:
        assert jail.cgroup and jail.groups == fake_v2["made"] and jail.groups[0].parent == root
        group = jail.groups[0]
        assert group.name.startswith(f"{cgroups.CGROUP_PREFIX}{os.getpid()}-")
        assert (root / "cgroup.subtree_control").read_text() == "+memory +pids"  # handed down by the parent
        assert (group / "memory.max").read_text() == str(512 << 20)
        assert (group / "memory.swap.max").read_text() == "0"
        assert (group / "pids.max").read_text() == "32"
        argv = jail.command(["/bin/true"], env={})
        import json

        assert json.loads(argv[-1])["cgroups"] == [str(group / "cgroup.procs")]  # the launcher joins it
    finally:
        jail.close()
    assert not group.exists() and fake_v2["dropped"][group.name]["cgroup.kill"] == "1"  # killed whole, then removed


def test_cgroup_v2_without_cgroup_kill_kills_by_pid_and_sweeps_stale_groups(fake_v2):
    root = fake_v2["root"]
    (root / "cgroup.subtree_control").write_text("memory pids")
    jail = sandbox.Jail(memory_mb=256, processes=8)
    group = jail.groups[0]
    assert (root / "cgroup.subtree_control").read_text() == "memory pids"  # already handed down: untouched
    (group / "cgroup.kill").unlink()  # a kernel before 5.14
    (group / "memory.swap.max").unlink()
    victim = subprocess.Popen(["sleep", "60"])
    (group / "cgroup.procs").write_text(f"{victim.pid}\n")
    jail.close()
    assert victim.wait(timeout=10) == -9 and not group.exists()
    stale = root / f"{cgroups.CGROUP_PREFIX}999999999-course-lab-sockets-x"  # its grader (pid) is gone
    cgroups._new_group(stale)
    # a killed grader's worker can stay a zombie (dead, not reaped) when the next run sweeps: gone too
    zombie = subprocess.Popen(["true"])
    deadline = time.monotonic() + 10
    while "Z" not in Path(f"/proc/{zombie.pid}/stat").read_text().rpartition(")")[2][:3] and time.monotonic() < deadline:
        time.sleep(0.01)
    of_zombie = root / f"{cgroups.CGROUP_PREFIX}{zombie.pid}-course-lab-sockets-y"
    of_live = root / f"{cgroups.CGROUP_PREFIX}{os.getpid()}-course-lab-sockets-z"
    for group in (of_zombie, of_live):
        cgroups._new_group(group)
    sandbox.sweep_stale_cgroups()
    assert not stale.exists() and not of_zombie.exists() and of_live.exists()
    zombie.wait()


def test_cgroup_layouts_are_told_apart(tmp_path, monkeypatch):
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cgroup.procs").write_text("")
    (v2 / "cgroup.controllers").write_text("cpu io\n")  # like this machine's hybrid unified mount: no controllers
    assert cgroups.cgroup_layout(v2) is None and not cgroups.cgroups_writable(v2)
    (v2 / "cgroup.controllers").write_text("cpu io memory pids\n")
    assert cgroups.cgroup_layout(v2) == "v2"
    v1 = tmp_path / "v1"
    for controller in ("memory", "pids"):
        (v1 / controller).mkdir(parents=True)
        (v1 / controller / "cgroup.procs").write_text("")
    assert cgroups.cgroup_layout(v1) == "v1" and cgroups.cgroup_parents(v1) == [v1 / "memory", v1 / "pids"]
    monkeypatch.delenv(cgroups.CGROUP_ROOT_ENV, raising=False)
    assert cgroups.cgroup_root() == cgroups.CGROUP_ROOT
    if os.geteuid() == 0 and os.access("/sys/fs/cgroup/memory", os.W_OK):  # this machine: v1, unchanged
        assert cgroups.cgroup_layout() == "v1"
