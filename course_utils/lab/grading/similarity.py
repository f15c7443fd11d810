"""The similarity report: for each exercise, pairs of students whose answers are unusually alike, for the
instructor to look at, never an accusation.

Each student's answer to an exercise is the source of the function (or class) their notebook defines
under the exercise's name (the last definition, read with ``ast``), nothing else of the notebook. It
is compared with ``copydetect`` (token filtering: every name becomes ``V``, ``F`` or ``O``, strings
``S``, comments and blank space dropped; then winnowed k-grams of the filtered text), with the
course's starter code for that exercise (the released stub: signature, docstring, ``raise``) given as
boilerplate, so only what the student wrote counts. A pair's score is the smaller of the two
shares of each answer found in the other (``copydetect.compare_files``), so a long answer that
contains a short one is not "alike".

A pair is listed when its score is at least ``FLOOR`` and few of that exercise's pairs are as alike
(at most ``RARE_SHARE`` of them score within ``TIE`` of it or above): where everyone writes the same
three lines, many pairs are that alike and nobody is listed; answers with fewer than ``MIN_TOKENS``
filtered characters beyond the starter are too short to tell and are left out. Each listed pair
shows its score and the lines that match in each answer. Written beside the gradebook as
``<stem>_similarity.md`` (``write_similarity_report``, which ``course-lab grade`` calls); students
never see it. Measured in ``benchmarks/RESULTS_grading.md``.

Leaves out: grading (``grade.py``); the class report (``class_report.py``).
"""

from __future__ import annotations

import ast
import io
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

from course_utils.lab.grading.gradebook import write_atomic
from course_utils.lab.grading.student_text import one_line
from course_utils.lab.grading.identify import AST_CELL_CHARS
from course_utils.lab.grading.submissions import read_submission
from course_utils.lab.grading.totals import student_totals
from course_utils.lab.status import Status

K, WINDOW = 12, 4  # copydetect's noise threshold (characters of filtered code) and winnowing window
FLOOR, TIE, RARE_SHARE, RARE_MIN, MIN_TOKENS = 0.8, 0.02, 0.05, 2, 40
MAX_LINES = 12  # matching lines shown per answer


@dataclass
class SimilarPair:
    """Two students' answers to one exercise, their score and the matching lines of each."""

    exercise: str
    students: tuple[str, str]
    score: float
    lines: tuple[list[str], list[str]] = field(default_factory=lambda: ([], []))


