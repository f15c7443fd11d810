"""Compute-optimal training (Hoffmann et al. 2022, "Chinchilla"): about 20 tokens per parameter.

Covers ``chinchilla_tokens`` (D = 20 N) and ``compute_optimal`` (the N and D that spend a budget of
C = 6ND FLOPs with D = 20 N: N = sqrt(C / 120)). Chinchilla's N counts every parameter, embeddings
included, whereas Kaplan et al. 2020's scaling laws count non-embedding parameters
(``course_utils.counting.parameters.non_embedding_parameters``): at small sizes the two differ a lot.

Worked example, the paper's own model: Chinchilla, 70B parameters, was trained on 1.4T tokens:
``chinchilla_tokens(70e9)`` -> 1.4e12, and ``compute_optimal(6 * 70e9 * 1.4e12)`` -> (7e10, 1.4e12).

Leaves out: the fitted loss law L(N, D), the ratio's dependence on the budget and data quality,
and training past the optimum to make inference cheaper (as Llama's models do).
"""

from __future__ import annotations

import math

from course_utils.validate import positive_number

TOKENS_PER_PARAMETER = 20


def chinchilla_tokens(n_params: float, tokens_per_parameter: float = TOKENS_PER_PARAMETER) -> float:
    """Tokens a model of ``n_params`` parameters should see: ``chinchilla_tokens(1e9)`` -> 2e10."""
    positive_number("n_params", n_params)
    positive_number("tokens_per_parameter", tokens_per_parameter)
    return tokens_per_parameter * n_params


def compute_optimal(flops: float, tokens_per_parameter: float = TOKENS_PER_PARAMETER) -> tuple[float, float]:
    """``(N, D)`` with ``6 N D = flops`` and ``D = tokens_per_parameter * N``.

    ``compute_optimal(1.2e20)`` -> (1e9, 2e10).
    """
    positive_number("flops", flops)
    positive_number("tokens_per_parameter", tokens_per_parameter)
    n = math.sqrt(flops / (6 * tokens_per_parameter))
    return n, tokens_per_parameter * n
