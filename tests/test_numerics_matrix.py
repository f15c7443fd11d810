"""Every test that trains something and checks a claim about the result, again on the lowest numerics path
(``default`` / SSE4.2; tests/numerics.py). The native path is the ordinary run of the same files. Each claim's
smallest margin on each path goes into the run's summary, so a claim that holds by a hair is visible before it
breaks on a student's CPU.

Each path this CPU offers gets one full pass (``numerics.other_paths``): the notebooks, with every stored output
and every claim they assert, run in the environment ``make lab`` builds on AVX2 where the CPU has AVX-512 and on
the lowest path otherwise (tests/test_lab_env.py); the claim tests, with all their seeds, run here on the lowest.
"""

from __future__ import annotations

import textwrap

import pytest

from numerics import other_paths, paths_here, run_on_path

pytestmark = pytest.mark.slow

FAMILIES = {  # what notebook claims about a trained model -> the tests that state those claims
    "05 induction heads": ["tests/test_induction.py::test_model_learns_to_copy",
                           "tests/test_induction.py::test_layer0_has_a_previous_token_head_and_layer1_an_induction_head"],
    # 06 in three parts, so that the test workers share its cost (the SAE sweep alone is the largest)
    "06 twenty features in five, and its SAE": ["tests/test_06_seeds.py::test_twenty_in_five_sweep_and_its_sae"],
    "06 five features in two": ["tests/test_06_seeds.py::test_five_in_two_sweep_makes_antipodal_pairs_then_a_pentagon"],
    "06 phases and the AND gate": ["tests/test_06_seeds.py::test_phase_picture",
                                   "tests/test_06_seeds.py::test_and_gate_with_a_margin_never_fires_on_one_name"],
    "07 balancing lab": ["tests/test_moe_seeds.py"],
    "11 outcomes and head readings": ["tests/test_gpt_outcomes.py::test_every_claim_of_notebook_11_holds_on_every_seed_with_margin"],
    "10 committed runs replayed": ["tests/test_seed_checkpoints.py::test_each_checkpoint_is_its_seeds_run"],
    "12 side-by-side runs replayed": ["tests/test_llama_side_by_side.py::test_committed_runs_replay"],
    "40 induction circuit": ["tests/test_induction_circuit.py::test_the_induction_head_matters_and_composes_with_the_head_that_feeds_it"],
    # notebook 13's SAE: natively on all five runs; here the two with the smallest margins (gamma on run 0, variance
    # explained and the norm ratio on run 2), 27 s instead of 67 s in CI. All five agreed within 1e-3 on the native,
    # AVX2 and lowest paths, measured 2026-12-07 (issue #40's note).
    "40 SAE on the course GPT's MLP (13)": [
        f"tests/test_sae_on_mlp.py::test_every_claim_notebook_13_makes_about_its_sae_holds_on_every_course_run[run{r}]"
        for r in (0, 2)],
}


@pytest.fixture(scope="module")
def here():
    return paths_here()


@pytest.mark.parametrize("family", FAMILIES)
def test_claims_hold_on_the_lowest_numerics_path(family, here, record_property):
    path = "lowest"
    if path not in here:
        pytest.skip("this CPU's native path is the lowest one")
    code, output, found = run_on_path(path, FAMILIES[family])
    record_property("margins", [(claim["claim"], claim["margin"], path) for claim in found])
    assert code == 0, f"{family} on the {path} path:\n{output[-4000:]}"
    assert found, f"{family}: the tests recorded no claim margins on the {path} path"


PLANTED = '''
from course_utils.moe.experiment import ExperimentConfig, run_experiment
from tests.numerics import Margins

def test_seed_one_ends_where_it_ended_natively(record_property):
    """A planted claim true on the native path only: seed 1's loss equals, to the bit, its native value."""
    margins = Margins(record_property)
    loss = run_experiment(ExperimentConfig(steps=60), seed=1)["none"].eval_loss
    margins.check("planted: seed 1 ends at its native loss", 1.0 if loss == {native!r} else -1.0)
'''


def test_the_matrix_catches_a_claim_that_holds_on_one_path_only(tmp_path, here):
    """The planted claim holds natively (by construction) and the matrix reports it failing elsewhere: the
    switches really change the arithmetic, and a path-dependent claim cannot slip through."""
    if len(here) < 2:
        pytest.skip("this CPU offers one numerics path only")
    from course_utils.moe.experiment import ExperimentConfig, run_experiment

    native = run_experiment(ExperimentConfig(steps=60), seed=1)["none"].eval_loss
    planted = tmp_path / "test_planted_claim.py"
    planted.write_text(textwrap.dedent(PLANTED.format(native=native)))
    outcomes = {path: run_on_path(path, [str(planted)], timeout=300) for path in here}
    assert outcomes["native"][0] == 0, outcomes["native"][1][-2000:]
    failed = [path for path, (code, _, found) in outcomes.items() if code != 0 and found and found[-1]["margin"] < 0]
    assert failed, {path: found for path, (_, _, found) in outcomes.items()}


@pytest.mark.parametrize("capability, expected", [
    ("AVX512", {"notebooks": "avx2", "claims": "lowest"}),
    ("AVX512_BF16", {"notebooks": "avx2", "claims": "lowest"}),
    ("AVX2", {"notebooks": "lowest", "claims": "lowest"}),
    ("DEFAULT", {"notebooks": None, "claims": None}),
])
def test_every_path_a_cpu_offers_gets_one_full_pass(capability, expected):
    assert other_paths(capability) == expected
    assert set(paths_here(capability)) == {"native"} | {p for p in expected.values() if p}
