"""Benchmark: training byte-level BPE with the course trainer, Hugging Face ``tokenizers`` and a
naive recount-every-merge trainer; encoding throughput of the course tokenizer vs tiktoken.

Run from the repository root (not part of the tests; takes a few minutes):

    .venv/bin/python benchmarks/bench_bpe.py --repeats 5

Method
* Text: the first 1 MB and 5 MB of the course corpus (``corpus_slice``, cut at a line end).
* Every measurement runs in a fresh child process, so one run's caches and memory cannot help
  the next. Trainers are interleaved (course, HF, HF on one thread, course, ...), so a busy machine
  slows them alike; the table reports medians and the ratio of medians.
* Time: wall clock of the training call only (text already in memory; pre-tokenisation included
  for all trainers), and the CPU time of the process over the same call (all threads summed), which
  a busy machine disturbs less than wall time. Memory: peak resident set size during the call minus the resident size just
  before it (``ru_maxrss`` minus ``psutil`` RSS), which also sees the Rust allocations of HF.
* HF: ``models.BPE`` + ``pre_tokenizers.ByteLevel(add_prefix_space=False)`` (GPT-2's split
  pattern) + ``BpeTrainer(vocab_size=256 + merges, initial_alphabet=ByteLevel.alphabet())``,
  fed line by line. It uses every core by default; the "HF (1 thread)" row sets
  ``RAYON_NUM_THREADS=1``.
* Naive: ``learn_merges_naive`` (a full recount of every pair of every distinct chunk after each
  merge), 1 MB case only, one run. It already counts distinct chunks once with their frequency, so
  it is much faster than recounting over every occurrence (minbpe's approach).
* Encoding: GPT-2's ranks on the whole corpus (about 5 MB), our ``encode_ordinary`` with an empty
  chunk cache ("cold") and again with it filled ("warm"), vs tiktoken's ``encode_ordinary``
  (one thread).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

CASES = [(1_000_000, 1_000), (5_000_000, 5_000)]
TRAINERS = ["course", "hf", "hf-1thread"]


def _text(n_bytes: int) -> str:
    from course_utils.corpus import corpus_slice, load_corpus

    return corpus_slice(load_corpus(), n_bytes)


def _train(kind: str, text: str, n_merges: int):
    if kind == "course":
        from course_utils.tokenisation.trainer import train_byte_bpe

        return [tok for tok, _ in train_byte_bpe(text, 256 + n_merges)]
    if kind == "naive":
        from course_utils.tokenisation.trainer import train_byte_bpe

        return [tok for tok, _ in train_byte_bpe(text, 256 + n_merges, naive=True)]
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(vocab_size=256 + n_merges, show_progress=False, special_tokens=[],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(text.splitlines(keepends=True), trainer=trainer)
    return tok


def child_train(kind: str, n_bytes: int, n_merges: int) -> dict:
    import psutil

    text = _text(n_bytes)
    import tokenizers  # noqa: F401  (import cost outside the timed region)
    from course_utils.tokenisation import trainer  # noqa: F401

    base = psutil.Process().memory_info().rss
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    _train(kind, text, n_merges)
    seconds = time.perf_counter() - start
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)  # all threads
    peak = cpu1.ru_maxrss * 1024
    return {"seconds": seconds, "cpu": cpu, "peak_mb": max(peak - base, 0) / 1e6, "bytes": len(text.encode())}


def child_encode() -> dict:
    from course_utils.corpus import load_corpus
    from course_utils.tokenisation import real

    text = load_corpus()
    mb = len(text.encode()) / 1e6
    ours = real.load("gpt2")
    fast = real.tiktoken_encoding("gpt2")
    fast.encode_ordinary("warm up")
    t0 = time.perf_counter()
    a = ours.encode_ordinary(text)
    t1 = time.perf_counter()
    b = ours.encode_ordinary(text)
    t2 = time.perf_counter()
    c = fast.encode_ordinary(text)
    t3 = time.perf_counter()
    assert a == b == c, "the course tokenizer disagrees with tiktoken"
    return {"cold": mb / (t1 - t0), "warm": mb / (t2 - t1), "tiktoken": mb / (t3 - t2), "mb": mb}


def _run_child(args: list[str], env_extra: dict | None = None) -> dict:
    env = {**os.environ, **(env_extra or {})}
    out = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def overlap_with_hf(n_bytes: int = 1_000_000, n_merges: int = 1_000) -> float:
    """Share of the course trainer's learned tokens that HF's trainer also learns."""
    from tokenizers import pre_tokenizers

    text = _text(n_bytes)
    ours = set(_train("course", text, n_merges))
    from course_utils.tokenisation.pretokenise import byte_to_printable

    table = {ch: b for b, ch in byte_to_printable().items()}
    hf = _train("hf", text, n_merges)
    learned = {bytes(table[c] for c in tok) for tok in hf.get_vocab() if tok not in pre_tokenizers.ByteLevel.alphabet()}
    return len(ours & learned) / len(ours)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--naive-merges", type=int, default=1_000, help="merges for the naive trainer on 1 MB")
    parser.add_argument("--child", nargs="*")
    args = parser.parse_args()
    if args.child is not None:
        if args.child[0] == "encode":
            print(json.dumps(child_encode()))
        else:
            kind, n_bytes, n_merges = args.child[0], int(args.child[1]), int(args.child[2])
            print(json.dumps(child_train("hf" if kind == "hf-1thread" else kind, n_bytes, n_merges)))
        return

    results: dict = {}
    for rep in range(args.repeats):
        for n_bytes, n_merges in CASES:
            for kind in TRAINERS:
                env = {"RAYON_NUM_THREADS": "1"} if kind == "hf-1thread" else {}
                r = _run_child([kind, str(n_bytes), str(n_merges)], env)
                results.setdefault((kind, n_bytes), []).append(r)
                print(f"rep {rep}: {kind:10s} {n_bytes / 1e6:.0f} MB / {n_merges} merges: {r['seconds']:.3f} s, "
                      f"peak +{r['peak_mb']:.0f} MB", flush=True)
    naive = _run_child(["naive", "1000000", str(args.naive_merges)])
    naive_s = naive["seconds"] * 1_000 / args.naive_merges
    print(f"naive 1 MB / {args.naive_merges} merges: {naive['seconds']:.1f} s", flush=True)
    enc = [_run_child(["encode"]) for _ in range(max(3, args.repeats // 2))]

    print("\n| text / merges | trainer | median wall s | runs | ratio of medians vs HF | median of paired ratios | median CPU s (all threads) | peak extra memory (median) |")
    print("|---|---|---|---|---|---|---|---|")
    for n_bytes, n_merges in CASES:
        hf_runs = [r["seconds"] for r in results[("hf", n_bytes)]]
        hf_med = statistics.median(hf_runs)
        for kind in TRAINERS:
            rs = results[(kind, n_bytes)]
            med = statistics.median(r["seconds"] for r in rs)
            paired = statistics.median(r["seconds"] / h for r, h in zip(rs, hf_runs))
            mem = statistics.median(r["peak_mb"] for r in rs)
            cpu = statistics.median(r["cpu"] for r in rs)
            name = {"course": "course (incremental, pure Python)", "hf": "HF tokenizers (Rust, all cores)",
                    "hf-1thread": "HF tokenizers (Rust, 1 thread)"}[kind]
            print(f"| {n_bytes / 1e6:.0f} MB / {n_merges:,} | {name} | {med:.3f} | {len(rs)} | {med / hf_med:.2f}x | {paired:.2f}x | {cpu:.3f} | {mem:.0f} MB |")
        if n_bytes == 1_000_000:
            extra = "" if args.naive_merges == 1_000 else f" (ran {args.naive_merges} merges, scaled linearly)"
            print(f"| 1 MB / 1,000 | naive recount (pure Python){extra} | {naive_s:.1f} | 1 | {naive_s / hf_med:.0f}x | | {naive['cpu'] * 1_000 / args.naive_merges:.1f} | {naive['peak_mb']:.0f} MB |")
    print("\n| encoder (GPT-2 ranks, whole corpus) | MB/s (median) |")
    print("|---|---|")
    for key, label in [("cold", "course ByteBPETokenizer, empty chunk cache"), ("warm", "course ByteBPETokenizer, warm chunk cache"),
                       ("tiktoken", "tiktoken (Rust, 1 thread)")]:
        print(f"| {label} | {statistics.median(e[key] for e in enc):.1f} |")
    print(f"\noverlap: {overlap_with_hf():.1%} of the course trainer's 1,000 tokens (1 MB) are also learned by HF")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
