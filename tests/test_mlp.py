"""The MLP and its activations against torch's own modules (nn.GELU, nn.Linear, nn.MultiheadAttention)."""

import math

import pytest
import torch
from torch import nn

from course_utils.mlp import ACTIVATIONS, MLP, block_weight_split, gelu_exact, gelu_tanh, mlp_forward, relu


def _x(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def test_activations_match_torch_oracles():
    x = torch.linspace(-8, 8, 2001, dtype=torch.float64)
    torch.testing.assert_close(gelu_exact(x), nn.GELU()(x))
    torch.testing.assert_close(gelu_tanh(x), nn.GELU(approximate="tanh")(x))
    torch.testing.assert_close(relu(x), nn.ReLU()(x))
    assert set(ACTIVATIONS) == {"relu", "gelu", "gelu_tanh"}


def test_the_two_gelus_differ_but_only_slightly():
    x = torch.linspace(-6, 6, 100_001, dtype=torch.float64)
    gap = (gelu_exact(x) - gelu_tanh(x)).abs().max().item()
    assert 1e-5 < gap < 1e-3
    assert gelu_exact(torch.tensor(1.0, dtype=torch.float64)).item() == pytest.approx(0.5 * (1 + math.erf(1 / math.sqrt(2))))


@pytest.mark.parametrize("activation,torch_act", [("relu", nn.ReLU()), ("gelu", nn.GELU()), ("gelu_tanh", nn.GELU(approximate="tanh"))])
@pytest.mark.parametrize("bias", [True, False])
def test_module_matches_linear_act_linear_with_the_same_weights(activation, torch_act, bias):
    torch.manual_seed(0)
    mlp = MLP(6, 10, activation=activation, bias=bias).double()
    if bias:
        with torch.no_grad():
            mlp.b_in.normal_()
            mlp.b_out.normal_()
    up, down = nn.Linear(6, 10, bias=bias).double(), nn.Linear(10, 6, bias=bias).double()
    with torch.no_grad():
        up.weight.copy_(mlp.W_in.T)
        down.weight.copy_(mlp.W_out.T)
        if bias:
            up.bias.copy_(mlp.b_in)
            down.bias.copy_(mlp.b_out)
    x = _x(3, 4, 6)
    torch.testing.assert_close(mlp(x), down(torch_act(up(x))))


def test_parameters_shapes_defaults_and_counts():
    mlp = MLP(8)
    assert mlp.d_mlp == 32
    assert mlp.W_in.shape == (8, 32) and mlp.b_in.shape == (32,)
    assert mlp.W_out.shape == (32, 8) and mlp.b_out.shape == (8,)
    assert sum(p.numel() for p in mlp.parameters()) == sum(p.numel() for layer in (nn.Linear(8, 32), nn.Linear(32, 8)) for p in layer.parameters())
    no_bias = MLP(8, 16, bias=False)
    assert no_bias.b_in is None and no_bias.b_out is None
    assert sum(p.numel() for p in no_bias.parameters()) == 2 * 8 * 16


def test_initialisation_is_gpt2_style():
    torch.manual_seed(0)
    mlp = MLP(256)
    assert mlp.W_in.std().item() == pytest.approx(0.02, rel=0.02)
    assert mlp.W_out.std().item() == pytest.approx(0.02, rel=0.02)
    assert torch.count_nonzero(mlp.b_in) == 0 and torch.count_nonzero(mlp.b_out) == 0


def test_position_wise_changing_one_position_changes_only_that_output():
    torch.manual_seed(0)
    mlp = MLP(6, 12).double()
    x = _x(2, 5, 6)
    y = mlp(x)
    x2 = x.clone()
    x2[1, 3] += 1.0
    y2 = mlp(x2)
    changed = (y2 - y).abs().amax(dim=-1) > 0
    assert changed.tolist() == [[False] * 5, [False, False, False, True, False]]
    # and each position is the MLP of that position alone
    torch.testing.assert_close(y[1, 3], mlp(x[1, 3]))


def test_functional_forward_worked_example():
    eye = torch.eye(2)
    out = mlp_forward(torch.tensor([[-1.0, 3.0]]), eye, None, eye, None, "relu")
    assert out.tolist() == [[0.0, 3.0]]


def test_gradients_reach_every_parameter():
    mlp = MLP(4, 8)
    mlp(torch.randn(3, 4)).sum().backward()
    assert all(p.grad is not None for p in mlp.parameters())


def test_block_weight_split_matches_module_parameter_counts():
    d_model = 64
    split = block_weight_split(d_model)
    attn = nn.MultiheadAttention(d_model, 4, bias=False)
    assert split["attention"] == sum(p.numel() for p in attn.parameters())
    assert split["mlp"] == sum(p.numel() for p in MLP(d_model, bias=False).parameters())
    assert block_weight_split(512) == {"attention": 512 * 512 * 4, "mlp": 2 * 512 * 2048}


@pytest.mark.parametrize("kwargs,exc,word", [
    ({"d_model": 0}, ValueError, "d_model"),
    ({"d_model": 2.5}, ValueError, "d_model"),
    ({"d_model": True}, ValueError, "d_model"),
    ({"d_model": 4, "d_mlp": 0}, ValueError, "d_mlp"),
    ({"d_model": 4, "activation": "swish"}, ValueError, "activation"),
    ({"d_model": 4, "bias": "yes"}, TypeError, "bias"),
])
def test_bad_constructor_arguments_name_the_argument(kwargs, exc, word):
    with pytest.raises(exc, match=word):
        MLP(**kwargs)


def test_bad_inputs_name_the_argument():
    mlp = MLP(4)
    with pytest.raises(ValueError, match="d_model=4"):
        mlp(torch.randn(2, 5))
    with pytest.raises(TypeError, match="x"):
        mlp([[1.0] * 4])
    with pytest.raises(TypeError, match="floating"):
        mlp(torch.ones(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="W_out"):
        mlp_forward(torch.randn(2, 4), torch.randn(4, 8), None, torch.randn(4, 8), None)
    with pytest.raises(ValueError, match="b_in"):
        mlp_forward(torch.randn(2, 4), torch.randn(4, 8), torch.randn(4), torch.randn(8, 4), None)
    with pytest.raises(TypeError, match="x"):
        gelu_tanh([1.0])


def _weights(d_model=4, d_mlp=8):
    return {"x": _x(2, 3, d_model), "W_in": _x(d_model, d_mlp, seed=1), "b_in": _x(d_mlp, seed=2),
            "W_out": _x(d_mlp, d_model, seed=3), "b_out": _x(d_model, seed=4)}


@pytest.mark.parametrize("name", ["x", "W_in", "b_in", "W_out", "b_out"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_functional_forward_rejects_non_finite_tensors_by_name(name, bad):
    args = _weights()
    args[name] = args[name].clone()
    args[name].view(-1)[1] = bad
    with pytest.raises(ValueError, match=rf"^{name} contains NaN or inf"):
        mlp_forward(**args)


@pytest.mark.parametrize("name", ["W_in", "b_in", "W_out", "b_out"])
def test_module_rejects_a_non_finite_parameter_by_name(name):
    mlp = MLP(4, 8)
    with torch.no_grad():
        getattr(mlp, name).view(-1)[0] = float("nan")
    with pytest.raises(ValueError, match=rf"^{name} contains NaN or inf"):
        mlp(torch.randn(2, 4))


def test_module_rejects_a_non_finite_input():
    x = torch.randn(2, 3, 4)
    x[1, 2, 0] = float("inf")
    with pytest.raises(ValueError, match="^x contains NaN or inf"):
        MLP(4)(x)


def test_bad_weight_shapes_name_the_argument():
    args = _weights()
    with pytest.raises(ValueError, match="W_in"):
        mlp_forward(**{**args, "W_in": _x(4)})
    with pytest.raises(TypeError, match="W_out"):
        mlp_forward(**{**args, "W_out": [[1.0]]})
    with pytest.raises(ValueError, match="b_out"):
        mlp_forward(**{**args, "b_out": _x(8)})


def test_non_finite_checks_are_skipped_on_meta():
    meta = {name: torch.empty(t.shape, device="meta") for name, t in _weights().items()}
    assert mlp_forward(**meta).device.type == "meta"


@pytest.mark.gpu
def test_same_output_on_cuda():
    torch.manual_seed(0)
    mlp = MLP(8).double()
    x = _x(2, 3, 8)
    expected = mlp(x)
    got = mlp.to("cuda")(x.to("cuda"))
    assert got.device.type == "cuda"
    torch.testing.assert_close(got.cpu(), expected)