def answer_source(nb, name: str) -> str:
    """The source of the last top-level ``def``/``class`` named ``name`` in the notebook's code cells, or ''."""
    found = ""
    for cell in nb.cells:
        source = cell.get("source", "")
        if cell.get("cell_type") != "code" or name not in source or len(source) > AST_CELL_CHARS:
            continue  # a cell too large for ast is no answer anyone wrote by hand
        try:
            tree = ast.parse(cell.source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                found = ast.get_source_segment(cell.source, node) or ""
    return found


def _fingerprint(code: str, boilerplate=()):
    from copydetect import CodeFingerprint

    return CodeFingerprint("answer.py", K, WINDOW, list(boilerplate), fp=io.StringIO(code))


def _lines(code: str, slices) -> list[str]:
    """The lines of ``code`` that the character ranges ``slices`` (2 x N) touch, in order."""
    if len(slices) == 0 or len(slices[0]) == 0:
        return []
    starts = [code.count("\n", 0, int(s)) for s in slices[0]]
    ends = [code.count("\n", 0, max(int(s), int(e) - 1)) for s, e in zip(slices[0], slices[1])]
    numbers = sorted({n for a, b in zip(starts, ends) for n in range(a, b + 1)})
    text = code.splitlines()
    return [text[n] for n in numbers if n < len(text) and text[n].strip()][:MAX_LINES]


def pair_scores(answers: dict[str, str], starter: str = "") -> list[tuple[float, str, str, tuple]]:
    """(score, student, student, matching character ranges of each) for every pair of answers long enough
    to tell (``MIN_TOKENS``), ``starter``'s fingerprints set aside."""
    from copydetect import compare_files

    boilerplate = _fingerprint(starter, ()).hashes if starter.strip() else ()
    prints = {s: _fingerprint(code, boilerplate) for s, code in sorted(answers.items()) if code.strip()}
    prints = {s: fp for s, fp in prints.items() if fp.token_coverage >= MIN_TOKENS}
    scored = []
    for a, b in combinations(prints, 2):
        _, (share_a, share_b), slices = compare_files(prints[a], prints[b])
        scored.append((float(min(share_a, share_b)), a, b, slices))
    return scored


def similar_pairs(answers: dict[str, str], starter: str = "", exercise: str = "") -> list[SimilarPair]:
    """The unusually alike pairs among ``{student: answer source}`` for one exercise, best first: a score of
    at least ``FLOOR`` that few pairs reach (at most ``RARE_SHARE`` of them, or ``RARE_MIN``, score
    ``TIE`` below it or more)."""
    scored = pair_scores(answers, starter)
    scores = [score for score, *_ in scored]
    allowed = max(RARE_MIN, RARE_SHARE * len(scored))
    pairs = [
        SimilarPair(exercise, (a, b), score, (_lines(answers[a], slices[0]), _lines(answers[b], slices[1])))
        for score, a, b, slices in scored
        if score >= FLOOR and sum(s >= score - TIE for s in scores) <= allowed
    ]
    return sorted(pairs, key=lambda p: (-p.score, p.students))


def markdown(pairs_by_exercise: dict[str, list[SimilarPair]], students: int) -> str:
    """The report: how to read it, then each exercise's listed pairs with their matching lines."""
    lines = [
        "# Similar answers (for the instructor only)",
        "",
        f"{students} student(s). Pairs whose answers to an exercise are unusually alike once the starter code is "
        "removed and names, strings, comments and spacing are set aside. Alike is not proof of copying: "
        "students who worked from the same lecture, textbook or hint often write alike. Read the code, then talk.",
    ]
    for exercise, pairs in pairs_by_exercise.items():
        lines += ["", f"## `{exercise}`: {len(pairs)} pair(s)", ""]
        for pair in pairs:
            a, b = (one_line(s) for s in pair.students)
            lines += [f"### {a} and {b}: score {pair.score:.2f}", ""]
            for student, shown in zip((a, b), pair.lines):
                code = [one_line(line).replace("```", "`\u200b``") for line in shown]
                lines += [f"{student}:", "", "```python", *code, "```", ""]
    return "\n".join(lines) + "\n"


def write_similarity_report(
    results: list, folder: Path, out_csv: Path, assignment: dict[str, float], registry: dict, source: Path
) -> Path:
    """Compare the counted submission of each notebook (``totals.student_totals``) exercise by exercise,
    the course's released stub as the starter; write ``<stem>_similarity.md`` beside ``out_csv``."""
    import nbformat

    from course_utils.lab.release.release import student_version

    by_exercise: dict[str, dict[str, str]] = {}
    stubs, starters = {}, {}  # notebook -> the released notebook; exercise -> its stub's source
    for total in student_totals(results, assignment).values():
        for notebook, result in total.best.items():
            if result.status in (Status.LINK, Status.UNREADABLE, Status.UNKNOWN_NOTEBOOK):
                continue  # a link's target is someone else's file; the others hold no answer
            nb, _ = read_submission(Path(folder) / result.submission)
            if nb is None:
                continue
            if notebook not in stubs:
                stubs[notebook] = student_version(nbformat.read(str(Path(source) / notebook), as_version=4), notebook)
            for row in result.exercises:
                if row.exercise in registry:
                    name = registry[row.exercise].expected_name
                    by_exercise.setdefault(row.exercise, {})[total.student] = answer_source(nb, name)
                    starters.setdefault(row.exercise, answer_source(stubs[notebook], name))
    found = {ex: similar_pairs(answers, starters.get(ex, ""), ex) for ex, answers in by_exercise.items()}
    path = Path(out_csv).with_name(Path(out_csv).stem + "_similarity.md")
    students = len({s for answers in by_exercise.values() for s in answers})
    write_atomic(path, lambda handle: handle.write(markdown({ex: p for ex, p in found.items() if p}, students)))
    return path
