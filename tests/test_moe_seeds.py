"""The balancing experiment of notebook 07 over seeds 0-11 (the notebook shows 0-9): every claim the
notebook asserts holds on every seed with its margin recorded (tests/test_numerics_matrix.py runs this file
on every numerics path of the CPU too), the load shares add up, and the claims' checker rejects runs that
break them."""

import copy

import pytest
import torch

from course_utils.moe.experiment import ExperimentConfig, run_experiment
from course_utils.moe.outcomes import claim_margins, claims, final_shares, loss_spread, starved_histories

SEEDS = range(12)


@pytest.fixture(scope="module")
def sweep():
    threads = torch.get_num_threads()
    runs = {seed: run_experiment(ExperimentConfig(), seed=seed) for seed in SEEDS}
    assert torch.get_num_threads() == threads  # the one-thread setting is restored
    return runs


@pytest.mark.parametrize("seed", SEEDS)
def test_every_claim_holds_on_every_seed(sweep, seed, margins):
    found = claim_margins(sweep[seed])
    assert len(found) == 5 and list(found) == list(claims(sweep[seed]))
    for run in sweep[seed].values():
        torch.testing.assert_close(final_shares(run).sum(), torch.tensor(1.0))
    for claim, margin in found.items():
        margins.check(f"07 balancing lab: {claim}", margin)


def test_claims_fail_on_runs_that_break_them(sweep):
    runs = sweep[0]
    swapped = {"none": runs["bias"], "aux": runs["aux"], "bias": runs["none"]}  # the balanced run as "none"
    outcome = claims(swapped)
    assert not outcome["no balancing leaves an expert below 2% of the load"]
    assert not outcome["bias: every expert above 5% of the load"]
    assert not outcome["no balancing spreads the load least evenly (lowest usage entropy)"]
    even = copy.copy(runs["none"])
    even.specialisation = torch.eye(4, dtype=torch.float64).repeat_interleave(2, dim=1) / 2  # two experts a sub-task
    assert not claims({**runs, "none": even})["no balancing: some expert serves no sub-task"]
    with pytest.raises(ValueError, match="runs"):
        claims({"none": runs["none"]})


def test_starved_histories_count_both_kinds(sweep):
    """Seed 0's starved experts (2, 5, 6): 2 and 6 had 2% or more early on and lost it, 5 never did."""
    counts = starved_histories({0: sweep[0]})
    assert counts == {"had a share and lost it": 2, "never reached 2%": 1}
    assert sum(starved_histories(sweep).values()) >= len(SEEDS)  # every seed has a starved expert


def test_loss_spread_is_quartiles(sweep):
    spread = loss_spread({seed: sweep[seed] for seed in range(5)})
    losses = sorted(sweep[seed]["aux"].eval_loss for seed in range(5))
    assert spread["aux"] == pytest.approx((losses[1], losses[2], losses[3]))  # five values: quartiles are data
    one = loss_spread({0: sweep[0]})
    assert one["none"] == (sweep[0]["none"].eval_loss,) * 3
    with pytest.raises(ValueError, match="sweep"):
        loss_spread({})


@pytest.mark.gpu
def test_every_claim_holds_on_the_gpu(margins):
    """The same claims, trained on CUDA (the same data and initial weights, drawn on the CPU)."""
    for seed in SEEDS:
        for claim, margin in claim_margins(run_experiment(ExperimentConfig(), seed=seed, device="cuda")).items():
            margins.check(f"07 balancing lab on the GPU: {claim}", margin)
