"""DeepSeek-V3: the router against transformers' DeepseekV3TopkRouter, the sequence-wise balance loss
against a hand loop and worked examples, and the parameter count against DeepseekV3ForCausalLM built
on the meta device (sum of p.numel())."""

import pytest
import torch

from course_utils.moe.counting import DEEPSEEK_V3, DeepSeekConfig, count_deepseek, mla_parameters
from course_utils.moe.deepseek import deepseek_v3_gates, sequence_balance_loss
from course_utils.tolerances import tolerance


def _logits(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 2


# -- the router ---------------------------------------------------------------------------------
def test_worked_example_bias_chooses_affinity_weighs():
    gates, indices = deepseek_v3_gates(torch.zeros(1, 3), 2, torch.tensor([0.0, 1.0, 2.0]))
    assert indices.tolist() == [[2, 1]]
    torch.testing.assert_close(gates, torch.tensor([[0.5, 0.5]]))
    gates, indices = deepseek_v3_gates(torch.tensor([[0.0, 0.0, 10.0]]), 2)
    s = torch.sigmoid(torch.tensor(10.0))
    assert indices[0, 0] == 2
    torch.testing.assert_close(gates[0], torch.stack([s, torch.tensor(0.5)]) / (s + 0.5))


def test_gates_are_chosen_affinities_normalised_and_bias_moves_selection_only():
    logits = _logits(50, 8)
    bias = torch.zeros(8, dtype=torch.float64)
    bias[5] = 10.0  # expert 5 is chosen for every token
    gates, indices = deepseek_v3_gates(logits, 3, bias)
    assert (indices == 5).any(dim=-1).all()
    chosen = torch.sigmoid(logits).gather(-1, indices)
    torch.testing.assert_close(gates, chosen / chosen.sum(-1, keepdim=True))
    plain_gates, plain_indices = deepseek_v3_gates(logits, 3)
    assert not torch.equal(plain_indices, indices)
    assert not torch.allclose(torch.softmax(logits, -1).gather(-1, indices), chosen)  # sigmoid, not softmax


@pytest.mark.parametrize("seed, n_groups, top_groups", [(0, 1, 1), (1, 1, 1), (2, 1, 1), (0, 4, 2), (1, 2, 1)])
def test_router_matches_transformers_deepseek_v3(seed, n_groups, top_groups):
    """Plain, and with node-limited routing (the experts in n_groups groups, a token in its top_groups best)."""
    transformers = pytest.importorskip("transformers")
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3TopkRouter

    config = transformers.DeepseekV3Config(hidden_size=16, n_routed_experts=8, num_experts_per_tok=3, n_group=n_groups,
                                           topk_group=top_groups, routed_scaling_factor=1.0, norm_topk_prob=True)
    router = DeepseekV3TopkRouter(config)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        router.weight.copy_(torch.randn(8, 16, generator=gen))
        router.e_score_correction_bias.copy_(torch.randn(8, generator=gen) * 0.3)
    x = torch.randn(40, 16, generator=gen)
    with torch.no_grad():
        logits, their_gates, their_indices = router(x)
    gates, indices = deepseek_v3_gates(logits, 3, router.e_score_correction_bias, n_groups, top_groups)
    order, their_order = indices.argsort(-1), their_indices.argsort(-1)  # transformers leaves them unsorted
    assert torch.equal(indices.gather(-1, order), their_indices.gather(-1, their_order))
    torch.testing.assert_close(gates.gather(-1, order), their_gates.gather(-1, their_order))


# -- the sequence-wise balance loss ---------------------------------------------------------------
def test_sequence_balance_loss_even_load_gives_alpha_and_worked_example():
    even = sequence_balance_loss(torch.zeros(1, 4, 2), torch.tensor([[[0], [1], [0], [1]]]), 1.0)
    torch.testing.assert_close(even, torch.tensor(1.0))
    # one sequence, 2 tokens, 2 experts, k = 1, both tokens to expert 0: f = [2, 0], P_0 = mean(s0/(s0+s1))
    logits = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    s = torch.sigmoid(logits[0])
    p0 = (s[:, 0] / s.sum(-1)).mean()
    loss = sequence_balance_loss(logits, torch.tensor([[[0], [0]]]), 0.5)
    torch.testing.assert_close(loss, 0.5 * 2 * p0)


def test_sequence_balance_loss_matches_a_loop_over_sequences_and_has_a_gradient():
    logits = _logits(3, 10, 6).requires_grad_()
    _, indices = deepseek_v3_gates(logits.detach().reshape(-1, 6), 2)
    indices = indices.reshape(3, 10, 2)
    total = 0.0
    for b in range(3):
        s = torch.sigmoid(logits[b])
        counts = torch.bincount(indices[b].reshape(-1), minlength=6).double()
        total = total + 1e-4 * (counts * 6 / (2 * 10) * (s / s.sum(-1, keepdim=True)).mean(0)).sum()
    loss = sequence_balance_loss(logits, indices)
    torch.testing.assert_close(loss, total / 3)
    loss.backward()
    assert logits.grad.abs().sum() > 0


def test_group_limit_worked_example_and_bad_sizes():
    """Groups {0, 1} and {2, 3}: group scores 0.9 + 0.8 and 0.95 + 0.1; with one group allowed, expert 2
    (the best alone) is out, because its group's second expert is weak."""
    affinity = torch.tensor([[0.9, 0.8, 0.95, 0.1]], dtype=torch.float64)
    logits = torch.logit(affinity)
    assert deepseek_v3_gates(logits, 2)[1].sort().values.tolist() == [[0, 2]]
    gates, indices = deepseek_v3_gates(logits, 2, n_groups=2, top_groups=1)
    assert indices.sort().values.tolist() == [[0, 1]]
    expected = torch.tensor([[0.9, 0.8]], dtype=torch.float64) / 1.7
    torch.testing.assert_close(gates.sort(descending=True).values, expected)
    with pytest.raises(ValueError, match="n_groups"):
        deepseek_v3_gates(logits, 2, n_groups=3)
    with pytest.raises(ValueError, match="top_groups"):
        deepseek_v3_gates(logits, 3, n_groups=2, top_groups=1)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="selection_bias"):
        deepseek_v3_gates(torch.zeros(2, 4), 2, torch.zeros(3))
    with pytest.raises(ValueError, match="k must be at most"):
        deepseek_v3_gates(torch.zeros(2, 4), 5)
    with pytest.raises(ValueError, match="indices"):
        sequence_balance_loss(torch.zeros(1, 4, 2), torch.zeros(1, 3, 1, dtype=torch.long))
    with pytest.raises(ValueError, match="alpha"):
        sequence_balance_loss(torch.zeros(1, 2, 2), torch.zeros(1, 2, 1, dtype=torch.long), -1.0)
    with pytest.raises(TypeError, match="cfg"):
        count_deepseek({"d_model": 4})
    with pytest.raises(ValueError, match="k=9"):
        DEEPSEEK_V3.__class__(**{**DEEPSEEK_V3.__dict__, "n_routed": 8, "k": 9})


