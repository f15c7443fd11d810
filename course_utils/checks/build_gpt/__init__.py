"""Checks for notebook 09 (build a GPT, class by class), one file per exercise:

- ``layer_norm``: LayerNorm over the last axis, the variance dividing by d_model;
- ``embed_tokens``: token plus position embeddings, against ``GPT.embed``;
- ``kv_cache_step``: one attention step that appends to the KV cache (or starts none) and attends over all of it;
- ``causal_attention``, ``gelu_mlp``: the student's attention (through their ``kv_cache_step``, with an optional
  ``LayerCache``) and MLP classes, the course's weights loaded in;
- ``transformer_block``: the student's pre-norm ``TransformerBlock`` of their own sub-layers, both residual additions;
- ``gpt_forward``: the student's ``SmallGPT``, a course model's state dict loaded in, whole and with a cache;
- ``init_weights``: GPT-2's initialisation, each parameter's size against ``GPT.reset_parameters``;
- ``next_token_loss``: the mean cross-entropy of each position's logits against the next token;

The tiny seeded models in the cases are ``checks.shared.tiny_model``; the class exercises load their weights by name
(``_classes.run_class``).
"""

from course_utils.checks.build_gpt.causal_attention import CAUSAL_ATTENTION, check_causal_attention
from course_utils.checks.build_gpt.embed_tokens import EMBED_TOKENS, check_embed_tokens
from course_utils.checks.build_gpt.gelu_mlp import GELU_MLP, check_gelu_mlp
from course_utils.checks.build_gpt.gpt_forward import SMALL_GPT, check_gpt_forward
from course_utils.checks.build_gpt.init_weights import INIT_WEIGHTS, check_init_weights
from course_utils.checks.build_gpt.kv_cache_step import KV_CACHE_STEP, check_kv_cache_step
from course_utils.checks.build_gpt.layer_norm import LAYER_NORM, check_layer_norm
from course_utils.checks.build_gpt.next_token_loss import NEXT_TOKEN_LOSS, check_next_token_loss
from course_utils.checks.build_gpt.transformer_block import TRANSFORMER_BLOCK, check_transformer_block

EXERCISES = {
    ex.name: ex
    for ex in (
        LAYER_NORM,
        EMBED_TOKENS,
        KV_CACHE_STEP,
        CAUSAL_ATTENTION,
        GELU_MLP,
        TRANSFORMER_BLOCK,
        SMALL_GPT,
        INIT_WEIGHTS,
        NEXT_TOKEN_LOSS,
    )
}

__all__ = [
    "CAUSAL_ATTENTION",
    "EMBED_TOKENS",
    "EXERCISES",
    "GELU_MLP",
    "INIT_WEIGHTS",
    "KV_CACHE_STEP",
    "LAYER_NORM",
    "NEXT_TOKEN_LOSS",
    "SMALL_GPT",
    "TRANSFORMER_BLOCK",
    "check_causal_attention",
    "check_embed_tokens",
    "check_gelu_mlp",
    "check_gpt_forward",
    "check_init_weights",
    "check_kv_cache_step",
    "check_layer_norm",
    "check_next_token_loss",
    "check_transformer_block",
]
