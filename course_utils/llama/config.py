"""The shape of a Llama-style model: notebook 08's ``ModelConfig`` with Llama's choices fixed, plus RoPE and ε.

Covers ``LlamaConfig``, a ``counting.ModelConfig`` (so ``count_parameters(cfg)`` counts it, and that
count equals ``sum(p.numel())`` of ``Llama(cfg)``: tested) whose architecture fields are those of
Llama (SwiGLU, RMSNorm, rotary positions, no biases, untied embeddings, no experts), with
``d_mlp`` defaulting to ``swiglu_width(d_model)``, and the fields a counter does not need: RoPE's
``rope_base`` and pair layout, RMSNorm's ``eps``. ``to_model_config`` gives the plain ``ModelConfig``
of the same shape (``to_model_config(cfg) == counting.LLAMA3_8B`` for Llama 3 8B's sizes).
Leaves out the modules (``llama.model``) and reading ``transformers``' configs (``llama.transformers_weights``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from course_utils.counting.parameters import ModelConfig
from course_utils.llama.feed_forward import swiglu_width
from course_utils.positions import BASE, LAYOUTS
from course_utils.validate import non_negative_number, one_of, positive_number

LLAMA_CHOICES = {"mlp": "swiglu", "norm": "rmsnorm", "positions": "rotary", "bias": False, "tie_embeddings": False,
                 "n_experts": 1, "experts_per_token": 1}  # fmt: skip


@dataclass(frozen=True)
class LlamaConfig(ModelConfig):
    """``LlamaConfig(d_vocab=100, n_ctx=64, d_model=64, n_layers=2, n_heads=4, n_kv_heads=2)``: d_head 16, d_mlp 192.

    ``n_kv_heads`` defaults to ``n_heads`` (plain multi-head attention) and must divide it; ``n_ctx``
    is the longest sequence (cache included) the model accepts. ``rope_layout`` says how
    ``W_Q``/``W_K`` pair their features for RoPE: ``"halves"`` (``transformers``' checkpoints) or
    ``"interleaved"`` (Meta's). Bad values raise ``ValueError``/``TypeError`` naming the field.
    """

    mlp: str = "swiglu"
    norm: str = "rmsnorm"
    positions: str = "rotary"
    bias: bool = False
    tie_embeddings: bool = False
    rope_base: float = BASE
    rope_layout: str = "halves"
    eps: float = 1e-5

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, value in LLAMA_CHOICES.items():
            if getattr(self, name) != value:
                raise ValueError(f"LlamaConfig.{name} must be {value!r} (Llama's choice), got {getattr(self, name)!r}")
        positive_number("LlamaConfig.rope_base", self.rope_base)
        one_of("LlamaConfig.rope_layout", self.rope_layout, LAYOUTS)
        non_negative_number("LlamaConfig.eps", self.eps)
        if self.d_head % 2:
            raise ValueError(
                f"LlamaConfig.d_model // n_heads = {self.d_head} (d_head) must be even: RoPE rotates features in pairs"
            )

    @property
    def mlp_width(self) -> int:
        """``d_mlp``, or ``swiglu_width(d_model)`` when it is not set."""
        return swiglu_width(self.d_model) if self.d_mlp is None else self.d_mlp


def to_model_config(cfg: LlamaConfig) -> ModelConfig:
    """The plain ``ModelConfig`` of the same shape, ``d_mlp`` and ``n_kv_heads`` spelled out."""
    if not isinstance(cfg, LlamaConfig):
        raise TypeError(f"cfg must be a LlamaConfig, got {type(cfg).__name__}")
    shared = {f.name: getattr(cfg, f.name) for f in fields(ModelConfig)}
    return ModelConfig(**{**shared, "n_kv_heads": cfg.kv_heads, "d_mlp": cfg.mlp_width})
