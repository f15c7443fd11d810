"""The similarity report (issue #37.5) on the synthetic class of ``similarity_class.py``: 30 students,
five of whom copied a classmate's long answer and disguised it. The copied pairs rank first and only
unusually alike pairs are listed; the short exercise that everyone writes alike lists nobody; and the
report reads answers from notebooks, the course's starter code set aside."""

from __future__ import annotations

import shutil
import statistics

import nbformat
from nbformat.v4 import new_code_cell

from course_utils.checks import all_exercises
from course_utils.lab.grading.similarity import (FLOOR, answer_source, pair_scores, similar_pairs,
                                                 write_similarity_report)
from course_utils.lab.results import ExerciseResult, SubmissionResult
from grading_fixtures import NAME, WELCOME, with_def
from similarity_class import STARTER, synthetic_class

SHORT_STARTER = "def stable_softmax(x):\n    raise NotImplementedError('subtract the maximum, exponentiate, normalise')\n"


def test_the_copied_pairs_rank_first_and_few_honest_pairs_are_listed():
    for seed in (0, 1):
        long, _, copied = synthetic_class(seed)
        pairs = similar_pairs(long, STARTER, "bpe_train")
        assert sorted(p.students for p in pairs[:5]) == sorted(copied), f"seed {seed}"
        assert len(pairs) <= 8  # of 435 pairs: the five copies and at most a few honest look-alikes
        assert all(p.score >= FLOOR for p in pairs)
        assert all(p.lines[0] and p.lines[1] for p in pairs[:5])  # the matching lines of each answer


def test_honest_short_answers_do_not_flood_the_report():
    _, short, _ = synthetic_class(0)
    alike = [score for score, *_ in pair_scores(short, SHORT_STARTER)]
    assert sum(score >= FLOOR for score in alike) > 100  # everyone writes the same three lines...
    assert similar_pairs(short, SHORT_STARTER, "stable_softmax") == []  # ...so being alike says nothing


GIVEN = ("    if not isinstance(n_merges, int) or n_merges < 0:\n        raise ValueError(f'n_merges must be >= 0, got {n_merges}')\n"
         "    words = [word.strip().lower() for word in words if word.strip()]\n")  # code the starter hands out


def test_the_starter_code_is_not_counted_as_alike():
    long, _, copied = synthetic_class(0)
    doc_end = '</w>\')."""\n'
    given = {s: code.replace(doc_end, doc_end + GIVEN, 1) for s, code in long.items()}
    starter = STARTER.replace(doc_end, doc_end + GIVEN, 1)
    assert all(GIVEN in code for code in given.values()) and GIVEN in starter

    def median(answers, start):
        return statistics.median(score for score, *_ in pair_scores(answers, start))

    assert median(given, starter) < median(given, "") - 0.05  # without the starter set aside, all look alike
    assert sorted(p.students for p in similar_pairs(given, starter, "bpe_train")[:5]) == sorted(copied)


def test_the_report_reads_each_answer_from_the_notebook_and_is_the_instructors(tmp_path):
    long, _, copied = synthetic_class(0)
    subs, source = tmp_path / "subs", tmp_path / "source"
    source.mkdir()
    shutil.copy(WELCOME, source / NAME)
    results = []
    for student in ("s00", "s29", "s01", "s02"):  # s00 and s29: a copied pair; the others honest
        nb = with_def(long[student].replace("bpe_train", "stable_softmax"))
        nb.cells.append(new_code_cell("def stable_softmax(x):\n    return x  # a later cell redefines it"))
        (subs / student).mkdir(parents=True)
        nbformat.write(nb, str(subs / student / NAME))
        results.append(SubmissionResult(student, f"{student}/{NAME}", NAME, "ok",
                                        [ExerciseResult("stable_softmax", 0, 2, "ok", "")]))
    nb = nbformat.read(str(subs / "s00" / NAME), as_version=4)
    assert answer_source(nb, "stable_softmax") == "def stable_softmax(x):\n    return x"  # the last definition
    for student in ("s00", "s29", "s01", "s02"):  # put each long answer last: it is the one compared
        nb = nbformat.read(str(subs / student / NAME), as_version=4)
        nb.cells[-1].source = long[student].replace("bpe_train", "stable_softmax")
        nbformat.write(nb, str(subs / student / NAME))
    # a link to a classmate's file is not an answer (the grader did not grade it): never compared
    results.append(SubmissionResult("linker", f"s00/{NAME}", NAME, "link", [ExerciseResult("", 0, 0, "link", "")]))
    path = write_similarity_report(results, subs, tmp_path / "grades.csv", {NAME: 2.0}, all_exercises(), source)
    text = path.read_text()
    assert path.name == "grades_similarity.md" and "for the instructor only" in text
    assert "### s00 and s29: score" in text and text.count("### ") == 1
    assert "not proof of copying" in text
