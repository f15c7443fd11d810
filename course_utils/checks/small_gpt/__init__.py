"""Checks for notebook 09 (a small GPT), one file per exercise:

- ``layer_norm``: LayerNorm over the last axis, the variance dividing by d_model;
- ``embed_tokens``: token plus position embeddings, against ``GPT.embed``;
- ``kv_cache_step``: one attention step that appends to the KV cache (or starts none) and attends over all of it;
- ``causal_attention``, ``gelu_mlp``: the student's attention (through their ``kv_cache_step``, with an optional
  ``LayerCache``) and MLP classes, the course's weights loaded in;
- ``transformer_block``: the student's pre-norm ``TransformerBlock`` of their own sub-layers, both residual additions;
- ``gpt_forward``: the student's ``SmallGPT``, a course model's state dict loaded in, whole and with a cache;
- ``init_weights``: GPT-2's initialisation, each parameter's size against ``GPT.reset_parameters``;
- ``residual_writes``: every write into the residual stream, against ``GPT.residual_writes``;
- ``next_token_loss``: the mean cross-entropy of each position's logits against the next token;
- ``adamw_step``, ``lr_schedule``, ``clip_grad_norm``, ``training_loop``: the training recipe's parts, against
  ``torch.optim.AdamW``, ``training.lr_at``, ``clip_grad_norm_`` and ``training.train``'s first steps;
- ``estimate_loss``: the validation loss on fixed windows, in eval mode without gradients, the mode restored;
- ``sample_tokens``: the sampling loop without a cache for prompts of different lengths, left-padded (``padded``);
- ``sample_with_cache``: the sampling loop driving ``model(tokens, cache)``, the same tokens as ``generate``'s;
- ``head_ablation_cost``: the loss change at every position when one head is zero- or mean-ablated;
- ``convert_gpt2_weights``: Hugging Face GPT-2's tensors in the course's names and layouts.

References come from the library (``layernorm``, ``gpt``, ``layer_cache``, ``padded``, ``training``, ``capstone``,
``generation``, ``ablation``, ``gpt2_weights``); the models in the cases are tiny and seeded
(``_cases.tiny_model``); the class exercises load their weights by name (``_classes.run_class``).
"""

from course_utils.checks.small_gpt.adamw_step import ADAMW_STEP, check_adamw_step
from course_utils.checks.small_gpt.causal_attention import CAUSAL_ATTENTION, check_causal_attention
from course_utils.checks.small_gpt.clip_grad_norm import CLIP_GRAD_NORM, check_clip_grad_norm
from course_utils.checks.small_gpt.convert_gpt2_weights import CONVERT_GPT2_WEIGHTS, check_convert_gpt2_weights
from course_utils.checks.small_gpt.embed_tokens import EMBED_TOKENS, check_embed_tokens
from course_utils.checks.small_gpt.estimate_loss import ESTIMATE_LOSS, check_estimate_loss
from course_utils.checks.small_gpt.gelu_mlp import GELU_MLP, check_gelu_mlp
from course_utils.checks.small_gpt.gpt_forward import SMALL_GPT, check_gpt_forward
from course_utils.checks.small_gpt.head_ablation_cost import HEAD_ABLATION_COST, check_head_ablation_cost
from course_utils.checks.small_gpt.init_weights import INIT_WEIGHTS, check_init_weights
from course_utils.checks.small_gpt.kv_cache_step import KV_CACHE_STEP, check_kv_cache_step
from course_utils.checks.small_gpt.layer_norm import LAYER_NORM, check_layer_norm
from course_utils.checks.small_gpt.lr_schedule import LR_SCHEDULE, check_lr_schedule
from course_utils.checks.small_gpt.next_token_loss import NEXT_TOKEN_LOSS, check_next_token_loss
from course_utils.checks.small_gpt.residual_writes import RESIDUAL_WRITES, check_residual_writes
from course_utils.checks.small_gpt.sample_tokens import SAMPLE_TOKENS, check_sample_tokens
from course_utils.checks.small_gpt.sample_with_cache import SAMPLE_WITH_CACHE, check_sample_with_cache
from course_utils.checks.small_gpt.training_loop import TRAINING_LOOP, check_training_loop
from course_utils.checks.small_gpt.transformer_block import TRANSFORMER_BLOCK, check_transformer_block

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
        RESIDUAL_WRITES,
        NEXT_TOKEN_LOSS,
        ADAMW_STEP,
        LR_SCHEDULE,
        CLIP_GRAD_NORM,
        TRAINING_LOOP,
        ESTIMATE_LOSS,
        SAMPLE_TOKENS,
        SAMPLE_WITH_CACHE,
        HEAD_ABLATION_COST,
        CONVERT_GPT2_WEIGHTS,
    )
}

__all__ = [
    "ADAMW_STEP",
    "CAUSAL_ATTENTION",
    "CLIP_GRAD_NORM",
    "CONVERT_GPT2_WEIGHTS",
    "EMBED_TOKENS",
    "ESTIMATE_LOSS",
    "EXERCISES",
    "GELU_MLP",
    "HEAD_ABLATION_COST",
    "INIT_WEIGHTS",
    "KV_CACHE_STEP",
    "LAYER_NORM",
    "LR_SCHEDULE",
    "NEXT_TOKEN_LOSS",
    "RESIDUAL_WRITES",
    "SAMPLE_TOKENS",
    "SAMPLE_WITH_CACHE",
    "SMALL_GPT",
    "TRAINING_LOOP",
    "TRANSFORMER_BLOCK",
    "check_adamw_step",
    "check_causal_attention",
    "check_clip_grad_norm",
    "check_convert_gpt2_weights",
    "check_embed_tokens",
    "check_estimate_loss",
    "check_gelu_mlp",
    "check_gpt_forward",
    "check_head_ablation_cost",
    "check_init_weights",
    "check_kv_cache_step",
    "check_layer_norm",
    "check_lr_schedule",
    "check_next_token_loss",
    "check_residual_writes",
    "check_sample_tokens",
    "check_sample_with_cache",
    "check_training_loop",
    "check_transformer_block",
]
