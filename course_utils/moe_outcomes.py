"""What the balancing experiment shows, as claims that hold on every seed, and the spread of the rest.

Covers ``final_shares`` (each expert's share of the assignments over a run's last steps),
``starved_experts`` (experts left with under 2% of the load), ``claims`` (the experiment's outcome
on one seed's three runs, each a bool) and ``loss_spread`` (mean and standard deviation of the
final loss of each method over seeds). The claims are the ones that held on seeds 0-9 when they were
chosen (``tests/test_moe_seeds.py`` sweeps seeds 0-5); whether balancing lowers the final loss
depended on the seed, so it is reported as a spread, not claimed.
``claims(run_experiment(ExperimentConfig(), seed=0))`` -> ``{"no balancing leaves ...": True, ...}``.
Leaves out the training itself (``course_utils.moe_experiment``).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from course_utils.moe_balancing import usage_entropy
from course_utils.moe_experiment import TrainingRun, expert_owners

STARVED = 0.02  # an expert below this share of the load at the end is "starved"


def final_shares(run: TrainingRun, last: int = 20) -> Tensor:
    """Each expert's share of the assignments, averaged over the run's ``last`` steps (sums to 1)."""
    return run.shares[-last:].mean(dim=0)


def starved_experts(run: TrainingRun) -> list[int]:
    """The experts that end the run with less than ``STARVED`` of the load."""
    return torch.nonzero(final_shares(run) < STARVED).flatten().tolist()


def _idle(run: TrainingRun) -> list[int]:
    """Experts that take more than a quarter of no sub-task's assignments (``expert_owners``)."""
    owned = {e for owners in expert_owners(run.specialisation) for e in owners}
    return sorted(set(range(run.model.n_experts)) - owned)


def claims(runs: dict[str, TrainingRun]) -> dict[str, bool]:
    """The outcome of one seed's three runs (``run_experiment``'s dict), claim by claim."""
    if not isinstance(runs, dict) or set(runs) != {"none", "aux", "bias"}:
        raise ValueError(f"runs must be run_experiment's dict with keys none, aux, bias, got {runs!r:.80}")
    final = {name: final_shares(run) for name, run in runs.items()}
    entropy = {name: usage_entropy(shares) for name, shares in final.items()}
    starved = starved_experts(runs["none"])
    first_step = runs["none"].shares[0]
    return {
        "no balancing leaves an expert below 2% of the load": bool(starved),
        "no balancing spreads the load least evenly (lowest usage entropy)": entropy["none"] < min(
            entropy["aux"], entropy["bias"]
        ),
        "aux loss: every expert above 2% of the load": bool(final["aux"].min() > STARVED),
        "bias: every expert above 5% of the load": bool(final["bias"].min() > 0.05),
        "no balancing: every starved expert got tokens at the first step": all(first_step[e] > 0 for e in starved),
        "no balancing: some expert serves no sub-task": bool(_idle(runs["none"])),
    }


def loss_spread(sweep: dict[int, dict[str, TrainingRun]]) -> dict[str, tuple[float, float]]:
    """``{method: (mean, standard deviation)}`` of the final held-out loss over the seeds of ``sweep``."""
    if not isinstance(sweep, dict) or not sweep:
        raise ValueError("sweep must be a non-empty dict {seed: run_experiment(...)}")
    spread = {}
    for name in ("none", "aux", "bias"):
        losses = [runs[name].eval_loss for runs in sweep.values()]
        mean = sum(losses) / len(losses)
        std = math.sqrt(sum((x - mean) ** 2 for x in losses) / max(len(losses) - 1, 1))
        spread[name] = (mean, std)
    return spread
