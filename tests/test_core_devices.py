"""Core follows its input's device, checked on a machine without a GPU: every public function and
module of the Core modules runs on the ``meta`` device (shapes, no data) and must return ``meta``
tensors without creating a single tensor anywhere else. A function that cannot run on ``meta`` is
listed with the reason; a new public function must be added to one of the two tables."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

ROOT = Path(__file__).resolve().parents[1] / "course_utils"
META = torch.device("meta")

# Modules and packages under course_utils/ that are not Core concept code, or not tensor code, and why.
NOT_SWEPT = {
    "env.device": "chooses the device (the only module allowed to)",
    "env.check": "not Core: picks and describes the device for the environment report (calls pick_device), like device",
    "tokenisation": "pure-Python byte/str code (BPE, WordPiece, Unigram): no tensors",
    "checks": "not Core: the notebooks' exercise checks",
    "viz": "not Core: plots and widgets",
    "lab": "not Core: the JupyterLab extension, grading and sandbox",
    "env.notebook_run": "not Core: runs notebooks through a kernel client (tests, grader, make notebooks), no tensors",
    "env.sibling": "not Core: runs a student's definitions from another notebook file (no tensors)",
    "tolerances": "tables of numbers, no tensors",
    "validate": "argument checks; tests/test_validate.py covers their meta behaviour",
    "corpus": "text files and strings, no tensors",
    "attention.scaling": "measures wall time and memory on a device its caller names",
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
    from course_utils.attention import gradients as AG, blockwise as BA
    from course_utils import embeddings as E, masking as MK
    from course_utils.attention import dot_product as A, induction as I, multihead as MH
    from course_utils import entropy as EN, positions as P, sampling as SA, softmax as S
    from course_utils.attention import grouped_query as GQ
    from course_utils import mlp as ML
    from course_utils.superposition import sparse_autoencoder as SAE, geometry as SU, toy_models as TM
    from course_utils.superposition import phases as TP

    return {
        "softmax.softmax": lambda: S.softmax(t(3, 4)),
        "attention.dot_product.attention_scores": lambda: A.attention_scores(t(2, 3, 4), t(2, 5, 4)),
        "attention.dot_product.attention_pattern": lambda: A.attention_pattern(t(2, 3, 4), t(2, 5, 4), mask(3, 5)),
        "attention.dot_product.scaled_dot_product_attention": lambda: A.scaled_dot_product_attention(t(2, 3, 4), t(2, 5, 4), t(2, 5, 6), mask(3, 5)),
        "attention.dot_product.AttentionHead": module_call("attention.dot_product.AttentionHead", 8, 2, x=t(3, 8)),
        "attention.dot_product.CrossAttentionHead": module_call("attention.dot_product.CrossAttentionHead", 8, 6, 2, x=(t(3, 8), t(5, 6))),
        "attention.gradients.softmax_backward": lambda: AG.softmax_backward(t(3, 4), t(3, 4)),
        "attention.gradients.attention_head_backward": lambda: AG.attention_head_backward(
            t(2, 3, 8), t(8, 2), t(8, 2), t(8, 2), t(2, 8), t(2, 3, 8)),
        "attention.blockwise.blockwise_attention": lambda: BA.blockwise_attention(t(2, 3, 4), t(2, 5, 4), t(2, 5, 6), 2),
        "attention.blockwise.blockwise_attention_backward": lambda: BA.blockwise_attention_backward(
            t(2, 3, 4), t(2, 5, 4), t(2, 5, 6), t(2, 3, 6), t(2, 3), t(2, 3, 6), 2),
        "attention.gradients.sdp_attention_backward": lambda: AG.sdp_attention_backward(
            t(2, 3, 4), t(2, 5, 4), t(2, 5, 6), t(2, 3, 6)),
        "attention.multihead.MultiHeadAttention": module_call("attention.multihead.MultiHeadAttention", 8, 2, x=t(2, 3, 8)),
        "attention.multihead.FusedMultiHeadAttention": module_call("attention.multihead.FusedMultiHeadAttention", 8, 2, True, x=t(2, 3, 8)),
        "attention.grouped_query.GroupedQueryAttention": module_call("attention.grouped_query.GroupedQueryAttention", 8, 4, 2, x=t(2, 3, 8)),
        "attention.grouped_query.repeat_kv": lambda: GQ.repeat_kv(t(2, 2, 3, 4), 4),
        "softmax.masked_softmax": lambda: S.masked_softmax(t(3, 4), mask(3, 4)),
        "softmax.masked_softmax_": lambda: S.masked_softmax_(t(3, 4), mask(3, 4)),
        "attention.dot_product.pattern_entropy": lambda: A.pattern_entropy(t(3, 4)),
        "softmax.row_entropy": lambda: S.row_entropy(t(3, 4)),
        "masking.causal_mask": lambda: MK.causal_mask(4, device=META),
        "masking.sliding_window_mask": lambda: MK.sliding_window_mask(5, 2, device=META),
        "masking.prefix_lm_mask": lambda: MK.prefix_lm_mask(5, 2, device=META),
        "masking.combine_masks": lambda: MK.combine_masks(mask(3, 3), mask(3, 3)),
        "masking.fully_masked_rows": lambda: MK.fully_masked_rows(mask(2, 3, 3)),
        "masking.apply_mask": lambda: MK.apply_mask(t(3, 3), mask(3, 3)),
        "sampling.apply_temperature": lambda: SA.apply_temperature(t(2, 5), 0.7),
        "sampling.greedy": lambda: SA.greedy(t(2, 5)),
        "sampling.greedy_distribution": lambda: SA.greedy_distribution(t(2, 5)),
        "sampling.top_k_filter": lambda: SA.top_k_filter(t(2, 5), 2),
        "sampling.top_p_filter": lambda: SA.top_p_filter(t(2, 5), 0.9),
        "sampling.next_token_distribution": lambda: SA.next_token_distribution(t(2, 5), 0.7, 3, 0.9),
        "entropy.entropy": lambda: EN.entropy(t(2, 5)),
        "sampling.sample_shares": lambda: SA.sample_shares(ids(2, 5)),
        "embeddings.embed": lambda: E.embed(ids(2, 5), t(10, 4)),
        "embeddings.one_hot": lambda: E.one_hot(ids(2, 5), 10),
        "embeddings.embed_via_one_hot": lambda: E.embed_via_one_hot(ids(2, 5), t(10, 4)),
        "embeddings.TokenEmbedding": module_call("embeddings.TokenEmbedding", 10, 4, x=ids(2, 5)),
        "embeddings.gradient_descent_step": lambda: E.gradient_descent_step(t(3), t(3), 0.1),
        "embeddings.tied_logits": lambda: E.tied_logits(t(2, 3, 4), t(10, 4)),
        "embeddings.add_token_rows": lambda: E.add_token_rows(t(10, 4), 2),
        "embeddings.input_embedding_backward": lambda: E.input_embedding_backward(ids(2, 5), t(2, 5, 4), 10, 8),
        "embeddings.tied_embedding_backward": lambda: E.tied_embedding_backward(ids(2, 5), ids(2, 5), t(10, 4)),
        "attention.multihead.split_heads": lambda: MH.split_heads(t(2, 3, 8), 2),
        "attention.multihead.merge_heads": lambda: MH.merge_heads(t(2, 2, 3, 4)),
        "attention.induction.previous_token_scores": lambda: I.previous_token_scores(t(2, 2, 6, 6)),
        "attention.induction.induction_scores": lambda: I.induction_scores(t(2, 2, 6, 6), 3),
        "positions.rope_rotate": lambda: P.rope_rotate(t(5, 4)),
        "positions.LearnedPositionEmbedding": module_call("positions.LearnedPositionEmbedding", 10, 4, x=5),
        "mlp.relu": lambda: ML.relu(t(3, 4)),
        "mlp.gelu_exact": lambda: ML.gelu_exact(t(3, 4)),
        "mlp.gelu_tanh": lambda: ML.gelu_tanh(t(3, 4)),
        "mlp.mlp_forward": lambda: ML.mlp_forward(t(2, 3, 4), t(4, 8), t(8), t(8, 4), t(4)),
        "mlp.MLP": module_call("mlp.MLP", 8, x=t(2, 3, 8)),
        "superposition.toy_models.toy_model_forward": lambda: TM.toy_model_forward(t(8, 3, 5), t(3, 2, 5), t(3, 5)),
        "superposition.toy_models.importance_weighted_loss": lambda: TM.importance_weighted_loss(t(8, 3, 5), t(8, 3, 5), t(3, 5)),
        "superposition.toy_models.feature_norms": lambda: TM.feature_norms(t(3, 2, 5)),
        "superposition.toy_models.interference": lambda: TM.interference(t(3, 2, 5)),
        "superposition.toy_models.feature_dimensionality": lambda: TM.feature_dimensionality(t(3, 2, 5)),
        "superposition.toy_models.represented_features": lambda: TM.represented_features(t(3, 2, 5)),
        "superposition.sparse_autoencoder.SparseAutoencoder": module_call("superposition.sparse_autoencoder.SparseAutoencoder", 5, 10, x=t(4, 5)),
        "superposition.sparse_autoencoder.recovered_features": lambda: SAE.recovered_features(t(3, 5), t(10, 5)),
        "superposition.sparse_autoencoder.sae_forward": lambda: SAE.sae_forward(t(4, 5), t(5, 10), t(10), t(10, 5), t(5)),
        "superposition.sparse_autoencoder.sae_loss": lambda: SAE.sae_loss(t(4, 5), t(4, 10), t(4, 5), 0.1),
        "superposition.geometry.and_gate_preactivations": lambda: SU.and_gate_preactivations(
            SU.AndGate({w: t(8) for w in SU.AND_GATE_WORDS}, t(8, 1), t(1), t(1, 8))),
        "superposition.phases.input_grid": lambda: TP.input_grid(t(3), 2, 4),
        "superposition.phases.extra_feature_phase": lambda: TP.extra_feature_phase(t(4, 1, 2)),
    }


def _tiny_gpt_config():
    from course_utils.gpt.config import GPTConfig

    return GPTConfig(d_vocab=11, n_ctx=8, d_model=8, n_heads=2, n_layers=1)


def with_meta_module(build, use):
    """Build a module on meta with ``build()``, then call ``use(module)`` outside the meta context."""
    def call():
        with META:
            module = build()
        return use(module)
    return call


def _calls_06_09() -> dict:
    from course_utils import layernorm as LN
    from course_utils.counting import parameters as CO
    from course_utils.gpt import fused as GF, kv_cache as KV
    from course_utils.attention import head_scores as HS
    from course_utils.moe import layer as MO, balancing as MB, dispatch as MD, routing as MR
    from course_utils.gpt import training as TR
    from course_utils.gpt import outcomes as GO, optim as OP
    from course_utils.moe import deepseek as DS, expert_choice as EC
    from course_utils.mlp import MLP
    from course_utils.attention.multihead import MultiHeadAttention

    def mha(use):
        return with_meta_module(lambda: MultiHeadAttention(8, 2), use)

    def mlp(use):
        return with_meta_module(lambda: MLP(8, 16), use)

    TINY = CO.ModelConfig(11, 8, 8, 1, 2, d_mlp=16)
    MOECFG = CO.ModelConfig(11, 8, 8, 1, 2, d_mlp=16, n_experts=4, experts_per_token=2, mlp="swiglu",
                            norm="rmsnorm", positions="rotary", bias=False)
    return {
        "moe.routing.check_router_logits": lambda: MR.check_router_logits(t(5, 4)),
        "moe.routing.top_k_gates": lambda: MR.top_k_gates(t(5, 4), 2),
        "moe.routing.top_k_gates_mixtral": lambda: MR.top_k_gates_mixtral(t(5, 4), 2),
        "moe.routing.capacity_mask": lambda: MR.capacity_mask(ids(5, 2), 4, 3),
        "moe.layer.swiglu": lambda: MO.swiglu(t(5, 8), t(8, 16), t(8, 16), t(16, 8)),
        "moe.layer.SwiGLU": module_call("moe.layer.SwiGLU", 8, 16, x=t(5, 8)),
        "moe.dispatch.dispatch_dense": lambda: MD.dispatch_dense(t(5, 8), ids(5, 2), t(5, 2),
                                                                 t(4, 8, 16), t(4, 8, 16), t(4, 16, 8)),
        "moe.balancing.load_balancing_loss": lambda: MB.load_balancing_loss(t(5, 4), 2),
        "moe.balancing.router_z_loss": lambda: MB.router_z_loss(t(5, 4)),
        "moe.balancing.update_selection_bias": lambda: MB.update_selection_bias(t(4), ids(4), 0.1),
        "moe.deepseek.deepseek_v3_gates": lambda: DS.deepseek_v3_gates(t(5, 4), 2, t(4)),
        "moe.deepseek.sequence_balance_loss": lambda: DS.sequence_balance_loss(t(2, 5, 4), ids(2, 5, 2)),
        "moe.expert_choice.expert_choice_routing": lambda: EC.expert_choice_routing(t(8, 4), 1.0),
        "moe.expert_choice.expert_choice": lambda: EC.expert_choice(t(8, 8), t(8, 4),
                                                                    [lambda x, i=i: i * x for i in range(4)], 1.0),
        "gpt.model.Block": module_call("gpt.model.Block", _tiny_gpt_config(), x=t(2, 5, 8)),
        "gpt.layer_cache.CachedAttention": module_call("gpt.layer_cache.CachedAttention", _tiny_gpt_config(),
                                                       x=t(2, 5, 8)),
        "gpt.layer_cache.CachedBlock": module_call("gpt.layer_cache.CachedBlock", _tiny_gpt_config(), x=t(2, 5, 8)),
        "gpt.fused.fused_qkv": mha(lambda a: GF.fused_qkv(a, t(2, 5, 8))),
        "gpt.fused.fused_out": mha(lambda a: GF.fused_out(a, t(2, 2, 5, 4))),
        "gpt.fused.fused_attention": mha(lambda a: GF.fused_attention(a, t(2, 5, 8))),
        "gpt.fused.fused_mlp": mlp(lambda m: GF.fused_mlp(m, t(2, 5, 8))),
        "gpt.fused.fused_sequence_loss": lambda: GF.fused_sequence_loss(t(2, 5, 7), ids(2, 5)),
        "layernorm.norm_stats": lambda: LN.norm_stats(t(3, 8)),
        "layernorm.layer_norm": lambda: LN.layer_norm(t(3, 8), t(8), t(8)),
        "layernorm.batch_norm": lambda: LN.batch_norm(t(3, 8)),
        "layernorm.LayerNorm": module_call("layernorm.LayerNorm", 8, x=t(3, 8)),
        "gpt.kv_cache.cached_attention": lambda: KV.cached_attention(t(1, 2, 1, 4), t(1, 2, 1, 4), t(1, 2, 1, 4)),
        "gpt.kv_cache.project_qkv": mha(lambda a: KV.project_qkv(a, t(2, 5, 8))),
        "gpt.kv_cache.write_heads": mha(lambda a: KV.write_heads(a, t(2, 2, 5, 4))),
        "gpt.training.split_tokens": lambda: TR.split_tokens(ids(100)),
        "gpt.optim.adamw_step": lambda: OP.adamw_step(*({"W": t(3, 4), "b": t(4)} for _ in range(4)), 2, 0.1),
        "gpt.optim.clip_grad_norm": lambda: OP.clip_grad_norm([t(3, 4), t(4)], 1.0),
        "attention.head_scores.delimiter_scores": lambda: HS.delimiter_scores(t(2, 3, 5, 5), mask(2, 5)),
        "gpt.outcomes.probe_windows": lambda: GO.probe_windows(ids(100), 8, n_windows=3, stride=20),
        "counting.decoder.Decoder": module_call("counting.decoder.Decoder", TINY, x=ids(2, 5)),
        "counting.decoder.DecoderBlock": module_call("counting.decoder.DecoderBlock", TINY, x=t(2, 5, 8)),
        "counting.decoder.Attention": module_call("counting.decoder.Attention", MOECFG, x=t(2, 5, 8)),
        "counting.decoder.MLP": module_call("counting.decoder.MLP", TINY, x=t(2, 5, 8)),
        **_calls_llama(),
        **_calls_interp(),
    }


def _calls_interp() -> dict:
    from course_utils.attention.induction import AttentionOnlyTransformer
    from course_utils.interp import induction_circuit as IC, logit_lens as LL, patching as PA

    def copy_model(use):
        return with_meta_module(lambda: AttentionOnlyTransformer(IC.COPY_TASK), use)

    return {
        "interp.induction_circuit.ablated_logits": copy_model(lambda m: IC.ablated_logits(m, ids(2, 5), 1, 0)),
        "interp.induction_circuit.composition_score": lambda: IC.composition_score(t(4, 4), t(4, 4)),
        "interp.induction_circuit.k_composition_scores": copy_model(IC.k_composition_scores),
        "interp.logit_lens.check_token_ids": lambda: LL.check_token_ids("target", ids(3), 3, 10),
        "interp.patching.restored_fraction": lambda: PA.restored_fraction(t(3), t(3), t(3)),
    }


def _calls_llama() -> dict:
    from course_utils.llama import norm as LN, rotary as RO
    from course_utils.llama.config import LlamaConfig

    cfg = LlamaConfig(d_vocab=11, n_ctx=8, d_model=8, n_layers=1, n_heads=2, n_kv_heads=1)
    return {
        "llama.norm.rms_norm": lambda: LN.rms_norm(t(2, 3, 8, dtype=torch.bfloat16), t(8, dtype=torch.bfloat16)),
        "llama.norm.RMSNorm": module_call("llama.norm.RMSNorm", 8, x=t(2, 3, 8)),
        "llama.rotary.rotate_queries_keys": lambda: RO.rotate_queries_keys(t(2, 4, 3, 8), t(2, 2, 3, 8), 5),
        "llama.rotary.to_halves_layout": lambda: RO.to_halves_layout(t(2, 8, 4)),
        "llama.rotary.to_interleaved_layout": lambda: RO.to_interleaved_layout(t(2, 8, 4)),
        "llama.attention.RotaryAttention": module_call("llama.attention.RotaryAttention", 8, 2, 1, x=t(2, 3, 8)),
        "llama.model.LlamaBlock": module_call("llama.model.LlamaBlock", cfg, x=t(2, 3, 8)),
        "llama.model.Llama": module_call("llama.model.Llama", cfg, x=ids(2, 5)),
    }


# Public callables that cannot run on meta today, and why. Shrinking this table is the work left
# for the validation layer (course_utils/validate.py skips value checks on meta).
NOT_ON_META = {
    "env.progress.progress_bar": "a tqdm bar over Python iterables and counts, no tensors",
    "env.progress.stored_text": "formats a description string, no tensors",
    "attention.dot_product.random_scores": "builds seeded CPU data from a torch.Generator (no tensor input to follow)",
    "attention.dot_product.saturation_stats": "returns Python floats computed from seeded CPU data",
    "attention.dot_product.pattern_stats": "returns Python floats (a summary for readouts and tables)",
    "sampling.sample_next_token": "draws random numbers: needs data",
    "sampling.sample_counts": "draws random numbers: needs data",
    "attention.multihead.to_torch_mha": "copies weights, needs data",
    "attention.multihead.to_fused": "copies weights, needs data",
    "attention.grouped_query.kv_cache_values": "arithmetic on Python ints, no tensors",
    "beam_search.beam_search": "a search in Python over token ids read back with .tolist(): needs data",
    "beam_search.exhaustive_search": "a search in Python over token ids read back with .tolist(): needs data",
    "masking.left_padded_batch": "takes Python lists of token ids: no input device to follow",
    "attention.multihead.attention_cost": "arithmetic on Python ints, no tensors",
    "masking.padding_mask": "lengths are checked against n_ctx with .item()",
    "masking.document_mask": "document ids are compared value by value",
    "masking.validate_mask": "validates a mask (used on data)",
    "masking.mask_table": "formats a mask's values as text",
    "masking.preset_mask": "takes only a name and an int: no input device to follow (tables for notebook 04)",
    "positions.sinusoid_frequencies": "takes only ints: no input device to follow (callers move it)",
    "positions.sinusoidal_encoding": "takes only ints: no input device to follow (callers move it)",
    "positions.shift_rotation": "takes only ints: no input device to follow",
    "positions.halves_order": "takes only an int: an index tensor (CPU indices index tensors on any device)",
    "positions.closest_positions": "returns Python numbers: which two rows are closest (needs data)",
    "positions.ClosestPair": "a named tuple of Python numbers",
    "embeddings.changed_rows": "returns Python ints: which rows changed (needs data)",
    "attention.induction.InductionConfig": "a dataclass of numbers",
    "attention.induction.AttentionOnlyTransformer": "embeds token ids, which are range-checked with .item()",
    "attention.induction.repeated_sequences": "builds seeded data from a torch.Generator",
    "attention.induction.periodic_sequences": "builds seeded data from a torch.Generator",
    "attention.induction.repeat_loss": "indexes by per-sequence periods (data-dependent gather)",
    "attention.induction.train_induction_model": "trains a model: needs data",
    "mlp.block_weight_split": "arithmetic on Python ints, no tensors",
    "positions.alibi_slopes": "Python ints in, built on the CPU like the other position tables (callers move it)",
    "positions.alibi_bias": "Python ints in, built on the CPU like the other position tables (callers move it)",
    "superposition.geometry.AngleStats": "a dataclass of results",
    "superposition.geometry.random_unit_vectors": "builds seeded CPU data from a torch.Generator (callers move it)",
    "superposition.geometry.pairwise_angle_stats": "checks the vectors are finite and non-zero, returns Python floats (needs data)",
    "superposition.geometry.angle_deviation_summary": "checks the vectors are finite and non-zero (needs data)",
    "superposition.geometry.welch_bound": "arithmetic on Python ints, no tensors",
    "superposition.geometry.fit_power_law": "fits Python numbers, returns Python floats",
    "superposition.geometry.AndGate": "a dataclass of results",
    "superposition.geometry.and_gate": "builds seeded CPU data from a torch.Generator (callers move it)",
    "superposition.phases.PhaseSweep": "a dataclass of results",
    "superposition.phases.phase_sweep": "trains models: needs data",
    "superposition.phases.expected_loss": "takes a ToyModel, which checks its sparsity and importance values (needs data)",
    "superposition.toy_models.ToyModel": "checks sparsity and importance values (needs data)",
    "superposition.toy_models.train_toy_models": "trains a model: needs data",
    "superposition.toy_models.train_sweep": "trains a model: needs data",
    "env.threads.torch_threads": "a context manager for the thread count, no tensors",
    "superposition.sparse_autoencoder.train_sparse_autoencoder": "trains a model: needs data",
    "superposition.sparse_autoencoder.sae_training_step": "one optimiser step on an SAE: trains, needs data",
    "superposition.sparse_autoencoder.hidden_activation_sampler": "samples a trained ToyModel: needs data",
    "superposition.sparse_autoencoder.SAEDiagnostics": "a dataclass of results",
    "superposition.sparse_autoencoder.sae_diagnostics": "returns Python floats from the SAE's activations (needs data)",
    # notebooks 06-09
    **{f"counting.parameters.{n}": "arithmetic on a ModelConfig's Python ints, no tensors"
       for n in ("ModelConfig", "active_parameters", "attention_parameters", "count_encoder_decoder",
                 "count_parameters", "group_counts", "mlp_parameters", "norm_parameters")},
    **{f"counting.compute.{n}": "arithmetic on a ModelConfig's Python ints, no tensors"
       for n in ("approximate_forward_flops", "forward_flops", "forward_flops_per_token", "kv_cache_bytes_per_token",
                 "matmul_parameters", "moe_capacity_and_cost", "training_flops", "training_memory",
                 "forward_flops_by_operation")},
    "counting.compute.measure_flops": "runs a model on its caller's tensors and returns a Python int (FlopCounterMode)",
    "counting.parameters.non_embedding_parameters": "arithmetic on a ModelConfig's Python ints, no tensors",
    "counting.memory.activation_bytes_per_layer": "arithmetic on a ModelConfig's Python ints, no tensors",
    "counting.memory.training_bytes": "arithmetic on a ModelConfig's Python ints, no tensors",
    "counting.decoder.count_by_category": "reads its caller's module's parameter names and sizes into Python ints",
    "counting.memory.saved_activation_bytes": "runs its caller's function and returns a Python int (saved-tensor hooks)",
    "counting.decoding.decode_step": "arithmetic on a ModelConfig's Python ints, no tensors",
    "counting.decoding.decode_step_seconds": "arithmetic on Python numbers, no tensors",
    "counting.hardware.Accelerator": "a dataclass of numbers",
    **{f"counting.training_time.{n}": "arithmetic on Python numbers, no tensors"
       for n in ("model_flops_utilization", "training_seconds")},
    **{f"counting.scaling.{n}": "arithmetic on Python numbers, no tensors" for n in ("chinchilla_tokens", "compute_optimal")},
    **{f"gpt.checkpoint.{n}": "reads, writes or trains the course checkpoint: files and data"
       for n in ("corpus_tokens", "load_checkpoint", "load_own_or_course", "main", "replay_first_steps",
                 "save_checkpoint", "seed_checkpoint", "small_gpt_tokenizer", "train_course_model")},
    **{f"gpt.resume.{n}": "saves or restores a run's state: files and CPU generator states (torch.Generator)"
       for n in ("capture_rng", "restore_rng", "save_training_state", "load_training_state", "restore_training_state")},
    **{f"gpt.gpt2_weights.{n}": "reads GPT-2 weight files or a transformers config: needs data"
       for n in ("convert_gpt2_state_dict", "gpt2_config", "gpt2_small_config", "load_gpt2", "load_gpt2_from_hub",
                 "read_weights")},
    "gpt.gpt2_weights.to_gpt2_state_dict": "copies a course GPT's weights (its sizes are Python ints from the config)",
    "gpt.config.GPTConfig": "a dataclass of numbers",
    "gpt.model.GPT": "token ids are range-checked with .item() (its blocks are swept as gpt.Block)",
    "gpt.config.check_tokens": "range-checks token ids with .item()",
    "gpt.config.check_state_dict": "compares a state dict's names and shapes, returns None",
    "gpt.model.stream_rms": "returns Python floats",
    **{f"gpt.token_cache.{n}": "a disk cache of Python objects (files and hashes), no tensors"
       for n in ("cache_key", "cached")},
    "gpt.model.initialise": "draws every weight on the CPU from a torch.Generator; a meta weight is skipped, by design",
    "gpt.cache.KVCache": "a dataclass holding its caller's tensors",
    "gpt.generation.forward_with_cache": "token ids are range-checked with .item() (its pieces are swept)",
    "gpt.generation.generate": "samples tokens: needs data",
    "attention.head_scores.chance_delimiter_share": "returns a Python float",
    "attention.head_scores.top_head": "returns Python ints (reads its scores with .tolist())",
    "gpt.ablation.head_findings": "token ids are range-checked with .item(); returns Python numbers (its pieces are swept)",
    "gpt.outcomes.tail_counts": "samples tokens: needs data",
    "gpt.outcomes.repeated_share": "Python ints in, a Python float out",
    "gpt.outcomes.read_seed": "reads a committed run of notebook 09's recipe: needs data",
    "gpt.outcomes.claims": "reads a reading's Python numbers",
    "gpt.decode_work.decode_step_work": "arithmetic on a GPTConfig's Python ints, no tensors",
    "gpt.ablation.ablated_logits": "token ids are range-checked with .item() (its pieces are swept)",
    "gpt.ablation.head_ablation_losses": "token ids are range-checked with .item() (its pieces are swept)",
    "gpt.ablation.inside_word": "decoded strings in, no input tensor to follow",
    "gpt.sample_tails.sampled_probabilities": "samples tokens: needs data",
    "attention.induction.trained_induction_model": "trains a model: needs data",
    "counting.decoder.MixtureOfExperts": "groups tokens per expert with nonzero (data-dependent shapes, no meta kernel)",
    "moe.layer.MoE": "counts tokens per expert with bincount (no meta kernel); its pieces are swept",
    "moe.routing.Routing": "a dataclass of the router's tensors",
    "moe.routing.check_experts_and_k": "checks Python ints",
    "moe.routing.check_capacity_factor": "checks a Python number",
    "moe.routing.expert_capacity": "arithmetic on Python ints, no tensors",
    "moe.deepseek.deepseek_moe": "groups tokens per routed expert with bincount (data-dependent, no meta kernel)",
    "moe.dispatch.dispatch_naive": "a loop over tokens with data-dependent indexing (needs data)",
    "moe.dispatch.dispatch_grouped": "groups tokens per expert with nonzero (data-dependent shapes)",
    "moe.layer.load_mixtral_block": "copies a transformers block's weights: needs data",
    "moe.balancing.load_shares": "counts tokens per expert with bincount (no meta kernel)",
    "moe.balancing.usage_entropy": "returns a Python float",
    "moe.balancing.max_entropy_bits": "arithmetic on a Python int",
    **{f"moe.counting.{n}": "arithmetic on a DeepSeekConfig's Python ints, no tensors"
       for n in ("DeepSeekConfig", "count_deepseek", "mla_parameters")},
    **{f"moe.outcomes.{n}": "reads the trained runs of notebook 07's seeded experiment: needs data"
       for n in ("claim_margins", "claims", "final_shares", "loss_spread", "starved_experts", "starved_histories")},
    **{f"moe.experiment.{n}": "the seeded toy experiment of notebook 07: trains on data"
       for n in ("ExperimentConfig", "Task", "TrainingRun", "capacity_report", "expert_owners", "make_task",
                 "probe_batch", "run_experiment", "sample_batch", "specialisation", "train_grid", "train_moe")},
    "entropy.cross_entropy": "targets are range-checked with .item()",
    "sampling.generate": "samples tokens: needs data",
    "gpt.training.TrainConfig": "a dataclass of numbers",
    "gpt.training.sequence_loss": "targets are range-checked with .item() (through entropy.cross_entropy)",
    "gpt.training.get_batch": "draws random windows with a torch.Generator (needs data)",
    "gpt.training.lr_at": "arithmetic on Python numbers",
    "gpt.training.bigram_loss": "counts token pairs and returns a Python float (needs data)",
    "gpt.training.evaluate": "returns a Python float (needs data)",
    "gpt.training.make_optimizer": "builds an optimizer over its caller's parameters",
    "gpt.training.train": "trains a model: needs data",
    "gpt.optim.decays": "reads a tensor's ndim, returns a Python bool",
    "gpt.optim.lr_schedule": "arithmetic on Python numbers",
    "gpt.optim.StepOptimizer": "an optimiser over its caller's parameters (like training.make_optimizer)",
    "gpt.capstone.training_loop": "trains a model: needs data",
    "gpt.gpu_profile.Profile": "a dataclass of configs",
    "gpt.gpu_profile.choose_profile": "picks a recipe from a name and a device, no tensors",
    "gpt.gpu_profile.train_profile": "trains a model: needs data",
    "gpt.gpu_profile.profile_samples": "draws random numbers on a CPU copy of the model: needs data",
    "gpt.capstone.estimate_loss": "returns a Python float (needs data)",
    "gpt.capstone.FusedGPT": "wraps gpt.GPT, whose token ids are range-checked with .item()",
    "gpt.capstone.Capstone": "a dataclass of the assembled parts",
    "gpt.capstone.assemble": "builds and seeds a model on the CPU from Python configs (no input tensor to follow)",
    "gpt.capstone.on_targets": "wraps its caller's loss function (what it adds follows the logits: cat, zeros_like)",
    "gpt.capstone.passed": "reads a check's verdict, no tensors",
    "gpt.capstone.summary_line": "formats Python strings, no tensors",
    "gpt.capstone.student_model": "builds its caller's class and loads a course model's state dict into it",
    "gpt.layer_cache.LayerCache": "a dataclass holding its caller's tensors",
    "gpt.layer_cache.new_cache": "a list of empty LayerCache, no tensors",
    "gpt.layer_cache.CachedGPT": "a gpt.GPT, whose token ids are range-checked with .item() (its pieces are swept)",
    "gpt.layer_cache.cached_sample": "samples tokens: needs data",
    "gpt.own_sampler.OwnSampler": "a dataclass of the assembled parts",
    "gpt.own_sampler.assemble_sampler": "builds models from a trained GPT's weights (no input tensor to follow)",
    "gpt.padded.PaddedGPT": "a gpt.GPT, whose token ids are range-checked with .item() (its pieces are swept)",
    "gpt.padded.sample_padded": "samples tokens: needs data",
    "env.threads.threads_for_load": "reads the machine's load average",
    "llama.feed_forward.swiglu_width": "arithmetic on Python ints, no tensors",
    "llama.config.LlamaConfig": "a dataclass of numbers",
    "llama.config.to_model_config": "turns a LlamaConfig's Python numbers into a counting.ModelConfig, no tensors",
    "interp.logit_lens.check_gpt": "checks a module's type and returns it, no tensors",
    "interp.logit_lens.check_position": "checks a Python int, no tensors",
    **{f"interp.logit_lens.{n}": "token ids are range-checked with .item() (gpt.check_tokens)"
       for n in ("residual_stream", "lens_logits", "lens_readout", "lens_top_tokens")},
    **{f"interp.attribution.{n}": "token ids are range-checked with .item() (gpt.check_tokens)"
       for n in ("component_writes", "direct_logit_attribution")},
    **{f"interp.patching.{n}": "token ids are range-checked with .item() (gpt.check_tokens)"
       for n in ("run_with_patches", "residual_patching_map", "head_patching_map")},
    "interp.induction_circuit.copy_sequences": "builds seeded data from a torch.Generator",
    "interp.induction_circuit.copy_loss": "keeps the copy's targets with a boolean mask (data-dependent shape)",
    "interp.induction_circuit.train_copy_model": "trains a model: needs data",
    "interp.induction_circuit.trained_copy_model": "trains a model: needs data",
    "interp.induction_circuit.random_composition_baseline": "Python ints in, a Python float out (seeded CPU draws)",
    "interp.induction_circuit.circuit_reading": "returns Python numbers read from a trained model (needs data)",
    "interp.sae_on_mlp.held_out_windows": "reads and encodes the corpus: files and data",
    "interp.sae_on_mlp.mlp_hidden": "token ids are range-checked with .item() (gpt.check_tokens)",
    "interp.sae_on_mlp.MLPSparseAutoencoder": "a dataclass holding a trained SAE and a Python float",
    "interp.sae_on_mlp.train_mlp_sae": "trains an SAE: needs data",
    "interp.sae_on_mlp.sae_report": "returns Python floats from the SAE's activations (needs data)",
    "interp.sae_on_mlp.top_activating_snippets": "decodes token ids into strings (needs data)",
    **{f"llama.transformers_weights.{n}": "reads a transformers config or copies its model's weights: needs data"
       for n in ("config_from_transformers", "load_llama", "load_llama_block")},
    **{f"llama.side_by_side.{n}": "trains or reads the side-by-side runs: corpus tokens and files"
       for n in ("build_pair", "train_pair", "replay", "load_results", "main")},
    **{f"llama.side_by_side.{n}": "counts a config's parameters (Python ints), no tensors"
       for n in ("gpt_parameters", "matched_llama")},
}

# Calls that run on meta but still create a tensor on the CPU on the way (a real device bug on a GPU).
# Empty: keep it so; a new entry needs its reason and an issue to remove it.
KNOWN_CPU_CREATIONS: dict[str, str] = {}


def core_modules() -> list[str]:
    """The root's modules and every package's (``gpt.model``), less those NOT_SWEPT (by module or package)."""
    found = [p.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".") for p in ROOT.rglob("*.py")]
    return sorted(m for m in found if not m.rpartition(".")[2].startswith("_")
                  and m not in NOT_SWEPT and m.partition(".")[0] not in NOT_SWEPT)


def test_every_package_is_listed_and_tokenisation_has_no_tensors():
    """The sweep covers the root's modules and the packages'; every other package must say why it is not swept."""
    swept = {m.partition(".")[0] for m in core_modules()}
    packages = sorted(p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file())
    assert [p for p in packages if p not in NOT_SWEPT and p not in swept] == [], "sweep them or say why not"
    for path in sorted((ROOT / "tokenisation").glob("*.py")):  # the reason given for it: no torch at all
        tree = ast.parse(path.read_text(encoding="utf-8"))
        nodes = list(ast.walk(tree))
        imported = {a.name.split(".")[0] for n in nodes if isinstance(n, ast.Import) for a in n.names}
        imported |= {(n.module or "").split(".")[0] for n in nodes if isinstance(n, ast.ImportFrom)}
        assert not imported & {"torch", "numpy"}, f"{path.name} imports tensors: sweep it or change its reason"


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


CALLS = {**_calls(), **_calls_06_09()}


def test_every_public_core_callable_is_swept_or_listed_with_a_reason():
    missing = [name for module in core_modules() for name in public_callables(module)
               if name not in CALLS and name not in NOT_ON_META]
    assert not missing, f"add these to CALLS (a meta-device call) or NOT_ON_META (with the reason): {missing}"
    stale = [name for name in (*CALLS, *NOT_ON_META) if name.rpartition(".")[0] not in core_modules()
             or name not in public_callables(name.rpartition(".")[0])]
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
