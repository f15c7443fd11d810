"""Read what a student controls at a cost bounded before the reading starts.

- ``loads_bounded(text, max_depth)``: JSON, refused (``ValueError``) when it nests deeper than
  ``max_depth``, found by a scan of its brackets outside strings before anything is built (Python's
  parser would overflow its stack on ``'[' * 100_000``, and that ``RecursionError`` is no
  ``ValueError``);
- ``check_archive(data)``: the bytes of a ``torch.save`` archive, checked record by record before
  ``torch.load`` inflates anything: a zip archive, every record stored, the records together at
  most ``MAX_ARCHIVE_BYTES`` (a 50 KB deflated record can hold 48 MiB, a 14 MB one 3 GiB);
- ``check_value(value)``: a walk of the value with a budget of items (counted along every path, so a
  graph of shared lists 64 levels deep, 1.4 KB on the wire, is refused after ``MAX_VALUE_ITEMS``
  steps rather than walked 2^64 times), of depth and of tensor bytes (from shape x dtype), accepting
  only dense strided CPU tensors whose storage holds every element they index (a sparse tensor with
  indices far outside its shape, or a quantized one, is refused before anything uses it).

Leaves out: where the bytes come from (``probe.py``, ``submissions.py``).
"""

from __future__ import annotations

import io
import json
import re
import zipfile

import torch

from course_utils.lab.limits import MAX_ARCHIVE_BYTES, MAX_VALUE_BYTES, MAX_VALUE_DEPTH, MAX_VALUE_ITEMS

# A JSON string (escapes included), or one bracket: what is left between them cannot nest.
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_SCALARS = (str, bytes, int, float, complex, bool, type(None), torch.dtype, torch.device, torch.layout)


def json_depth(text: str, limit: int) -> int:
    """How deep ``text``'s brackets nest (outside strings), counting no further than ``limit + 1``:
    ``json_depth('{"a": [1, "]]"]}', 10)`` -> 2."""
    depth = deepest = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
        elif token in "]}":
            depth -= 1
    return deepest


def loads_bounded(text: str, max_depth: int):
    """``json.loads(text)``, or ``ValueError`` if it nests deeper than ``max_depth`` or is not JSON."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if json_depth(text, max_depth) > max_depth:
        raise ValueError(f"JSON nested more than {max_depth} levels deep")
    try:
        return json.loads(text)
    except RecursionError:  # only if max_depth was set near the interpreter's own limit
        raise ValueError(f"JSON nested too deeply to read (limit {max_depth})") from None


def check_archive(data: bytes, limit: int = MAX_ARCHIVE_BYTES) -> None:
    """``ValueError`` unless ``data`` is a zip archive (what ``torch.save`` writes) whose records are all
    stored, not compressed, and hold at most ``limit`` bytes together. Nothing is inflated to tell."""
    if data[:4] != b"PK\x03\x04":  # torch.load would read anything else as its legacy format
        raise ValueError("not a torch archive")
    try:
        records = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ValueError(f"not a readable archive ({type(exc).__name__})") from None
    total = 0
    for record in records:
        if record.compress_type != zipfile.ZIP_STORED or record.file_size != record.compress_size:
            raise ValueError(f"a compressed record ({record.file_size:,} bytes once inflated)")
        total += record.file_size
        if total > limit:
            raise ValueError(f"records of more than {limit:,} bytes")


def _check_tensor(tensor: torch.Tensor) -> int:
    """The bytes ``tensor`` indexes; ``ValueError`` unless it is a dense strided CPU tensor inside its storage."""
    if tensor.layout != torch.strided or tensor.is_quantized or tensor.device.type != "cpu":
        raise ValueError(f"a {tensor.layout} {tensor.dtype} tensor on {tensor.device} (only dense CPU tensors)")
    if type(tensor) not in (torch.Tensor, torch.nn.Parameter):
        raise ValueError(f"a tensor of type {type(tensor).__name__}")
    size = tensor.element_size()
    if tensor.numel():
        if any(s < 0 for s in tensor.stride()) or tensor.storage_offset() < 0:
            raise ValueError("a tensor with negative strides")
        last = tensor.storage_offset() + sum((n - 1) * s for n, s in zip(tensor.shape, tensor.stride()))
        if (last + 1) * size > tensor.untyped_storage().nbytes():
            raise ValueError("a tensor that indexes past its storage")
    return tensor.numel() * size


def check_value(
    value, max_bytes: int = MAX_VALUE_BYTES, max_items: int = MAX_VALUE_ITEMS, max_depth: int = MAX_VALUE_DEPTH
) -> int:
    """The tensor bytes left of ``max_bytes``; ``ValueError`` (saying what) if ``value`` holds more than
    ``max_bytes`` of tensor data, more than ``max_items`` items along all its paths, nests deeper than
    ``max_depth``, or holds a tensor that is not dense and strided.
    ``check_value([torch.zeros(1).expand(10**9)])`` raises (4 GB once converted)."""
    budget, items = max_bytes, 0
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        items += 1
        if items > max_items:
            raise ValueError(f"more than {max_items:,} items")
        if depth > max_depth:
            raise ValueError(f"nested more than {max_depth} levels deep")
        if isinstance(item, torch.Tensor):
            budget -= _check_tensor(item)
            if budget < 0:
                raise ValueError(
                    f"a tensor of shape {tuple(item.shape)}, too large for the grader "
                    f"(at most {max_bytes >> 20} MiB of tensors)"
                )
        elif isinstance(item, dict):
            stack.extend((x, depth + 1) for pair in item.items() for x in pair)
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend((x, depth + 1) for x in item)
        elif not isinstance(item, _SCALARS):
            raise ValueError(f"a {type(item).__name__}")
    return budget
