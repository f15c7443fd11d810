"""Notebook 12's side-by-side runs (``course_utils.llama.side_by_side``): the two models are matched in size
by notebook 08's counter and start from notebook 09's initialisation rule; the committed logs in
data/todays_block/ start as this code trains (the first steps replayed, here and on the lowest numerics
path through tests/test_numerics_matrix.py); and what the notebook says of them holds on every seed with
a margin. The full ten runs on the AVX2 and lowest paths are in benchmarks/RESULTS_todays_block.md."""

import json

import pytest
import torch

from course_utils.counting import count_parameters
from course_utils.gpt import GPT, corpus_tokens, split_tokens
from course_utils.llama import Llama, build_pair, gpt_parameters, load_results, matched_llama, replay
from course_utils.llama.side_by_side import GPT2_STYLE, MODELS, N_KV_HEADS, RECIPE, SEEDS


def test_the_llama_style_model_is_the_closest_in_size_to_the_gpt():
    target = sum(p.numel() for p in GPT(GPT2_STYLE).parameters())
    assert gpt_parameters(GPT2_STYLE) == target
    cfg = matched_llama(GPT2_STYLE, N_KV_HEADS)
    assert sum(p.numel() for p in Llama(cfg).parameters()) == count_parameters(cfg)["total"]
    assert abs(count_parameters(cfg)["total"] - target) / target < 0.005
    for other in (cfg.d_mlp - 8, cfg.d_mlp + 8):  # a neighbouring width is further away
        assert abs(count_parameters(cfg.with_(d_mlp=other))["total"] - target) > abs(count_parameters(cfg)["total"] - target)
    assert (cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.kv_heads) == (64, 2, 4, 2)
    with pytest.raises(TypeError, match="cfg must be a GPTConfig"):
        matched_llama(cfg, 2)


def test_both_models_start_from_notebook_09s_rule_and_their_seed():
    pair, again, other = build_pair(3), build_pair(3), build_pair(4)
    gpt, llama = pair["gpt2_style"], pair["llama_style"]
    reference = GPT(GPT2_STYLE)
    reference.reset_parameters(torch.Generator().manual_seed(3))
    assert all(torch.equal(a, b) for a, b in zip(gpt.state_dict().values(), reference.state_dict().values()))
    for name, p in llama.named_parameters():
        leaf = name.rsplit(".", 1)[-1]
        expected = 0.02 / (2 * GPT2_STYLE.n_layers) ** 0.5 if leaf in ("W_O", "W_out") else 0.02
        if leaf == "w":
            assert torch.equal(p, torch.ones_like(p)), name
        else:
            assert abs(p.std().item() - expected) < 0.2 * expected, name
        assert torch.equal(p, dict(again["llama_style"].named_parameters())[name])
        assert not torch.equal(p, dict(other["llama_style"].named_parameters())[name]) or leaf == "w"


@pytest.fixture(scope="module")
def split():
    return split_tokens(corpus_tokens())


@pytest.mark.slow
def test_committed_runs_replay(split, margins):
    """The first 3 steps at seed 0 give the committed losses of both models within 2e-3 nats."""
    results = load_results()
    replayed = replay(0, 3, *split)
    for model in MODELS:
        gap = (torch.tensor(replayed[model]) - torch.tensor(results["runs"]["0"][model]["train_loss"][:3])).abs().max()
        margins.below(f"10 side by side: {model}'s first 3 steps replay the committed log within 2e-3", gap, 2e-3)


def test_the_committed_results_and_what_notebook_10_says_of_them(margins):
    results = load_results()
    assert results["seeds"] == list(SEEDS) and results["recipe"]["steps"] == RECIPE.steps
    assert results["parameters"] == {"gpt2_style": gpt_parameters(GPT2_STYLE),
                                     "llama_style": count_parameters(matched_llama(GPT2_STYLE, N_KV_HEADS))["total"]}
    gaps = [results["runs"][str(s)]["gpt2_style"]["val_loss"][-1] - results["runs"][str(s)]["llama_style"]["val_loss"][-1]
            for s in SEEDS]
    for seed, gap in zip(SEEDS, gaps):
        assert len(results["runs"][str(seed)]["llama_style"]["train_loss"]) == RECIPE.steps
        margins.check(f"10 side by side: the Llama-style model ends lower at seed {seed} (by > 0.1 nats)", gap - 0.1)
    mean = sum(gaps) / len(gaps)
    spread = (sum((g - mean) ** 2 for g in gaps) / (len(gaps) - 1)) ** 0.5
    margins.check("10 side by side: the smallest gap is several times the spread over seeds", min(gaps) - 3 * spread)


def test_a_bad_results_file_is_named(tmp_path):
    bad = tmp_path / "side_by_side.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="side_by_side.json"):
        load_results(bad)
    bad.write_text(json.dumps({"seeds": [0, 1], "runs": {"0": {}}}), encoding="utf-8")
    with pytest.raises(ValueError, match="a run for every seed"):
        load_results(bad)
    with pytest.raises(ValueError, match="steps"):
        replay(0, 0, torch.zeros(100, dtype=torch.long), torch.zeros(100, dtype=torch.long))
