"""Inside the trained model (issue 40): reading notebook 09's GPT and a toy induction circuit.

Modules:

- ``logit_lens``: the residual stream after every block, decoded by the final norm and unembedding
- ``attribution``: direct logit attribution to the embedding, each head, each MLP (final norm's scale frozen)
- ``patching``: activation patching from a clean run into a corrupted one, by stream position and by head
- ``induction_circuit``: a two-layer attention-only model's induction head, its ablation, K-composition
- ``sae_on_mlp``: a sparse autoencoder on one block's MLP neurons, its diagnostics and top snippets

Their public names are importable from the package itself (``from course_utils.interp import lens_readout``),
loaded when first used (lazy_loader), so importing the package costs nothing.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "logit_lens": ["check_gpt", "check_position", "check_token_ids", "residual_stream", "lens_logits",
                       "lens_readout", "lens_top_tokens"],
        "attribution": ["component_writes", "direct_logit_attribution"],
        "patching": ["run_with_patches", "restored_fraction", "residual_patching_map", "head_patching_map"],
        "induction_circuit": [
            "COPY_TASK", "copy_sequences", "copy_loss", "train_copy_model", "trained_copy_model", "ablated_logits",
            "composition_score", "k_composition_scores", "random_composition_baseline", "circuit_reading",
        ],
        "sae_on_mlp": [
            "held_out_windows", "mlp_hidden", "MLPSparseAutoencoder", "train_mlp_sae", "sae_report",
            "top_activating_snippets",
        ],
    },
)
