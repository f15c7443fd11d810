"""The sandbox each submission's kernel runs in: bubblewrap, an unprivileged uid, one cgroup.

``Jail(memory_mb, processes, secrets)`` prepares, for one kernel: a socket folder (the only host
folder the kernel can write to, and only until it is ready; the kernel protocol runs over unix
sockets there), a uid of its own (``UID_BASE + ...``, where the grader is root), a memory + pids
cgroup holding all the submission's processes together (``cgroups.py``, where ``/sys/fs/cgroup`` is
writable), and ``jail.command(argv, env)``, the command line that runs a small launcher (join the
cgroups) which execs bwrap (``bwrap.py`` says which namespaces and mounts, and how the kernel drops
to its uid; ``seccomp_filter.py`` the filter that keeps a kernel run by root out of user namespaces).

So the kernel sees no grader files, job files, hidden tests, other submissions, environment
variables or processes, has no network (not even loopback is reachable from outside), cannot
signal anything outside, and everything it starts dies with it. ``jail.seal()``, once the kernel's
sockets exist, gives the socket folder back to root, mode 555: the kernel can connect there but not
create, rename or delete anything, nor change the folder's mode. ``jail.close()`` kills what is
left in the cgroup and removes it and the socket folder; ``sweep_stale_cgroups()`` does the same
for a grader that was killed.

Without a writable cgroup, the memory of a submission is bounded by ``RLIMIT_AS`` per process times
``RLIMIT_NPROC`` processes of its uid (``boot.py``); the summary says so.

Limits: run by another user, the kernel owns the socket folder (the grader's uid) and so could make
it writable again after ``seal()``; ``RLIMIT_FSIZE`` still bounds each file it writes.

Leaves out: the kernel protocol (``kernel.py``) and the per-process limits (``boot.py``).
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from course_utils.lab.grading.bwrap import WORKDIR, bwrap_args, bwrap_path, launch_command, unreadable_by_anyone
from course_utils.lab.grading.cgroups import (
    CGROUP_PREFIX,
    cgroup_layout,
    cgroup_parents,
    cgroups_writable,
    make_groups,
    remove_cgroup,
)
from course_utils.lab.grading.seccomp_filter import policy_problem

__all__ = [  # what the grader, its tests and benchmarks use; the rest is in bwrap.py and cgroups.py
    "WORKDIR",
    "Jail",
    "cgroup_layout",
    "cgroup_parents",
    "cgroups_writable",
    "isolation_problem",
    "kernel_environment",
    "launcher_environment",
    "processes_capped",
    "runs_as_own_uid",
    "sweep_stale_cgroups",
]

UID_BASE = 200_000
SOCKET_ROOT = "/tmp"
SOCKET_PREFIX = "course-lab-sockets-"
_KERNELS = itertools.count()


def isolation_problem() -> str | None:
    """Why sandboxed grading cannot run here, or ``None``: ``'bwrap not found (apt-get install bubblewrap)'``."""
    if not sys.platform.startswith("linux"):
        return f"the sandbox needs Linux (bubblewrap); this is {sys.platform}"
    if bwrap_path() is None:
        return "bwrap not found (install bubblewrap: apt-get install bubblewrap)"
    filter_problem = policy_problem() if runs_as_own_uid() else None  # the filter refusing user namespaces
    if filter_problem is not None:
        return f"the sandbox's seccomp filter cannot be built: {filter_problem}"
    user = [] if runs_as_own_uid() else ["--unshare-user"]  # the namespaces Jail.command asks for
    trial = subprocess.run(
        [
            bwrap_path(),
            *user,
            "--unshare-pid",
            "--unshare-net",
            "--unshare-ipc",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "--",
            "/bin/sh",
            "-c",
            "exit 0",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if trial.returncode != 0:
        return f"bwrap cannot create its namespaces here ({trial.stderr.strip()[:200]})"
    if runs_as_own_uid() and unreadable_by_anyone():
        return (
            f"the kernel's unprivileged uid could not read {unreadable_by_anyone()[0]} "
            "(make it readable by all users: chmod o+rX)"
        )
    return None


def runs_as_own_uid() -> bool:
    """Whether the kernels get a uid of their own: the grader is root, so bwrap runs without a user
    namespace and the kernel drops to ``Jail.uid`` inside (it never runs as root)."""
    return os.geteuid() == 0


def processes_capped() -> bool:
    """Whether a submission's processes are capped together: by the pids cgroup, or by ``RLIMIT_NPROC``
    on a uid that is not root outside the sandbox."""
    return cgroups_writable() or os.geteuid() != 0 or runs_as_own_uid()


def _remove_socket_folder(folder: str) -> None:
    try:
        os.chmod(folder, 0o700)  # sealed (555): a grader that is not root could not empty it
    except OSError:
        pass
    shutil.rmtree(folder, ignore_errors=True)


def _gone(pid: str) -> bool:
    """Whether process ``pid`` has ended: no such process, or a zombie (dead, not yet reaped by its new
    parent; right after a grader is killed its workers can stay zombies for a while on a busy machine)."""
    if not pid.isdigit():
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def sweep_stale_cgroups() -> None:
    """Remove cgroups left by a grader that was killed (their owner's process has ended)."""
    for parent in cgroup_parents():
        for group in parent.glob(CGROUP_PREFIX + "*"):
            if _gone(group.name[len(CGROUP_PREFIX) :].split("-")[0]):
                remove_cgroup(group)
    for folder in Path(SOCKET_ROOT).glob(SOCKET_PREFIX + "*"):
        if _gone(folder.name[len(SOCKET_PREFIX) :].split("-")[0]):
            _remove_socket_folder(str(folder))


def kernel_environment(workdir: str, tmpdir: str, limits) -> dict[str, str]:
    """The kernel's whole environment: a few variables of the grader's, then fixed ones (threads, HOME, ...)."""
    import course_utils

    keep = ("PATH", "LANG", "LC_ALL", "TZ", "VIRTUAL_ENV") + (("COURSE_LAB_RUN",) if not limits.sandbox else ())
    env = {k: os.environ[k] for k in keep if k in os.environ}
    threads = str(limits.threads)
    env.update(
        HOME=workdir,
        TMPDIR=tmpdir,
        MPLBACKEND="Agg",
        PYTHONHASHSEED="0",
        MALLOC_ARENA_MAX="2",
        PYTHONPATH=str(Path(course_utils.__file__).resolve().parents[1]),
        PYTHONNOUSERSITE="1",
        OMP_NUM_THREADS=threads,
        MKL_NUM_THREADS=threads,
        OPENBLAS_NUM_THREADS=threads,
        JUPYTER_PLATFORM_DIRS="1",
        PYDEVD_DISABLE_FILE_VALIDATION="1",
    )
    return env


def launcher_environment() -> dict[str, str]:
    """The environment of the process that starts bwrap (bwrap clears it for the kernel)."""
    keep = ("PATH", "COURSE_LAB_RUN")  # COURSE_LAB_RUN: a label a caller may put on all its processes
    return {k: os.environ[k] for k in keep if k in os.environ}


class Jail:
    """One kernel's sandbox: ``jail = Jail(limits, secrets=[...]); argv = jail.command(inner)``."""

    def __init__(self, memory_mb: int, processes: int, secrets: list[str] = ()):
        self.memory_mb, self.processes = memory_mb, processes
        self.secrets = [os.path.realpath(s) for s in secrets if s]
        self.uid = UID_BASE + os.getpid() % 100_000 * 8 + next(_KERNELS) % 8  # distinct per concurrent kernel
        # As root, the kernel drops to this uid inside the sandbox (never root); otherwise bwrap maps
        # uid 65534 inside onto the grader's uid, without any capability outside its namespaces.
        self.own_uid = runs_as_own_uid()
        # a short path (unix socket names are limited to 107 bytes), the only host folder it may write
        self.sockets = tempfile.mkdtemp(prefix=f"{SOCKET_PREFIX}{os.getpid()}-", dir=SOCKET_ROOT)
        if self.own_uid:
            os.chown(self.sockets, self.uid, self.uid)
        self.groups: list[Path] = []
        if cgroups_writable():
            name = f"{CGROUP_PREFIX}{os.getpid()}-{os.path.basename(self.sockets)}"
            self.groups = make_groups(name, memory_mb, processes)

    @property
    def cgroup(self) -> bool:
        return bool(self.groups)

    def command(self, inner: list[str], env: dict[str, str]) -> list[str]:
        """The full command line: join the cgroup, then ``bwrap ...`` and, as root, drop to ``self.uid``
        inside before ``inner`` starts."""
        args = bwrap_args(self.own_uid, self.secrets, self.sockets, env)
        return launch_command(args, inner, self.groups, self.uid if self.own_uid else None)

    def seal(self) -> None:
        """Once the kernel is ready: no more files in the socket folder (it stays connectable).

        Root-owned and mode 555, the kernel's own uid can neither add, rename or remove entries nor
        change the mode back (only the owner may)."""
        if self.own_uid:
            os.chown(self.sockets, 0, 0)
        os.chmod(self.sockets, 0o555)

    def close(self) -> None:
        for group in self.groups:
            remove_cgroup(group)
        _remove_socket_folder(self.sockets)
