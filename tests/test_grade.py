"""`course-lab grade`, end to end: every good, broken and hostile submission in the fixture folder
(tests/grading_fixtures.py) gets its row with the stated status and points in one sandboxed run
with ``--jobs 3``; nothing outside the submissions changed (checksums of the package, the
submissions, the output folder after the grader exits, a canary file), no process of theirs is left
afterwards, the grader never runs student code in its own process, and the gradebook files are
complete and safe to open. Then: a grader killed half-way resumes from its journal (``--jobs 1``
and ``--jobs 2``), and without bubblewrap the grader refuses unless ``--no-sandbox`` (then grades,
with ``--jobs 2``, and says the run was not isolated). Last, pieces without a kernel, among them the
watch for the course's reference inside a student's own function (wrappers of every kind)."""

from __future__ import annotations

import contextlib
import csv
import functools
import hashlib
import io
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import psutil

import nbformat
import pytest
import torch

import course_utils
from course_utils.lab.cli import main as cli_main
from course_utils.lab.grading.gradebook import csv_rows, feedback_names, feedback_text, one_line, write_gradebook
from course_utils.lab.grading.uses_reference import is_course_code, reference_codes
from course_utils.lab.results import ExerciseResult, SubmissionResult
from course_utils.lab.grading.hidden import load_hidden_tests
from course_utils.lab.grading.folder import make_job
from course_utils.lab.grading.cells import _CappedClient
from course_utils.lab.limits import Limits
from course_utils.lab.grading.kernel_code import MAX_VALUE_BYTES, probe_code, snapshot_code
from course_utils.lab.grading.probe import NotDefined, ReferenceCalled, StudentRaised, check_size, decode_reply
from course_utils.lab.grading.sandbox import cgroup_parents, isolation_problem
from course_utils.lab.grading.identify import identify
from course_utils.lab.grading.submissions import course_catalog, find_submissions, read_submission, Submission
from grading_fixtures import (FORGED_NAME, FORMULA, ODD_A, ODD_B, SECRET_ENV, SLEEPER, WELCOME, build_folder,
                              cell_problems, solution, with_cell)

CELL_TIMEOUT, PROBE_TIMEOUT, TOTAL_TIMEOUT = 20, 5, 40  # generous: the machine may be shared and slow
ISOLATION_PROBLEM = isolation_problem()
needs_bwrap = pytest.mark.skipif(ISOLATION_PROBLEM is not None, reason=f"no sandbox here: {ISOLATION_PROBLEM}")


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "course_utils.lab.cli", *args], capture_output=True, text=True,
                          env=dict(env or os.environ, COURSE_LAB_RUN=RUN))