# -- the parameter count ------------------------------------------------------------------------
def test_mla_worked_example():
    assert mla_parameters(4, 2, 3, 2, 1, 1, 1) == {
        "q_down": 12, "q_up": 12, "kv_down": 12, "kv_up": 8, "output": 8, "norms": 5, "total": 57}


def _hf_counts(transformers, **sizes):
    config = transformers.DeepseekV3Config(**sizes)
    with torch.device("meta"):
        model = transformers.DeepseekV3ForCausalLM(config)
    held = sum(p.numel() for p in model.parameters())
    routed = sum(p.numel() for name, p in model.named_parameters() if ".mlp.experts." in name)
    return held, held - routed + routed * config.num_experts_per_tok // config.n_routed_experts


def test_deepseek_v3_count_equals_transformers_and_the_published_sizes():
    counts = count_deepseek(DEEPSEEK_V3)
    assert round(counts["total"] / 1e9) == 671  # the paper's 671B
    assert 36.5e9 < counts["active"] - counts["embedding"] < 37.5e9 < counts["active"] < 38e9  # "37B"
    transformers = pytest.importorskip("transformers")
    assert _hf_counts(transformers) == (counts["total"], counts["active"])  # the default config is V3's


def test_small_config_every_size_maps_to_the_right_field():
    transformers = pytest.importorskip("transformers")
    cfg = DeepSeekConfig(d_vocab=101, d_model=24, n_layers=5, n_dense_layers=2, d_mlp=40, d_expert=12,
                         n_shared=2, n_routed=6, k=3, n_heads=4, q_lora_rank=10, kv_lora_rank=7,
                         qk_nope_head_dim=5, qk_rope_head_dim=2, v_head_dim=9)
    counts = count_deepseek(cfg)
    hf = _hf_counts(transformers, vocab_size=101, hidden_size=24, num_hidden_layers=5, first_k_dense_replace=2,
                    intermediate_size=40, moe_intermediate_size=12, n_shared_experts=2, n_routed_experts=6,
                    num_experts_per_tok=3, num_attention_heads=4, num_key_value_heads=4, q_lora_rank=10,
                    kv_lora_rank=7, qk_nope_head_dim=5, qk_rope_head_dim=2, v_head_dim=9, n_group=1, topk_group=1)
    assert hf == (counts["total"], counts["active"])


