"""Streaming a large file through GPT-2's encoder: memory held and time, against encoding it whole.

Writes a file of ``--mb`` MB (the course corpus's lines, repeated, with an ``<|endoftext|>`` every
``--doc`` lines) to a temporary folder, then in fresh child processes: (1) ``encode_iterable`` over
the open file and (2) ``encode`` of the whole file read at once, each with its time and the process's
peak RSS above what it held once GPT-2's ranks were loaded; then (3) the stream's Python-level peak
(tracemalloc) from a cold chunk cache and (4) from one the corpus has filled. All must give the same
ids (a SHA-256 of them).

Run: ``.venv/bin/python benchmarks/bench_tokenisation_stream.py --mb 50`` (results: RESULTS_tokenisation.md).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import hashlib, json, sys, time, tracemalloc
from array import array
from course_utils.tokenisation import real
tok = real.load("gpt2")
tok.encode("load the ranks")
path, mode, trace = sys.argv[1], sys.argv[2], sys.argv[3]
digest, n = hashlib.sha256(), 0
if trace == "warm":  # the file is the corpus's lines: encoding the corpus fills the chunk cache first
    from course_utils.corpus import load_corpus
    tok.encode(load_corpus())
def status(key):
    return int(next(l.split()[1] for l in open("/proc/self/status") if l.startswith(key))) / 1e3
loaded = status("VmRSS:")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak (VmHWM) to now: loading GPT-2's ranks peaks higher than encoding
if trace != "0":
    tracemalloc.start()
start = time.perf_counter()
with open(path, encoding="utf-8") as f:
    if mode == "stream":
        ids = tok.encode_iterable(f, allowed_special="all")
        batch = array("l")
        for i in ids:
            batch.append(i)
            if len(batch) == 65536:
                digest.update(batch.tobytes()); n += len(batch); batch = array("l")
        digest.update(batch.tobytes()); n += len(batch)
    else:
        ids = tok.encode(f.read(), allowed_special="all")
        for k in range(0, len(ids), 65536):
            digest.update(array("l", ids[k:k + 65536]).tobytes())
        n = len(ids)
seconds = time.perf_counter() - start
peak = tracemalloc.get_traced_memory()[1] if trace != "0" else None
print(json.dumps({"mode": mode, "trace": trace, "ids": n, "sha256": digest.hexdigest(), "seconds": round(seconds, 1),
                  "traced_peak_mb": None if peak is None else round(peak / 1e6, 2),
                  "rss_after_load_mb": round(loaded, 1), "peak_rss_mb": round(status("VmHWM:"), 1)}))
"""


def write_file(path: Path, mb: float, doc: int) -> int:
    from course_utils.corpus import load_corpus

    lines = load_corpus().splitlines(keepends=True)
    written, k = 0, 0
    with open(path, "w", encoding="utf-8") as f:
        while written < mb * 1e6:
            line = lines[k % len(lines)]
            k += 1
            if k % doc == 0:
                line = "<|endoftext|>" + line
            f.write(line)
            written += len(line.encode("utf-8"))
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50)
    parser.add_argument("--doc", type=int, default=2000, help="lines per document (an <|endoftext|> between)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.txt"
        size = write_file(path, args.mb, args.doc)
        print(f"file: {size / 1e6:.1f} MB", flush=True)
        results = []
        for mode, trace in (("stream", "0"), ("whole", "0"), ("stream", "cold"), ("stream", "warm")):
            out = subprocess.run([sys.executable, "-c", CHILD, str(path), mode, trace], capture_output=True,
                                 text=True, check=True)
            results.append(json.loads(out.stdout))
            print(json.dumps(results[-1]), flush=True)
        print("same ids:", len({r["sha256"] for r in results}) == 1)


if __name__ == "__main__":
    main()
