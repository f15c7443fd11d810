"""Parameter counts of fine-grained MoE models with shared experts (DeepSeekMoE, DeepSeek-V3).

Covers ``mla_parameters`` (one layer of multi-head latent attention, from its published shapes),
``DeepSeekConfig`` (the sizes of DeepSeek-V3's configuration file, in the course's words) and
``count_deepseek`` (held and per-token parameters, by part). The SwiGLU MLPs, the experts and the
norms are counted by ``course_utils.counting.parameters`` (``mlp_parameters``, ``norm_parameters``); only MLA
is new here. ``count_deepseek(DEEPSEEK_V3)`` -> about 671e9 held and 37e9 used per token.

Conventions: the router's selection bias is a buffer moved by a rule, not a trained weight, and is
not counted (E numbers a layer); the multi-token-prediction module (about 14B, used in training
only) is not part of the 671B; per-token counts include both embedding matrices, as Mixtral's 12.9B
does in ``counting.active_parameters``.
Leaves out FLOPs, the KV cache and node-limited routing.
"""

from __future__ import annotations

from dataclasses import dataclass

from course_utils.counting.parameters import ModelConfig, mlp_parameters, norm_parameters
from course_utils.validate import non_negative_int, positive_int


def mla_parameters(
    d_model: int,
    n_heads: int,
    q_lora_rank: int,
    kv_lora_rank: int,
    qk_nope_head_dim: int,
    qk_rope_head_dim: int,
    v_head_dim: int,
) -> dict[str, int]:
    """One MLA layer: queries and keys/values pass through low-rank latents, each latent RMS-normed.

    ``q_down`` d_model x q_lora_rank, ``q_up`` q_lora_rank x n_heads·(nope + rope),
    ``kv_down`` d_model x (kv_lora_rank + rope) (the rope part is one key shared by all heads),
    ``kv_up`` kv_lora_rank x n_heads·(nope + v), ``output`` n_heads·v x d_model, ``norms`` the two
    latent gains. ``mla_parameters(4, 2, 3, 2, 1, 1, 1)["total"]`` -> 12 + 12 + 12 + 8 + 8 + 5 = 57.
    """
    for name, value in (("d_model", d_model), ("n_heads", n_heads), ("q_lora_rank", q_lora_rank),
                        ("kv_lora_rank", kv_lora_rank), ("qk_nope_head_dim", qk_nope_head_dim),
                        ("v_head_dim", v_head_dim)):
        positive_int(name, value)
    non_negative_int("qk_rope_head_dim", qk_rope_head_dim)
    qk_head = qk_nope_head_dim + qk_rope_head_dim
    counts = {
        "q_down": d_model * q_lora_rank,
        "q_up": q_lora_rank * n_heads * qk_head,
        "kv_down": d_model * (kv_lora_rank + qk_rope_head_dim),
        "kv_up": kv_lora_rank * n_heads * (qk_nope_head_dim + v_head_dim),
        "output": n_heads * v_head_dim * d_model,
        "norms": q_lora_rank + kv_lora_rank,
    }
    counts["total"] = sum(counts.values())
    return counts


@dataclass(frozen=True)
class DeepSeekConfig:
    """DeepSeek-V3's shape: the first ``n_dense_layers`` have a dense SwiGLU MLP of width ``d_mlp``,
    the others ``n_shared`` shared experts (every token) and ``n_routed`` routed ones (``k`` a token),
    each a SwiGLU MLP of width ``d_expert``. Attention is MLA in every layer."""

    d_vocab: int
    d_model: int
    n_layers: int
    n_dense_layers: int
    d_mlp: int
    d_expert: int
    n_shared: int
    n_routed: int
    k: int
    n_heads: int
    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int

    def __post_init__(self) -> None:
        for name in ("d_vocab", "d_model", "n_layers", "d_mlp", "d_expert", "n_routed", "k", "n_heads"):
            positive_int(f"DeepSeekConfig.{name}", getattr(self, name))
        for name in ("n_dense_layers", "n_shared"):
            non_negative_int(f"DeepSeekConfig.{name}", getattr(self, name))
        if self.n_dense_layers > self.n_layers:
            raise ValueError(f"DeepSeekConfig.n_dense_layers={self.n_dense_layers} must be <= n_layers={self.n_layers}")
        if self.k > self.n_routed:
            raise ValueError(f"DeepSeekConfig.k={self.k} must be <= n_routed={self.n_routed}")


def _swiglu(d_model: int, width: int) -> int:
    """One bias-free SwiGLU MLP, counted by ``counting.mlp_parameters``."""
    cfg = ModelConfig(1, 1, d_model, 1, 1, d_mlp=width, mlp="swiglu", norm="rmsnorm", positions="rotary", bias=False)
    return sum(mlp_parameters(cfg).values())


def count_deepseek(cfg: DeepSeekConfig) -> dict[str, int]:
    """Held and per-token parameters by part: ``embedding``, ``unembedding``, ``attention``,
    ``norms``, ``dense_mlp``, ``shared_experts``, ``routed_experts``, ``router``, ``total``, and
    ``active_routed_experts``, ``active`` (what one token runs through)."""
    if not isinstance(cfg, DeepSeekConfig):
        raise TypeError(f"cfg must be a DeepSeekConfig, got {type(cfg).__name__}")
    n_moe = cfg.n_layers - cfg.n_dense_layers
    expert = _swiglu(cfg.d_model, cfg.d_expert)
    norm = norm_parameters(ModelConfig(1, 1, cfg.d_model, 1, 1, norm="rmsnorm", bias=False))
    attention = mla_parameters(cfg.d_model, cfg.n_heads, cfg.q_lora_rank, cfg.kv_lora_rank,
                               cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim)["total"]
    counts = {
        "embedding": cfg.d_vocab * cfg.d_model,
        "unembedding": cfg.d_vocab * cfg.d_model,
        "attention": cfg.n_layers * attention,
        "norms": (2 * cfg.n_layers + 1) * norm,
        "dense_mlp": cfg.n_dense_layers * _swiglu(cfg.d_model, cfg.d_mlp),
        "shared_experts": n_moe * cfg.n_shared * expert,
        "routed_experts": n_moe * cfg.n_routed * expert,
        "router": n_moe * cfg.d_model * cfg.n_routed,
    }
    counts["total"] = sum(counts.values())
    counts["active_routed_experts"] = n_moe * cfg.k * expert
    counts["active"] = counts["total"] - counts["routed_experts"] + counts["active_routed_experts"]
    return counts


DEEPSEEK_V3 = DeepSeekConfig(
    d_vocab=129280, d_model=7168, n_layers=61, n_dense_layers=3, d_mlp=18432, d_expert=2048, n_shared=1,
    n_routed=256, k=8, n_heads=128, q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128,
    qk_rope_head_dim=64, v_head_dim=128,
)
