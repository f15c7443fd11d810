"""The small GPT and its LayerNorm: against torch.nn.LayerNorm / BatchNorm1d, reference vs fused
paths, causality, the residual stream as the sum of the writes, parameter counts on the meta
device, and clear errors for bad configs, token ids and state dicts."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from course_utils.gpt.model import GPT, GPTConfig
from course_utils.gpt.config import check_state_dict
from course_utils.gpt.fused import fused_attention, fused_mlp
from course_utils.layernorm import LayerNorm, batch_norm, layer_norm, norm_stats
from course_utils.masking import causal_mask
from course_utils.tolerances import tolerance

TINY = dict(d_vocab=37, n_ctx=16, d_model=24, n_heads=3, n_layers=2)


def _model(seed=0, **kw):
    torch.manual_seed(seed)
    model = GPT(GPTConfig(**{**TINY, **kw}))
    with torch.no_grad():  # move away from the init (zero biases, unit LayerNorm scales) so every weight matters
        for p in model.parameters():
            p.add_(0.2 * torch.randn_like(p))
    return model.eval()


def _tokens(batch=2, pos=11, seed=1, d_vocab=37):
    return torch.randint(0, d_vocab, (batch, pos), generator=torch.Generator().manual_seed(seed))


# -- LayerNorm ----------------------------------------------------------------------------------
def test_layer_norm_worked_example_matches_torch():
    x = torch.tensor([2.0, 4.0, 6.0, 8.0])
    mean, var = norm_stats(x)
    assert float(mean) == 5.0 and float(var) == 5.0
    torch.testing.assert_close(layer_norm(x, eps=0.0), F.layer_norm(x, (4,), eps=0.0))


@pytest.mark.parametrize("bias", [True, False])
def test_layer_norm_module_matches_torch_with_learned_scale_and_shift(bias):
    x = torch.randn(3, 5, 8, dtype=torch.float64)
    ours, theirs = LayerNorm(8, bias=bias).double(), nn.LayerNorm(8, bias=bias).double()
    with torch.no_grad():
        ours.w.copy_(torch.randn(8))
        theirs.weight.copy_(ours.w)
        if bias:
            ours.b.copy_(torch.randn(8))
            theirs.bias.copy_(ours.b)
    torch.testing.assert_close(ours(x), theirs(x))
    torch.testing.assert_close(layer_norm(x, ours.w, ours.b), theirs(x))


def test_batch_norm_matches_torch_training_mode_and_mixes_rows():
    x = torch.randn(6, 4, dtype=torch.float64)
    oracle = nn.BatchNorm1d(4, affine=False, eps=1e-5).double().train()
    torch.testing.assert_close(batch_norm(x), oracle(x))
    changed = x.clone()
    changed[1:] *= 3  # the other rows change: batch norm of row 0 changes, layer norm of row 0 does not
    assert not torch.allclose(batch_norm(changed)[0], batch_norm(x)[0])
    torch.testing.assert_close(layer_norm(changed)[0], layer_norm(x)[0])


@pytest.mark.parametrize("bad, exc", [(torch.tensor([1, 2]), TypeError), ("x", TypeError)])
def test_layer_norm_rejects_bad_input(bad, exc):
    with pytest.raises(exc, match="x must"):
        layer_norm(bad)
    with pytest.raises(ValueError, match="eps"):
        layer_norm(torch.ones(3), eps=-1)


# -- the model ----------------------------------------------------------------------------------
@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("tie", [True, False])
def test_fused_path_matches_reference(norm, bias, tie):
    model, tokens = _model(norm=norm, bias=bias, tie_embeddings=tie), _tokens()
    rtol, atol = tolerance(torch.float32)
    torch.testing.assert_close(model(tokens, impl="fused"), model(tokens), rtol=rtol, atol=10 * atol)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("tie", [True, False])
@pytest.mark.parametrize("activation", ["gelu_tanh", "relu"])
def test_fused_training_path_has_the_gradients_of_the_reference(bias, tie, activation):
    """Training runs ``impl="fused"``: its gradients, parameter by parameter (same names), are the readable path's."""
    model, tokens, targets = _model(bias=bias, tie_embeddings=tie, activation=activation), _tokens(), _tokens(seed=2)
    grads = {}
    for impl in ("reference", "fused"):
        model.zero_grad(set_to_none=True)
        F.cross_entropy(model(tokens, impl=impl).flatten(0, 1), targets.flatten()).backward()
        grads[impl] = {name: p.grad for name, p in model.named_parameters()}
    assert list(grads["fused"]) == list(grads["reference"]) == list(model.state_dict())
    rtol, atol = tolerance(torch.float32)
    for name, grad in grads["reference"].items():
        torch.testing.assert_close(grads["fused"][name], grad, rtol=rtol, atol=10 * atol, msg=name)


def test_fused_block_is_the_block():
    block, x = _model().blocks[0], torch.randn(2, 9, 24)
    rtol, atol = tolerance(torch.float32)
    torch.testing.assert_close(block(x, impl="fused"), block(x), rtol=rtol, atol=atol)
    with pytest.raises(ValueError, match="impl must be"):
        block(x, impl="fast")


@pytest.mark.parametrize("activation", ["gelu_tanh", "gelu", "relu"])
def test_fused_sublayers_match_the_modules(activation):
    block = _model(activation=activation).blocks[0]
    x = torch.randn(2, 9, 24)
    rtol, atol = tolerance(torch.float32)
    torch.testing.assert_close(fused_attention(block.attn, x), block.attn(x, mask=causal_mask(9)), rtol=rtol, atol=atol)
    torch.testing.assert_close(fused_mlp(block.mlp, x), block.mlp(x), rtol=rtol, atol=atol)


