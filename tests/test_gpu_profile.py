"""Notebook 09's profiles (``course_utils.gpt.gpu_profile``): the CPU profile is the committed checkpoint's recipe,
"auto" picks the GPU profile on CUDA only, a forced choice is obeyed or refused with a reason, and the
profile's training loop, run on a tiny model on the CPU, is ``training.train``'s step for step (float32)
and trains under bfloat16 autocast. The ``gpu`` test runs the real thing: the GPU profile
must end at least 0.3 nats below the CPU recipe's validation loss in at most 90 s of training."""

import json
from dataclasses import replace

import pytest
import torch

from course_utils.gpt.checkpoint import COURSE_CHECKPOINT
from course_utils.gpt.model import GPT
from course_utils.gpt.config import GPTConfig
from course_utils.gpt.gpu_profile import CPU_PROFILE, GPU_PROFILE, Profile, choose_profile, profile_samples, train_profile
from course_utils.env.threads import torch_threads
from course_utils.gpt.training import TrainConfig, train

IDS = torch.randint(0, 30, (3000,), generator=torch.Generator().manual_seed(0))
TINY = Profile("tiny", GPTConfig(d_vocab=30, n_ctx=8, d_model=16, n_heads=2, n_layers=2),
               TrainConfig(steps=4, batch_size=4, warmup_steps=2, max_lr=1e-2, min_lr=1e-3, seed=3))


@pytest.mark.parametrize("profile, device, expected", [
    ("auto", "cpu", CPU_PROFILE), ("auto", torch.device("cuda", 0), GPU_PROFILE), ("auto", "mps", CPU_PROFILE),
    ("cpu", "cuda", CPU_PROFILE), ("cpu", "cpu", CPU_PROFILE), ("gpu", "cuda:0", GPU_PROFILE)])
def test_auto_picks_the_gpu_profile_on_cuda_only_and_a_forced_choice_is_obeyed(profile, device, expected):
    assert choose_profile(profile, device) is expected


def test_bad_choices_are_refused_naming_the_argument():
    with pytest.raises(ValueError, match="profile 'gpu' needs a CUDA device, got cpu"):
        choose_profile("gpu", "cpu")
    with pytest.raises(ValueError, match="profile must be one of"):
        choose_profile("GPU")
    with pytest.raises(TypeError, match="profile must be a Profile"):
        train_profile("gpu", IDS, IDS)
    with pytest.raises(ValueError, match="more than n_ctx=8"):
        train_profile(TINY, IDS, IDS[:8], progress=False)
    with pytest.raises(ValueError, match="unknown token id 30"):
        train_profile(TINY, torch.cat([IDS, torch.tensor([30])]), IDS, progress=False)


def test_the_cpu_profile_is_the_committed_checkpoints_recipe():
    config = json.loads((COURSE_CHECKPOINT / "config.json").read_text())
    assert CPU_PROFILE.model.to_dict() == config["model"]
    assert CPU_PROFILE.train.to_dict() == {**config["train"], "betas": tuple(config["train"]["betas"])}
    assert (CPU_PROFILE.autocast, CPU_PROFILE.compile) == (None, False)


def test_descriptions_count_the_parameters():
    assert sum(p.numel() for p in GPT(CPU_PROFILE.model).parameters()) == 932_608
    # 6 layers of 1,774,464 (4·384² + 2·384·1,536 weights, 3,456 biases, 1,536 LayerNorm) + 3 embeddings + ln_final
    assert GPU_PROFILE.describe() == ("gpu: 6 layers x 384 wide, context 256, 11,139,072 parameters; "
                                      "2,000 steps of 64 windows, bfloat16 autocast, fused AdamW")
    assert CPU_PROFILE.describe().startswith("cpu: 4 layers x 128 wide, context 64, 932,608 parameters; 800 steps")


@pytest.mark.parametrize("norm", ["pre", "post"])  # pre-norm skips GPT.forward's per-batch checks
def test_float32_profile_training_is_train_step_for_step(norm):
    """Same seed, batches, schedule, clipping, AdamW; the fused loss differs from sequence_loss by rounding only."""
    profile = replace(TINY, model=replace(TINY.model, norm=norm))
    with torch_threads(1):  # a tiny model: a second thread only adds waiting on a busy machine
        run = train_profile(profile, IDS, IDS, progress=False, eval_windows=8)
        model = GPT(profile.model)
        model.reset_parameters(torch.Generator().manual_seed(TINY.train.seed))
        log = train(model, IDS, IDS, replace(TINY.train, eval_every=4, eval_windows=8), progress=False)
    torch.testing.assert_close(torch.tensor(run["train_loss"]), torch.tensor(log["train_loss"]), rtol=1e-5, atol=0)
    assert run["val_loss"] == pytest.approx(log["val_loss"][-1], rel=1e-5)
    for a, b in zip(run["model"].parameters(), model.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-4)  # AdamW normalises near-zero gradients' rounding
    assert run["seconds"] > 0 and run["tokens_per_s"] == pytest.approx(4 * 4 * 8 / run["seconds"])


def test_bfloat16_autocast_trains_and_samples():
    fast = replace(TINY, autocast=torch.bfloat16, train=replace(TINY.train, steps=12, max_lr=3e-2))
    ids = torch.arange(3000) * 7 % 30  # each token fixes the next: learnable in a few steps
    with torch_threads(1):
        run = train_profile(fast, ids, ids, progress=False, eval_windows=8)
    assert all(p.dtype == torch.float32 for p in run["model"].parameters())  # autocast: float32 weights
    assert max(run["train_loss"][-1], run["val_loss"]) < run["train_loss"][0] - 0.5

    class Letters:  # a 30-symbol tokenizer for the tiny vocabulary
        def encode(self, text):
            return [ord(c) - ord("a") for c in text]

        def decode(self, ids):
            return "".join(chr(ord("a") + i) for i in ids)

    samples = profile_samples(run["model"], Letters(), prompt="ab", n_new=5, n=3)
    assert samples == profile_samples(run["model"], Letters(), prompt="ab", n_new=5, n=3)  # seeded
    assert len(samples) == 3 and all(len(s) == 7 and s.startswith("ab") for s in samples)


@pytest.mark.gpu
def test_the_gpu_profile_beats_the_cpu_recipe_by_03_nats_in_90_s():
    from course_utils.gpt.checkpoint import corpus_tokens, load_checkpoint
    from course_utils.gpt.training import split_tokens

    cpu_val = load_checkpoint()["log"]["val_loss"][-1]  # the committed CPU run: 3.224
    train_ids, val_ids = split_tokens(corpus_tokens())
    run = train_profile(choose_profile("auto", "cuda"), train_ids, val_ids, "cuda", progress=False)
    print(f"gpu profile: val {run['val_loss']:.3f} (cpu recipe {cpu_val:.3f}) in {run['seconds']:.1f} s, "
          f"{run['tokens_per_s']:,.0f} tokens/s")
    assert run["seconds"] <= 90 and run["val_loss"] <= cpu_val - 0.3
