"""The sandbox each submission's kernel runs in: bubblewrap, an unprivileged uid, one cgroup.

``Jail(memory_mb, processes, secrets)`` prepares, for one kernel: a socket folder (the only host
folder the kernel can write to, and only until it is ready; the kernel protocol runs over unix
sockets there), a memory + pids cgroup holding all the submission's processes together (where
``/sys/fs/cgroup`` is writable), and ``jail.command(argv, env)``, the command line that runs a small
launcher (join the cgroups; as root, switch to a uid of the kernel's own where it can reach every
folder it needs) which execs

    bwrap --unshare-user --uid 65534 --gid 65534 --disable-userns --unshare-pid --unshare-net
          --unshare-ipc --unshare-uts --unshare-cgroup-try --die-with-parent --new-session --clearenv
          read-only: /usr /etc, the Python installation, its packages, the course_utils folder only
          private: /proc /dev, a small tmpfs as /tmp and as the working folder (HOME)
          -- argv

so the kernel sees no grader files, job files, hidden tests, other submissions, environment
variables or processes, has no network (not even loopback is reachable from outside), cannot
signal anything outside, and everything it starts dies with it. ``jail.close()`` kills what is
left in the cgroup and removes it and the socket folder.

Where the kernel cannot get a uid of its own (root, and a Python under a folder only root may enter,
such as ``/root``), uid 65534 inside maps to the grader's uid, without any capability outside: the
read-only mounts protect the files. Without a writable cgroup, the memory of a submission is bounded
by ``RLIMIT_AS`` per process times ``RLIMIT_NPROC`` processes of its uid (``boot.py``), and root's
processes are not counted at all; the summary says so.

Leaves out: the kernel protocol (``kernel.py``) and the per-process limits (``boot.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import itertools
import tempfile
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PREFIX = "course-lab-"
WORKDIR = "/home/student"  # the kernel's working folder and HOME, inside the sandbox
TMPFS_BYTES = 256 << 20
UID_BASE = 200_000
SOCKET_ROOT = "/tmp"
SOCKET_PREFIX = "course-lab-sockets-"
_KERNELS = itertools.count()


def bwrap_path() -> str | None:
    """The ``bwrap`` executable, or ``None`` where bubblewrap is not installed (e.g. macOS)."""
    return shutil.which("bwrap")


def isolation_problem() -> str | None:
    """Why sandboxed grading cannot run here, or ``None``: ``'bwrap not found (apt-get install bubblewrap)'``."""
    if not sys.platform.startswith("linux"):
        return f"the sandbox needs Linux (bubblewrap); this is {sys.platform}"
    if bwrap_path() is None:
        return "bwrap not found (install bubblewrap: apt-get install bubblewrap)"
    trial = subprocess.run([bwrap_path(), "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
                            "--die-with-parent", "--ro-bind", "/", "/", "--", "/bin/sh", "-c", "exit 0"],
                           capture_output=True, text=True, timeout=30)
    if trial.returncode != 0:
        return f"bwrap cannot create its namespaces here ({trial.stderr.strip()[:200]})"
    return None


def cgroups_writable() -> bool:
    """Whether this process may create memory and pids cgroups (cgroup v1 layout)."""
    return all(os.access(CGROUP_ROOT / c, os.W_OK) and (CGROUP_ROOT / c / "cgroup.procs").exists()
               for c in ("memory", "pids"))


# Runs as the grader's user just before bwrap: join the cgroups, drop to the sandbox's own uid where
# it can reach every bound folder, and exec bwrap.
_LAUNCHER = r"""
import json, os, sys
plan = json.loads(sys.argv[1])
for procs in plan["cgroups"]:
    with open(procs, "w") as handle:
        handle.write(str(os.getpid()))
args = plan["args"]
if plan["uid"] is not None:
    os.setgroups([])
    os.setresgid(plan["uid"], plan["uid"], plan["uid"])
    os.setresuid(plan["uid"], plan["uid"], plan["uid"])
