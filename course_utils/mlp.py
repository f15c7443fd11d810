"""The position-wise MLP of a transformer block and its activations.

Covers ReLU, the exact GELU ``x * Φ(x)``, GPT-2's tanh approximation of it, the functional
``mlp_forward`` (up-projection, nonlinearity, down-projection; no residual inside), the ``MLP``
module holding ``W_in``/``b_in``/``W_out``/``b_out`` in TransformerLens's layout, and the parameter
count of an MLP against an attention layer of the same width.
Leaves out gated variants (SwiGLU), dropout and mixtures of experts.
"""

from __future__ import annotations

import math

import torch
from jaxtyping import Float
from torch import Tensor, nn

from course_utils.validate import float_tensor, positive_int


def relu(x: Float[Tensor, "..."]) -> Float[Tensor, "..."]:
    """max(x, 0) elementwise. ``relu(torch.tensor([-1., 2.]))`` -> ``[0., 2.]``."""
    return torch.clamp(float_tensor("x", x, min_dims=0, finite=False), min=0)


def gelu_exact(x: Float[Tensor, "..."]) -> Float[Tensor, "..."]:
    """GELU as defined: x times the standard normal CDF, Φ(x) = (1 + erf(x/√2)) / 2.

    ``gelu_exact(torch.tensor([0., 1.]))`` -> ``[0., 0.8413]``; oracle ``nn.GELU()``.
    """
    x = float_tensor("x", x, min_dims=0, finite=False)
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def gelu_tanh(x: Float[Tensor, "..."]) -> Float[Tensor, "..."]:
    """GPT-2's approximation: x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³))).

    ``gelu_tanh(torch.tensor([0., 1.]))`` -> ``[0., 0.8412]``; oracle ``nn.GELU(approximate="tanh")``.
    """
    x = float_tensor("x", x, min_dims=0, finite=False)
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


ACTIVATIONS = {"relu": relu, "gelu": gelu_exact, "gelu_tanh": gelu_tanh}


def _check_activation(activation) -> str:
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
    return activation


def mlp_forward(
    x: Float[Tensor, "... d_model"],
    W_in: Float[Tensor, "d_model d_mlp"],
    b_in: Float[Tensor, "d_mlp"] | None,
    W_out: Float[Tensor, "d_mlp d_model"],
    b_out: Float[Tensor, "d_model"] | None,
    activation: str = "gelu_tanh",
) -> Float[Tensor, "... d_model"]:
    """act(x @ W_in + b_in) @ W_out + b_out, applied to every position on its own (no residual).

    Every tensor must be floating point with finite values (skipped on ``meta``) and the shapes shown.

    With ``W_in = W_out = torch.eye(2)``, no biases and ``"relu"``: ``[[-1., 3.]]`` -> ``[[0., 3.]]``.
    """
    W_in = float_tensor("W_in", W_in, "(d_model, d_mlp)", min_dims=2, finite=False)
    W_out = float_tensor("W_out", W_out, "(d_mlp, d_model)", min_dims=2, finite=False)
    act = ACTIVATIONS[_check_activation(activation)]
    if W_in.ndim != 2 or W_out.ndim != 2 or W_out.shape != W_in.shape[::-1]:
        raise ValueError(
            "W_in must be (d_model, d_mlp) and W_out (d_mlp, d_model), "
            f"got {tuple(W_in.shape)} and {tuple(W_out.shape)}"
        )
    x = float_tensor("x", x, "(..., d_model)", finite=False)
    if x.shape[-1] != W_in.shape[0]:
        raise ValueError(f"x's last dimension must be d_model={W_in.shape[0]}, got shape {tuple(x.shape)}")
    for name, b, width in (("b_in", b_in, W_in.shape[1]), ("b_out", b_out, W_in.shape[0])):
        if b is not None and float_tensor(name, b, f"({width},)", min_dims=0, finite=False).shape != (width,):
            raise ValueError(f"{name} must have shape ({width},), got {tuple(b.shape)}")
    for name, t in (("x", x), ("W_in", W_in), ("b_in", b_in), ("W_out", W_out), ("b_out", b_out)):
        if t is not None:
            float_tensor(name, t)  # shapes first, then values: NaN or inf anywhere is an error naming the tensor
    hidden = x @ W_in  # (..., d_mlp)
    if b_in is not None:
        hidden = hidden + b_in
    out = act(hidden) @ W_out  # (..., d_model)
    return out if b_out is None else out + b_out


class MLP(nn.Module):
    """Position-wise feed-forward: x -> act(x @ W_in + b_in) @ W_out + b_out (no residual inside).

    ``MLP(d_model=8)(torch.randn(2, 5, 8))`` has shape (2, 5, 8) and 8·32 + 32 + 32·8 + 8 parameters.
    Initialisation follows GPT-2: weights drawn from a normal with std 0.02, biases zero. ``d_mlp``
    defaults to 4·d_model; with ``bias=False`` the biases are ``None``. Move it with ``.to()``; it
    computes on the device and dtype of its parameters, which must match the input's. Each call
    checks what ``mlp_forward`` checks (the input's width; input and parameters finite).
    """

    def __init__(self, d_model: int, d_mlp: int | None = None, activation: str = "gelu_tanh", bias: bool = True):
        super().__init__()
        self.d_model = positive_int("d_model", d_model)
        self.d_mlp = 4 * d_model if d_mlp is None else positive_int("d_mlp", d_mlp)
        self.activation = _check_activation(activation)
        if not isinstance(bias, bool):
            raise TypeError(f"bias must be a bool, got {type(bias).__name__}")
        self.W_in = nn.Parameter(torch.randn(self.d_model, self.d_mlp) * 0.02)
        self.W_out = nn.Parameter(torch.randn(self.d_mlp, self.d_model) * 0.02)
        self.b_in = nn.Parameter(torch.zeros(self.d_mlp)) if bias else None
        self.b_out = nn.Parameter(torch.zeros(self.d_model)) if bias else None

    def forward(self, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_model"]:
        return mlp_forward(x, self.W_in, self.b_in, self.W_out, self.b_out, self.activation)

    def extra_repr(self) -> str:
        return (
            f"d_model={self.d_model}, d_mlp={self.d_mlp}, activation={self.activation!r}, bias={self.b_in is not None}"
        )


def block_weight_split(d_model: int, d_mlp: int | None = None) -> dict[str, int]:
    """Weight-matrix entries (no biases) of one block's attention (W_Q, W_K, W_V, W_O) and MLP.

    ``block_weight_split(512)`` -> ``{"attention": 1048576, "mlp": 2097152}`` (the base Transformer).
    """
    d_model = positive_int("d_model", d_model)
    d_mlp = 4 * d_model if d_mlp is None else positive_int("d_mlp", d_mlp)
    return {"attention": 4 * d_model * d_model, "mlp": 2 * d_model * d_mlp}
