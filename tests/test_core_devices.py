"""Core follows its input's device, checked on a machine without a GPU: every public function and
module of the Core modules runs on the ``meta`` device (shapes, no data) and must return ``meta``
tensors without creating a single tensor anywhere else. A function that cannot run on ``meta`` is
listed with the reason; a new public function must be added to one of the two tables."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

ROOT = Path(__file__).resolve().parents[1] / "course_utils"
META = torch.device("meta")

# Modules under course_utils/ that are not Core concept code, or not tensor code, and why.
NOT_SWEPT = {
    "device": "chooses the device (the only module allowed to)",
    "envcheck": "reports the environment; picks nothing itself",
    "tolerances": "tables of numbers, no tensors",
    "validate": "argument checks; tests/test_validate.py covers their meta behaviour",
    "corpus": "text files and strings, no tensors",
    "attention_scaling": "measures wall time and memory on a device its caller names",
}


def t(*shape, dtype=torch.float32):
    return torch.empty(*shape, device=META, dtype=dtype)


def ids(*shape):
    return torch.empty(*shape, device=META, dtype=torch.long)


def mask(*shape):
    return torch.empty(*shape, device=META, dtype=torch.bool)


def module_call(path: str, *args, x, method: str = "__call__"):
    """Build ``path(*args)`` on meta, then call it (outside the meta context) on ``x``."""
    def call():
        return getattr(module, method)(*x) if isinstance(x, tuple) else getattr(module, method)(x)
    module_name, cls_name = path.rsplit(".", 1)
    with META:
        module = getattr(importlib.import_module(f"course_utils.{module_name}"), cls_name)(*args)
    return call


def _calls() -> dict:
    from course_utils import attention as A, embeddings as E, induction as I, masking as MK, multihead as MH
    from course_utils import positions as P, sampling as SA, softmax as S
    from course_utils import mlp as ML, sparse_autoencoder as SAE, toy_models as TM

    return {
        "softmax.softmax": lambda: S.softmax(t(3, 4)),
        "attention.attention_scores": lambda: A.attention_scores(t(2, 3, 4), t(2, 5, 4)),
        "attention.attention_pattern": lambda: A.attention_pattern(t(2, 3, 4), t(2, 5, 4), mask(3, 5)),
        "attention.scaled_dot_product_attention": lambda: A.scaled_dot_product_attention(t(2, 3, 4), t(2, 5, 4), t(2, 5, 6), mask(3, 5)),
        "attention.AttentionHead": module_call("attention.AttentionHead", 8, 2, x=t(3, 8)),
        "multihead.MultiHeadAttention": module_call("multihead.MultiHeadAttention", 8, 2, x=t(2, 3, 8)),
        "softmax.masked_softmax": lambda: S.masked_softmax(t(3, 4), mask(3, 4)),
        "softmax.masked_softmax_": lambda: S.masked_softmax_(t(3, 4), mask(3, 4)),
        "attention.pattern_entropy": lambda: A.pattern_entropy(t(3, 4)),
        "masking.causal_mask": lambda: MK.causal_mask(4, device=META),
        "masking.sliding_window_mask": lambda: MK.sliding_window_mask(5, 2, device=META),
        "masking.prefix_lm_mask": lambda: MK.prefix_lm_mask(5, 2, device=META),
        "masking.combine_masks": lambda: MK.combine_masks(mask(3, 3), mask(3, 3)),
        "masking.fully_masked_rows": lambda: MK.fully_masked_rows(mask(2, 3, 3)),
        "masking.apply_mask": lambda: MK.apply_mask(t(3, 3), mask(3, 3)),
        "embeddings.embed": lambda: E.embed(ids(2, 5), t(10, 4)),
        "embeddings.one_hot": lambda: E.one_hot(ids(2, 5), 10),
        "embeddings.embed_via_one_hot": lambda: E.embed_via_one_hot(ids(2, 5), t(10, 4)),
        "embeddings.TokenEmbedding": module_call("embeddings.TokenEmbedding", 10, 4, x=ids(2, 5)),
        "embeddings.gradient_descent_step": lambda: E.gradient_descent_step(t(3), t(3), 0.1),
        "embeddings.tied_logits": lambda: E.tied_logits(t(2, 3, 4), t(10, 4)),
        "embeddings.add_token_rows": lambda: E.add_token_rows(t(10, 4), 2),
        "multihead.split_heads": lambda: MH.split_heads(t(2, 3, 8), 2),
        "multihead.merge_heads": lambda: MH.merge_heads(t(2, 2, 3, 4)),
        "induction.previous_token_scores": lambda: I.previous_token_scores(t(2, 2, 6, 6)),
        "induction.induction_scores": lambda: I.induction_scores(t(2, 2, 6, 6), 3),
        "positions.rope_rotate": lambda: P.rope_rotate(t(5, 4)),
        "positions.LearnedPositionEmbedding": module_call("positions.LearnedPositionEmbedding", 10, 4, x=5),
        "mlp.relu": lambda: ML.relu(t(3, 4)),
        "mlp.gelu_exact": lambda: ML.gelu_exact(t(3, 4)),
        "mlp.gelu_tanh": lambda: ML.gelu_tanh(t(3, 4)),
        "mlp.mlp_forward": lambda: ML.mlp_forward(t(2, 3, 4), t(4, 8), t(8), t(8, 4), t(4)),
        "mlp.MLP": module_call("mlp.MLP", 8, x=t(2, 3, 8)),
        "toy_models.toy_model_forward": lambda: TM.toy_model_forward(t(8, 3, 5), t(3, 2, 5), t(3, 5)),
        "toy_models.importance_weighted_loss": lambda: TM.importance_weighted_loss(t(8, 3, 5), t(8, 3, 5), t(3, 5)),
        "toy_models.feature_norms": lambda: TM.feature_norms(t(3, 2, 5)),
        "toy_models.interference": lambda: TM.interference(t(3, 2, 5)),
        "toy_models.feature_dimensionality": lambda: TM.feature_dimensionality(t(3, 2, 5)),
        "sparse_autoencoder.SparseAutoencoder": module_call("sparse_autoencoder.SparseAutoencoder", 5, 10, x=t(4, 5)),
        "sparse_autoencoder.recovered_features": lambda: SAE.recovered_features(t(3, 5), t(10, 5)),
    }


# Public callables that cannot run on meta today, and why. Shrinking this table is the work left
# for the validation layer (course_utils/validate.py skips value checks on meta).
NOT_ON_META = {
    "attention.random_scores": "builds seeded CPU data from a torch.Generator (no tensor input to follow)",
    "attention.saturation_stats": "returns Python floats computed from seeded CPU data",
    "attention.pattern_stats": "returns Python floats (a summary for readouts and tables)",
    **{f"sampling.{n}": "logits/probabilities are checked for NaN and ranges with .item()"
       for n in ("apply_temperature", "greedy", "greedy_distribution", "top_k_filter", "top_p_filter",
                 "next_token_distribution", "entropy")},
    "sampling.sample_next_token": "draws random numbers: needs data",
    "sampling.sample_counts": "draws random numbers: needs data",
    "multihead.to_torch_mha": "copies weights, needs data",
    "multihead.attention_cost": "arithmetic on Python ints, no tensors",
    "masking.padding_mask": "lengths are checked against n_ctx with .item()",
    "masking.document_mask": "document ids are compared value by value",
    "masking.validate_mask": "validates a mask (used on data)",
    "masking.mask_table": "formats a mask's values as text",
    "positions.sinusoid_frequencies": "takes only ints: no input device to follow (callers move it)",
    "positions.sinusoidal_encoding": "takes only ints: no input device to follow (callers move it)",
    "positions.shift_rotation": "takes only ints: no input device to follow",
    "positions.halves_order": "takes only an int: an index tensor (CPU indices index tensors on any device)",
    "positions.closest_positions": "returns Python numbers: which two rows are closest (needs data)",
    "embeddings.changed_rows": "returns Python ints: which rows changed (needs data)",
    "induction.InductionConfig": "a dataclass of numbers",
    "induction.AttentionOnlyTransformer": "embeds token ids, which are range-checked with .item()",
    "induction.repeated_sequences": "builds seeded data from a torch.Generator",
    "induction.periodic_sequences": "builds seeded data from a torch.Generator",
    "induction.repeat_loss": "indexes by per-sequence periods (data-dependent gather)",
    "induction.train_induction_model": "trains a model: needs data",
    "mlp.block_weight_split": "arithmetic on Python ints, no tensors",
    "superposition.AngleStats": "a dataclass of results",
    "superposition.random_unit_vectors": "builds seeded CPU data from a torch.Generator (callers move it)",
    "superposition.pairwise_angle_stats": "checks the vectors are finite and non-zero, returns Python floats (needs data)",
    "superposition.angle_deviation_summary": "checks the vectors are finite and non-zero (needs data)",
    "superposition.welch_bound": "arithmetic on Python ints, no tensors",
    "superposition.fit_power_law": "fits Python numbers, returns Python floats",
    "toy_models.ToyModel": "checks sparsity and importance values (needs data)",
    "toy_models.train_toy_models": "trains a model: needs data",
    "toy_models.train_sweep": "trains a model: needs data",
    "toy_models.single_threaded": "a context manager for the thread count, no tensors",
    "sparse_autoencoder.train_sparse_autoencoder": "trains a model: needs data",
    "sparse_autoencoder.hidden_activation_sampler": "samples a trained ToyModel: needs data",
}

# Calls that run on meta but still create a tensor on the CPU on the way (a real device bug on a GPU).
KNOWN_CPU_CREATIONS = {
    "positions.rope_rotate": "the rotation frequencies are built on the CPU, then copied to x's device",
}


def core_modules() -> list[str]:
    return sorted(p.stem for p in ROOT.glob("*.py") if not p.stem.startswith("_") and p.stem not in NOT_SWEPT)


def public_callables(module_name: str) -> list[str]:
    module = importlib.import_module(f"course_utils.{module_name}")
    return sorted(f"{module_name}.{n}" for n, obj in vars(module).items()
                  if not n.startswith("_") and callable(obj) and getattr(obj, "__module__", None) == module.__name__
                  and not (inspect.isclass(obj) and issubclass(obj, Exception)))


class DeviceRecorder(TorchDispatchMode):
    """Records every operator whose output is not on the meta device."""

    def __init__(self):
        super().__init__()
        self.off_meta: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.off_meta += [f"{func} -> {x.device}" for x in tree_flatten(out)[0]
                          if isinstance(x, torch.Tensor) and x.device.type != "meta"]
        return out


CALLS = _calls()


def test_every_public_core_callable_is_swept_or_listed_with_a_reason():
    missing = [name for module in core_modules() for name in public_callables(module)
               if name not in CALLS and name not in NOT_ON_META]
    assert not missing, f"add these to CALLS (a meta-device call) or NOT_ON_META (with the reason): {missing}"
    stale = [name for name in (*CALLS, *NOT_ON_META) if name.split(".")[0] not in core_modules()
             or name not in public_callables(name.split(".")[0])]
    assert not stale, f"these entries name no public Core callable any more: {stale}"


@pytest.mark.parametrize("name", sorted(CALLS))
def test_core_follows_a_meta_input(name):
    recorder = DeviceRecorder()
    with recorder:
        out = CALLS[name]()
    tensors = [x for x in tree_flatten(out)[0] if isinstance(x, torch.Tensor)]
    assert tensors, f"{name} returned no tensor"
    assert all(x.device == META for x in tensors), f"{name} returned tensors on {[x.device for x in tensors]}"
    if name in KNOWN_CPU_CREATIONS:
        assert recorder.off_meta, f"{name} no longer creates CPU tensors: remove it from KNOWN_CPU_CREATIONS"
    else:
        assert not recorder.off_meta, f"{name} created tensors off the input's device: {recorder.off_meta[:5]}"


def test_the_recorder_catches_a_tensor_created_on_the_cpu():
    def careless(x):
        return x + torch.arange(x.shape[-1])  # no device=: made on the CPU

    recorder = DeviceRecorder()
    with recorder, pytest.raises(Exception):
        careless(t(3))
    assert recorder.off_meta and "cpu" in recorder.off_meta[0]
