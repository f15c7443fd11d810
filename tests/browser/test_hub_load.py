"""The hub's load test in small (issue #41.2): benchmarks/bench_hub_load.py with 5 students at once.

Five students (real Linux accounts where the test is root) sign in together on the deploy's hub, each runs
00_welcome over their kernel's websocket up to the first check, which must pass, and hands in. No sign-in, spawn,
cell, check or hand-in may fail, every hand-in must be on disk, and the measurements the benchmark reports must
be there: each student's peak memory (under the deploy's per-student limit) and the hub's. The numbers go to
test-artifacts/browser/jupyterhub_load.json; the N = 5 / 10 / 20 table is benchmarks/RESULTS_hub.md.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from benchmarks.bench_hub_load import measure
from browser.hub import missing_hub_reason
from browser.session import ARTIFACTS

pytestmark = [pytest.mark.timeout(600), pytest.mark.browser, pytest.mark.slow]

STUDENTS = 5
PER_STUDENT_LIMIT_MIB = 2048  # deploy/jupyterhub_config.py's Spawner.mem_limit


def test_five_students_at_once_reach_a_passing_check_and_hand_in():
    reason = missing_hub_reason()
    if reason:
        pytest.skip(reason)
    # a thread of its own: the other browser tests' Playwright session keeps an event loop running in this
    # worker's thread, and the load test's clients run on asyncio (CI run 26: "asyncio.run() cannot be called
    # from a running event loop")
    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(measure, STUDENTS).result()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "jupyterhub_load.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result))
    assert result["failed"] == {}, result["failed"]
    assert result["handed_in"] == STUDENTS
    assert result["verdict_p50_s"] <= result["verdict_p95_s"] <= result["verdict_max_s"]
    assert 0 < result["student_peak_rss_mib_median"] <= result["student_peak_rss_mib_max"] < PER_STUDENT_LIMIT_MIB
    assert result["hub_peak_rss_mib"] > 0 and result["cpu_s"] > 0
