"""Mixture of experts: the router's two forms, grouped dispatch against a per-token loop, capacity,
the layer (and notebook 07's whole-layer exercise) against transformers' MixtralSparseMoeBlock, the
balancing losses (Switch loss against transformers' load_balancing_loss_func), DeepSeek-V3's bias, the
experiment's outcome, bad input."""

import math

import pytest
import torch

from course_utils.moe.layer import MoE, SwiGLU, load_mixtral_block
from course_utils.moe.dispatch import dispatch_grouped, dispatch_naive
from course_utils.moe.routing import capacity_mask, expert_capacity, top_k_gates, top_k_gates_mixtral
from course_utils.moe.balancing import (load_balancing_loss, load_shares, router_z_loss, update_selection_bias,
                                        usage_entropy)


def _logits(tokens=40, n_experts=6, seed=0, dtype=torch.float64):
    return torch.randn(tokens, n_experts, generator=torch.Generator().manual_seed(seed), dtype=dtype) * 2


def _experts(n_experts=6, d_model=8, d_mlp=12, seed=0):
    torch.manual_seed(seed)
    return [SwiGLU(d_model, d_mlp, init_std=0.3).double() for _ in range(n_experts)]


# -- router ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 2, 3, 6])
def test_renormalised_softmax_equals_softmax_over_top_k_logits(k):
    logits = _logits()
    gates, indices = top_k_gates(logits, k)
    gates_m, indices_m = top_k_gates_mixtral(logits, k)
    assert torch.equal(indices, indices_m)
    torch.testing.assert_close(gates, gates_m)
    torch.testing.assert_close(gates.sum(-1), torch.ones(40, dtype=torch.float64))
    probs = torch.softmax(logits, -1)
    chosen = probs.gather(-1, indices)
    assert (chosen.min(-1).values[:, None] >= probs.masked_fill(torch.zeros_like(probs, dtype=torch.bool).scatter(-1, indices, True), -1)).all()
    torch.testing.assert_close(gates, chosen / chosen.sum(-1, keepdim=True))


def test_selection_bias_changes_the_choice_but_not_the_gate_formula():
    logits = _logits()
    bias = torch.zeros(6, dtype=torch.float64)
    bias[5] = 10.0  # expert 5 is always chosen
    gates, indices = top_k_gates(logits, 2, bias)
    assert (indices == 5).any(-1).all()
    probs = torch.softmax(logits, -1).gather(-1, indices)
    torch.testing.assert_close(gates, probs / probs.sum(-1, keepdim=True))