def _tree_digest(folder: Path) -> dict[str, str]:
    """{relative path: sha256 or link target} of every entry below ``folder`` (no link is followed)."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            if "__pycache__" in rel:
                continue
            if path.is_symlink():
                found[rel] = "-> " + os.readlink(path)
            elif path.is_file():
                found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
            elif not path.is_dir():
                found[rel] = "special"
    return found


def _pth_files() -> dict[str, str]:
    """{path: sha256} of the ``.pth`` files Python reads at start-up (a dropped-in one runs code in every run)."""
    import site

    folders = {*site.getsitepackages(), sys.prefix}
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for f in folders for p in Path(f).glob("*.pth")}


RUN = f"test-grade-{os.getpid()}"  # COURSE_LAB_RUN: labels this file's graders, workers and sandboxes


def _leftovers(cgroups: bool = True) -> list[str]:
    """This file's processes still running (fixtures, workers, sandboxes), and cgroups whose grader is
    gone (all of them, or with ``cgroups=False`` only those that still hold a process)."""
    left = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            line = " ".join(proc.info["cmdline"] or [])
            if SLEEPER in line or proc.environ().get("COURSE_LAB_RUN") == RUN:
                left.append(line[:200])
        except psutil.Error:
            continue
    for parent in cgroup_parents():
        for group in parent.glob("course-lab-*"):
            owner = group.name.split("-")[2]
            if not (Path("/proc") / owner).exists() and (cgroups or (group / "cgroup.procs").read_text().strip()):
                left.append(str(group))
    return left


def _leftovers_within(seconds: float, cgroups: bool = True) -> list[str]:
    """``_leftovers()`` once it is empty, or after ``seconds``: a killed or finished process takes a
    moment to go, longer on a busy machine. Keep ``seconds`` below anything a leak would outlive."""
    deadline = time.monotonic() + seconds
    while (left := _leftovers(cgroups)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if ISOLATION_PROBLEM is not None:
        pytest.skip(f"no sandbox here: {ISOLATION_PROBLEM}")
    root = tmp_path_factory.mktemp("grading")
    expected = build_folder(root)
    out = root / "out" / "grades.csv"
    package = Path(course_utils.__file__).resolve().parent
    before = {"package": _tree_digest(package), "subs": _tree_digest(root / "subs"),
              "canary": (root / "canary.txt").read_text(), "source": _tree_digest(root / "source"),
              "hidden": _tree_digest(root / "hidden"), "pth": _pth_files()}
    proc = _cli("grade", str(root / "subs"), "--out", str(out), "--source", str(root / "source"),
                "--hidden-tests", str(root / "hidden"), "--jobs", "3", "--timeout", str(CELL_TIMEOUT),
                "--probe-timeout", str(PROBE_TIMEOUT), "--total-timeout", str(TOTAL_TIMEOUT), "--memory-mb", "2048",
                env=dict(os.environ, **{SECRET_ENV: "the grader's secret", "COURSE_LAB_CASE_KEY": "test-grade"}))
    output = _tree_digest(out.parent)
    time.sleep(5)  # a detached process would rewrite the gradebook about 4 s after its kernel started
    after = {"package": _tree_digest(package), "subs": _tree_digest(root / "subs"),
             "canary": (root / "canary.txt").read_text(), "output": _tree_digest(out.parent),
             "source": _tree_digest(root / "source"), "hidden": _tree_digest(root / "hidden"), "pth": _pth_files()}
    rows = list(csv.DictReader(out.open(encoding="utf-8"))) if out.exists() else []
    return {"root": root, "expected": expected, "proc": proc, "rows": rows, "out": out, "before": before,
            "after": after, "output": output, "leftovers": _leftovers()}


def _key(rel: str) -> str:
    return one_line(rel)


@pytest.mark.slow
def test_the_grader_finishes_and_prints_a_summary(graded):
    proc = graded["proc"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    n = len(graded["expected"])
    assert f"graded {n} submission(s)" in proc.stdout
    assert "full marks" in proc.stdout and "zero" in proc.stdout and "with problems" in proc.stdout
    assert "assignment: 2 notebook(s), 5 points;" in proc.stdout  # the fixture course: 00_welcome and 10_pair
    assert "grading" in proc.stderr and f"{n}/{n}" in proc.stderr  # the tqdm bar reached the end


@pytest.mark.slow
def test_every_submission_has_its_rows(graded):
    graded_rows = [r for r in graded["rows"] if r["exercise"] != "TOTAL" and r["status"] != "missing"]
    assert {r["submission"].lstrip("'") for r in graded_rows} == {_key(rel) for rel in graded["expected"]}
    assert len(graded_rows) == sum(len(e["rows"]) for e in graded["expected"].values())


@pytest.mark.slow
def test_each_fixture_gets_its_status_points_and_feedback(graded):
    by_key = {(r["submission"].lstrip("'"), r["exercise"]): r for r in graded["rows"]
              if r["exercise"] != "TOTAL" and r["status"] != "missing"}
    wrong = []
    for rel, facts in graded["expected"].items():
        for number, (exercise, (status, points)) in enumerate(facts["rows"].items()):
            row = by_key.get((_key(rel), exercise))
            if row is None:
                wrong.append(f"{rel} {exercise}: no row")
                continue
            if (row["status"], float(row["points"])) != (status, points):
                wrong.append(f"{rel} {exercise}: got {row['status']}, {row['points']} points; expected {status}, {points}: {row['feedback']}")
            if number == 0 and facts["feedback"] not in row["feedback"]:
                wrong.append(f"{rel} {exercise}: feedback {row['feedback']!r} lacks {facts['feedback']!r}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow
def test_cell_problems_are_reported_in_the_feedback_files(graded):
    rows = graded["rows"]
    folder = graded["out"].with_name("grades_feedback")
    wrong = []
    for rel, facts in graded["expected"].items():
        name = next(r["feedback_file"] for r in rows if r["submission"].lstrip("'") == _key(rel))
        text = (folder / name).read_text(encoding="utf-8")
        wrong += [f"{rel}: {name} lacks {note!r}" for note in facts["notes"] if note not in text]
    assert not wrong, "\n".join(wrong)
    flood = (folder / "cell_problems.md").read_text(encoding="utf-8")
    assert len(flood) < 5_000 and "spam" not in flood  # megabytes printed, a short note kept


@pytest.mark.slow
def test_a_hostile_answer_runs_no_code_in_the_grader(graded):
    assert not (graded["root"] / "pwned").exists()


@pytest.mark.slow
def test_nothing_outside_the_submissions_changed(graded):
    before, after = graded["before"], graded["after"]
    # One comparison for the whole batch: a change cannot be pinned on one submission from here, so
    # each hostile fixture also shows its own leak in its row (``grading_fixtures.GUARDED``).
    assert after["package"] == before["package"]  # no line appended
    assert after["pth"] == before["pth"]  # no .pth file dropped in or changed
    assert after["subs"] == before["subs"]
    assert after["source"] == before["source"] and after["hidden"] == before["hidden"]
    assert after["canary"] == "untouched"
    assert after["output"] == graded["output"]  # nothing rewrote the gradebook after the grader exited
    assert "FORGED" not in graded["out"].read_text(encoding="utf-8")


@pytest.mark.slow
def test_no_process_or_cgroup_is_left_behind(graded):
    assert graded["leftovers"] == []


@pytest.mark.slow
def test_student_text_cannot_forge_lines_or_sections(graded):
    raw = graded["out"].read_bytes()
    assert b"\x1b" not in raw and raw.count(b"\r") == raw.count(b"\r\n") == raw.count(b"\n")  # no break inside a cell
    assert all(len(r) == 9 for r in csv.reader(io.StringIO(raw.decode())))
    folder = graded["out"].with_name("grades_feedback")
    for path in folder.glob("*.md"):
        text = path.read_text(encoding="utf-8")
        assert "\x1b" not in text
        headings = [line for line in text.splitlines() if line.startswith("#")]
        assert len([h for h in headings if h.startswith("# ")]) == 1, path.name
        assert not any(line.startswith("# Feedback for alice") for line in headings[1:]), path.name
    forged = next(r for r in graded["rows"] if r["submission"] == "forged_feedback/00_welcome.ipynb")
    text = (folder / forged["feedback_file"]).read_text(encoding="utf-8")
    assert [line for line in text.splitlines() if line.startswith("## ")] == ["## forged_feedback/00_welcome.ipynb"]
    assert one_line(FORGED_NAME) in {r["student"] for r in graded["rows"]}


@pytest.mark.slow
def test_skipped_entries_are_named_in_the_summary(graded):
    assert "warning: skipped .ipynb_checkpoints (editor or OS leftovers)" in graded["proc"].stdout
    assert "NOT ISOLATED" not in graded["proc"].stdout


@pytest.mark.slow
def test_odd_and_duplicate_names_are_all_kept(graded):
    totals = {r["student"]: r for r in graded["rows"] if r["exercise"] == "TOTAL"}
    # alice handed in 00_welcome twice (the best counts) and no 10_pair: 2 of the course's 2 + 3 points
    assert (totals["alice"]["points"], totals["alice"]["max_points"], totals["alice"]["status"]) == ("2", "5", "missing")
    assert "best of 2 submissions" in totals["alice"]["feedback"] and "10_pair.ipynb missing (0/3)" in totals["alice"]["feedback"]
    assert totals[ODD_A]["feedback_file"] != totals[ODD_B]["feedback_file"]
    folder = graded["out"].with_name("grades_feedback")
    assert "empty file" in (folder / totals[ODD_B]["feedback_file"]).read_text(encoding="utf-8")
    assert "passed all" in (folder / totals[ODD_A]["feedback_file"]).read_text(encoding="utf-8")
    assert len(list(folder.glob("*.md"))) == len(totals)
    assert "'" + FORMULA in totals  # a spreadsheet will not run it as a formula
    leftovers = sorted(p.name for p in graded["out"].parent.iterdir())
    assert leftovers == ["grades.csv", "grades_canvas.csv", "grades_class_report.md", "grades_class_report.png",
                          "grades_feedback", "grades_similarity.md"]  # no temporary files, job folder or journal left behind


@pytest.mark.slow
def test_names_that_differ_only_by_an_invisible_character_are_two_students(graded):
    """Attack 8 of issue #27 (the other hostile submissions' rows: ``grading_fixtures.hostile_cases``)."""
    students = sorted(r["student"] for r in graded["rows"] if r["submission"].startswith("ann/")
                      and r["exercise"] == "stable_softmax")
    assert students == ["ann", "ann (2)"]
    assert "look the same" in graded["proc"].stdout


