"""Parameter counts of decoder-only transformers from their configuration, one formula per part.

Covers ``ModelConfig`` (the sizes and architectural options in the course's vocabulary, validated
once), the per-layer counts of attention (``attention_parameters``: with or without biases, with
grouped-query attention) and of one MLP (``mlp_parameters``: plain or gated/SwiGLU), the whole
model's per-category breakdown (``count_parameters``), what one token uses in a mixture of experts
(``active_parameters``), the scaling-law N without embeddings
(``non_embedding_parameters``), a coarse four-part grouping for budget shares (``group_counts``), the
2017 encoder-decoder Transformer (``count_encoder_decoder``) and presets of published models
(GPT-2 small to XL, GPT-3 175B both ways, Mixtral 8x7B, Llama 3 8B).

Conventions (the ones the published models use, checked against ``transformers`` modules built on
the ``meta`` device in ``tests/test_counting.py``):

- ``bias`` switches the biases of every linear layer *and* of LayerNorm (as nanoGPT's flag does);
  RMSNorm has a gain only; the unembedding and the MoE router never have a bias.
- Tied embeddings count the shared matrix once, under ``embedding``; ``unembedding`` is then 0.
- Rotary, sinusoidal and no positions have no parameters; learned positions are ``n_ctx x d_model``.
- ``norm="none"`` drops every norm: with ``bias=False, positions="none", tie_embeddings=False``
  that is the "weights only" count of the GPT-3 walk-through.
- Active parameters count the whole embedding and unembedding matrices (the usual convention for
  Mixtral's 12.9B), the shared attention and norms, the full router and ``experts_per_token``
  experts per layer.

Categories (every dict has all of them, zeros included): ``embedding``, ``positions``, ``query``,
``key``, ``value``, ``output``, ``mlp_up``, ``mlp_gate``, ``mlp_down``, ``router``, ``norms``,
``unembedding`` and ``total``. A category holds its matrices' biases too.

Leaves out: FLOPs and memory (``course_utils.counting.compute``), encoder-only models, dropout (no
parameters) and per-head sizes other than ``d_model // n_heads``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from course_utils.validate import positive_int

CATEGORIES = (
    "embedding",
    "positions",
    "query",
    "key",
    "value",
    "output",
    "mlp_up",
    "mlp_gate",
    "mlp_down",
    "router",
    "norms",
    "unembedding",
)
GROUPS = {
    "embedding": ("embedding", "positions"),
    "attention": ("query", "key", "value", "output"),
    "mlp": ("mlp_up", "mlp_gate", "mlp_down", "router"),
    "unembedding": ("unembedding",),
    "norms": ("norms",),
}
MLPS = ("gelu", "relu", "swiglu", "geglu")  # the last two are gated: three matrices
NORMS = ("layernorm", "rmsnorm", "none")
POSITIONS = ("learned", "rotary", "sinusoidal", "none")


@dataclass(frozen=True)
class ModelConfig:
    """A decoder-only model's shape: ``ModelConfig(50257, 1024, 768, 12, 12).d_head`` -> 64.

    ``n_kv_heads`` (default ``n_heads``) < ``n_heads`` is grouped-query attention; ``d_mlp`` defaults
    to ``4 * d_model`` and is the hidden width (of each expert); ``n_experts > 1`` replaces every MLP
    by that many experts of which ``experts_per_token`` run per token. Bad values raise
    ``ValueError``/``TypeError`` naming the field.
    """

    d_vocab: int
    n_ctx: int
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int | None = None
    d_mlp: int | None = None
    mlp: str = "gelu"
    norm: str = "layernorm"
    positions: str = "learned"
    bias: bool = True
    tie_embeddings: bool = True
    n_experts: int = 1
    experts_per_token: int = 1

    def __post_init__(self) -> None:
        who = type(self).__name__  # errors name the subclass (llama.LlamaConfig) when it is one
        for name in ("d_vocab", "n_ctx", "d_model", "n_layers", "n_heads", "n_experts", "experts_per_token"):
            positive_int(f"{who}.{name}", getattr(self, name))
        for name in ("n_kv_heads", "d_mlp"):
            if getattr(self, name) is not None:
                positive_int(f"{who}.{name}", getattr(self, name))
        for name, allowed in (("mlp", MLPS), ("norm", NORMS), ("positions", POSITIONS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{who}.{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for name in ("bias", "tie_embeddings"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{who}.{name} must be a bool, got {getattr(self, name)!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"{who}.d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        if self.n_heads % self.kv_heads:
            raise ValueError(f"{who}.n_heads={self.n_heads} must be divisible by n_kv_heads={self.kv_heads}")
        if self.experts_per_token > self.n_experts:
            raise ValueError(
                f"{who}.experts_per_token={self.experts_per_token} must be <= n_experts={self.n_experts}"
            )

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        """``n_kv_heads``, or ``n_heads`` when it is not set (ordinary multi-head attention)."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def mlp_width(self) -> int:
        """``d_mlp``, or ``4 * d_model`` when it is not set."""
        return 4 * self.d_model if self.d_mlp is None else self.d_mlp

    @property
    def gated(self) -> bool:
        return self.mlp in ("swiglu", "geglu")

    def with_(self, **changes) -> "ModelConfig":
        """A copy with some fields changed (validated again): ``GPT2_SMALL.with_(n_layers=1)``."""
        return replace(self, **changes)