# -- dispatch -------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("capacity", [None, 3, 9])
def test_grouped_dispatch_equals_the_per_token_loop(k, capacity):
    experts = _experts()
    x = torch.randn(40, 8, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    gates, indices = top_k_gates(_logits(), k)
    kept = None if capacity is None else capacity_mask(indices, 6, capacity)
    with torch.no_grad():
        torch.testing.assert_close(dispatch_grouped(x, indices, gates, experts, kept),
                                   dispatch_naive(x, indices, gates, experts, kept))


def test_grouped_dispatch_calls_each_expert_once_whatever_the_number_of_tokens():
    calls = []

    def counting(e):
        return lambda rows: (calls.append((e, rows.shape[0])), rows * (e + 1))[1]

    experts = [counting(e) for e in range(6)]
    for tokens in (10, 500):
        calls.clear()
        x = torch.randn(tokens, 4, dtype=torch.float64)
        gates, indices = top_k_gates(_logits(tokens), 2)
        dispatch_grouped(x, indices, gates, experts)
        assert len(calls) == len(set(indices.reshape(-1).tolist())) <= 6
        assert sum(n for _, n in calls) == 2 * tokens


def test_capacity_keeps_first_choices_first_and_counts_the_overflow():
    indices = torch.tensor([[0, 1], [0, 2], [0, 1], [1, 0]])
    kept = capacity_mask(indices, 3, 2)
    # expert 0: first choices of tokens 0, 1, 2, then token 3's second choice -> tokens 0 and 1 fit;
    # expert 1: token 3's first choice, then the second choices of tokens 0 and 2 -> tokens 3 and 0 fit
    assert kept.tolist() == [[True, True], [True, True], [False, False], [True, False]]
    load = torch.bincount(indices.reshape(-1), minlength=3)
    dropped = torch.bincount(indices[~kept], minlength=3)
    assert dropped.tolist() == (load - 2).clamp(min=0).tolist()
    assert expert_capacity(64, 8, 2, 1.25) == math.ceil(1.25 * 64 * 2 / 8)


@pytest.mark.parametrize("capacity_factor", [None, 0.5])
def test_dense_dispatch_equals_grouped(capacity_factor):
    torch.manual_seed(0)
    grouped = MoE(8, 12, 5, 2, capacity_factor, init_std=0.3).double()
    dense = MoE(8, 12, 5, 2, capacity_factor, dispatch="dense").double()
    dense.load_state_dict(grouped.state_dict())
    x = torch.randn(3, 10, 8, dtype=torch.float64)
    torch.testing.assert_close(dense(x), grouped(x))


def test_moe_routing_reports_capacity_and_drops():
    torch.manual_seed(0)
    moe = MoE(8, 12, 4, 2, capacity_factor=0.5).double()
    out, routing = moe.forward_with_routing(torch.randn(2, 10, 8, dtype=torch.float64))
    assert out.shape == (2, 10, 8) and routing.capacity == expert_capacity(20, 4, 2, 0.5) == 5
    assert routing.dropped().tolist() == (routing.load() - 5).clamp(min=0).tolist()
    assert int(routing.kept.sum()) == int((routing.load() - routing.dropped()).sum())


# -- against transformers -------------------------------------------------------------------------
def _mixtral_block(d_model=16, d_mlp=24, n_experts=6, k=2, seed=0):
    transformers = pytest.importorskip("transformers")
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock

    cfg = transformers.MixtralConfig(hidden_size=d_model, intermediate_size=d_mlp, num_local_experts=n_experts,
                                     num_experts_per_tok=k)
    cfg._experts_implementation = "eager"
    torch.manual_seed(seed)
    block = MixtralSparseMoeBlock(cfg).eval()
    with torch.no_grad():
        for p in block.parameters():
            p.normal_(0, 0.3)
    return block


@pytest.mark.parametrize("k,n_experts,seed", [(2, 6, 0), (1, 4, 1), (3, 8, 2)])
def test_matches_mixtral_sparse_moe_block(k, n_experts, seed):
    block = _mixtral_block(n_experts=n_experts, k=k, seed=seed)
    moe = load_mixtral_block(block)
    x = torch.randn(3, 7, 16, generator=torch.Generator().manual_seed(seed + 10))
    with torch.no_grad():
        expected = block(x.clone())
        logits_hf, gates_hf, indices_hf = block.gate(x.reshape(-1, 16))
        out, routing = moe.forward_with_routing(x)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(routing.logits, logits_hf)
    assert torch.equal(routing.indices, indices_hf)
    torch.testing.assert_close(routing.gates, gates_hf)


@pytest.mark.parametrize("k,n_experts,seed", [(2, 6, 0), (1, 4, 1), (3, 8, 2)])
def test_moe_forward_exercise_and_its_alternatives_match_mixtral(k, n_experts, seed):
    """Notebook 07's whole-layer exercise: its reference and every accepted alternative equal the block."""
    from course_utils.checks.mixture_of_experts.moe_forward import MOE_FORWARD

    block = _mixtral_block(n_experts=n_experts, k=k, seed=seed)
    weights = load_mixtral_block(block)  # the same weights in the course's layout (Mixtral's transposed)
    x = torch.randn(3, 5, 16, generator=torch.Generator().manual_seed(seed + 10))
    with torch.no_grad():
        expected = block(x.clone())
        args = (x, weights.W_router, weights.W_gate, weights.W_in, weights.W_out, k)
        answers = {a.name: a.impl(*args) for a in MOE_FORWARD.alternatives}
        answers["reference"] = MOE_FORWARD.reference(*args)
    for name, got in answers.items():
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6, msg=name)


