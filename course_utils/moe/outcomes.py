"""What the balancing experiment shows: claims with their margins, counts, and the spread of the loss.

Covers ``final_shares`` (each expert's share of the assignments over a run's last steps),
``starved_experts`` (experts left with under 2% of the load), ``claim_margins`` (how far each claim
of notebook 07 is from failing on one seed's three runs: positive means it holds), ``claims`` (the
same as bools), ``starved_histories`` (did a starved expert ever have a real share, or never) and
``loss_spread`` (median and quartiles of each method's final loss over seeds).

The rule (CONTRIBUTING, "Claims about trained models"): a claim is asserted only if it holds with a
margin on every seed and every numerics path (SIMD width) tried; anything else is shown as a count.
"Every starved expert got tokens at the first step" was such a knife edge: on seed 1 it held on
AVX-512 and failed on AVX2 (0 of 512 assignments), so it is now a count (``starved_histories``).
Whether balancing lowers the final loss depends on the seed, so that is a spread, not a claim.
``claims(run_experiment(ExperimentConfig(), seed=0))`` -> ``{"no balancing leaves ...": True, ...}``.
Leaves out the training itself (``course_utils.moe.experiment``).
"""

from __future__ import annotations

import statistics

import torch
from torch import Tensor

from course_utils.moe.balancing import usage_entropy
from course_utils.moe.experiment import TrainingRun

STARVED = 0.02  # an expert below this share of the load at the end is "starved"
BALANCED = 0.05  # bias balancing keeps every expert above this share
OWNER = 0.25  # an expert "serves" a sub-task when it takes more than this share of it (expert_owners)


def final_shares(run: TrainingRun, last: int = 20) -> Tensor:
    """Each expert's share of the assignments, averaged over the run's ``last`` steps (sums to 1)."""
    return run.shares[-last:].mean(dim=0)


def starved_experts(run: TrainingRun) -> list[int]:
    """The experts that end the run with less than ``STARVED`` of the load."""
    return torch.nonzero(final_shares(run) < STARVED).flatten().tolist()


def _check_runs(runs) -> None:
    if not isinstance(runs, dict) or set(runs) != {"none", "aux", "bias"}:
        raise ValueError(f"runs must be run_experiment's dict with keys none, aux, bias, got {runs!r:.80}")


def claim_margins(runs: dict[str, TrainingRun]) -> dict[str, float]:
    """Each claim of one seed's three runs (``run_experiment``'s dict) and its margin: > 0 means it holds.

    Shares are fractions of the load, entropies bits: "0.004" on the first claim means the emptiest
    expert sits 0.4 percentage points below the 2% line.
    """
    _check_runs(runs)
    final = {name: final_shares(run) for name, run in runs.items()}
    entropy = {name: usage_entropy(shares) for name, shares in final.items()}
    # the expert that serves its busiest sub-task least; "serves no sub-task" when that is under OWNER
    least_owner = runs["none"].specialisation.max(dim=0).values.min()
    return {
        "no balancing leaves an expert below 2% of the load": STARVED - float(final["none"].min()),
        "no balancing spreads the load least evenly (lowest usage entropy)": float(
            min(entropy["aux"], entropy["bias"]) - entropy["none"]
        ),
        "aux loss: every expert above 2% of the load": float(final["aux"].min()) - STARVED,
        "bias: every expert above 5% of the load": float(final["bias"].min()) - BALANCED,
        "no balancing: some expert serves no sub-task": OWNER - float(least_owner),
    }


def claims(runs: dict[str, TrainingRun]) -> dict[str, bool]:
    """The outcome of one seed's three runs, claim by claim (``claim_margins`` > 0)."""
    return {claim: margin > 0 for claim, margin in claim_margins(runs).items()}


def starved_histories(sweep: dict[int, dict[str, TrainingRun]]) -> dict[str, int]:
    """Over every seed's no-balancing run, how the starved experts got there: counts of those that
    had at least 2% of the load at some step and lost it, and of those that never reached 2%."""
    _check_sweep(sweep)
    lost = never = 0
    for runs in sweep.values():
        shares = runs["none"].shares
        for e in starved_experts(runs["none"]):
            if bool((shares[:, e] >= STARVED).any()):
                lost += 1
            else:
                never += 1
    return {"had a share and lost it": lost, "never reached 2%": never}


def _check_sweep(sweep) -> None:
    if not isinstance(sweep, dict) or not sweep:
        raise ValueError("sweep must be a non-empty dict {seed: run_experiment(...)}")


def loss_spread(sweep: dict[int, dict[str, TrainingRun]]) -> dict[str, tuple[float, float, float]]:
    """``{method: (lower quartile, median, upper quartile)}`` of the final held-out loss over the seeds.

    Quartiles, not mean ± standard deviation: one seed's outlier (seed 5's bias run at 2.5x the
    others) moves a mean and a standard deviation far more than a median.
    """
    _check_sweep(sweep)
    spread = {}
    for name in ("none", "aux", "bias"):
        losses = sorted(runs[name].eval_loss for runs in sweep.values())
        if len(losses) == 1:
            spread[name] = (losses[0], losses[0], losses[0])
            continue
        low, median, high = statistics.quantiles(losses, n=4, method="inclusive")
        spread[name] = (low, median, high)
    return spread