def test_pre_norm_block_is_the_residual_formula():
    block, x = _model().blocks[0], torch.randn(2, 9, 24)
    h = x + block.attn(block.ln1(x), mask=causal_mask(9))
    torch.testing.assert_close(block(x), h + block.mlp(block.ln2(h)))


@pytest.mark.parametrize("impl", ["reference", "fused"])
def test_logits_are_causal(impl):
    model, tokens = _model(), _tokens()
    changed = tokens.clone()
    changed[:, 6] = (changed[:, 6] + 1) % 37
    a, b = model(tokens, impl=impl), model(changed, impl=impl)
    torch.testing.assert_close(a[:, :6], b[:, :6])
    assert not torch.allclose(a[:, 6:], b[:, 6:])


def test_residual_stream_is_the_sum_of_every_write():
    model, tokens = _model(), _tokens()
    writes = model.residual_writes(tokens)
    assert list(writes) == ["W_E", "W_pos", "blocks.0.attn", "blocks.0.mlp", "blocks.1.attn", "blocks.1.mlp"]
    final = sum(writes.values())
    torch.testing.assert_close(model.unembed(final), model(tokens))
    with pytest.raises(ValueError, match="pre-norm"):
        _model(norm="post").residual_writes(tokens)


def test_tied_unembedding_is_the_embedding_transposed():
    model = _model(tie_embeddings=True)
    assert model.W_U is None and model.unembedding().data_ptr() == model.W_E.data_ptr()
    tokens = _tokens()
    x = model.embed(tokens)
    for block in model.blocks:
        x = block(x)
    torch.testing.assert_close(model(tokens), model.ln_final(x) @ model.W_E.T)


@pytest.mark.parametrize("tie", [True, False])
def test_builds_on_the_meta_device_and_counts_parameters(tie):
    cfg = GPTConfig(d_vocab=50257, n_ctx=1024, d_model=768, n_heads=12, n_layers=12, tie_embeddings=tie)
    with torch.device("meta"):
        model = GPT(cfg)
    assert next(model.parameters()).device.type == "meta"
    per_block = 4 * 768 * 768 + 4 * 768 + 2 * 768 * 3072 + 3072 + 768 + 4 * 768
    expected = 50257 * 768 + 1024 * 768 + 12 * per_block + 2 * 768 + (0 if tie else 768 * 50257)
    assert model.num_params() == expected == sum(p.numel() for p in model.parameters())


def test_loss_at_init_is_near_log_vocab():
    torch.manual_seed(0)
    model = GPT(GPTConfig(d_vocab=500, n_ctx=32, d_model=32, n_heads=2, n_layers=2))
    tokens, targets = _tokens(4, 32, seed=1, d_vocab=500), _tokens(4, 32, seed=2, d_vocab=500)
    with torch.no_grad():
        loss = F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten())
    assert abs(float(loss) - math.log(500)) < 0.05


def test_init_follows_gpt2():
    torch.manual_seed(0)
    model = GPT(GPTConfig(d_vocab=500, n_ctx=64, d_model=256, n_heads=4, n_layers=8))
    with torch.no_grad():
        assert abs(float(model.W_E.std()) - 0.02) < 1e-3
        assert abs(float(model.blocks[0].mlp.W_out.std()) - 0.02 / 4) < 3e-4  # 1/sqrt(2 * 8 layers)
        assert float(model.blocks[0].ln1.w.min()) == 1.0 and float(model.blocks[0].attn.b_Q.abs().max()) == 0.0


# -- bad input ----------------------------------------------------------------------------------
@pytest.mark.parametrize("kw, match", [({"d_model": 25}, "divisible"), ({"n_layers": 0}, "n_layers"),
                                       ({"norm": "middle"}, "norm"), ({"d_vocab": 2.5}, "d_vocab")])
def test_config_rejects_bad_values(kw, match):
    with pytest.raises(ValueError, match=match):
        GPTConfig(**{**TINY, **kw})


def test_bad_tokens_get_clear_errors():
    model = _model()
    with pytest.raises(ValueError, match="longer than the context n_ctx=16"):
        model(_tokens(1, 17))
    with pytest.raises(ValueError, match="unknown token id 37"):
        model(torch.tensor([[1, 37]]))
    with pytest.raises(ValueError, match="unknown token id -1"):
        model(torch.tensor([[-1, 2]]))
    with pytest.raises(TypeError, match="integer"):
        model(torch.tensor([[1.0, 2.0]]))


def test_state_dict_of_another_config_is_named():
    small, other = _model(), _model(d_model=12, n_heads=3)
    with pytest.raises(ValueError, match="W_E: checkpoint has shape \\(37, 12\\), the config needs \\(37, 24\\)"):
        check_state_dict(small, other.state_dict())
    sd = small.state_dict()
    sd.pop("ln_final.w")
    with pytest.raises(ValueError, match="missing ln_final.w"):
        check_state_dict(small, sd)


@pytest.mark.gpu
@pytest.mark.parametrize("impl", ["reference", "fused"])
def test_gpu_matches_cpu(impl):
    model, tokens = _model(), _tokens()
    cpu = model(tokens, impl=impl)
    gpu = model.cuda()(tokens.cuda(), impl=impl)
    assert gpu.device.type == "cuda"
    rtol, atol = tolerance(torch.float32, "cuda")
    torch.testing.assert_close(gpu.cpu(), cpu, rtol=rtol, atol=10 * atol)