@pytest.mark.slow
def test_hidden_cases_stay_hidden_from_students_not_from_the_instructor(graded):
    """public_only fails only on the third case of hidden seed 1 (logits near 10,001, the "no max shift"
    mistake): its student reads the case's number and the mistake's hint, the instructor its label."""
    row = next(r for r in graded["rows"] if r["submission"] == "public_only/00_welcome.ipynb")
    text = (graded["out"].with_name("grades_feedback") / row["feedback_file"]).read_text(encoding="utf-8")
    n = 4 * 2 + 1 + 1  # seeds 1 and 2, the instructor's extra case and test function
    assert f"hidden case 3 of {n} failed: exp overflows" in text and "10,000" not in text and "seed 1" not in text
    assert "(case: logits near ±10,000) [hidden case, seed 1]" in row["feedback"]  # the instructor's gradebook


@pytest.mark.slow
def test_the_summary_agrees_with_the_feedback_files_and_cells_count_from_1(graded):
    folder = graded["out"].with_name("grades_feedback")
    sections = [part for path in folder.glob("*.md") for part in path.read_text(encoding="utf-8").split("\n## ")[1:]]
    with_problems = sum("\n- problems: none\n" not in part for part in sections)
    assert len(sections) == len(graded["expected"])
    assert f"zero, {with_problems} with problems (" in graded["proc"].stdout
    cell_errors = sum("cell error" in part.split("\n- problems: ")[1].split("\n")[0] for part in sections)
    assert re.search(rf"[( ]{cell_errors} cell error[,)]", graded["proc"].stdout) and cell_errors >= 2
    raises = (folder / "cell_problems.md").read_text(encoding="utf-8")
    cells = cell_problems().cells
    cell = next(i for i, c in enumerate(cells) if c.cell_type == "code" and "def stable_softmax" in c.source) + 2
    assert "RuntimeError('oops')" in cells[cell - 1].source
    assert f"cell {cell}: error: RuntimeError: oops" in raises  # counted from 1, markdown cells included


@pytest.mark.slow
def test_the_class_report_and_the_canvas_export_are_written_beside_the_gradebook(graded):
    out = graded["out"]
    report = out.with_name("grades_class_report.md").read_text(encoding="utf-8")
    # patcher (public case) and public_only (hidden case) are the class's two "no max shift" answers
    assert "| mistake: no max shift | 2 |" in report and "| `causal_mask` | 10_pair.ipynb |" in report
    assert out.with_name("grades_class_report.png").read_bytes()[:4] == b"\x89PNG"
    canvas = list(csv.reader(out.with_name("grades_canvas.csv").open(encoding="utf-8")))
    assert canvas[0][5:] == ["00_welcome", "10_pair"] and canvas[1][5:] == ["2", "3"]
    totals = {r["student"]: r["points"] for r in graded["rows"] if r["exercise"] == "TOTAL"}
    assert {row[0]: str(sum(float(v) for v in row[5:])).removesuffix(".0") for row in canvas[2:]} == totals


