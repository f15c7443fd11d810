"""The MLP and superposition, notebook 06: more features than dimensions.

Modules:

- ``geometry``: angles of many vectors in few dimensions, an AND gate
- ``toy_models``: Anthropic's toy models
- ``phases``: the phase diagram of one extra feature
- ``sparse_autoencoder``: a sparse autoencoder and its diagnostics

Their public names are importable from the package itself (``from course_utils.superposition import ...``),
loaded when first used (lazy_loader), so importing the package costs nothing.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "geometry": [
            "random_unit_vectors", "AngleStats", "pairwise_angle_stats", "angle_deviation_summary", "welch_bound",
            "fit_power_law", "AND_GATE_WORDS", "AND_GATE_INPUTS", "AndGate", "and_gate", "and_gate_preactivations",
        ],
        "toy_models": [
            "toy_model_forward", "importance_weighted_loss", "ToyModel", "train_toy_models", "train_sweep",
            "feature_norms", "represented_features", "interference", "feature_dimensionality",
        ],
        "phases": [
            "PHASES", "STARTS", "input_grid", "expected_loss", "extra_feature_phase", "PhaseSweep", "phase_sweep",
        ],
        "sparse_autoencoder": [
            "SparseAutoencoder", "sae_forward", "sae_loss", "sae_training_step", "train_sparse_autoencoder",
            "SAEDiagnostics", "sae_diagnostics", "recovered_features", "hidden_activation_sampler",
        ],
    },
)
