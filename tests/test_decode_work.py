"""decode_work: the counted multiply-adds of one generation step against FlopCounterMode on the real
cached and uncached passes (2 FLOPs per multiply-add), a hand-worked example, and clear errors."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from course_utils.gpt.decode_work import decode_step_work
from course_utils.gpt.generation import forward_with_cache
from course_utils.gpt.model import GPT, GPTConfig

CFG = GPTConfig(d_vocab=41, n_ctx=16, d_model=24, n_heads=3, n_layers=2, d_mlp=40)


def _flops(fn) -> int:
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


@pytest.mark.parametrize("pos", [0, 1, 7, 15])
def test_counts_match_flop_counter_with_and_without_the_cache(pos):
    model = GPT(CFG).eval()
    tokens = torch.randint(0, CFG.d_vocab, (1, pos + 1), generator=torch.Generator().manual_seed(pos))
    _, cache = forward_with_cache(model, tokens[:, :pos]) if pos else (None, None)
    cached = _flops(lambda: forward_with_cache(model, tokens[:, pos:], cache))
    recomputed = _flops(lambda: model(tokens))
    assert cached == 2 * decode_step_work(CFG, pos, use_cache=True)["total"]
    assert recomputed == 2 * decode_step_work(CFG, pos, use_cache=False)["total"]


def test_worked_example_by_hand():
    cfg = GPTConfig(d_vocab=10, n_ctx=8, d_model=4, n_heads=2, n_layers=1, d_mlp=16)
    with_cache, without = decode_step_work(cfg, 2, True), decode_step_work(cfg, 2, False)
    assert with_cache == {"projections": 64, "scores": 12, "mixing": 12, "mlp": 128, "unembed": 40,
                          "total": 256, "kv_rows": 1}
    assert without == {"projections": 192, "scores": 36, "mixing": 36, "mlp": 384, "unembed": 120,
                       "total": 768, "kv_rows": 3}


def test_bad_input():
    with pytest.raises(ValueError, match="pos"):
        decode_step_work(CFG, CFG.n_ctx, True)
    with pytest.raises(TypeError, match="cfg"):
        decode_step_work("gpt", 0, True)
    with pytest.raises(TypeError, match="use_cache"):
        decode_step_work(CFG, 0, "yes")
