"""The grader against issue #27's class of hostile submissions: eight attacks, each reproduced.

Here each attack's piece without a kernel (fast). The notebooks that carry the attacks are graded in
``tests/test_grade.py``'s one sandboxed ``course-lab grade --jobs 2`` run, beside every other fixture
(``grading_fixtures.hostile_cases``): each gets its row with the stated status and points, and nothing
is left running.

1. a notebook whose JSON nests 100,000 levels deep (228 KB): ``unreadable``, the others graded;
2. an answer whose torch archive has a deflated record (50 KB that inflate to 48 MiB; the attack's
   14 MB inflate to 3 GiB): refused before inflating; the worker's memory is capped on its own;
3. an answer that is a graph of shared empty lists 64 levels deep (1.4 KB, 2^64 paths): refused
   after the item budget;
4. a thread in the kernel that keeps printing 1 MiB chunks: graded within its total time;
5. a function that looks up answers precomputed by calling the reference on ``cases(seed)`` in an
   earlier cell: the hidden cases are keyed by a secret the kernel never sees, so it fails them;
6. a sparse tensor whose indices lie far outside its shape: refused (dense strided tensors only);
7. a kernel that answers the probe with deeply nested JSON: ``probe_failed``, 0;
8. two folders whose names differ only by an invisible character: two students, with a warning.
"""

from __future__ import annotations

import base64
import io
import json
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest
import torch

from course_utils.checks import all_exercises
from course_utils.checks.welcome import EXERCISES
from course_utils.lab.grading.boot import cap_own_data
from course_utils.lab.grading.bounded import check_value, json_depth, loads_bounded
from course_utils.lab.grading.hidden import keyed_exercise
from course_utils.lab.grading.kernel_code import probe_code
from course_utils.lab.limits import MAX_JSON_DEPTH, MAX_VALUE_ITEMS, WORKER_MEMORY_MB
from course_utils.lab.grading.probe import ProbeFailed, StudentRaised, decode_reply
from course_utils.lab.grading.sandbox import isolation_problem
from course_utils.lab.grading.submissions import find_submissions, read_submission
from grading_fixtures import BOMB_CODE, DEEP, GRAPH_CODE, NAME, deep_notebook_text, solution

ISOLATION_PROBLEM = isolation_problem()




def _envelope(value_bytes: bytes) -> str:
    return repr(json.dumps({"kind": "value", "data": base64.b64encode(value_bytes).decode()}))


def _saved(value) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def _bomb() -> bytes:
    namespace: dict = {}
    exec(BOMB_CODE, namespace)
    return namespace["_course_bomb"]()


def _graph():
    namespace: dict = {}
    exec(GRAPH_CODE, namespace)
    return namespace["_course_graph"]()


