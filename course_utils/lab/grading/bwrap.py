"""The command line that starts one kernel inside bubblewrap, and what the kernel sees there.

``bwrap_args(own_uid, secrets, sockets, env)`` gives bwrap's options; ``launch_command(args, inner,
groups, uid)`` wraps them with ``inner`` (the kernel's command) into the command the kernel manager
runs: a small launcher (``_LAUNCHER``: join the cgroups, hand bwrap the seccomp filter, exec bwrap)
and, for a grader run by root, the privilege drop (``_DROP``) that runs first inside the sandbox.
Run by root, that is

    bwrap --unshare-pid --unshare-net --unshare-ipc --unshare-uts --unshare-cgroup-try
          --die-with-parent --new-session --clearenv
          read-only: /usr /etc, the Python installation, its packages, the course_utils folder only
          (the folders above them are made by bwrap, mode 755, so a Python under /root is reachable)
          private: /proc /dev, small tmpfs as /tmp, /dev/shm and the working folder (HOME)
          -- python -I -S -c DROP uid -- argv

where bwrap, before it starts DROP, installs the seccomp filter of ``seccomp_filter.py`` (given as
``--seccomp FD``: it refuses new user namespaces, what ``--disable-userns`` does, which bwrap allows
only with ``--unshare-user``), and DROP, still root inside the new namespaces, hands the working
folder to the kernel's own uid, sets ``no_new_privs``, drops every group, gid and uid to it (which
clears every capability) and execs the kernel: the kernel never runs as root, inside or outside, and
reads only what any user may read (``/etc/shadow`` is not readable). Run by another user, it is
``bwrap --unshare-user --uid 65534 --gid 65534 --disable-userns ...`` with the same mounts: the
kernel is then the grader's own uid outside, without any capability there.

Leaves out: the socket folder, uid and cgroups of one kernel (``sandbox.Jail``, ``cgroups.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from course_utils.lab.grading.seccomp_filter import bpf_program

WORKDIR = "/home/student"  # the kernel's working folder and HOME, inside the sandbox
TMPFS_BYTES = 256 << 20


def bwrap_path() -> str | None:
    """The ``bwrap`` executable, or ``None`` where bubblewrap is not installed (e.g. macOS)."""
    return shutil.which("bwrap")


# Runs as the grader's user just before bwrap: join the cgroups, put the compiled seccomp filter (if
# any) in a file descriptor that bwrap inherits and reads (--seccomp FD), and exec bwrap.
_LAUNCHER = r"""
import json, os, sys
plan = json.loads(sys.argv[1])
for procs in plan["cgroups"]:
    with open(procs, "w") as handle:
        handle.write(str(os.getpid()))
args = plan["args"]
if plan["seccomp"]:
    fd = os.memfd_create("seccomp", 0)  # no close-on-exec: bwrap reads it, then closes it
    program = bytes.fromhex(plan["seccomp"])
    if os.write(fd, program) != len(program):
        sys.exit("sandbox: cannot pass the seccomp filter to bwrap")
    os.lseek(fd, 0, os.SEEK_SET)
    args = ["--seccomp", str(fd), *args]
os.execv(plan["bwrap"], [plan["bwrap"], *args])
"""

# Runs first inside the sandbox when the grader is root (bwrap without a user namespace, so this is
# still root, with its capabilities, inside the new namespaces, under the seccomp filter): give the
# working folder to the kernel's uid, then drop to that uid for good and exec the kernel.
#   python -I -S -c DROP UID WORKDIR -- ARGV...
_DROP = r"""
import ctypes, os, sys
uid, home, argv = int(sys.argv[1]), sys.argv[2], sys.argv[4:]
os.chown(home, uid, uid)
os.chmod(home, 0o700)
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS: no setuid way back
    sys.exit("sandbox: cannot set no_new_privs")
os.setgroups([])
os.setresgid(uid, uid, uid)
os.setresuid(uid, uid, uid)  # every capability goes with uid 0
try:
    os.setuid(0)
except PermissionError:
    pass
else:
    sys.exit("sandbox: the uid switch did not hold")
