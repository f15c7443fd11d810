"""A small GPT, notebooks 09-11: the model (09), its training (10), its generation and what it learned (11).

Modules:

- ``config``: GPTConfig and input checks
- ``model``: the block and the model
- ``fused``: the same maths in fewer kernels
- ``kv_cache``: the KV cache, reference path
- ``kv_cache_fused``: the KV cache in preallocated buffers
- ``layer_cache``: the cache as notebook 09's own modules take it
- ``padded``: sampling a left-padded batch of prompts
- ``generation``: forward with a cache, sampling a continuation
- ``training``: loss, batches, schedule, the training loop
- ``optim``: AdamW, the schedule and clipping by hand
- ``checkpoint``: the course's trained checkpoints
- ``token_cache``: the small GPT's tokenizer and corpus ids, kept on disk between processes
- ``resume``: a training run's state, saved and restored
- ``gpt2_weights``: GPT-2's weights in the course's class
- ``capstone``: the student's parts assembled
- ``own_sampler``: the student's parts sampling
- ``gpu_profile``: the GPU training profile
- ``outcomes``: what the trained seeds show
- ``ablation``: ablating heads
- ``sample_tails``: what top-k and top-p cut
- ``decode_work``: the work of one decode step, counted

Their public names are importable from the package itself (``from course_utils.gpt import ...``),
loaded when first used (lazy_loader), so importing the package costs nothing.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "config": ["NORMS", "GPTConfig", "check_tokens", "check_state_dict"],
        "model": ["Block", "GPT", "stream_rms"],
        "fused": ["fused_qkv", "fused_out", "fused_attention", "fused_mlp", "fused_sequence_loss"],
        "cache": ["KVCache"],
        "kv_cache": ["cached_attention", "project_qkv", "write_heads"],
        "generation": ["forward_with_cache", "generate"],
        "padded": ["PaddedGPT", "sample_padded"],
        "layer_cache": ["LayerCache", "new_cache", "CachedAttention", "CachedBlock", "CachedGPT", "cached_sample"],
        "training": [
            "TrainConfig", "sequence_loss", "split_tokens", "get_batch", "lr_at", "bigram_loss", "evaluate",
            "make_optimizer", "train",
        ],
        "optim": ["CLIP_EPS", "decays", "adamw_step", "lr_schedule", "clip_grad_norm", "StepOptimizer"],
        "token_cache": ["cache_key", "cached"],
        "checkpoint": [
            "COURSE_CHECKPOINT", "SEED_CHECKPOINTS", "SEEDS", "SMALL_GPT_VOCAB_SIZE", "COURSE_MODEL", "FILES",
            "small_gpt_tokenizer", "corpus_tokens", "train_course_model", "seed_checkpoint", "replay_first_steps",
            "save_checkpoint", "load_checkpoint", "load_own_or_course", "STUDENT_CHECKPOINT",
            "IGNORE_STUDENT_CHECKPOINT",
        ],
        "resume": [
            "STATE_FORMAT", "capture_rng", "restore_rng", "save_training_state", "load_training_state",
            "restore_training_state",
        ],
        "gpt2_weights": [
            "WEIGHT_FILES", "gpt2_config", "gpt2_small_config", "convert_gpt2_state_dict", "to_gpt2_state_dict",
            "read_weights", "load_gpt2", "load_gpt2_from_hub",
        ],
        "capstone": [
            "training_loop", "estimate_loss", "on_targets", "FusedGPT", "NOT_PASSED", "Capstone", "assemble",
            "summary_line", "passed", "student_model",
        ],
        "own_sampler": ["SAMPLER_PARTS", "OwnSampler", "assemble_sampler"],
        "gpu_profile": [
            "CHOICES", "Profile", "CPU_PROFILE", "GPU_PROFILE", "choose_profile", "train_profile", "profile_samples",
        ],
        "outcomes": [
            "SAMPLERS", "RARE", "PROMPT", "NEWLINE_X", "COST_X", "FILTER_X", "PLAIN_RARE", "probe_windows",
            "tail_counts", "repeated_share", "read_seed", "claims",
        ],
        "ablation": ["ablated_logits", "head_ablation_losses", "inside_word", "head_findings"],
        "sample_tails": ["sampled_probabilities"],
        "decode_work": ["decode_step_work"],
    },
)
