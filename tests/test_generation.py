"""Generation: the KV cache gives the logits and tokens of recomputing (greedy and seeded sampling),
cached attention against torch's causal SDPA, the fused cache's buffers (growing, continued two
ways, mixed with the reference cache, filled to n_ctx), and clear errors for bad prompts and settings."""

import pytest
import torch
import torch.nn.functional as F

from course_utils.gpt.generation import forward_with_cache, generate
from course_utils.gpt.model import GPTConfig
from tiny_models import sharp_gpt
from course_utils.gpt.kv_cache import KVCache, cached_attention
from course_utils.tolerances import tolerance

TINY = dict(d_vocab=41, n_ctx=32, d_model=24, n_heads=3, n_layers=2)


def _model(seed=0, **kw):
    return sharp_gpt(GPTConfig(**{**TINY, **kw}), seed)


def _prompt(batch=2, pos=5, seed=1):
    return torch.randint(0, 41, (batch, pos), generator=torch.Generator().manual_seed(seed))


def test_cached_attention_with_empty_cache_is_causal_attention():
    q, k, v = (torch.randn(2, 3, 7, 8, generator=torch.Generator().manual_seed(s)) for s in range(3))
    z, k_all, v_all = cached_attention(q, k, v)
    torch.testing.assert_close(z, F.scaled_dot_product_attention(q, k, v, is_causal=True), rtol=1e-5, atol=1e-6)
    assert k_all is k and v_all is v