os.execv(argv[0], argv)
"""


def _read_only_paths() -> list[str]:
    """Folders the kernel sees, read-only: the system, this Python and its packages, ``course_utils``
    itself and the course's ``data/`` folder (the corpus manifest, the trained checkpoint), but not the
    folder holding them, which may be the course repository with grader files."""
    import course_utils
    from course_utils.corpus import DATA_DIR

    package = str(Path(course_utils.__file__).resolve().parent)
    paths = [
        "/usr",
        "/etc",
        "/bin",
        "/sbin",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        sys.base_prefix,
        sys.prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
    ]
    paths += [p for p in sys.path if "site-packages" in p or "dist-packages" in p]
    paths.append(str(DATA_DIR))
    real = sorted({os.path.realpath(p) for p in paths if os.path.isdir(p)} | {package})
    return [p for p in real if not any(p.startswith(q.rstrip("/") + "/") for q in real if q != p)]


def unreadable_by_anyone() -> list[str]:
    """Bound folders (and the Python executable) that another user may not read or enter: the
    kernel's own uid could not start. The folders above them need not be open (bwrap makes them)."""
    paths = [*_read_only_paths(), os.path.realpath(sys.executable)]
    return [p for p in paths if os.stat(p).st_mode & 0o005 != 0o005]


def _parents_to_make(binds: list[str]) -> list[str]:
    """The folders above the bound ones, outermost first, that bwrap must make (world-searchable)."""
    made = set()
    for path in binds:
        for parent in Path(path).parents:
            text = str(parent)
            if text not in ("/", "/tmp") and not any(text == b or text.startswith(b.rstrip("/") + "/") for b in binds):
                made.add(text)
    return sorted(made, key=lambda p: (p.count("/"), p))


def bwrap_args(own_uid: bool, secrets: list[str], sockets: str, env: dict[str, str]) -> list[str]:
    """bwrap's options for one kernel: new namespaces, the read-only binds, private tmpfs folders, the
    ``secrets`` hidden, the socket folder ``sockets`` writable, ``env`` as the whole environment.
    ``own_uid``: the grader is root and the kernel drops to a uid of its own (no user namespace)."""
    binds = _read_only_paths()
    args = [
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
    ]
    if not own_uid:  # a user namespace: uid 65534 inside is the grader's uid outside
        args = ["--unshare-user", "--uid", "65534", "--gid", "65534", "--disable-userns", *args]
    # The private /tmp first: a course installed under /tmp (a clone, a venv) is bound on top of it
    # below, instead of being hidden by it. As root, bwrap makes these root-owned: /tmp and
    # /dev/shm open to all (sticky), the folders above the bound ones searchable by all.
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp"]
    if own_uid:
        args += ["--perms", "1777", "--size", str(TMPFS_BYTES), "--tmpfs", "/dev/shm"]
        for parent in _parents_to_make(binds):
            args += ["--perms", "0755", "--dir", parent]
    for path in binds:
        args += ["--ro-bind", path, path]
    for link in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
    args += ["--size", str(TMPFS_BYTES), "--tmpfs", WORKDIR, "--chdir", WORKDIR]
    for secret in secrets:  # hide grader folders that happen to lie under a bound path
        if os.path.isdir(secret) and any(secret.startswith(p.rstrip("/") + "/") for p in binds):
            args += ["--tmpfs", secret]
    args += ["--bind", sockets, sockets]
    for key, value in env.items():
        args += ["--setenv", key, value]
    return args


def launch_command(args: list[str], inner: list[str], groups: list[Path], uid: int | None) -> list[str]:
    """The full command line: join ``groups`` (their ``cgroup.procs``), then ``bwrap ARGS --`` and, with
    a ``uid`` (the grader is root), the seccomp filter and the drop to that uid inside before ``inner``
    starts (``RuntimeError`` naming what to install where libseccomp is missing: never without it)."""
    seccomp = ""
    if uid is not None:
        inner = [sys.executable, "-I", "-S", "-c", _DROP, str(uid), WORKDIR, "--", *inner]
        seccomp = bpf_program().hex()
    plan = {
        "bwrap": bwrap_path(),
        "args": [*args, "--", *inner],
        "cgroups": [str(g / "cgroup.procs") for g in groups],
        "seccomp": seccomp,
    }
    return [sys.executable, "-I", "-S", "-c", _LAUNCHER, json.dumps(plan)]