def test_switch_loss_is_transformers_load_balancing_loss_divided_by_k():
    pytest.importorskip("transformers")
    from transformers.models.mixtral.modeling_mixtral import load_balancing_loss_func

    logits = _logits(dtype=torch.float32)
    for k in (1, 2, 3):  # transformers counts fᵢ over T rows, so its Σ fᵢ = k
        theirs = load_balancing_loss_func((logits,), num_experts=6, top_k=k)
        torch.testing.assert_close(load_balancing_loss(logits, k), theirs / k)


def test_mixtral_8x7b_counts_match_the_model_on_the_meta_device():
    transformers = pytest.importorskip("transformers")
    from course_utils.counting import parameters as counting

    hf = transformers.MixtralConfig(vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                                    num_attention_heads=32, num_key_value_heads=8, num_local_experts=8,
                                    num_experts_per_tok=2, tie_word_embeddings=False)
    with torch.device("meta"):
        model = transformers.MixtralForCausalLM(hf)
    held = sum(p.numel() for p in model.parameters())
    in_experts = sum(p.numel() for name, p in model.named_parameters() if ".experts." in name)
    cfg = counting.MIXTRAL_8X7B
    assert counting.count_parameters(cfg)["total"] == held
    assert counting.active_parameters(cfg)["total"] == held - in_experts + in_experts * 2 // 8
    assert round(held / 1e9, 1) == 46.7 and round(counting.active_parameters(cfg)["total"] / 1e9, 1) == 12.9


# -- balancing losses -----------------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [1.0, 0.01])
def test_switch_loss_equals_alpha_at_uniform_routing(alpha):
    assert float(load_balancing_loss(torch.zeros(12, 4, dtype=torch.float64), 2, alpha)) == pytest.approx(alpha)
    # each token strongly prefers expert t % 4 and then (t + 1) % 4: even load, symmetric probabilities
    logits = torch.full((12, 4), -5.0, dtype=torch.float64)
    logits[torch.arange(12), torch.arange(12) % 4] = 5.0
    logits[torch.arange(12), (torch.arange(12) + 1) % 4] = 4.0
    assert float(load_balancing_loss(logits, 2, alpha)) == pytest.approx(alpha)


def test_switch_loss_grows_as_routing_collapses():
    base = _logits(200, 8, seed=3)
    losses = []
    for strength in (0.0, 1.0, 3.0, 10.0, 30.0):
        logits = base.clone()
        logits[:, 0] += strength  # expert 0 becomes everyone's favourite
        logits[:, 1] += strength * 0.9
        losses.append(float(load_balancing_loss(logits, 2)))
    assert all(a < b for a, b in zip(losses, losses[1:])), losses
    assert losses[-1] == pytest.approx(8 * 0.5, rel=1e-3)  # two experts take everything: E · (½·½ + ½·½) = E/2


@pytest.mark.parametrize("k", [1, 2, 3])
def test_switch_loss_maximum_is_alpha_E_over_k(k):
    alpha, n_experts = 0.01, 8
    extreme = torch.zeros(50, n_experts, dtype=torch.float64)
    extreme[:, :k] = 60.0  # every token: all its probability on experts 0..k-1, which it picks
    assert float(load_balancing_loss(extreme, k, alpha)) == pytest.approx(alpha * n_experts / k, rel=1e-12)
    for seed in range(20):  # none exceeds it: a token picks an expert once, so fᵢ ≤ 1/k and Σ fᵢPᵢ ≤ Σ Pᵢ / k = 1/k
        logits = _logits(30, n_experts, seed=seed) * (seed + 1)
        assert float(load_balancing_loss(logits, k, alpha)) <= alpha * n_experts / k + 1e-12


