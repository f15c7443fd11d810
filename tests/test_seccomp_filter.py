"""The sandbox's seccomp filter (``seccomp_filter.py``), built by libseccomp. Read back from libseccomp's
own listing (PFC) for x86_64 and for aarch64, it decides on exactly the syscalls the hand-assembled
filter it replaced decided on, the same way; loaded into a process here, its decisions are those;
and without libseccomp the grader refuses to sandbox, naming what to install, and never starts a
kernel run by root without the filter. (``tests/test_sandbox.py`` runs it for real, under bwrap.)"""

from __future__ import annotations

import ctypes.util
import json
import os
import re
import subprocess
import sys

import pytest

from course_utils.lab.cli import main as cli_main
from course_utils.lab.grading import bwrap, sandbox, seccomp_filter

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="seccomp is Linux's")

# The policy of the hand-assembled filter (issue 38 removed it): its architecture tokens and, on each,
# the syscall numbers it decided on. Everything else was allowed; any other syscall ABI got EPERM.
OLD_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
OLD_DENIED = {"x86_64": {"clone": 56, "unshare": 272, "clone3": 435},
              "aarch64": {"clone": 220, "unshare": 97, "clone3": 435}}


def _only_with_newuser(lines: list[str]) -> bool:
    """Whether a syscall's lines deny it (EPERM) only when args[0] holds CLONE_NEWUSER."""
    tests = [line for line in lines if line.startswith("if ")]
    return ("if ($a0.lo32 & 0x10000000 == 268435456)" in tests and all(t.startswith("if ($a0.") for t in tests)
            and [line for line in lines if not line.startswith("if ")] == ["action ERRNO(1);"])


def _rules(listing: str) -> dict[str, tuple[int, list[str]]]:
    """{syscall: (number, the lines under its test)} from a PFC listing."""
    blocks = re.findall(r'# filter for syscall "(\w+)" \((\d+)\).*?\n(.*?)(?=\n\s*# )', listing, re.S)
    rules = {}
    for name, number, body in blocks:
        lines = [line.strip() for line in body.splitlines()]
        assert lines[0] == f"if ($syscall == {number})", body
        rules[name] = (int(number), lines[1:])
    return rules


@pytest.mark.parametrize("arch", sorted(OLD_DENIED))
def test_the_filter_denies_what_the_hand_assembled_one_denied(arch):
    listing = seccomp_filter.describe(arch)
    assert f"if ($arch == {OLD_ARCH[arch]})" in listing, listing  # this architecture's ABI only
    assert listing.count("if ($arch ==") == 1, listing
    assert re.search(r"# default action\n\s*action ALLOW;", listing), listing
    assert re.search(r"# invalid architecture action\n\s*action ERRNO\(1\);", listing), listing
    rules = _rules(listing)
    assert {name: number for name, (number, _) in rules.items()} == OLD_DENIED[arch]  # none dropped, none added
    assert rules["clone3"][1] == ["action ERRNO(38);"]  # ENOSYS: the C library falls back to clone
    assert _only_with_newuser(rules["clone"][1]) and _only_with_newuser(rules["unshare"][1]), listing
    assert "setns" not in rules and "execve" not in rules


def test_the_bpf_program_is_what_bwrap_reads():
    program = seccomp_filter.bpf_program()
    assert len(program) % 8 == 0 and 8 < len(program) < 8 * 64  # struct sock_filter: 8 bytes per instruction
    plan = json.loads(bwrap.launch_command(["--unshare-pid"], ["/bin/true"], [], uid=200_000)[-1])
    assert bytes.fromhex(plan["seccomp"]) == program
    assert json.loads(bwrap.launch_command(["--unshare-pid"], ["/bin/true"], [], uid=None)[-1])["seccomp"] == ""