# -- the whole layer: shared + routed experts --------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1])
def test_deepseek_moe_matches_transformers_deepseek_v3_moe(seed):
    """The course's layer against DeepseekV3MoE with the same weights; its one shared MLP of width
    n_shared · d_expert is the sum of n_shared experts of width d_expert (the hidden units split)."""
    transformers = pytest.importorskip("transformers")
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3MoE

    from course_utils.moe.layer import swiglu
    from course_utils.moe.deepseek import deepseek_moe

    config = transformers.DeepseekV3Config(hidden_size=16, moe_intermediate_size=6, n_routed_experts=8,
                                           n_shared_experts=2, num_experts_per_tok=3, n_group=1, topk_group=1,
                                           routed_scaling_factor=1.0, norm_topk_prob=True)
    block = DeepseekV3MoE(config).double()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in list(block.parameters()) + [block.gate.e_score_correction_bias]:
            p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * 0.4)
        x = torch.randn(30, 16, generator=gen, dtype=torch.float64)
        expected = block(x)
    gate_up, down, m = block.experts.gate_up_proj, block.experts.down_proj, 6

    def routed(e):
        return lambda rows: swiglu(rows, gate_up[e, :m].T, gate_up[e, m:].T, down[e].T)

    def shared(part):  # the hidden units [part·m, (part+1)·m) of the merged shared MLP
        units = slice(part * m, (part + 1) * m)
        mlp = block.shared_experts
        return lambda rows: swiglu(rows, mlp.gate_proj.weight[units].T, mlp.up_proj.weight[units].T,
                                   mlp.down_proj.weight[:, units].T)

    with torch.no_grad():
        ours = deepseek_moe(x, block.gate.weight.T, block.gate.e_score_correction_bias, [shared(0), shared(1)],
                            [routed(e) for e in range(8)], 3)
    rtol, atol = tolerance(torch.float32)  # transformers' router computes its logits and gates in float32
    torch.testing.assert_close(ours, expected, rtol=rtol, atol=atol)


def test_deepseek_moe_worked_example_and_bad_input():
    from course_utils.moe.deepseek import deepseek_moe

    x = torch.tensor([[1.0, 2.0]])
    double, negate = (lambda rows: 2 * rows), (lambda rows: -rows)
    W_router = torch.tensor([[0.0, 5.0], [0.0, 0.0]])  # the token's affinity favours routed expert 1
    out = deepseek_moe(x, W_router, None, [double], [negate, lambda rows: 10 * rows], 1)
    torch.testing.assert_close(out, 2 * x + 10 * x)  # shared 2x, plus the one chosen expert at gate 1
    out = deepseek_moe(x, W_router, torch.tensor([1.0, 0.0]), [double], [negate, lambda rows: 10 * rows], 1)
    torch.testing.assert_close(out, 2 * x - x)  # the bias picks expert 0; its gate is still 1
    with pytest.raises(ValueError, match="W_router"):
        deepseek_moe(x, torch.zeros(3, 2), None, [double], [negate, negate], 1)
