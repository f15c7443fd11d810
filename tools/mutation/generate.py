"""Generate the committed mutant lists: ``make mutants`` (``python -m tools.mutation [notebook ...]``).

For each exercise, every mutant of its solution region (``operators.mutants``) is run through the
check on the graded seeds (``run.judge``). A survivor is then tried on more case seeds
(``EXPLORE_SEEDS``): one that fails there is a real gap (``status: "open"``, ``differs_on_seed``
says where), one that passes them all is a candidate equivalent (``status: "open"`` until someone
writes its ``equivalent`` reason, which regeneration keeps: ``status: "equivalent"``). The list for
notebook N is ``tests/mutants/<notebook>.json``; ``tests/test_mutants.py`` replays it.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from course_utils.checks import check_modules
from tools.mutation.operators import Patch, mutants
from tools.mutation.run import GRADED_SEEDS, judge, solution_times
from tools.mutation.sources import ROOT, exercise_notebooks, solution

LISTS = ROOT / "tests" / "mutants"
EXPLORE_SEEDS = tuple(range(3, 40))  # more case seeds for a survivor, beyond the graded 0, 1, 2


def list_path(notebook: str) -> Path:
    return LISTS / f"{notebook}.json"


def describe(sol, patch: Patch) -> dict:
    """A mutant as stored: where (relative to the definition, and the notebook line), what changed."""
    return {
        "operator": patch.operator,
        "line": sol.first_line + patch.start[0] - 1,
        "start": list(patch.start),
        "end": list(patch.end),
        "original": patch.original(sol.source),
        "replacement": patch.text,
    }


def as_patch(entry: dict) -> Patch:
    return Patch(entry["operator"], tuple(entry["start"]), tuple(entry["end"]), entry["replacement"])


def _key(entry: dict) -> tuple:
    return entry["operator"], entry["original"], entry["replacement"]


def classify(exercise: str, notebook: str, previous: dict) -> dict:
    """The stored record of one exercise: its solution's digest and every mutant with its verdict."""
    import torch

    torch.set_num_threads(1)
    sol = solution(exercise, notebook)
    own = judge(sol, None)
    if own.killed:
        raise RuntimeError(f"{exercise}: the notebook's own solution fails its check: {own.how}")
    own_seconds = sum(sum(solution_times(exercise, seed)) for seed in GRADED_SEEDS)
    reasons = {_key(m): m["equivalent"] for m in previous.get("mutants", []) if m.get("equivalent")}
    records = []
    for patch in mutants(sol.source, sol.in_region):
        entry = describe(sol, patch)
        result = judge(sol, patch)
        entry["status"], entry["how"] = ("killed", result.how) if result.killed else ("open", result.how)
        if not result.killed:
            seeds = EXPLORE_SEEDS[: max(5, int(10 * len(GRADED_SEEDS) / max(own_seconds, 1e-3)))]
            wider = judge(sol, patch, seeds=seeds)
            if wider.killed:
                entry["differs_on_seed"] = wider.how.split(":")[0]
            elif _key(entry) in reasons:
                entry["status"], entry["equivalent"] = "equivalent", reasons[_key(entry)]
        records.append(entry)
    return {"function": sol.name, "first_line": sol.first_line, "digest": sol.digest, "mutants": records}


def score(record: dict) -> tuple[int, int, int, int]:
    """(mutants, killed, equivalent, open) of one exercise's record."""
    statuses = [m["status"] for m in record["mutants"]]
    return len(statuses), statuses.count("killed"), statuses.count("equivalent"), statuses.count("open")


