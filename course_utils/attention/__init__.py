"""Attention, notebooks 03-05: one query's scores to many heads, and what trained heads do.

Modules:

- ``dot_product``: scores, the pattern, scaled dot-product attention, one head (03)
- ``gradients``: the backward pass of softmax and attention, by hand (03)
- ``blockwise``: attention over key blocks with a running softmax (03)
- ``scaling``: how attention's cost grows with length; sliding windows (04)
- ``multihead``: splitting into heads, merging, the fused projection (05)
- ``grouped_query``: queries sharing keys and values (05)
- ``induction``: a two-layer attention-only model and its induction heads (05)
- ``head_scores``: scores that name what a trained head does (09)

Their public names are importable from the package itself (``from course_utils.attention import ...``),
loaded when first used (lazy_loader), so importing the package costs nothing.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "dot_product": [
            "attention_scores", "attention_pattern", "scaled_dot_product_attention", "pattern_entropy",
            "random_scores", "pattern_stats", "saturation_stats", "AttentionHead", "CrossAttentionHead",
        ],
        "gradients": ["softmax_backward", "sdp_attention_backward", "attention_head_backward"],
        "blockwise": ["blockwise_attention", "blockwise_attention_backward"],
        "scaling": [
            "pair_counts", "measure_attention", "fit_exponent", "sliding_window_attention", "measure_mask_savings",
            "visited_tiles",
        ],
        "multihead": [
            "split_heads", "merge_heads", "MultiHeadAttention", "to_torch_mha", "FusedMultiHeadAttention", "to_fused",
            "attention_cost",
        ],
        "grouped_query": ["repeat_kv", "GroupedQueryAttention", "kv_cache_values"],
        "induction": [
            "InductionConfig", "AttentionOnlyTransformer", "repeated_sequences", "periodic_sequences", "repeat_loss",
            "train_induction_model", "trained_induction_model", "previous_token_scores", "induction_scores",
        ],
        "head_scores": ["delimiter_scores", "chance_delimiter_share", "top_head"],
    },
)