def test_switch_loss_gradient_reaches_the_router_weights():
    torch.manual_seed(0)
    moe = MoE(8, 12, 4, 2).double()
    _, routing = moe.forward_with_routing(torch.randn(30, 8, dtype=torch.float64))
    load_balancing_loss(routing.logits, 2).backward()
    assert moe.W_router.grad is not None and moe.W_router.grad.abs().sum() > 0
    assert all(p.grad is None for p in (moe.W_gate, moe.W_in, moe.W_out))


def test_router_z_loss_is_mean_squared_log_partition_function():
    logits = _logits()
    expected = sum(math.log(sum(math.exp(v) for v in row)) ** 2 for row in logits.tolist()) / len(logits)
    assert float(router_z_loss(logits)) == pytest.approx(expected, rel=1e-12)
    assert float(router_z_loss(torch.zeros(3, 4))) == pytest.approx(math.log(4) ** 2, rel=1e-6)


def test_bias_update_pushes_toward_even_load():
    bias = update_selection_bias(torch.zeros(3), torch.tensor([6, 2, 1]), 0.1)
    torch.testing.assert_close(bias, torch.tensor([-0.1, 0.1, 0.1]))
    logits = _logits(400, 4, seed=5)
    logits[:, 0] += 3
    bias = torch.zeros(4, dtype=torch.float64)
    before = load_shares(top_k_gates(logits, 1, bias)[1], 4).max()
    for _ in range(300):
        bias = update_selection_bias(bias, torch.bincount(top_k_gates(logits, 1, bias)[1].reshape(-1), minlength=4), 0.01)
    after = load_shares(top_k_gates(logits, 1, bias)[1], 4)
    assert after.max() < before and after.max() < 0.35


def test_usage_entropy():
    assert usage_entropy(torch.full((8,), 1 / 8)) == pytest.approx(3.0)
    assert usage_entropy(torch.tensor([1.0, 0, 0])) == 0.0


# -- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,word", [
    (lambda: top_k_gates(_logits(), 7), "k must be at most n_experts"),
    (lambda: top_k_gates(_logits(), 0), "k must be at least 1"),
    (lambda: MoE(8, 8, 0, 1), "n_experts must be at least 1"),
    (lambda: MoE(8, 8, 4, 5), "k must be at most"),
    (lambda: MoE(8, 8, 4, 2, capacity_factor=0.0), "capacity_factor"),
    (lambda: MoE(8, 8, 4, 2, capacity_factor=-1), "capacity_factor"),
    (lambda: expert_capacity(10, 4, 2, 0), "capacity_factor"),
    (lambda: top_k_gates(torch.tensor([[0.0, float("nan")]]), 1), "router_logits contain NaN"),
    (lambda: load_balancing_loss(torch.tensor([[0.0, float("nan")]]), 1), "router_logits contain NaN"),
    (lambda: MoE(8, 8, 4, 2)(torch.randn(2, 3, 7)), "d_model=8"),
    (lambda: load_balancing_loss(_logits(), 9), "k must be at most"),
])
def test_bad_input_names_the_argument(call, word):
    with pytest.raises(ValueError, match=word):
        call()


def test_wrong_types_raise_type_error():
    with pytest.raises(TypeError, match="k must be an int"):
        top_k_gates(_logits(), 2.0)
    with pytest.raises(TypeError, match="n_experts must be an int, got bool"):
        MoE(8, 8, True, 1)
    with pytest.raises(TypeError, match="router_logits"):
        top_k_gates([[0.0, 1.0]], 1)
    with pytest.raises(TypeError, match="router_logits must be a floating-point tensor"):
        top_k_gates(torch.zeros(3, 4, dtype=torch.long), 1)
    with pytest.raises(TypeError, match="capacity_factor must be a number"):
        MoE(8, 8, 4, 2, capacity_factor="1.0")
    with pytest.raises(TypeError, match="d_model must be a positive int, got 8.0"):
        MoE(8.0, 8, 4, 2)
    with pytest.raises(TypeError, match="block must be a transformers MixtralSparseMoeBlock"):
        load_mixtral_block(torch.nn.Linear(2, 2))