def test_cached_attention_step_equals_the_last_row_of_full_attention():
    q, k, v = (torch.randn(2, 3, 7, 8, generator=torch.Generator().manual_seed(s)) for s in range(3))
    full = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    z, k_all, v_all = cached_attention(q[:, :, 4:], k[:, :, 4:], v[:, :, 4:], k[:, :, :4], v[:, :, :4])
    torch.testing.assert_close(z, full[:, :, 4:], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(k_all, k)
    torch.testing.assert_close(v_all, v)


@pytest.mark.parametrize("chunks", [[12], [5, 7], [5, 1, 1, 1, 4]])
def test_forward_with_cache_equals_recomputing(chunks):
    model = _model()
    tokens = _prompt(2, sum(chunks))
    cache, parts, start = None, [], 0
    for n in chunks:
        logits, cache = forward_with_cache(model, tokens[:, start:start + n], cache)
        parts.append(logits)
        start += n
    assert isinstance(cache, KVCache) and cache.length == sum(chunks)
    rtol, atol = tolerance(torch.float32)
    with torch.no_grad():
        torch.testing.assert_close(torch.cat(parts, dim=1), model(tokens), rtol=rtol, atol=10 * atol)


@pytest.mark.parametrize("settings", [dict(temperature=0), dict(temperature=1.0), dict(temperature=0.7, top_k=5),
                                      dict(temperature=1.2, top_p=0.8)])
def test_generate_with_cache_gives_the_tokens_of_recomputing(settings):
    model, prompt = _model(), _prompt()
    cached = generate(model, prompt, 20, generator=torch.Generator().manual_seed(3), **settings)
    plain = generate(model, prompt, 20, generator=torch.Generator().manual_seed(3), use_cache=False, **settings)
    assert cached.shape == (2, 25)
    assert torch.equal(cached[:, :5], prompt)
    assert torch.equal(cached, plain)


def test_greedy_picks_the_argmax_each_step():
    model, prompt = _model(), _prompt(1, 4)
    out = generate(model, prompt, 6, temperature=0)
    with torch.no_grad():
        for i in range(4, 10):
            assert int(out[0, i]) == int(model(out[:, :i])[0, -1].argmax())
    assert torch.equal(generate(model, prompt, 6, temperature=1.0, top_k=1), out)


def test_generate_without_cache_slides_past_the_context():
    model = _model()
    out = generate(model, _prompt(1, 30), 10, temperature=0, use_cache=False)
    assert out.shape == (1, 40)
    with pytest.raises(ValueError, match="use_cache=False"):
        generate(model, _prompt(1, 30), 10, temperature=0)


def test_bad_input_gets_clear_errors():
    model = _model()
    with pytest.raises(ValueError, match="temperature must be a finite number >= 0"):
        generate(model, _prompt(), 3, temperature=-0.5)
    with pytest.raises(ValueError, match="longer than the context n_ctx=32"):
        generate(model, _prompt(1, 33), 3)
    with pytest.raises(ValueError, match="unknown token id 41"):
        generate(model, torch.tensor([[3, 41]]), 3)
    with pytest.raises(ValueError, match="max_new_tokens"):
        generate(model, _prompt(), -1)


@pytest.mark.gpu
def test_cache_on_gpu_equals_recomputing():
    model, prompt = _model().cuda(), _prompt().cuda()
    cached = generate(model, prompt, 10, temperature=0)
    assert cached.device.type == "cuda"
    assert torch.equal(cached, generate(model, prompt, 10, temperature=0, use_cache=False))


@pytest.mark.parametrize("chunks", [[12], [5, 1, 1, 4]])
def test_fused_cache_equals_the_reference_cache(chunks):
    model = _model()
    tokens = _prompt(2, sum(chunks))
    caches = {"reference": None, "fused": None}
    start = 0
    for n in chunks:
        out = {}
        for impl in caches:
            out[impl], caches[impl] = forward_with_cache(model, tokens[:, start:start + n], caches[impl], impl=impl)
        rtol, atol = tolerance(torch.float32)
        torch.testing.assert_close(out["fused"], out["reference"], rtol=rtol, atol=10 * atol)
        start += n
    assert torch.equal(generate(model, tokens[:, :3], 15, temperature=0, impl="fused"),
                       generate(model, tokens[:, :3], 15, temperature=0, use_cache=False, impl="fused"))


def _cached_logits(model, tokens, chunks, impl="fused", cache=None, start=0):
    parts = []
    for n in chunks:
        logits, cache = forward_with_cache(model, tokens[:, start:start + n], cache, impl=impl)
        parts.append(logits)
        start += n
    return torch.cat(parts, dim=1), cache


def test_fused_cache_grows_past_its_first_buffer_and_matches_recomputing():
    model, tokens = _model(), _prompt(2, 32)  # n_ctx 32: the buffers grow 3 -> 6 -> 12 -> 24 -> 32
    logits, cache = _cached_logits(model, tokens, [3] + [1] * 26 + [3])
    assert cache.length == 32 and cache.keys[0].shape == (2, 3, 32, 8)
    rtol, atol = tolerance(torch.float32)
    with torch.no_grad():
        torch.testing.assert_close(logits, model(tokens), rtol=rtol, atol=10 * atol)


def test_fused_cache_continued_two_ways_keeps_both_continuations():
    model, a, b = _model(), _prompt(1, 9, seed=1), _prompt(1, 9, seed=2)
    b[:, :5] = a[:, :5]  # same first 5 tokens, then different ones
    _, shared = forward_with_cache(model, a[:, :5], impl="fused")
    logits_a, cache_a = _cached_logits(model, a, [1, 3], cache=shared, start=5)
    logits_b, cache_b = _cached_logits(model, b, [2, 2], cache=shared, start=5)  # reuses `shared` after a wrote past it
    rtol, atol = tolerance(torch.float32)
    with torch.no_grad():
        torch.testing.assert_close(logits_a, model(a)[:, 5:], rtol=rtol, atol=10 * atol)
        torch.testing.assert_close(logits_b, model(b)[:, 5:], rtol=rtol, atol=10 * atol)
    for cache, tokens in ((cache_a, a), (cache_b, b)):  # each cache still holds its own keys
        reference = _cached_logits(model, tokens, [9], impl="reference")[1]
        for mine, theirs in zip(cache.keys + cache.values, reference.keys + reference.values):
            torch.testing.assert_close(mine, theirs, rtol=rtol, atol=10 * atol)
    assert shared.length == 5


def test_reference_and_fused_caches_can_be_mixed():
    model, tokens = _model(), _prompt(2, 12)
    _, cache = forward_with_cache(model, tokens[:, :4], impl="reference")
    fused_logits, cache = _cached_logits(model, tokens, [3, 1], cache=cache, start=4)  # reference cache -> fused step
    ref_logits, cache = _cached_logits(model, tokens, [2, 2], impl="reference", cache=cache, start=8)  # and back
    rtol, atol = tolerance(torch.float32)
    with torch.no_grad():
        torch.testing.assert_close(torch.cat([fused_logits, ref_logits], dim=1), model(tokens)[:, 4:], rtol=rtol, atol=10 * atol)
    assert cache.length == 12


@pytest.mark.parametrize("impl", ["reference", "fused"])
def test_generate_fills_the_context_exactly_with_the_cache(impl):
    model, prompt = _model(), _prompt(2, 20)
    out = generate(model, prompt, 13, temperature=0, impl=impl)  # 20 + 13 - 1 = 32 = n_ctx positions fed
    assert torch.equal(out, generate(model, prompt, 13, temperature=0, use_cache=False, impl=impl))
    with pytest.raises(ValueError, match="use_cache=False"):
        generate(model, prompt, 14, temperature=0, impl=impl)


@pytest.mark.parametrize("settings", [dict(temperature=0), dict(temperature=0.9, top_k=7), dict(temperature=1.1, top_p=0.7)])
def test_fused_cache_samples_the_tokens_of_the_reference_cache(settings):
    model, prompt = _model(), _prompt(3, 4)
    runs = [generate(model, prompt, 25, generator=torch.Generator().manual_seed(5), impl=impl, use_cache=use_cache, **settings)
            for impl in ("reference", "fused") for use_cache in (True, False)]
    assert all(torch.equal(runs[0], run) for run in runs[1:])


def test_generate_returns_an_ordinary_tensor_and_restores_the_mode():
    model = _model().train()
    out = generate(model, _prompt(1, 4).int(), 5, temperature=0, impl="fused")
    assert model.training and out.dtype == torch.int64 and not out.is_inference()
    loss = model(out[:, :-1], impl="fused").logsumexp(-1).mean()  # the tokens can feed a training step
    loss.backward()
    assert model.W_E.grad is not None
    prompt = _prompt(1, 4)
    assert generate(model, prompt, 0) is prompt


def test_fused_cache_errors_are_clear():
    model = _model()
    _, cache = forward_with_cache(model, _prompt(2, 4), impl="fused")
    with pytest.raises(ValueError, match="the cache holds 2 sequences but tokens has 1 rows"):
        forward_with_cache(model, _prompt(1, 1), cache, impl="fused")
    with pytest.raises(ValueError, match="n_ctx=32; generate with use_cache=False"):
        forward_with_cache(model, _prompt(2, 29), cache, impl="fused")
    with pytest.raises(ValueError, match="impl must be"):
        generate(model, _prompt(), 3, impl="fast")
    with pytest.raises(ValueError, match="impl must be"):
        generate(model, _prompt(), 3, impl="fast", use_cache=False)
