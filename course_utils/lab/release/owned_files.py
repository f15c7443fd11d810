"""Write files into a folder that may hold someone's work, without ever losing any of it.

``course-lab release`` and ``course-lab export`` write through ``write_owned``, which keeps a marker
file in the folder (``.course-lab-release.json``, ``.course-lab-export.json``) listing each file it
wrote and a hash of what it wrote. The rules, all checked before a single byte is written:

* a new or empty folder takes everything;
* a non-empty folder without this command's marker is refused, naming the folder and what is in it,
  unless the caller says it may be joined (an nbgrader course folder, whose ``source/`` takes new
  assignments beside the instructor's);
* the files go in *units*: a file's folder when it lies in a sub-folder (``source/03_attention``),
  else the file itself. A unit that exists and is not in the marker is someone else's: refused;
* a file the marker lists is overwritten only while its bytes are still the ones written; one that
  was edited since (a student worked in a released notebook) is refused, naming it.

Nothing is ever deleted: a file the command no longer writes (a notebook dropped from the course)
stays where it is, and so does anything else in the folder.

``write_owned(folder, {"00_welcome.ipynb": data}, marker=RELEASE_MARKER, command="release")``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

RELEASE_MARKER = ".course-lab-release.json"
MANIFEST = ".course-release.json"  # a student's own copy of the course (`make lab`) and its cell hashes
EXPORT_MARKER = ".course-lab-export.json"


class NotOursError(ValueError):
    """Writing would overwrite or mix with files this command did not write; nothing was written."""


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _unit(rel: str) -> str:
    """``source/03_attention/03_attention.ipynb`` -> ``source/03_attention``; ``00_welcome.ipynb`` -> itself."""
    parent = PurePosixPath(rel).parent
    return rel if str(parent) == "." else str(parent)


def read_marker(folder: Path, marker: str, kind: str) -> dict[str, str] | None:
    """``{relative path: sha256}`` of the files a previous run of ``kind`` wrote, or None if it wrote none here."""
    try:
        data = json.loads((Path(folder) / marker).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("kind") != kind or not isinstance(data.get("files"), dict):
        return None
    return {k: v for k, v in data["files"].items() if isinstance(k, str) and isinstance(v, str)}


def _listing(folder: Path) -> str:
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in folder.iterdir())
    return ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")


def _check(folder: Path, files: dict[str, bytes], owned: dict[str, str] | None, command: str) -> None:
    mine = {_unit(rel) for rel in owned or {}}
    for unit in sorted({_unit(rel) for rel in files}):
        path = folder / unit
        if (path.exists() or path.is_symlink()) and unit not in mine:
            raise NotOursError(
                f"{path} already exists and was not written by `course-lab {command}`; nothing was written. "
                "Move it away (or choose another folder) and run the command again."
            )
    for rel in sorted(files):
        path = folder / rel
        if path.is_symlink() or path.is_dir():
            raise NotOursError(f"{path} is a link or a folder, not a file this command wrote; nothing was written")
        if not path.exists():
            continue
        if rel not in (owned or {}):
            raise NotOursError(
                f"{path} was not written by `course-lab {command}`; nothing was written. Move it away and run again."
            )
        if _digest(path.read_bytes()) != owned[rel]:
            raise NotOursError(
                f"{path} was changed since `course-lab {command}` wrote it (someone's work may be in it); "
                "nothing was written. Move it away (or choose another folder) and run the command again."
            )


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as sink:
            sink.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_owned(
    folder: Path,
    files: dict[str, bytes],
    *,
    marker: str,
    command: str,
    kind: str | None = None,
    may_join: Callable[[Path], bool] | None = None,
) -> list[Path]:
    """Write ``files`` (relative path -> bytes) into ``folder`` by the rules above; ``NotOursError`` if not.

    ``command`` names the command in messages (``"export --to nbgrader"``); ``kind`` tells apart the
    runs that share a marker (default: ``command``); ``may_join(folder)`` says whether a non-empty
    folder without the marker may take new units all the same."""
    if not isinstance(files, dict) or not files:
        raise ValueError(f"files must be a non-empty dict of relative path -> bytes, got {files!r}")
    folder, kind = Path(folder), kind or command
    for rel in files:
        parts = PurePosixPath(rel).parts
        if PurePosixPath(rel).is_absolute() or ".." in parts or not parts or parts[0] == marker:
            raise ValueError(f"files must name paths inside the folder, got {rel!r}")
    if folder.exists() and not folder.is_dir():
        raise NotOursError(f"{folder} is a file, not a folder; nothing was written")
    owned = read_marker(folder, marker, kind) if folder.is_dir() else None
    if owned is None and folder.is_dir() and any(folder.iterdir()) and not (may_join and may_join(folder)):
        raise NotOursError(
            f"{folder} is not empty and was not written by `course-lab {command}` (it holds {_listing(folder)}): "
            "it may hold someone's work, so nothing was written. Choose a new or empty folder, "
            "or move its contents away first."
        )
    _check(folder, files, owned, command)
    folder.mkdir(parents=True, exist_ok=True)
    record = dict(owned or {})
    for rel, data in sorted(files.items()):
        _write_atomic(folder / rel, data)
        record[rel] = _digest(data)
    text = json.dumps({"kind": kind, "files": dict(sorted(record.items()))}, indent=1) + "\n"
    _write_atomic(folder / marker, text.encode())
    return [folder / rel for rel in files]
