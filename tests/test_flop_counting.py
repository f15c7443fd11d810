"""The small FLOP counter of notebook 04's sliding-window check against PyTorch's FlopCounterMode (the oracle
for matrix products), and by hand for the fused CPU attention kernel, which FlopCounterMode does not count."""

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from course_utils.checks.masking_softmax_temperature.sliding_window_attention import MatmulFlops


def test_matrix_products_count_as_flop_counter_mode_counts_them():
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(2, 5, 4, generator=gen), torch.randn(2, 4, 3, generator=gen)
    calls = [
        lambda: a @ b,
        lambda: a[0] @ b[0],
        lambda: torch.einsum("bij,bjk->bik", a, b),
        lambda: torch.addmm(torch.zeros(3), a[0], b[0]),
        lambda: torch.baddbmm(torch.zeros(2, 5, 3), a, b),
        lambda: torch.nn.functional.linear(a, b[0].T),
    ]
    for call in calls:
        with FlopCounterMode(display=False) as oracle:
            call()
        with MatmulFlops() as ours:
            call()
        assert ours.flops == oracle.get_total_flops() > 0


def test_fused_attention_counts_scores_and_mixing():
    q = torch.randn(2, 3, 8, 4)
    with MatmulFlops() as ours:
        F.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(8, 8, dtype=torch.bool).tril())
    assert ours.flops == 2 * (2 * 3 * 8 * 8 * 4) * 2  # q kᵀ and weights @ v, 2 FLOPs per multiply-add
