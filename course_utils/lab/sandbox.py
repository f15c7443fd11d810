"""The sandbox each submission's kernel runs in: bubblewrap, an unprivileged uid, one cgroup.

``Jail(memory_mb, processes, secrets)`` prepares, for one kernel: a socket folder (the only host
folder the kernel can write to, and only until it is ready; the kernel protocol runs over unix
sockets there), a memory + pids cgroup holding all the submission's processes together (where
``/sys/fs/cgroup`` is writable), and ``jail.command(argv, env)``, the command line that runs a small
launcher (join the cgroups) which execs bwrap. Run by root, that is

    bwrap --unshare-pid --unshare-net --unshare-ipc --unshare-uts --unshare-cgroup-try
          --die-with-parent --new-session --clearenv
          read-only: /usr /etc, the Python installation, its packages, the course_utils folder only
          (the folders above them are made by bwrap, mode 755, so a Python under /root is reachable)
          private: /proc /dev, small tmpfs as /tmp, /dev/shm and the working folder (HOME)
          -- python -I -S -c DROP uid -- argv

where DROP, still root inside the new namespaces, hands the working folder to the Jail's own uid
(``UID_BASE + ...``), sets ``no_new_privs``, installs a seccomp filter that refuses new user
namespaces (what ``--disable-userns`` does, which bwrap allows only with ``--unshare-user``), drops
every group, gid and uid to it (which clears every capability) and execs the kernel: the kernel
never runs as root, inside or outside, and reads only what any user may read (``/etc/shadow`` is
not readable). Run by another user, it is
``bwrap --unshare-user --uid 65534 --gid 65534 --disable-userns ...`` with the same mounts: the
kernel is then the grader's own uid outside, without any capability there.

So the kernel sees no grader files, job files, hidden tests, other submissions, environment
variables or processes, has no network (not even loopback is reachable from outside), cannot
signal anything outside, and everything it starts dies with it. ``jail.seal()``, once the kernel's
sockets exist, gives the socket folder back to root, mode 555: the kernel can connect there but not
create, rename or delete anything, nor change the folder's mode. ``jail.close()`` kills what is
left in the cgroup and removes it and the socket folder.

Cgroups: v1 (a ``memory`` and a ``pids`` hierarchy, ``memory.limit_in_bytes`` and
``memory.memsw.limit_in_bytes``, ``pids.max``) or v2 (one group under the unified root with
``memory.max``, ``memory.swap.max`` = 0 where swap is accounted, ``pids.max``, the controllers
enabled in the root's ``cgroup.subtree_control``; killed through ``cgroup.kill`` where the kernel has
it). The root is ``/sys/fs/cgroup`` or ``$COURSE_LAB_CGROUP_ROOT``: on cgroup v2 as another user
than root, point it at a subtree delegated to that user (systemd ``Delegate=yes``) that holds no
process itself.

Without a writable cgroup, the memory of a submission is bounded by ``RLIMIT_AS`` per process times
``RLIMIT_NPROC`` processes of its uid (``boot.py``); the summary says so.

Limits: the seccomp filter knows x86_64 and aarch64 only; elsewhere a kernel run by root may create
a user namespace of its own, where it is "root" over nothing (the mounts it inherits stay read-only
and locked, files keep their owners). Run by another user, the kernel owns the socket folder (the
grader's uid) and so could make it writable again after ``seal()``; ``RLIMIT_FSIZE`` still bounds
each file it writes.

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
CGROUP_ROOT_ENV = "COURSE_LAB_CGROUP_ROOT"
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
    if runs_as_own_uid() and _unreadable_by_anyone():
        return (
            f"the kernel's unprivileged uid could not read {_unreadable_by_anyone()[0]} "
            "(make it readable by all users: chmod o+rX)"
        )
    return None


def cgroup_root() -> Path:
    """Where the cgroup file systems are: ``/sys/fs/cgroup``, or ``$COURSE_LAB_CGROUP_ROOT`` (a cgroup v2
    subtree delegated to the grader, or a fake tree of plain files in the tests)."""
    return Path(os.environ.get(CGROUP_ROOT_ENV) or CGROUP_ROOT)


def cgroup_layout(root: Path | None = None) -> str | None:
    """``'v1'`` (a ``memory`` and a ``pids`` hierarchy under ``root``, both writable), ``'v2'`` (``root``
    is a unified hierarchy whose ``cgroup.controllers`` lists memory and pids, writable), or ``None``.
    v1 wins where both would do (a hybrid machine's ``unified`` mount has no controllers anyway)."""
    root = cgroup_root() if root is None else root
    if all(os.access(root / c, os.W_OK) and (root / c / "cgroup.procs").exists() for c in ("memory", "pids")):
        return "v1"
    try:
        controllers = (root / "cgroup.controllers").read_text().split()
    except OSError:
        return None
    if {"memory", "pids"} <= set(controllers) and os.access(root, os.W_OK) and (root / "cgroup.procs").exists():
        return "v2"
    return None


def cgroups_writable(root: Path | None = None) -> bool:
    """Whether this process may create memory and pids cgroups (cgroup v1 or v2 layout)."""
    return cgroup_layout(root) is not None


def cgroup_parents(root: Path | None = None) -> list[Path]:
    """The folders the submissions' cgroups are made in: ``[root/memory, root/pids]`` (v1), ``[root]`` (v2)."""
    root = cgroup_root() if root is None else root
    layout = cgroup_layout(root)
    if layout == "v1":
        return [root / "memory", root / "pids"]
    return [root] if layout == "v2" else []


# Runs as the grader's user just before bwrap: join the cgroups and exec bwrap.
_LAUNCHER = r"""
import json, os, sys
plan = json.loads(sys.argv[1])
for procs in plan["cgroups"]:
    with open(procs, "w") as handle:
        handle.write(str(os.getpid()))
os.execv(plan["bwrap"], [plan["bwrap"], *plan["args"]])
"""

# Runs first inside the sandbox when the grader is root (bwrap without a user namespace, so this is
# still root, with its capabilities, inside the new namespaces): give the working folder to the
# kernel's uid, then drop to that uid for good and exec the kernel.
#   python -I -S -c DROP UID WORKDIR -- ARGV...
_DROP = r"""
import ctypes, os, struct, sys
uid, home, argv = int(sys.argv[1]), sys.argv[2], sys.argv[4:]
os.chown(home, uid, uid)
os.chmod(home, 0o700)
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS: no setuid way back
    sys.exit("sandbox: cannot set no_new_privs")
# What bwrap's --disable-userns does (it needs a user namespace, which this mode leaves out): a
# seccomp filter that refuses clone/unshare with CLONE_NEWUSER (clone3 says ENOSYS, so the C library
# falls back to clone) and any other syscall ABI (i386, x32) on which that would not be checked.
ARCHES = {"x86_64": (0xC000003E, 56, 272, 435), "aarch64": (0xC00000B7, 220, 97, 435)}
if os.uname().machine in ARCHES:
    audit, clone, unshare, clone3 = ARCHES[os.uname().machine]
    LD, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
    ALLOW, EPERM, ENOSYS = 0x7FFF0000, 0x00050001, 0x00050026
    program = [(LD, 4, None), (JEQ, audit, ("next", "eperm")), (LD, 0, None), (JGE, 0x40000000, ("eperm", "next")),
               (JEQ, clone3, ("enosys", "next")), (JEQ, clone, ("flags", "next")), (JEQ, unshare, ("flags", "allow")),
               (LD, 16, None), (JSET, 0x10000000, ("eperm", "allow")),  # flags: args[0], low 32 bits
               (RET, ALLOW, None), (RET, EPERM, None), (RET, ENOSYS, None)]
    where = {"flags": 7, "allow": 9, "eperm": 10, "enosys": 11}
    code = b""
    for at, (op, k, jumps) in enumerate(program):
        jt, jf = [0 if j == "next" else where[j] - at - 1 for j in jumps] if jumps else (0, 0)
        code += struct.pack("=HBBI", op, jt, jf, k)
    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
    prog = Prog(len(program), code)
    if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        sys.exit("sandbox: cannot install the seccomp filter")
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


def runs_as_own_uid() -> bool:
    """Whether the kernels get a uid of their own: the grader is root, so bwrap runs without a user
    namespace and the kernel drops to ``Jail.uid`` inside (it never runs as root)."""
    return os.geteuid() == 0


def processes_capped() -> bool:
    """Whether a submission's processes are capped together: by the pids cgroup, or by ``RLIMIT_NPROC``
    on a uid that is not root outside the sandbox."""
    return cgroups_writable() or os.geteuid() != 0 or runs_as_own_uid()


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


def _unreadable_by_anyone() -> list[str]:
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


def _new_group(group: Path) -> None:
    """Make a cgroup (the kernel fills it with its interface files; a test's fake tree does it itself)."""
    group.mkdir()


def _drop_group(group: Path) -> None:
    """Remove an empty cgroup (``rmdir``; its interface files go with it)."""
    group.rmdir()


def _kill_cgroup(group: Path) -> None:
    kill = group / "cgroup.kill"  # cgroup v2, Linux 5.14+: every process in it at once, no pid races
    if kill.exists():
        try:
            kill.write_text("1")
        except OSError:
            pass
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
            _drop_group(group)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)


def _remove_socket_folder(folder: str) -> None:
    try:
        os.chmod(folder, 0o700)  # sealed (555): a grader that is not root could not empty it
    except OSError:
        pass
    shutil.rmtree(folder, ignore_errors=True)


def sweep_stale_cgroups() -> None:
    """Remove cgroups left by a grader that was killed (their owner's pid is gone)."""
    for parent in cgroup_parents():
        for group in parent.glob(CGROUP_PREFIX + "*"):
            owner = group.name[len(CGROUP_PREFIX) :].split("-")[0]
            if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                _remove_cgroup(group)
    for folder in Path(SOCKET_ROOT).glob(SOCKET_PREFIX + "*"):
        owner = folder.name[len(SOCKET_PREFIX) :].split("-")[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
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
            try:
                self._make_groups(f"{CGROUP_PREFIX}{os.getpid()}-{os.path.basename(self.sockets)}")
            except OSError:
                for group in self.groups:
                    _remove_cgroup(group)
                self.groups = []

    def _make_groups(self, name: str) -> None:
        root = cgroup_root()
        if cgroup_layout(root) == "v2":
            self._make_v2_group(root, name)
            return
        for controller, limit_file, value in (
            ("memory", "memory.limit_in_bytes", self.memory_mb << 20),
            ("pids", "pids.max", self.processes),
        ):
            group = root / controller / name
            _new_group(group)
            self.groups.append(group)
            (group / limit_file).write_text(str(value))
        swap = self.groups[0] / "memory.memsw.limit_in_bytes"
        if swap.exists():
            swap.write_text(str(self.memory_mb << 20))

    def _make_v2_group(self, root: Path, name: str) -> None:
        """cgroup v2: one group under ``root`` with the memory and pids controllers: the parent hands
        them down (``cgroup.subtree_control``) if it does not yet; no swap beyond the memory limit."""
        enabled = set((root / "cgroup.subtree_control").read_text().split())
        missing = [c for c in ("memory", "pids") if c not in enabled]
        if missing:
            (root / "cgroup.subtree_control").write_text(" ".join("+" + c for c in missing))
        group = root / name
        _new_group(group)
        self.groups.append(group)
        (group / "memory.max").write_text(str(self.memory_mb << 20))
        if (group / "memory.swap.max").exists():
            (group / "memory.swap.max").write_text("0")
        (group / "pids.max").write_text(str(self.processes))

    @property
    def cgroup(self) -> bool:
        return bool(self.groups)

    def command(self, inner: list[str], env: dict[str, str]) -> list[str]:
        """The full command line: join the cgroup, then ``bwrap ...`` and, as root, drop to ``self.uid``
        inside before ``inner`` starts."""
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
        if not self.own_uid:  # a user namespace: uid 65534 inside is the grader's uid outside
            args = ["--unshare-user", "--uid", "65534", "--gid", "65534", "--disable-userns", *args]
        # The private /tmp first: a course installed under /tmp (a clone, a venv) is bound on top of it
        # below, instead of being hidden by it. As root, bwrap makes these root-owned: /tmp and
        # /dev/shm open to all (sticky), the folders above the bound ones searchable by all.
        args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp"]
        if self.own_uid:
            args += ["--perms", "1777", "--size", str(TMPFS_BYTES), "--tmpfs", "/dev/shm"]
            for parent in _parents_to_make(binds):
                args += ["--perms", "0755", "--dir", parent]
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
        if self.own_uid:
            inner = [sys.executable, "-I", "-S", "-c", _DROP, str(self.uid), WORKDIR, "--", *inner]
        plan = {
            "bwrap": bwrap_path(),
            "args": [*args, "--", *inner],
            "cgroups": [str(g / "cgroup.procs") for g in self.groups],
        }
        return [sys.executable, "-I", "-S", "-c", _LAUNCHER, json.dumps(plan)]

    def seal(self) -> None:
        """Once the kernel is ready: no more files in the socket folder (it stays connectable).

        Root-owned and mode 555, the kernel's own uid can neither add, rename or remove entries nor
        change the mode back (only the owner may)."""
        if self.own_uid:
            os.chown(self.sockets, 0, 0)
        os.chmod(self.sockets, 0o555)

    def close(self) -> None:
        for group in self.groups:
            _remove_cgroup(group)
        _remove_socket_folder(self.sockets)