def test_the_layer_checks_its_input_once_and_still_names_nan_router_logits():
    layer = MoE(8, 8, 4, 2)
    with pytest.raises(ValueError, match=r"dispatch must be one of \('grouped', 'dense'\), got 'sparse'"):
        MoE(8, 8, 4, 2, dispatch="sparse")
    with pytest.raises(ValueError, match=r"x must have shape \(tokens, d_model=8\)"):
        layer.route(torch.randn(2, 3, 8))  # route takes tokens; forward also takes (batch, pos, d_model)
    with pytest.raises(ValueError, match="router_logits contain NaN"):  # a NaN input reaches the router's logits
        layer(torch.full((2, 3, 8), float("nan")))


def test_a_generator_draws_the_same_weights_as_the_global_seed_and_leaves_it_alone():
    torch.manual_seed(7)
    seeded = MoE(8, 12, 4, 2, init_std=0.1)
    state = torch.random.get_rng_state()
    local = MoE(8, 12, 4, 2, init_std=0.1, generator=torch.Generator().manual_seed(7))
    assert torch.equal(torch.random.get_rng_state(), state)
    for name, p in seeded.named_parameters():
        assert torch.equal(p, dict(local.named_parameters())[name]), name


# -- device ---------------------------------------------------------------------------------------
@pytest.mark.gpu  # conftest skips it without CUDA
def test_moe_on_cuda_matches_cpu():
    torch.manual_seed(0)
    moe = MoE(16, 24, 8, 2, capacity_factor=1.0)
    x = torch.randn(4, 9, 16)
    with torch.no_grad():
        cpu_out, cpu_routing = moe.forward_with_routing(x)
        gpu_out, gpu_routing = moe.cuda().forward_with_routing(x.cuda())
    assert gpu_out.device.type == "cuda"
    assert torch.equal(gpu_routing.indices.cpu(), cpu_routing.indices)
    torch.testing.assert_close(gpu_out.cpu(), cpu_out, rtol=1e-4, atol=1e-5)
    loss = load_balancing_loss(gpu_routing.logits, 2)
    assert loss.device.type == "cuda"


# -- the experiment (its outcome over seeds: tests/test_moe_seeds.py) ---------------------------------
def test_training_is_deterministic_and_the_capacity_report_adds_up():
    from dataclasses import replace

    from course_utils.moe.experiment import ExperimentConfig, capacity_report, probe_batch, train_moe

    cfg = replace(ExperimentConfig(), steps=15, batch=64)
    state = torch.random.get_rng_state()
    a = train_moe(cfg, "bias", seed=3)
    assert torch.equal(torch.random.get_rng_state(), state)  # local generators only: the global state is untouched
    torch.manual_seed(123)  # and the global state does not matter
    b = train_moe(cfg, "bias", seed=3)
    assert torch.equal(a.shares, b.shares) and a.eval_loss == b.eval_loss
    assert a.model.selection_bias.abs().sum() > 0  # the bias moved
    x, _ = probe_batch(cfg, 256, seed=3)
    report = capacity_report(a.model, x, 0.5)
    assert report["capacity"] == math.ceil(0.5 * 256 * 2 / 8)
    assert report["dropped"].tolist() == (report["load"] - report["capacity"]).clamp(min=0).tolist()
    assert a.model.capacity_factor is None  # the report does not change the model
    with pytest.raises(ValueError, match="balancing"):
        train_moe(cfg, "loss", seed=0)
    with pytest.raises(TypeError, match="seed must be an int"):
        train_moe(cfg, "none", seed=0.5)
    with pytest.raises(ValueError, match="capacity_factor"):
        capacity_report(a.model, x, 0)
