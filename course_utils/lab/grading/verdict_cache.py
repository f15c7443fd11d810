"""The verdicts ``course-lab progress`` already has, kept by the notebook's hash so it never reruns one.

Running a student's notebook to check it is the slow part (09 trains a model). A verdict is kept in
``.course-progress-cache.json`` inside the student's folder (git-ignored with the folder, hidden in
JupyterLab's file browser), one entry per notebook, under a key made of everything the verdict
depends on: the bytes of the student's notebook, the bytes of the course's notebook of that name
(its exercises and points), every source file of ``course_utils`` (the checks and the grader), and
the Python and torch versions. Saving the notebook, pulling a course update or upgrading torch
changes the key, and the next run checks it again.

Only a clean run is kept (status ``ok``: cells that raise are part of a clean verdict); a timeout or
a kernel that died may be the machine's load, so it is checked again next time.

``VerdictCache(folder).get(name, key)`` -> a ``SubmissionResult`` or None; ``put``; ``save``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from course_utils.lab.results import SubmissionResult
from course_utils.lab.status import Status

CACHE = ".course-progress-cache.json"
FORMAT = 2  # bump when what is stored changes (2: cell problems as data, not notes)


@functools.lru_cache(maxsize=1)
def _code_fingerprint() -> str:
    """sha256 of every ``course_utils`` source file (names and bytes), the Python and torch versions."""
    package = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256(f"{FORMAT}\0{sys.version}\0".encode())
    try:
        digest.update(metadata.version("torch").encode())
    except metadata.PackageNotFoundError:
        digest.update(b"no torch")
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def cache_key(notebook: Path, course_notebook: Path | None) -> str:
    """The key of ``notebook``'s verdict (see the module docstring); ``course_notebook`` None: not in the course."""
    digest = hashlib.sha256(_code_fingerprint().encode())
    digest.update(Path(notebook).read_bytes() + b"\0")
    if course_notebook is not None and Path(course_notebook).exists():
        digest.update(Path(course_notebook).read_bytes())
    return digest.hexdigest()


class VerdictCache:
    """The verdicts kept in ``folder`` (a cache that cannot be read is an empty one)."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / CACHE
        try:
            data = json.loads(self.path.read_text())
            self.entries = data["notebooks"] if data.get("format") == FORMAT else {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.entries = {}
        if not isinstance(self.entries, dict):
            self.entries = {}

    def get(self, name: str, key: str) -> SubmissionResult | None:
        entry = self.entries.get(name)
        if not isinstance(entry, dict) or entry.get("key") != key:
            return None
        try:
            return SubmissionResult.from_json(dict(entry["result"]))
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, name: str, key: str, result: SubmissionResult) -> None:
        """Keep ``result`` for ``name`` under ``key`` (replacing the notebook's older verdict), if it is clean."""
        if result.status == Status.OK:
            self.entries[name] = {"key": key, "result": result.to_json()}

    def save(self) -> bool:
        """Write the cache (atomically); False where the folder cannot be written (nothing is kept then)."""
        try:
            handle, tmp = tempfile.mkstemp(prefix=".course-progress-", dir=self.path.parent)
            with os.fdopen(handle, "w") as sink:
                json.dump({"format": FORMAT, "notebooks": self.entries}, sink)
            os.replace(tmp, self.path)
        except OSError:
            return False
        return True