os.execv(plan["bwrap"], [plan["bwrap"], *args])
"""


def runs_as_own_uid() -> bool:
    """Whether, run by root, the kernels get a uid of their own (every bound folder is world-reachable)."""
    return os.geteuid() == 0 and all(_reachable_by_anyone(p) for p in _read_only_paths())


def processes_capped() -> bool:
    """Whether a submission's processes are capped together: by the pids cgroup, or by ``RLIMIT_NPROC``
    on a uid that is not root outside the sandbox."""
    return cgroups_writable() or os.geteuid() != 0 or runs_as_own_uid()


def _read_only_paths() -> list[str]:
    """Folders the kernel sees, read-only: the system, this Python and its packages, and ``course_utils``
    itself (not the folder holding it, which may be the course repository with grader files)."""
    import course_utils

    package = str(Path(course_utils.__file__).resolve().parent)
    paths = ["/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", sys.base_prefix, sys.prefix,
             os.path.dirname(os.path.realpath(sys.executable))]
    paths += [p for p in sys.path if "site-packages" in p or "dist-packages" in p]
    real = sorted({os.path.realpath(p) for p in paths if os.path.isdir(p)} | {package})
    return [p for p in real if not any(p.startswith(q.rstrip("/") + "/") for q in real if q != p)]


def _reachable_by_anyone(path: str) -> bool:
    """Whether any user may reach ``path``: every folder above it is world-searchable."""
    here = Path(path).resolve()
    return all(os.stat(p).st_mode & 0o001 for p in (here, *here.parents))


def _kill_cgroup(group: Path) -> None:
    for _ in range(50):
        try:
            pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except OSError:
            return
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)


def _remove_cgroup(group: Path) -> None:
    _kill_cgroup(group)
    for _ in range(50):
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)


def sweep_stale_cgroups() -> None:
    """Remove cgroups left by a grader that was killed (their owner's pid is gone)."""
    for controller in ("memory", "pids"):
        for group in (CGROUP_ROOT / controller).glob(CGROUP_PREFIX + "*"):
            owner = group.name[len(CGROUP_PREFIX):].split("-")[0]
            if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                _remove_cgroup(group)
    for folder in Path(SOCKET_ROOT).glob(SOCKET_PREFIX + "*"):
        owner = folder.name[len(SOCKET_PREFIX):].split("-")[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            shutil.rmtree(folder, ignore_errors=True)


def kernel_environment(workdir: str, tmpdir: str, limits) -> dict[str, str]:
    """The kernel's whole environment: a few variables of the grader's, then fixed ones (threads, HOME, ...)."""
    import course_utils

    keep = ("PATH", "LANG", "LC_ALL", "TZ", "VIRTUAL_ENV") + (("COURSE_LAB_RUN",) if not limits.sandbox else ())
    env = {k: os.environ[k] for k in keep if k in os.environ}
    threads = str(limits.threads)
    env.update(HOME=workdir, TMPDIR=tmpdir, MPLBACKEND="Agg", PYTHONHASHSEED="0", MALLOC_ARENA_MAX="2",
               PYTHONPATH=str(Path(course_utils.__file__).resolve().parents[1]), PYTHONNOUSERSITE="1",
               OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads,
               JUPYTER_PLATFORM_DIRS="1", PYDEVD_DISABLE_FILE_VALIDATION="1")
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
        # As root, run the kernel under a uid of its own when it can reach the Python it needs;
        # otherwise (e.g. a Python under /root) bwrap maps uid 65534 inside onto the grader's uid,
        # without any capability outside its namespaces.
        self.own_uid = runs_as_own_uid()
        # a short path (unix socket names are limited to 107 bytes), the only host folder it may write
        self.sockets = tempfile.mkdtemp(prefix=f"{SOCKET_PREFIX}{os.getpid()}-", dir=SOCKET_ROOT)
        if self.own_uid:
            os.chown(self.sockets, self.uid, self.uid)
        self.groups: list[Path] = []
        if cgroups_writable():
            try:
                self._make_groups(f"{CGROUP_PREFIX}{os.getpid()}-{os.path.basename(self.sockets)}")
            except OSError:
                for group in self.groups:
                    _remove_cgroup(group)
                self.groups = []

    def _make_groups(self, name: str) -> None:
        for controller, limit_file, value in (("memory", "memory.limit_in_bytes", self.memory_mb << 20),
                                              ("pids", "pids.max", self.processes)):
            group = CGROUP_ROOT / controller / name
            group.mkdir()
            self.groups.append(group)
            (group / limit_file).write_text(str(value))
        swap = self.groups[0] / "memory.memsw.limit_in_bytes"
        if swap.exists():
            swap.write_text(str(self.memory_mb << 20))

    @property
    def cgroup(self) -> bool:
        return bool(self.groups)

    def command(self, inner: list[str], env: dict[str, str]) -> list[str]:
        """The full command line: join the cgroup, drop to ``self.uid``, then ``bwrap ... inner``."""
        binds = _read_only_paths()
        args = ["--unshare-user", "--uid", "65534", "--gid", "65534", "--disable-userns", "--unshare-pid",
                "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox",
                "--die-with-parent", "--new-session", "--clearenv"]
        # The private /tmp first: a course installed under /tmp (a clone, a venv) is bound on top of it
        # below, instead of being hidden by it.
        args += ["--proc", "/proc", "--dev", "/dev", "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp"]
        for path in binds:
            args += ["--ro-bind", path, path]
        for link in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(link):
                args += ["--symlink", os.readlink(link), link]
        args += ["--size", str(TMPFS_BYTES), "--tmpfs", WORKDIR, "--chdir", WORKDIR]
        for secret in self.secrets:  # hide grader folders that happen to lie under a bound path
            if os.path.isdir(secret) and any(secret.startswith(p.rstrip("/") + "/") for p in binds):
                args += ["--tmpfs", secret]
        args += ["--bind", self.sockets, self.sockets]
        for key, value in env.items():
            args += ["--setenv", key, value]
        plan = {"bwrap": bwrap_path(), "args": [*args, "--", *inner], "cgroups": [str(g / "cgroup.procs") for g in self.groups],
                "uid": self.uid if self.own_uid else None}
        return [sys.executable, "-I", "-S", "-c", _LAUNCHER, json.dumps(plan)]

    def seal(self) -> None:
        """Once the kernel is ready: no more files in the socket folder (it stays connectable)."""
        if self.own_uid:
            os.chown(self.sockets, 0, 0)
        os.chmod(self.sockets, 0o755)

    def close(self) -> None:
        for group in self.groups:
            _remove_cgroup(group)
        shutil.rmtree(self.sockets, ignore_errors=True)

