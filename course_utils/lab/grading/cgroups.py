"""The cgroup holding all of one submission's processes: find the hierarchy, make, limit, kill, remove.

``make_groups(name, memory_mb, processes)`` makes the groups for one kernel and returns them (empty
where none could be made); the sandbox's launcher joins them (``cgroup.procs``) before it execs
bwrap, so every process the submission starts is counted against the same memory and pids limits.
``remove_cgroup(group)`` kills what is left in a group and removes it.

Cgroups: v1 (a ``memory`` and a ``pids`` hierarchy, ``memory.limit_in_bytes`` and
``memory.memsw.limit_in_bytes``, ``pids.max``) or v2 (one group under the unified root with
``memory.max``, ``memory.swap.max`` = 0 where swap is accounted, ``pids.max``, the controllers
enabled in the root's ``cgroup.subtree_control``; killed through ``cgroup.kill`` where the kernel has
it). The root is ``/sys/fs/cgroup`` or ``$COURSE_LAB_CGROUP_ROOT``: on cgroup v2 as another user
than root, point it at a subtree delegated to that user (systemd ``Delegate=yes``) that holds no
process itself.

Leaves out: the sandbox around the kernel (``sandbox.py``) and the per-process limits used where no
cgroup is writable (``boot.py``).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_ROOT_ENV = "COURSE_LAB_CGROUP_ROOT"
CGROUP_PREFIX = "course-lab-"


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


def _new_group(group: Path) -> None:
    """Make a cgroup (the kernel fills it with its interface files; a test's fake tree does it itself)."""
    group.mkdir()


def _drop_group(group: Path) -> None:
    """Remove an empty cgroup (``rmdir``; its interface files go with it)."""
    group.rmdir()


def make_groups(name: str, memory_mb: int, processes: int) -> list[Path]:
    """The cgroups ``name`` for one kernel, limited to ``memory_mb`` MiB (no swap beyond it) and
    ``processes`` processes and threads: ``[memory/name, pids/name]`` (v1) or ``[name]`` (v2). Where
    they cannot be made, whatever was made is removed again and the list is empty."""
    groups: list[Path] = []
    try:
        root = cgroup_root()
        if cgroup_layout(root) == "v2":
            _make_v2_group(root, name, memory_mb, processes, groups)
            return groups
        for controller, limit_file, value in (
            ("memory", "memory.limit_in_bytes", memory_mb << 20),
            ("pids", "pids.max", processes),
        ):
            group = root / controller / name
            _new_group(group)
            groups.append(group)
            (group / limit_file).write_text(str(value))
        swap = groups[0] / "memory.memsw.limit_in_bytes"
        if swap.exists():
            swap.write_text(str(memory_mb << 20))
    except OSError:
        for group in groups:
            remove_cgroup(group)
        return []
    return groups


def _make_v2_group(root: Path, name: str, memory_mb: int, processes: int, groups: list[Path]) -> None:
    """cgroup v2: one group under ``root`` with the memory and pids controllers: the parent hands
    them down (``cgroup.subtree_control``) if it does not yet; no swap beyond the memory limit."""
    enabled = set((root / "cgroup.subtree_control").read_text().split())
    missing = [c for c in ("memory", "pids") if c not in enabled]
    if missing:
        (root / "cgroup.subtree_control").write_text(" ".join("+" + c for c in missing))
    group = root / name
    _new_group(group)
    groups.append(group)
    (group / "memory.max").write_text(str(memory_mb << 20))
    if (group / "memory.swap.max").exists():
        (group / "memory.swap.max").write_text("0")
    (group / "pids.max").write_text(str(processes))


def kill_cgroup(group: Path) -> None:
    """Kill every process in ``group``: all at once through ``cgroup.kill`` where the kernel has it,
    then pid by pid until ``cgroup.procs`` is empty (at most about a second)."""
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


def remove_cgroup(group: Path) -> None:
    """Kill what is left in ``group``, then remove it (retried while the kernel still counts a process)."""
    kill_cgroup(group)
    for _ in range(50):
        try:
            _drop_group(group)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)