# ---- pieces, without a kernel ----------------------------------------------------------------

def test_decode_refuses_code_carrying_answers(tmp_path):
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (Path.touch, (marker,))

    buffer = io.BytesIO()
    torch.save(Evil(), buffer)
    import base64

    envelope = json.dumps({"kind": "value", "data": base64.b64encode(buffer.getvalue()).decode()})
    with pytest.raises(StudentRaised, match="cannot read back"):
        decode_reply("ok", repr(envelope))
    assert not marker.exists()
    buffer = io.BytesIO()
    torch.save({"probs": torch.ones(2)}, buffer)
    good = json.dumps({"kind": "value", "data": base64.b64encode(buffer.getvalue()).decode()})
    assert torch.equal(decode_reply("ok", repr(good))["probs"], torch.ones(2))
    with pytest.raises(NotDefined):
        decode_reply("ok", repr(json.dumps({"kind": "missing"})))


def test_probe_code_calls_only_the_students_own_object():
    code = probe_code("stable_softmax", (torch.zeros(2),), {})
    assert "import course_utils" not in code and "from course_utils" not in code and "_course_lab_saved" in code
    namespace: dict = {"__name__": "__main__"}
    exec(compile("def stable_softmax(x):\n    return x + 1\n", "<cell>", "exec"), namespace)
    exec(snapshot_code(["stable_softmax"], overwrite=True), namespace)
    namespace["stable_softmax"] = torch.softmax  # a later import of a reference under the same name
    exec(code, namespace)
    reply = json.loads(namespace["_course_lab_result"])
    assert reply["kind"] == "value"
    assert torch.equal(decode_reply("ok", repr(namespace["_course_lab_result"])), torch.ones(2))
    with pytest.raises(ValueError, match="identifier"):
        probe_code("os.system", (), {})


def test_feedback_names_never_collide():
    names = feedback_names(["a b", "a_b", "A_B", "", "../etc", "ok"])
    assert len(set(n.lower() for n in names.values())) == 6
    assert all("/" not in n and not n.startswith(".") for n in names.values())


def test_csv_cells_cannot_be_formulas():
    result = SubmissionResult("=cmd", "=cmd.ipynb", "00_welcome.ipynb", "ok",
                              [ExerciseResult("stable_softmax", 2, 2, "ok", "@SUM(A1)")])
    rows = csv_rows([result], {"=cmd": "cmd.md"})
    assert all(not cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row)


def test_write_gradebook_replaces_the_old_one_whole(tmp_path):
    out = tmp_path / "grades.csv"
    first = [SubmissionResult("ann", "ann.ipynb", "00_welcome.ipynb", "ok", [ExerciseResult("stable_softmax", 2, 2, "ok", "passed")])]
    second = [SubmissionResult("ben", "ben.ipynb", "00_welcome.ipynb", "ok", [ExerciseResult("stable_softmax", 0, 2, "ok", "not attempted")])]
    write_gradebook(first, out)
    write_gradebook(second, out)
    assert "ben" in out.read_text() and "ann" not in out.read_text()
    assert sorted(p.name for p in (tmp_path / "grades_feedback").iterdir()) == ["ben.md"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grades.csv", "grades_canvas.csv", "grades_feedback"]


def test_submissions_are_found_read_and_identified(tmp_path):
    (tmp_path / "ann").mkdir()
    (tmp_path / "ann" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "ann" / ".ipynb_checkpoints" / "00_welcome-checkpoint.ipynb").write_text("{}")
    nbformat.write(solution(), str(tmp_path / "ann" / "00_welcome.ipynb"))
    nbformat.write(solution(), str(tmp_path / "renamed.ipynb"))
    (tmp_path / ".DS_Store").write_text("x")
    subs = find_submissions(tmp_path)
    assert [(s.student, s.rel) for s in subs] == [("ann", "ann/00_welcome.ipynb"), ("renamed", "renamed.ipynb")]
    catalog = course_catalog(WELCOME.parent)
    for sub in subs:
        nb, problem = read_submission(sub.path)
        assert problem == "" and identify(sub, nb, catalog) == "00_welcome.ipynb"
    stripped = solution()
    stripped.metadata.pop("course")
    assert identify(Submission("x", tmp_path / "x.ipynb", "x.ipynb"), stripped, catalog) == "00_welcome.ipynb"  # by its code
    assert catalog["00_welcome.ipynb"].points == {"stable_softmax": 2.0}


def test_a_notebook_that_trains_gets_the_cell_time_its_metadata_asks_for(tmp_path):
    """Notebook 10 trains its model in one cell (about 2 min on one thread): its own metadata raises the
    cell limit for its submissions, and the total by as much; other notebooks keep the instructor's."""
    catalog = course_catalog(WELCOME.parent)
    assert catalog["10_train_gpt.ipynb"].cell_seconds == 480 and catalog["00_welcome.ipynb"].cell_seconds == 0
    sub = Submission("ann", tmp_path / "x.ipynb", "x.ipynb")

    def limits(notebook, **given):
        return make_job(sub, catalog[notebook], Limits(**given), [1], None, tmp_path / "r.json")["limits"]

    assert (limits("10_train_gpt.ipynb", cell_timeout=120)["cell_timeout"], Limits(**limits("10_train_gpt.ipynb",
            cell_timeout=120)).total()) == (480, 1200 + 480)
    assert limits("10_train_gpt.ipynb", cell_timeout=120, total_timeout=300)["total_timeout"] == 780
    assert limits("10_train_gpt.ipynb", cell_timeout=600)["cell_timeout"] == 600  # never lowered
    assert limits("00_welcome.ipynb", cell_timeout=120) == asdict(Limits(cell_timeout=120))
    nb = solution()
    nb.metadata["course"]["grading_cell_timeout_s"] = "a day"
    nbformat.write(nb, str(tmp_path / "00_welcome.ipynb"))
    with pytest.raises(ValueError, match="00_welcome.ipynb: course.grading_cell_timeout_s"):
        course_catalog(tmp_path)


def test_hidden_tests_must_name_course_exercises(tmp_path):
    (tmp_path / "t.py").write_text("def test_no_such_exercise(student):\n    pass\n")
    with pytest.raises(ValueError, match="t.py: test_no_such_exercise does not name a course exercise"):
        load_hidden_tests(tmp_path, {"stable_softmax"})
    (tmp_path / "t.py").write_text("def test_stable_softmax__rows(student):\n    pass\n")
    tests = load_hidden_tests(tmp_path, {"stable_softmax"})
    assert [f.__name__ for f in tests.functions["stable_softmax"]] == ["test_stable_softmax__rows"]


@pytest.mark.slow  # subprocesses or training: not in the quick loop (make test-fast)
def test_cli_rejects_a_missing_folder(tmp_path, capsys):
    # in this process (the command line's own start-up is tested by the fixture's run): no torch import to wait for
    assert cli_main(["grade", str(tmp_path / "nope"), "--out", str(tmp_path / "g.csv"), "--no-sandbox"]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert not (tmp_path / "g.csv").exists()


# ---- a grader killed half-way, and a machine without bubblewrap -------------------------------

def _small_folder(root: Path, slow: bool, sleep: int = 8) -> Path:
    subs = root / "subs"
    for name in ("ann",) if slow else ("ann", "ben"):
        (subs / name).mkdir(parents=True)
        nbformat.write(solution(), str(subs / name / "00_welcome.ipynb"))
    if slow:  # zoe's cell sleeps in a child process named ZOE_RUNNING, seen from here once her cells run
        (subs / "zoe").mkdir()
        cell = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'import time; time.sleep({sleep})', {ZOE_RUNNING!r}])"
        nbformat.write(with_cell(cell), str(subs / "zoe" / "00_welcome.ipynb"))
    return subs