def dumps(notebook: str, exercises: dict) -> str:
    """The list as JSON with one mutant per line (readable diffs when a list is regenerated)."""
    seeds = json.dumps(list(GRADED_SEEDS))
    out = ["{", f' "notebook": {json.dumps(notebook)},', f' "seeds": {seeds},', ' "exercises": {']
    for i, (name, record) in enumerate(sorted(exercises.items())):
        head = {k: v for k, v in record.items() if k != "mutants"}
        out.append(f"  {json.dumps(name)}: {json.dumps(head, ensure_ascii=False)[:-1]}, \"mutants\": [")
        out += [f"   {json.dumps(m, ensure_ascii=False)}," for m in record["mutants"]]
        if record["mutants"]:
            out[-1] = out[-1][:-1]
        out.append("  ]}" + ("," if i < len(exercises) - 1 else ""))
    return "\n".join(out + [" }", "}"]) + "\n"


def generate(notebooks: list[str], workers: int = 2) -> None:
    owners = exercise_notebooks()
    jobs = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for notebook in notebooks:
            old = json.loads(list_path(notebook).read_text()) if list_path(notebook).exists() else {}
            for exercise in sorted(e for e, n in owners.items() if n == notebook):
                previous = old.get("exercises", {}).get(exercise, {})
                jobs.append((notebook, exercise, pool.submit(classify, exercise, notebook, previous)))
        lists: dict[str, dict] = {}
        for notebook, exercise, job in jobs:
            began = time.perf_counter()
            record = job.result()
            lists.setdefault(notebook, {})[exercise] = record
            total, killed, equivalent, still_open = score(record)
            print(f"{exercise:28s} {total:4d} mutants, {killed} killed, {equivalent} equivalent, {still_open} open"
                  f" (waited {time.perf_counter() - began:.0f} s)", flush=True)
    LISTS.mkdir(parents=True, exist_ok=True)
    for notebook, exercises in lists.items():
        list_path(notebook).write_text(dumps(notebook, exercises))


RESULTS = ROOT / "benchmarks" / "RESULTS_mutation.md"
TABLE_BEGIN, TABLE_END = "<!-- scores: written by make mutants -->", "<!-- /scores -->"


def scores_table() -> str:
    """Per-exercise scores from every committed list: killed / (mutants - equivalent)."""
    rows = ["| notebook | exercise | mutants | killed | equivalent | open | score |",
            "|---|---|---:|---:|---:|---:|---:|"]
    totals = [0, 0, 0, 0]
    for path in sorted(LISTS.glob("*.json")):
        data = json.loads(path.read_text())
        for name, record in sorted(data["exercises"].items()):
            counts = score(record)
            totals = [a + b for a, b in zip(totals, counts)]
            total, killed, equivalent, still_open = counts
            rate = f"{killed / (total - equivalent):.0%}" if total > equivalent else "n/a"
            rows.append(f"| {data['notebook']} | {name} | {total} | {killed} | {equivalent} | {still_open} | {rate} |")
    total, killed, equivalent, still_open = totals
    rate = killed / max(1, total - equivalent)
    rows.append(f"| **all** | | {total} | {killed} | {equivalent} | {still_open} | {rate:.1%} |")
    return "\n".join(rows)


def write_scores() -> None:
    """Rewrite the scores table between the markers of ``benchmarks/RESULTS_mutation.md``."""
    text = RESULTS.read_text() if RESULTS.exists() else f"# Mutation scores\n\n{TABLE_BEGIN}\n{TABLE_END}\n"
    head, rest = text.split(TABLE_BEGIN, 1)
    tail = rest.split(TABLE_END, 1)[1]
    RESULTS.write_text(f"{head}{TABLE_BEGIN}\n{scores_table()}\n{TABLE_END}{tail}")


def main(argv: list[str]) -> None:
    """Notebooks by package (``welcome``), stem (``00_welcome``) or source path; none = all."""
    notebooks = [re.sub(r"^\d\d_", "", Path(arg).stem) for arg in argv] or check_modules()
    unknown = sorted(set(notebooks) - set(check_modules()))
    if unknown:
        raise SystemExit(f"unknown notebook(s) {unknown}; known: {check_modules()}")
    generate(notebooks, workers=int(os.environ.get("MUTANT_WORKERS", "2")))
    write_scores()


if __name__ == "__main__":
    main(sys.argv[1:])
