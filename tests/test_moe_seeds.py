"""The balancing experiment of notebook 07 over seeds 0-5: every claim the notebook asserts holds on
every seed (issue 24, point 1), the load shares add up, and the claims' checker rejects runs that
break them."""

import copy

import pytest
import torch

from course_utils.moe_experiment import ExperimentConfig, run_experiment
from course_utils.moe_outcomes import claims, final_shares, loss_spread, starved_experts

SEEDS = range(6)


@pytest.fixture(scope="module")
def sweep():
    threads = torch.get_num_threads()
    runs = {seed: run_experiment(ExperimentConfig(), seed=seed) for seed in SEEDS}
    assert torch.get_num_threads() == threads  # the one-thread setting is restored
    return runs


@pytest.mark.parametrize("seed", SEEDS)
def test_every_claim_holds_on_every_seed(sweep, seed):
    outcome = claims(sweep[seed])
    assert len(outcome) == 6
    assert all(outcome.values()), [claim for claim, held in outcome.items() if not held]
    for run in sweep[seed].values():
        torch.testing.assert_close(final_shares(run).sum(), torch.tensor(1.0))


def test_claims_fail_on_runs_that_break_them(sweep):
    runs = sweep[0]
    swapped = {"none": runs["bias"], "aux": runs["aux"], "bias": runs["none"]}  # the balanced run as "none"
    outcome = claims(swapped)
    assert not outcome["no balancing leaves an expert below 2% of the load"]
    assert not outcome["bias: every expert above 5% of the load"]
    late = copy.copy(runs["none"])
    late.shares = runs["none"].shares.clone()
    late.shares[0, starved_experts(runs["none"])[0]] = 0.0  # a starved expert that got nothing at step 1
    assert not claims({**runs, "none": late})["no balancing: every starved expert got tokens at the first step"]
    with pytest.raises(ValueError, match="runs"):
        claims({"none": runs["none"]})


def test_loss_spread_is_mean_and_sample_std(sweep):
    spread = loss_spread({seed: sweep[seed] for seed in (0, 1)})
    a, b = sweep[0]["aux"].eval_loss, sweep[1]["aux"].eval_loss
    assert spread["aux"][0] == pytest.approx((a + b) / 2)
    assert spread["aux"][1] == pytest.approx(abs(a - b) / 2**0.5)
    with pytest.raises(ValueError, match="sweep"):
        loss_spread({})