ZOE_RUNNING = f"{SLEEPER}-zoe-is-running"  # contains SLEEPER: ``_leftovers`` looks for it after the kill too


def _zoe_sleeper() -> psutil.Process | None:
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if ZOE_RUNNING in (proc.info["cmdline"] or []):
                return proc
        except psutil.Error:
            continue
    return None


def _rerun_without_zoe_s_wait(args: list[str], folder: Path) -> tuple[int, str, str]:
    """Run the grader again, ending zoe's sleeping child as soon as it shows (her cell then finishes at
    once: the resumed run has nothing to wait for); (exit code, stdout, stderr)."""
    out, err = folder / "rerun.out", folder / "rerun.err"
    with out.open("w") as stdout, err.open("w") as stderr:
        grader = subprocess.Popen(args, stdout=stdout, stderr=stderr, env=dict(os.environ, COURSE_LAB_RUN=RUN))
        while grader.poll() is None:
            if (sleeper := _zoe_sleeper()) is not None:
                with contextlib.suppress(psutil.Error):
                    sleeper.kill()
            time.sleep(0.2)
    return grader.returncode, out.read_text(), err.read_text()


@pytest.mark.slow
@needs_bwrap
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_killed_grader_resumes_from_its_journal(tmp_path, jobs):
    """With ``--jobs 1`` ann is graded, then zoe; with ``--jobs 2`` both at once (zoe sleeps longer, so
    ann is done first): the grader is killed while zoe's kernel still runs, in both cases."""
    sleep = 8 if jobs == "1" else 15
    subs, out = _small_folder(tmp_path, slow=True, sleep=sleep), tmp_path / "out" / "grades.csv"
    journal = out.with_name(".grades.csv.journal")
    args = [sys.executable, "-m", "course_utils.lab.cli", "grade", str(subs), "--out", str(out), "--jobs", jobs,
            "--source", str(WELCOME.parent), "--quiet", "--timeout", str(CELL_TIMEOUT), "--probe-timeout", str(PROBE_TIMEOUT)]
    grader = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=dict(os.environ, COURSE_LAB_RUN=RUN))
    # Kill it once ann is in the journal and zoe's kernel runs her cells (her sleeping child exists): never
    # while a sandbox is still being spawned. (Counting processes named course_utils.lab...boot raced: bwrap
    # and the kernel inside it both carry that name, so ann's alone could pass for "two kernels".)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and grader.poll() is None:
        if journal.exists() and journal.read_text().count("\n") >= 1 and _zoe_sleeper() is not None:
            break
        time.sleep(0.2)
    assert grader.poll() is None, "the grader finished before it could be killed"
    assert "zoe" not in journal.read_text()
    grader.send_signal(signal.SIGKILL)  # while zoe's kernel runs its sleep
    grader.wait()
    # Its workers and zoe's kernel die with it (empty cgroups may stay); 4 s is less than zoe's sleep, so a
    # kernel that outlived the grader would still be running then.
    assert _leftovers_within(4, cgroups=False) == []
    assert not out.exists()
    code, stdout, stderr = _rerun_without_zoe_s_wait(args, tmp_path)
    assert code == 0, stderr[-2000:]
    assert "resumed: 1 result(s)" in stdout
    rows = {r["submission"]: r for r in csv.DictReader(out.open(encoding="utf-8"))
            if r["exercise"] != "TOTAL" and r["status"] != "missing"}  # the course's other notebooks: missing
    assert {k: (v["status"], v["points"]) for k, v in rows.items()} == {
        "ann/00_welcome.ipynb": ("ok", "2"), "zoe/00_welcome.ipynb": ("ok", "2")}
    assert sorted(p.name for p in out.parent.iterdir()) == ["grades.csv", "grades_canvas.csv", "grades_class_report.md", "grades_class_report.png",
                          "grades_feedback", "grades_similarity.md"]  # journal gone
    assert _leftovers_within(4) == []  # the rerun removed the killed run's cgroups