def _check(cfg) -> ModelConfig:
    if not isinstance(cfg, ModelConfig):
        raise TypeError(f"cfg must be a ModelConfig, got {type(cfg).__name__}")
    return cfg


def attention_parameters(cfg: ModelConfig) -> dict[str, int]:
    """One layer's attention: ``{"query", "key", "value", "output"}``; GPT-2 small -> 590,592 each.

    Query and output are ``d_model x d_model``; key and value ``d_model x (n_kv_heads * d_head)``,
    smaller under grouped-query attention. Each gets its bias (its output width) when ``bias``.
    """
    cfg = _check(cfg)
    d_q, d_kv = cfg.n_heads * cfg.d_head, cfg.kv_heads * cfg.d_head
    b = int(cfg.bias)
    return {
        "query": cfg.d_model * d_q + b * d_q,
        "key": cfg.d_model * d_kv + b * d_kv,
        "value": cfg.d_model * d_kv + b * d_kv,
        "output": d_q * cfg.d_model + b * cfg.d_model,
    }


def mlp_parameters(cfg: ModelConfig) -> dict[str, int]:
    """One MLP (one expert): ``{"mlp_up", "mlp_gate", "mlp_down"}``; GPT-2 small -> up 2,362,368.

    Up and gate are ``d_model x d_mlp`` (the gate only for SwiGLU/GeGLU), down ``d_mlp x d_model``.
    """
    cfg = _check(cfg)
    b, width = int(cfg.bias), cfg.mlp_width
    up = cfg.d_model * width + b * width
    return {"mlp_up": up, "mlp_gate": up if cfg.gated else 0, "mlp_down": width * cfg.d_model + b * cfg.d_model}


def norm_parameters(cfg: ModelConfig) -> int:
    """One norm layer: LayerNorm ``d_model`` gains (+ ``d_model`` biases when ``bias``), RMSNorm gains only."""
    cfg = _check(cfg)
    return {"layernorm": cfg.d_model * (1 + int(cfg.bias)), "rmsnorm": cfg.d_model, "none": 0}[cfg.norm]


def _count(cfg: ModelConfig, experts_used: int) -> dict[str, int]:
    attn, mlp, norm = attention_parameters(cfg), mlp_parameters(cfg), norm_parameters(cfg)
    counts = dict.fromkeys(CATEGORIES, 0)
    counts["embedding"] = cfg.d_vocab * cfg.d_model
    counts["positions"] = cfg.n_ctx * cfg.d_model if cfg.positions == "learned" else 0
    for name, n in attn.items():
        counts[name] = cfg.n_layers * n
    for name, n in mlp.items():
        counts[name] = cfg.n_layers * experts_used * n
    counts["router"] = cfg.n_layers * cfg.d_model * cfg.n_experts if cfg.n_experts > 1 else 0
    counts["norms"] = (2 * cfg.n_layers + 1) * norm  # two per block and a final one
    counts["unembedding"] = 0 if cfg.tie_embeddings else cfg.d_vocab * cfg.d_model
    counts["total"] = sum(counts.values())
    return counts


def count_parameters(cfg: ModelConfig) -> dict[str, int]:
    """Every parameter by category: ``count_parameters(GPT2_SMALL)["total"]`` -> 124,439,808."""
    cfg = _check(cfg)
    return _count(cfg, cfg.n_experts)


def active_parameters(cfg: ModelConfig) -> dict[str, int]:
    """The parameters one token runs through: ``active_parameters(MIXTRAL_8X7B)["total"]`` -> about 12.9e9.

    Same categories as ``count_parameters``; only ``experts_per_token`` experts per layer count.
    """
    cfg = _check(cfg)
    return _count(cfg, cfg.experts_per_token)


