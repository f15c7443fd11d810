"""The cache as notebook 09's own modules take it (``course_utils.gpt.layer_cache``) and the student's sampler
(``course_utils.gpt.own_sampler``).

Oracles: the course ``GPT``'s forward over the whole sequence (the cached model fed in pieces gives its logits),
``course_utils.gpt.model.Block`` (the cached block's maths) and ``generation.generate`` (the cached loop's
tokens). Then #40 point 2: the notebook's own solutions (read from its source, no cell run) generate with the
student's model, cache step and loop, the same tokens as ``generate``; a student version with one wrong part
(a cache step from the bank of mistakes, wired into their attention as the notebook wires it) makes the
sampler's summary name it, and the course's model draws instead.
"""


import pytest
import torch

from course_utils.checks.build_gpt import check_gpt_forward, check_kv_cache_step
from course_utils.checks.build_gpt.kv_cache_step import kv_new_first
from course_utils.checks.generate_gpt import check_sample_with_cache
from course_utils.env.sibling import run_definitions
from course_utils.gpt.generation import generate
from course_utils.gpt.layer_cache import CachedBlock, CachedGPT, LayerCache, cached_sample, new_cache
from course_utils.gpt.model import GPT, Block, GPTConfig
from course_utils.gpt.own_sampler import assemble_sampler
from tools.mutation.sources import namespace, notebook_source

CFG = GPTConfig(d_vocab=31, n_ctx=16, d_model=24, n_heads=3, n_layers=2)


@pytest.fixture(scope="module")
def trained():
    model = GPT(CFG)
    model.reset_parameters(torch.Generator().manual_seed(0))
    with torch.no_grad():  # off the init, so every parameter matters
        for p in model.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=torch.Generator().manual_seed(1)))
    return model.eval()


def _tokens(batch=2, pos=CFG.n_ctx):
    return torch.randint(0, CFG.d_vocab, (batch, pos), generator=torch.Generator().manual_seed(2))


def test_fed_in_pieces_with_a_cache_the_logits_are_one_forwards(trained):
    cached = CachedGPT(CFG)
    cached.load_state_dict(trained.state_dict())
    tokens, cache = _tokens(), new_cache(CFG.n_layers)
    with torch.no_grad():
        pieces = [cached(tokens[:, a:b], cache) for a, b in ((0, 7), (7, 8), (8, 16))]
        torch.testing.assert_close(torch.cat(pieces, dim=1), trained(tokens), rtol=0, atol=1e-5)
        torch.testing.assert_close(cached(tokens), trained(tokens), rtol=0, atol=0)
    assert [c.length for c in cache] == [16, 16] and cache[0].k.shape == (2, 3, 16, 8)
    block, theirs = CachedBlock(CFG), trained.blocks[1]
    block.load_state_dict(theirs.state_dict())
    x = torch.randn(2, 9, 24, generator=torch.Generator().manual_seed(3))
    layer = LayerCache()
    with torch.no_grad():
        torch.testing.assert_close(torch.cat([block(x[:, :4], layer), block(x[:, 4:], layer)], 1), theirs(x),
                                   rtol=0, atol=1e-5)
    assert isinstance(theirs, Block) and layer.length == 9


def test_cached_sample_draws_generates_tokens_and_bad_caches_are_named(trained):
    cached = CachedGPT(CFG)
    cached.load_state_dict(trained.state_dict())
    prompt = _tokens(2, 5)
    for temperature in (0.0, 0.9):
        ours = cached_sample(cached, prompt, 12, temperature, torch.Generator().manual_seed(4))
        theirs = generate(trained, prompt, 12, temperature=temperature, generator=torch.Generator().manual_seed(4))
        assert torch.equal(ours, theirs)
    with pytest.raises(ValueError, match="its own LayerCache"):
        cached(prompt, [LayerCache()] * CFG.n_layers)
    with pytest.raises(TypeError, match="cache"):
        cached(prompt, [LayerCache()])
    with pytest.raises(ValueError, match="context"):
        cached(_tokens(2, 12), [LayerCache(k, v) for k, v in zip([torch.zeros(2, 3, 5, 8)] * 2,
                                                                 [torch.zeros(2, 3, 5, 8)] * 2)])
    with pytest.raises(ValueError, match="n_layers"):
        new_cache(0)


def _student(**wrong):
    """Notebook 09's imports and definitions run afresh (as notebook 11 runs them from the student's 09), with
    ``wrong`` put in place of the named definitions: the student's classes then call the wrong ones; and
    notebook 11's ``sample_with_cache``."""
    names: dict = {"__name__": "student"}
    run_definitions(notebook_source("build_gpt").read_text(), names, "<09>")
    names["sample_with_cache"] = namespace("generate_gpt")["sample_with_cache"]
    names.update(wrong)  # in place: the definitions' globals are this dict
    return names


PART_CHECKS = {"kv_cache_step": check_kv_cache_step, "model": check_gpt_forward,
               "sample_with_cache": check_sample_with_cache}


def _assembled(names, trained):
    parts = {"kv_cache_step": names["kv_cache_step"], "model": names["SmallGPT"],
             "sample_with_cache": names["sample_with_cache"]}
    return assemble_sampler(parts, {p: check(parts[p]) for p, check in PART_CHECKS.items()}, trained)


def test_the_students_model_generates_with_the_students_cache(trained):
    names = _student()
    own = _assembled(names, trained)
    assert own.summary() == "all parts yours: cache step, model, sampler"
    assert isinstance(own.model, names["SmallGPT"]) and own.loop is names["sample_with_cache"]
    seen = []
    step = names["kv_cache_step"]
    names["kv_cache_step"] = lambda *args: seen.append(args[3] is not None) or step(*args)  # count the calls
    try:
        drawn = own.sample(_tokens(2, 4), 10, 0.8, torch.Generator().manual_seed(5))
    finally:
        names["kv_cache_step"] = step
    assert torch.equal(drawn, generate(trained, _tokens(2, 4), 10, temperature=0.8,
                                       generator=torch.Generator().manual_seed(5)))
    assert len(seen) == CFG.n_layers * 10 and seen.count(True) == CFG.n_layers * 9  # prompt once, then cached


def test_a_wrong_cache_step_is_named_by_the_sampler(trained):
    names = _student(kv_cache_step=kv_new_first)
    assert not check_gpt_forward(names["SmallGPT"]).passed  # the student's model runs the wrong step
    own = _assembled(names, trained)
    assert own.summary() == ("yours: sampler; the course's: cache step (its check has not passed); model (it "
                             "attends through your kv_cache_step, whose check has not passed)")
    assert isinstance(own.model, CachedGPT)
    drawn = own.sample(_tokens(1, 6), 8, 0.0)
    assert torch.equal(drawn, generate(trained, _tokens(1, 6), 8, temperature=0))
    with pytest.raises(TypeError, match="trained"):
        assemble_sampler({}, {}, CachedBlock(CFG))