@pytest.mark.slow
def test_without_bwrap_the_grader_refuses_unless_told(tmp_path):
    subs, out = _small_folder(tmp_path, slow=False), tmp_path / "grades.csv"
    nbformat.write(with_cell("raise RuntimeError('oops')", base=solution()), str(subs / "ben" / "00_welcome.ipynb"))
    env = dict(os.environ, PATH=str(tmp_path / "empty"))  # no bwrap on this PATH
    common = ("grade", str(subs), "--out", str(out), "--source", str(WELCOME.parent), "--quiet", "--jobs", "2")
    proc = _cli(*common, env=env)
    assert proc.returncode == 2 and "bwrap not found" in proc.stderr and "--no-sandbox" in proc.stderr
    assert not out.exists()
    proc = _cli(*common, "--no-sandbox", env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "warning: NOT ISOLATED" in proc.stdout and "graded 2 submission(s)" in proc.stdout
    text = out.read_text()
    assert "ann/00_welcome.ipynb,00_welcome.ipynb,stable_softmax,2,2,ok" in text
    assert "ben/00_welcome.ipynb,00_welcome.ipynb,stable_softmax,2,2,ok" in text  # a raising cell costs nothing
    assert _leftovers_within(4) == []


# ---- more pieces, without a kernel ------------------------------------------------------------

def test_an_expanded_tensor_is_refused_before_it_is_materialised():
    import base64

    huge = torch.zeros(1).expand(1_500_000_000)  # 4 bytes of storage, 6 GB once converted
    buffer = io.BytesIO()
    torch.save(huge, buffer)
    assert len(buffer.getvalue()) < 10_000
    envelope = json.dumps({"kind": "value", "data": base64.b64encode(buffer.getvalue()).decode()})
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(StudentRaised, match="too large"):
        decode_reply("ok", repr(envelope))
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak < 200_000  # KiB: no GB allocated
    with pytest.raises(StudentRaised, match="too large"):
        check_size([torch.zeros(2), {"a": torch.zeros(MAX_VALUE_BYTES // 4)}])
    assert check_size({"a": torch.zeros(4, dtype=torch.float64)}) == MAX_VALUE_BYTES - 32


def test_the_kernel_side_sends_compact_copies_and_the_line_of_an_error():
    namespace: dict = {"__name__": "__main__"}
    source = "import torch\ndef f(x):\n    y = x + 1\n    raise ValueError('no')\ndef g(x):\n    return torch.zeros(10**6)[:3]\n"
    exec(compile(source, "/tmp/ipykernel_1/123.py", "exec"), namespace)
    exec(snapshot_code(["f", "g"], overwrite=True), namespace)
    exec(probe_code("f", (1,), {}), namespace)
    with pytest.raises(StudentRaised) as raised:
        decode_reply("ok", repr(namespace["_course_lab_result"]))
    assert raised.value.line == 4 and raised.value.error_type == "ValueError"
    exec(probe_code("g", (1,), {}), namespace)
    assert len(namespace["_course_lab_result"]) < 5_000  # three floats, not the 4 MB storage they view
    assert torch.equal(decode_reply("ok", repr(namespace["_course_lab_result"])), torch.zeros(3))


def test_the_reference_is_recognised_however_it_is_disguised():
    import types

    from course_utils.checks.welcome.stable_softmax import stable_softmax as ref

    namespace: dict = {"__name__": "__main__"}
    exec(compile("def mine(x):\n    return x.softmax(-1)\n", "/tmp/ipykernel_1/1.py", "exec"), namespace)
    rebuilt = types.FunctionType(ref.__code__, {}, "mine")
    rebuilt.__module__ = "__main__"
    renamed = types.FunctionType(ref.__code__.replace(co_filename="<cell>", co_name="mine"), {})
    copied: dict = {"__name__": "__main__"}
    exec(compile(__import__("inspect").getsource(ref), "/tmp/ipykernel_1/2.py", "exec"), copied)
    fingerprint = {}
    exec(__import__("course_utils.lab.grading.kernel_code", fromlist=["x"]).FINGERPRINT_CODE, fingerprint)

    def origin(obj):
        return dict(zip(("file", "fingerprint"), fingerprint["_course_lab_fingerprint"](obj)))

    assert is_course_code(origin(ref)) and is_course_code(origin(rebuilt))
    assert is_course_code(origin(renamed))  # the same code object under another file name
    assert not is_course_code(origin(namespace["mine"]))
    assert not is_course_code(origin(copied[ref.__name__]))  # retyped (pasted) into a cell: the student's own
    # decorators are looked through: torch's no_grad wrapper is the same code for every function it
    # wraps, course functions included, so a student's @torch.no_grad() function must still be theirs
    decorated = torch.no_grad()(namespace["mine"])
    assert origin(decorated)["file"] == "/tmp/ipykernel_1/1.py" and not is_course_code(origin(decorated))
    assert is_course_code(origin(torch.no_grad()(ref))) and is_course_code(origin(functools.partial(rebuilt)))
    looped = namespace["mine"]
    looped.__wrapped__ = looped  # a cycle ends the walk instead of hanging it
    assert not is_course_code(origin(looped))


def test_one_line_removes_breaks_and_control_characters():
    assert one_line("a\nb\r\nc\x1b[2J\u202ed\u2028e") == "a ⏎ b ⏎ c[2Jd ⏎ e"
    result = SubmissionResult("x\n# Feedback for y", "x.ipynb", "00_welcome.ipynb", "ok",
                              [ExerciseResult("stable_softmax", 0, 2, "ok", "raised E: a\n## y.ipynb\n<b>[l](u)")])
    text = feedback_text(result.student, [result])
    assert [line for line in text.splitlines() if line.startswith("#")] == ["# Feedback for x ⏎ # Feedback for y", "## x.ipynb"]
    assert "<b>" not in text and "&lt;b>" in text and "\\[l](u)" in text  # no raw HTML, no link


def test_an_empty_folder_inside_a_students_folder_is_named(tmp_path):
    subs = tmp_path / "subs"
    (subs / "ann" / "drafts").mkdir(parents=True)
    (subs / "ann" / "week1" / "old").mkdir(parents=True)
    nbformat.write(solution(), str(subs / "ann" / "00_welcome.ipynb"))
    (subs / "bob" / "nothing").mkdir(parents=True)
    warnings = []
    found = [s.rel for s in find_submissions(subs, warnings)]
    assert found == ["ann/00_welcome.ipynb"]
    assert warnings == ["skipped ann/drafts/ (an empty folder: no submission)",
                        "skipped ann/week1/old/ (an empty folder: no submission)",
                        "skipped ann/week1/ (an empty folder: no submission)",
                        "skipped bob/nothing/ (an empty folder: no submission)",
                        "skipped bob/ (an empty folder: no submission)"]


def _iopub(kind: str, **content) -> dict:
    return {"msg_type": kind, "content": content, "header": {"msg_type": kind}, "parent_header": {"msg_id": "m"},
            "metadata": {}}


def test_errors_and_tracebacks_count_against_the_output_caps():
    client = _CappedClient(nbformat.v4.new_notebook(), None, 1_000, 2_500)  # per cell, per submission
    client.reset_execution_trackers()
    client.clear_before_next_output = False  # what nbclient sets before it runs a cell
    huge = "x" * 100_000
    traceback = [f"frame {i}: " + "y" * 400 for i in range(50)] + ["ValueError: " + huge]
    for cell in range(5):
        outs = []
        client.output(outs, _iopub("stream", name="stdout", text="a" * 300), None, cell)
        client.output(outs, _iopub("error", ename="ValueError", evalue=huge, traceback=traceback), None, cell)
        kept = sum(len(o.get("text", "")) + len(o.get("evalue", "")) + sum(map(len, o.get("traceback", [])))
                   for o in outs)
        assert kept <= 1_000  # per cell, the error included
        assert outs[-1].output_type == "error" and outs[-1].ename == "ValueError"  # the name always stays
        assert client.errors[cell] == ("ValueError", huge[:300])  # what the cell's problem line says
    assert client.kept_total <= 2_500 and sum(client.kept.values()) == client.kept_total  # per submission
    assert client.kept[3] == client.kept[4] == 0 and client.dropped[4] == 300 + 100_000 + len("".join(traceback))
    outs = []
    client.output(outs, _iopub("error", ename="E" * 10**6, evalue="", traceback=[]), None, 5)
    assert len(outs[0].ename) == _CappedClient.NAME_CHARS
    # a figure (or a widget, HTML, a value) is not kept, costs no room and is not reported as truncated
    dropped, outs = dict(client.dropped), []
    client.output(outs, _iopub("display_data", data={"image/png": "i" * 10**6}, metadata={}), None, 6)
    assert outs == [] and client.dropped == dropped and 6 not in client.kept


def test_links_dot_names_and_old_notebooks(tmp_path):
    subs = tmp_path / "subs"
    (subs / "ann").mkdir(parents=True)
    nbformat.write(solution(), str(subs / "ann" / "00_welcome.ipynb"))
    (subs / ".eve").mkdir()
    (subs / ".eve" / "00_welcome.ipynb").write_text(nbformat.writes(nbformat.convert(solution(), 3), version=3))
    (subs / "ben").mkdir()
    (subs / "ben" / "00_welcome.ipynb").symlink_to(subs / "ann" / "00_welcome.ipynb")
    (subs / "ben" / "mine.ipynb").symlink_to("00_welcome.ipynb")  # a link to ben's own (linked) file
    (subs / "cat").symlink_to(tmp_path)
    (subs / "empty").mkdir()
    warnings = []
    found = {s.rel: s for s in find_submissions(subs, warnings)}
    assert set(found) == {"ann/00_welcome.ipynb", ".eve/00_welcome.ipynb", "ben/00_welcome.ipynb", "ben/mine.ipynb", "cat"}
    assert found["ben/00_welcome.ipynb"].status == "link" and "another student's" in found["ben/00_welcome.ipynb"].problem
    assert found["cat"].status == "link" and "outside" in found["cat"].problem
    assert warnings == ["skipped empty/ (an empty folder: no submission)"]
    nb, problem = read_submission(found[".eve/00_welcome.ipynb"].path)
    assert problem == "" and nb.nbformat == 4 and any("def stable_softmax" in c.source for c in nb.cells)


WRAPPERS = {  # each defines `stable_softmax` so that the course's reference does the work
    "calls EXERCISES[...].reference": "from course_utils.checks.welcome import EXERCISES\n"
                                      "def stable_softmax(x):\n    return EXERCISES['stable_softmax'].reference(x)\n",
    "calls the course module's function": "import course_utils.softmax as cs\n"
                                          "def stable_softmax(x):\n    return cs.softmax(x)\n",
    "a lambda": "import course_utils.checks.welcome.stable_softmax as welcome\n"
                "stable_softmax = lambda x: welcome.stable_softmax(x)\n",
    "functools.partial": "import functools, course_utils.softmax as cs\n"
                         "def stable_softmax(x):\n    return functools.partial(cs.softmax, dim=-1)(x)\n",
    "a closure": "def _make():\n    from course_utils.softmax import softmax as hidden\n"
                 "    def stable_softmax(x):\n        return hidden(x)\n    return stable_softmax\n"
                 "stable_softmax = _make()\n",
    "a class attribute": "import course_utils.checks.welcome as w\nclass Holder:\n"
                         "    impl = staticmethod(w.STABLE_SOFTMAX.reference)\n"
                         "def stable_softmax(x):\n    return Holder.impl(x)\n",
    "getattr on a module": "import importlib\ndef stable_softmax(x):\n"
                           "    module = importlib.import_module('course_utils.' + 'soft' + 'max')\n"
                           "    return getattr(module, 'soft' + 'max')(x)\n",
    "another thread": "from concurrent.futures import ThreadPoolExecutor\nfrom course_utils.softmax import softmax\n"
                      "def stable_softmax(x):\n    with ThreadPoolExecutor(1) as pool:\n"
                      "        return pool.submit(softmax, x).result()\n",
    "a module's __module__ and names disguised": "import types, course_utils.softmax as cs\n"
                                                 "f = types.FunctionType(cs.softmax.__code__,\n"
                                                 "                       cs.softmax.__globals__, 'mine')\n"
                                                 "f.__module__ = '__main__'\n"
                                                 "def stable_softmax(x):\n    return f(x, -1)\n",
}


def _probe_in_namespace(source: str, watch, name: str = "stable_softmax", args=None):
    namespace: dict = {"__name__": "__main__"}
    exec(compile(source, "/tmp/ipykernel_1/7.py", "exec"), namespace)
    exec(snapshot_code([name], overwrite=True), namespace)
    exec(probe_code(name, args if args is not None else (torch.randn(2, 3),), {}, None, watch), namespace)
    return namespace["_course_lab_result"]


@pytest.mark.parametrize("how", sorted(WRAPPERS))
def test_a_wrapper_around_the_reference_is_caught(how):
    from course_utils.checks.welcome import STABLE_SOFTMAX

    watch = reference_codes(STABLE_SOFTMAX)
    assert len(watch) == 2  # the checks' one-line reference and course_utils.softmax.softmax it delegates to
    reply = _probe_in_namespace(WRAPPERS[how], watch)
    with pytest.raises(ReferenceCalled) as called:
        decode_reply("ok", repr(reply))
    assert not called.value.untraced and called.value.name in ("stable_softmax", "softmax")
    assert sys.gettrace() is None or sys.gettrace().__name__ != "tracer"  # the kernel's own tracer is restored


def test_own_code_and_other_course_helpers_are_not_flagged():
    from course_utils.checks import all_exercises

    exercises = all_exercises()
    own = ("import torch\ndef stable_softmax(x):\n    s = x - x.amax(-1, keepdim=True)\n"
           "    return s.exp() / s.exp().sum(-1, keepdim=True)\n")
    value = decode_reply("ok", repr(_probe_in_namespace(own, reference_codes(exercises["stable_softmax"]))))
    assert torch.allclose(value.sum(-1), torch.ones(2))
    # an earlier exercise's reference, used in a later one (the notebooks import them for that): allowed
    uses_softmax = "from course_utils.softmax import softmax\ndef causal_mask(n):\n    softmax(torch.zeros(n))\n" \
                   "    return torch.ones(n, n, dtype=torch.bool).tril()\nimport torch\n"
    value = decode_reply("ok", repr(_probe_in_namespace(uses_softmax, reference_codes(exercises["causal_mask"]),
                                                        "causal_mask", (3,))))
    assert value.dtype == torch.bool and value.shape == (3, 3)
    delegates = "from course_utils import masking\ndef causal_mask(n):\n    return masking.causal_mask(n)\n"
    with pytest.raises(ReferenceCalled):
        decode_reply("ok", repr(_probe_in_namespace(delegates, reference_codes(exercises["causal_mask"]),
                                                    "causal_mask", (3,))))


def test_switching_the_watch_off_is_reported():
    from course_utils.checks.welcome import STABLE_SOFTMAX

    source = "import sys\nfrom course_utils.softmax import softmax\ndef stable_softmax(x):\n" \
             "    sys.settrace(None)\n    return softmax(x)\n"
    with pytest.raises(ReferenceCalled) as called:
        decode_reply("ok", repr(_probe_in_namespace(source, reference_codes(STABLE_SOFTMAX))))
    assert called.value.untraced