# Loads the native filter into this process (libseccomp sets no_new_privs first), then tries each call.
LIVE = r"""
import ctypes, os, platform
import pyseccomp
from course_utils.lab.grading.seccomp_filter import CLONE_NEWUSER, build
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
number = lambda name: pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name)
def attempt(label, *args):
    ctypes.set_errno(0)
    result = libc.syscall(*[ctypes.c_long(a) for a in args])
    if result == 0 and label.startswith("clone "):  # the child of a clone that went through
        os._exit(0)
    if result > 0 and label.startswith("clone "):
        os.waitpid(result, 0)
    print(label + ":", "ok" if result >= 0 else os.strerror(ctypes.get_errno()))
build().load()
attempt("getpid", number("getpid"))
attempt("unshare nothing", number("unshare"), 0)
attempt("unshare newuser", number("unshare"), CLONE_NEWUSER)
attempt("clone plain", number("clone"), 17, 0, 0, 0, 0)  # SIGCHLD: a fork
attempt("clone newuser", number("clone"), CLONE_NEWUSER | 17, 0, 0, 0, 0)
attempt("clone3", number("clone3"), 0, 0)
if platform.machine() == "x86_64":
    attempt("x32 getpid", 0x40000000 | number("getpid"))
"""


def test_loaded_the_filter_decides_as_the_policy_says():
    result = subprocess.run([sys.executable, "-c", LIVE], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    expected = ["getpid: ok", "unshare nothing: ok", f"unshare newuser: {os.strerror(1)}", "clone plain: ok",
                f"clone newuser: {os.strerror(1)}", f"clone3: {os.strerror(38)}"]
    if os.uname().machine == "x86_64":
        expected.append(f"x32 getpid: {os.strerror(1)}")  # another ABI: EPERM, where x32 would say ENOSYS
    assert result.stdout.splitlines() == expected


@pytest.fixture
def no_libseccomp(monkeypatch):
    """As on a machine without libseccomp.so.2: pyseccomp is imported afresh and finds no library."""
    find = ctypes.util.find_library
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None if name == "seccomp" else find(name))
    monkeypatch.delitem(sys.modules, "pyseccomp", raising=False)


def test_without_libseccomp_the_grader_run_by_root_refuses_and_names_what_to_install(no_libseccomp, monkeypatch,
                                                                                      tmp_path, capsys):
    assert "libseccomp2" in seccomp_filter.policy_problem()
    with pytest.raises(RuntimeError, match="libseccomp2"):  # never a kernel run by root without the filter
        bwrap.launch_command([], ["/bin/true"], [], uid=200_000)
    monkeypatch.setattr(sandbox, "bwrap_path", lambda: "/usr/bin/bwrap")  # past the bwrap check, anywhere
    monkeypatch.setattr(sandbox, "runs_as_own_uid", lambda: True)
    assert "seccomp filter cannot be built" in sandbox.isolation_problem()
    assert cli_main(["grade", str(tmp_path), "--out", str(tmp_path / "grades.csv")]) == 2
    stderr = capsys.readouterr().err
    assert "libseccomp2" in stderr and "--no-sandbox" in stderr, stderr
    assert not (tmp_path / "grades.csv").exists()


def test_without_libseccomp_a_grader_run_by_another_user_needs_no_filter(no_libseccomp, monkeypatch):
    monkeypatch.setattr(sandbox, "runs_as_own_uid", lambda: False)  # bwrap's own --disable-userns does it
    assert "seccomp" not in (sandbox.isolation_problem() or "")
    assert json.loads(bwrap.launch_command([], ["/bin/true"], [], uid=None)[-1])["seccomp"] == ""  # no raise


def test_without_the_binding_the_problem_says_pip_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyseccomp", None)  # import pyseccomp raises ImportError
    assert "pip install pyseccomp" in seccomp_filter.policy_problem()


def test_an_unknown_architecture_is_refused_by_name():
    with pytest.raises(ValueError, match="arch"):
        seccomp_filter.describe("pdp11")
    with pytest.raises(TypeError, match="arch"):
        seccomp_filter.describe(64)


def test_a_libseccomp_that_does_not_know_clone3_is_refused(monkeypatch):
    """An old libseccomp would leave clone3, and so new user namespaces, allowed: it is not used."""
    import pyseccomp

    known = pyseccomp.resolve_syscall
    monkeypatch.setattr(pyseccomp, "resolve_syscall", lambda arch, name: -10 if name == "clone3" else known(arch, name))
    assert "clone3: 2.5 or newer is needed" in seccomp_filter.policy_problem()