def non_embedding_parameters(cfg: ModelConfig) -> int:
    """N as Kaplan et al. 2020 count it: all but the token embedding, position table and unembedding.

    ``non_embedding_parameters(GPT2_SMALL)`` -> 85,056,000 (of 124,439,808). Chinchilla counts all of them.
    """
    counts = count_parameters(cfg)
    return counts["total"] - counts["embedding"] - counts["positions"] - counts["unembedding"]


def group_counts(counts: dict[str, int]) -> dict[str, int]:
    """Coarse parts of a breakdown: embedding (+positions), attention, mlp (+router), unembedding, norms."""
    if not isinstance(counts, dict) or not set(CATEGORIES) <= set(counts):
        raise ValueError(f"counts must be a dict from count_parameters with keys {CATEGORIES}")
    return {group: sum(counts[c] for c in members) for group, members in GROUPS.items()}


def count_encoder_decoder(
    d_vocab: int, d_model: int, n_layers: int, n_heads: int, d_mlp: int, *, final_norms: bool = False
) -> dict[str, int]:
    """The 2017 Transformer (post-norm, biases, sinusoidal positions, one embedding shared three ways).

    ``{"embedding", "encoder", "decoder", "total"}``: an encoder layer is self-attention + MLP + 2
    LayerNorms, a decoder layer adds cross-attention and a third LayerNorm. ``final_norms=True``
    adds the closing LayerNorm of each stack (as ``torch.nn.Transformer`` has).
    ``count_encoder_decoder(37000, 512, 6, 8, 2048)["total"]`` -> 63,082,496.
    """
    cfg = ModelConfig(d_vocab, 1, d_model, n_layers, n_heads, d_mlp=d_mlp, positions="none")
    attn, mlp, norm = sum(attention_parameters(cfg).values()), sum(mlp_parameters(cfg).values()), norm_parameters(cfg)
    final = norm if final_norms else 0
    encoder = n_layers * (attn + mlp + 2 * norm) + final
    decoder = n_layers * (2 * attn + mlp + 3 * norm) + final
    embedding = d_vocab * d_model
    return {"embedding": embedding, "encoder": encoder, "decoder": decoder, "total": embedding + encoder + decoder}


GPT2_SMALL = ModelConfig(d_vocab=50257, n_ctx=1024, d_model=768, n_layers=12, n_heads=12)
GPT2_MEDIUM = GPT2_SMALL.with_(d_model=1024, n_layers=24, n_heads=16)
GPT2_LARGE = GPT2_SMALL.with_(d_model=1280, n_layers=36, n_heads=20)
GPT2_XL = GPT2_SMALL.with_(d_model=1600, n_layers=48, n_heads=25)
GPT3_175B = ModelConfig(d_vocab=50257, n_ctx=2048, d_model=12288, n_layers=96, n_heads=96)  # strict GPT-2 style
GPT3_175B_WEIGHTS_ONLY = GPT3_175B.with_(bias=False, norm="none", positions="none", tie_embeddings=False)
MIXTRAL_8X7B = ModelConfig(
    d_vocab=32000,
    n_ctx=32768,
    d_model=4096,
    n_layers=32,
    n_heads=32,
    n_kv_heads=8,
    d_mlp=14336,
    mlp="swiglu",
    norm="rmsnorm",
    positions="rotary",
    bias=False,
    tie_embeddings=False,
    n_experts=8,
    experts_per_token=2,
)
LLAMA3_8B = MIXTRAL_8X7B.with_(d_vocab=128256, n_ctx=8192, n_experts=1, experts_per_token=1)
TRANSFORMER_BASE = {"d_vocab": 37000, "d_model": 512, "n_layers": 6, "n_heads": 8, "d_mlp": 2048}
TRANSFORMER_BIG = {"d_vocab": 37000, "d_model": 1024, "n_layers": 6, "n_heads": 16, "d_mlp": 4096}
PRESETS = {
    "GPT-2 small": GPT2_SMALL,
    "GPT-2 medium": GPT2_MEDIUM,
    "GPT-2 large": GPT2_LARGE,
    "GPT-2 XL": GPT2_XL,
    "GPT-3 175B": GPT3_175B,
    "Mixtral 8x7B": MIXTRAL_8X7B,
    "Llama 3 8B": LLAMA3_8B,
}