def test_1_a_deeply_nested_notebook_is_unreadable_without_parsing_it(tmp_path):
    path = tmp_path / NAME
    path.write_text(deep_notebook_text())
    assert 190_000 < path.stat().st_size < 250_000  # the attack's 228 KB
    nb, problem = read_submission(path)
    assert nb is None and f"nested more than {MAX_JSON_DEPTH} levels deep" in problem
    assert json_depth('{"a": [1, "]]]{{"], "b": {"c": "\\"["}}', 10) == 2  # brackets in strings do not count
    assert loads_bounded("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, MAX_JSON_DEPTH)  # the limit itself reads
    with pytest.raises(ValueError, match="nested more than"):
        loads_bounded("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH)
    nbformat.write(solution(), str(path))
    assert read_submission(path)[0] is not None  # a real notebook is far from the limit


def test_2_a_deflated_record_is_refused_before_it_is_inflated():
    bomb = _bomb()
    assert len(bomb) < 100_000  # 48 MiB once inflated
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(StudentRaised, match="compressed record"):
        decode_reply("ok", _envelope(bomb))
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 30_000  # KiB: nothing inflated
    assert torch.equal(decode_reply("ok", _envelope(_saved([torch.ones(3)])))[0], torch.ones(3))


def test_2_the_worker_caps_its_own_memory():
    code = "from course_utils.lab.grading.boot import cap_own_data\ncap_own_data(512)\ntry:\n    bytearray(1 << 30)\n" \
           "except MemoryError:\n    print('refused')\n"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "refused"
    worker = subprocess.Popen([sys.executable, "-m", "course_utils.lab.grading.worker", "--serve"], stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline, line = time.monotonic() + 60, ""
        while time.monotonic() < deadline and str(WORKER_MEMORY_MB << 20) not in line:
            time.sleep(0.2)
            line = next(x for x in Path(f"/proc/{worker.pid}/limits").read_text().splitlines() if "data" in x)
        assert str(WORKER_MEMORY_MB << 20) in line.split()[3], line  # the soft limit
    finally:
        worker.stdin.close()
        worker.wait(timeout=30)
    with pytest.raises(ValueError, match="positive"):
        cap_own_data(0)


def _finishes_within(seconds: float, call) -> object:
    """``call()``'s result or exception, or a failure if it runs past ``seconds`` (left to spin)."""
    outcome: list = []

    def run():
        try:
            outcome.append(call())
        except BaseException as exc:  # noqa: BLE001  (handed to the test)
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"still running after {seconds} s"
    return outcome[0]


def test_3_a_graph_of_shared_lists_is_refused_by_its_item_budget():
    graph = _graph()
    wire = _saved(graph)
    assert len(wire) < 3_000  # 1.4 KB in the attack
    start = time.monotonic()
    raised = _finishes_within(60, lambda: decode_reply("ok", _envelope(wire)))
    assert isinstance(raised, StudentRaised) and f"more than {MAX_VALUE_ITEMS:,} items" in raised.message
    assert time.monotonic() - start < 30
    namespace: dict = {"__name__": "__main__", "_course_lab_saved": {"f": lambda: graph}}
    _finishes_within(60, lambda: exec(probe_code("f", (), {}), namespace))  # the kernel's side stops too
    assert json.loads(namespace["_course_lab_result"])["kind"] == "too_large"
    shared = [torch.ones(2)] * 3  # sharing itself is fine: counted along each path
    assert check_value(shared) == check_value([torch.ones(2), torch.ones(2), torch.ones(2)])


def test_5_hidden_cases_cannot_be_precomputed_in_the_kernel():
    exercise = EXERCISES["stable_softmax"]
    # What an earlier cell of a notebook can do: the course's cases for the public and hidden seeds,
    # answered by the reference, looked up by the input's bytes.
    table = {case.args[0].numpy().tobytes(): exercise.reference(*case.args) for s in (0, 1, 2, 3)
             for case in exercise.cases(s)}

    def lookup(x):
        return table.get(x.numpy().tobytes(), x)

    assert exercise.check(lookup, seed=1).passed  # with plain seeds the table answers the hidden cases
    keyed = keyed_exercise(exercise, "the instructor's secret")
    assert keyed.check(lookup, seed=0).passed and not keyed.check(lookup, seed=1).passed
    assert keyed.check(exercise.reference, seed=1).passed
    same = keyed_exercise(exercise, "the instructor's secret").cases(1)
    other = keyed_exercise(exercise, "another secret").cases(1)
    pairs = [(a.args[0], b.args[0], c.args[0]) for a, b, c in zip(keyed.cases(1), same, other)]
    assert all(torch.equal(a, b) for a, b, _ in pairs)  # the same key: the same cases (a rerun grades alike)
    assert not all(torch.equal(a, c) for a, _, c in pairs)


# Exercises whose hidden cases were built from the seed alone (no generator), so a table of the
# plain cases(1..3) answered them: their hidden sizes and texts now come from random.Random(seed).
KEYED_BY_RANDOM = ["attention_parameter_count", "byte_bpe_train", "causal_mask", "mlp_parameter_count",
                   "model_parameter_count", "sinusoidal_encoding", "training_flops_estimate", "welch_bound"]


@pytest.mark.parametrize("name", KEYED_BY_RANDOM)
def test_5_a_table_of_the_plain_cases_misses_every_keyed_hidden_seed(name):
    """A table looked up by the inputs answers exactly the cases whose inputs it holds (the lookup
    itself is run end to end above and in the graded folder); every keyed hidden seed has a case it misses."""
    exercise = all_exercises()[name]
    tabled = {repr(case.args) for s in (0, 1, 2, 3) for case in exercise.cases(s)}
    keyed = keyed_exercise(exercise, "the instructor's secret")
    assert [repr(c.args) for c in keyed.cases(0)] == [repr(c.args) for c in exercise.cases(0)]  # public: as before
    for seed in (1, 2):
        assert any(repr(case.args) not in tabled for case in keyed.cases(seed)), f"seed {seed}"
    assert keyed.check(exercise.reference, seed=1).passed
    assert torch.Generator.__name__ == "Generator"  # nothing stays patched


def _has_tensor(value) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, dict):
        return any(_has_tensor(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_tensor(v) for v in value)
    return hasattr(value, "state_dict")  # a module built for the case


PLAIN_INPUT_EXERCISES = sorted(name for name, ex in all_exercises().items()
                               if not any(_has_tensor(case.args) for case in ex.cases(0)))


@pytest.mark.parametrize("name", PLAIN_INPUT_EXERCISES)
def test_5_hidden_inputs_of_plain_values_are_too_many_to_list(name):
    """An exercise whose inputs are Python ints, strings and lists (no random tensor) draws its keyed hidden
    cases from a space too big for a table of every possible input: 20 keys give at least 17 different case
    lists (bpe_decode's three corpus words gave 27 possible lists, 14 different on 20 keys)."""
    exercise = all_exercises()[name]
    keyed = {repr([case.args for case in keyed_exercise(exercise, f"key {k}").cases(1)]) for k in range(20)}
    assert len(keyed) >= 17, f"{name}: only {len(keyed)} different hidden case lists for 20 keys"


def test_6_only_dense_strided_tensors_are_accepted():
    sparse = torch.sparse_coo_tensor(torch.tensor([[0, 10**9]]), torch.tensor([1.0, 2.0]), (3,),
                                     check_invariants=False)
    with pytest.raises(StudentRaised, match="sparse_coo"):
        decode_reply("ok", _envelope(_saved({"answer": sparse})))
    with pytest.raises(ValueError, match="on meta"):
        check_value([torch.empty(2, device="meta")])
    assert check_value(torch.ones(4, 4).t()[1:]) >= 0  # a strided view inside its storage is fine


def test_7_a_deeply_nested_probe_reply_is_a_clean_failure():
    for text in ("[" * DEEP + "]" * DEEP, '{"kind": "value", "data": ' + "[" * DEEP + "]" * DEEP + "}"):
        with pytest.raises(ProbeFailed, match="nested more than"):
            decode_reply("ok", repr(text))
    with pytest.raises(ProbeFailed, match="not a string"):
        decode_reply("ok", "(" * 300 + ")" * 300)  # not the repr of a str at all


def test_8_names_that_differ_only_by_invisible_characters_stay_apart(tmp_path):
    for name in ("ann", "ann\u200b", "ann\u2060\u200b"):
        (tmp_path / name).mkdir()
        nbformat.write(solution(), str(tmp_path / name / NAME))
    warnings: list[str] = []
    found = find_submissions(tmp_path, warnings)
    assert sorted(s.student for s in found) == ["ann", "ann (2)", "ann (3)"]
    assert next(s.student for s in found if s.rel.startswith("ann/")) == "ann"
    assert len(warnings) == 1 and "'ann\\u200b' as 'ann (" in warnings[0] and "look the same" in warnings[0]
