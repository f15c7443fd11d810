"""The grading journal: each finished result, one JSON line, on disk at once, so a killed grader resumes.

Each finished result is appended at once to a journal (one JSON line per submission, flushed to
disk), keyed by everything the result depends on (``job_key``: the file's bytes, the course
notebook, points, limits, seeds and the instructor tests). If the grader is killed, running the
same command again takes every result from the journal that still matches (``read_journal``) and
grades only the rest; the caller removes the journal once the gradebook is written.

Leaves out: what is graded and how (``folder.py``, ``pool.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from course_utils.lab.results import SubmissionResult


def digest_files(paths: list[Path]) -> str:
    """sha256 of the files' names and bytes, in order (what a result read from them depends on)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(str(path.name).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def job_key(job: dict, hidden_digest: str) -> str:
    """What a result depends on, hashed: the file's bytes, the notebook, points, limits, seeds, tests and
    the hidden cases' secret (``case_key``, hashed)."""
    parts = {k: job[k] for k in ("rel", "student", "notebook", "points", "limits", "seeds")}
    parts["file"] = digest_files([Path(job["path"])])
    parts["hidden"] = hidden_digest
    # the secret keys the hidden cases, so a result depends on it; only its hash enters the journal
    parts["case_key"] = hashlib.sha256(str(job.get("case_key", "")).encode()).hexdigest()
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def read_journal(journal: Path | None) -> dict[str, dict]:
    """``{key: result JSON}`` from a journal; a line cut short by a crash is ignored."""
    found = {}
    if journal is None or not journal.exists():
        return found
    for line in journal.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(line)
            SubmissionResult.from_json(dict(entry["result"]))
            found[entry["key"]] = entry["result"]
        except (ValueError, KeyError, TypeError):
            continue
    return found


class Journal:
    """The journal being written: ``add(key, result)`` appends a line, flushed to disk (path ``None``: none)."""

    def __init__(self, path: Path | None):
        self.handle = open(path, "a", encoding="utf-8") if path is not None else None

    def add(self, key: str, result: SubmissionResult) -> None:
        if self.handle is not None:
            self.handle.write(json.dumps({"key": key, "result": result.to_json()}) + "\n")
            self.handle.flush()
            os.fsync(self.handle.fileno())

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
