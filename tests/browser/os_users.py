"""Real Linux accounts for the hub tests (issues #41, #42): students made the way docs/jupyterhub.md makes
them, commands run as one of them, and every account removed again.

Covered: why accounts cannot be made here (``missing_accounts_reason``: not root, no ``useradd``, or a test
Python that other accounts cannot run), making and removing them (``accounts``;
``shared_account`` where none can be made), running a command as one
(``run_as``). Left out: the hub itself (``hub.py``).
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# docs/jupyterhub.md's command for a student's account: the home made mode 700 whatever login.defs says
DOCUMENTED_USERADD = ["useradd", "--create-home", "-K", "UMASK=0077"]


def _others_can_run(path: Path) -> bool:
    """Whether an account other than the owner can reach ``path`` (every folder above it searchable by others)."""
    path = path.resolve()
    return all(os.stat(folder).st_mode & stat.S_IXOTH for folder in [path, *path.parents] if folder.is_dir())


def missing_accounts_reason(*needed: Path) -> str | None:
    """Why this test cannot run students as their own Linux accounts (``None`` when it can). ``needed``: files
    and folders the students' processes must reach (the environment, the course)."""
    if os.geteuid() != 0:
        return "making Linux accounts for the students needs root (the CI job runs as root)"
    for tool in ("useradd", "userdel", "runuser"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed, so no Linux accounts can be made for the students"
    for path in (Path(sys.executable).parent, Path(sys.executable).resolve().parent, *needed):
        if not _others_can_run(path):
            return (f"{path} is closed to other accounts, so a student could not reach it (build the "
                    "environment from a Python outside /root: make setup-test PYTHON=/usr/bin/python3)")
    return None


def home_of(user: str) -> Path:
    import pwd

    return Path(pwd.getpwnam(user).pw_dir)


@contextmanager
def accounts(*kinds: str) -> Iterator[list[str]]:
    """A fresh account with a unique name for each of ``kinds``, deleted with its home afterwards:
    ``"documented"`` is made by docs/jupyterhub.md's command; ``"legacy"`` by a bare ``useradd -m``, its home
    opened to 755 (Debian 12's login.defs gives that): what an install from before that command left."""
    if set(kinds) - {"documented", "legacy"}:
        raise ValueError(f"kinds must be 'documented' or 'legacy', got {kinds!r}")
    tag = secrets.token_hex(3)
    names = [f"ct{tag}s{i}" for i in range(len(kinds))]
    made = []
    try:
        for name, kind in zip(names, kinds):
            command = DOCUMENTED_USERADD if kind == "documented" else ["useradd", "--create-home"]
            subprocess.run([*command, "--shell", "/bin/sh", name], check=True, capture_output=True, text=True)
            made.append(name)
            if kind == "legacy":
                home_of(name).chmod(0o755)
        yield names
    finally:
        for name in made:
            done = subprocess.run(["userdel", "--remove", name], capture_output=True, text=True)
            if done.returncode not in (0, 12):  # 12: the home could not be removed (reported below)
                subprocess.run(["userdel", "--remove", "--force", name], capture_output=True, text=True)


@contextmanager
def shared_account(*names: str) -> Iterator[list[str]]:
    """Students who are all the test's own account (where ``accounts`` cannot run): only their names."""
    yield list(names)


def run_as(user: str, *command: str, env: dict[str, str] | None = None,
           timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``command`` as ``user`` (``runuser``: their uid, gid and groups, no password asked)."""
    prefix = ["runuser", "-u", user, "--"]
    if env is not None:
        prefix += ["env", "-i", *(f"{k}={v}" for k, v in env.items())]
    return subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=timeout)
