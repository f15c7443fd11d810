"""Today's decoder block, after notebook 09's GPT-2: RMSNorm, rotary positions inside attention, SwiGLU, GQA.

Modules:

- ``norm``: ``rms_norm`` and the ``RMSNorm`` module (gain only, half precision normalised in float32)
- ``rotary``: RoPE on every head's queries and keys at any offset; the two pair layouts' weight conversion
- ``feed_forward``: the SwiGLU MLP's width, about 8/3 · d_model (the layer is ``moe.SwiGLU``)
- ``config``: ``LlamaConfig`` and its description for notebook 08's parameter counter
- ``attention``: causal grouped-query attention (notebook 05's) with RoPE, with a KV-cache path
- ``model``: ``LlamaBlock`` and ``Llama`` (embedding, blocks, final RMSNorm, untied unembedding)
- ``transformers_weights``: ``transformers``' Llama config and weights in the course's layout
- ``side_by_side``: a Llama-style and a GPT-2-style model of the same size, trained alike (notebook 12)

Their public names are importable from the package itself (``from course_utils.llama import Llama``),
loaded when first used (lazy_loader), so importing the package costs nothing.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "norm": ["rms_norm", "RMSNorm"],
        "rotary": ["rotate_queries_keys", "to_halves_layout", "to_interleaved_layout"],
        "feed_forward": ["swiglu_width"],
        "config": ["LlamaConfig", "to_model_config"],
        "attention": ["RotaryAttention"],
        "model": ["LlamaBlock", "Llama"],
        "transformers_weights": ["config_from_transformers", "load_llama_block", "load_llama"],
        "side_by_side": ["gpt_parameters", "matched_llama", "build_pair", "train_pair", "replay", "load_results"],
    },
)
