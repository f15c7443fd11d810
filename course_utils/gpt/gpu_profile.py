"""Two recipes for notebook 10's capstone: the CPU's (the committed checkpoint's) and a larger one for a CUDA GPU.

Covers ``Profile`` (a model config, a training config and how to run them: bfloat16 autocast,
``torch.compile``), ``CPU_PROFILE`` (``COURSE_MODEL`` with ``TrainConfig()``: what the notebook
trains and the committed checkpoint holds), ``GPU_PROFILE`` (6 layers, 384 wide, 256-token context,
about 11 M parameters; 2,000 steps of 64 windows in bfloat16 autocast),
``choose_profile`` (``"auto"`` picks the GPU profile when the course's device is CUDA; ``"cpu"`` and
``"gpu"`` force one), ``train_profile`` (a fresh seeded model trained on a profile: the loop of
``training.train``, fused AdamW included, with the fused loss, autocast on the forward pass, the clock
stopped after a device sync, the validation loss in float32 at the end) and ``profile_samples``
(continuations of a prompt, drawn on the CPU from a seeded generator).
``choose_profile("auto", torch.device("cpu")).name`` -> ``"cpu"``.
Leaves out choosing the device (``device.pick_device``) and plots; nothing here runs at import.
"""

from __future__ import annotations

import copy
import functools
import time
from dataclasses import dataclass, replace

import torch

from course_utils.gpt.checkpoint import COURSE_MODEL
from course_utils.counting.parameters import ModelConfig, count_parameters
from course_utils.gpt.generation import generate
from course_utils.gpt.model import GPT
from course_utils.gpt.config import GPTConfig, check_tokens
from course_utils.gpt.fused import fused_sequence_loss
from course_utils.env.progress import progress_bar
from course_utils.gpt.training import TrainConfig, _check_ids, _get_batch, evaluate, lr_at, make_optimizer
from course_utils.validate import one_of, positive_int

CHOICES = ("auto", "cpu", "gpu")


@dataclass(frozen=True)
class Profile:
    """A model and a recipe, and how to run them: ``autocast`` (a dtype or None) and ``compile``."""

    name: str
    model: GPTConfig
    train: TrainConfig
    autocast: torch.dtype | None = None
    compile: bool = False

    def describe(self) -> str:
        """One line: ``"cpu: 4 layers x 128 wide, context 64, ...; 800 steps of 32 windows, float32, fused AdamW"``."""
        m, t = self.model, self.train
        n_params = count_parameters(ModelConfig(m.d_vocab, m.n_ctx, m.d_model, m.n_layers, m.n_heads, d_mlp=m.d_mlp,
                                                bias=m.bias, tie_embeddings=m.tie_embeddings))["total"]
        how = ["float32" if self.autocast is None else f"{str(self.autocast).removeprefix('torch.')} autocast"]
        how += ["fused AdamW"] + ["torch.compile"] * self.compile
        return (f"{self.name}: {m.n_layers} layers x {m.d_model} wide, context {m.n_ctx}, {n_params:,} parameters; "
                f"{t.steps:,} steps of {t.batch_size} windows, {', '.join(how)}")


CPU_PROFILE = Profile("cpu", COURSE_MODEL, TrainConfig())
GPU_PROFILE = Profile(
    "gpu",
    GPTConfig(d_vocab=COURSE_MODEL.d_vocab, n_ctx=256, d_model=384, n_heads=6, n_layers=6, tie_embeddings=False),
    TrainConfig(steps=2000, batch_size=64),
    autocast=torch.bfloat16,
)


def choose_profile(profile: str = "auto", device: torch.device | str = "cpu") -> Profile:
    """``"auto"``: the GPU profile when ``device`` (the course's, from ``pick_device``) is CUDA, else the CPU one.

    ``"cpu"`` runs anywhere; ``"gpu"`` needs a CUDA device (ValueError otherwise: on a CPU it would
    take hours).
    """
    one_of("profile", profile, CHOICES)
    device = torch.device(device)
    if profile == "gpu" and device.type != "cuda":
        raise ValueError(f"profile 'gpu' needs a CUDA device, got {device}; choose 'cpu' or 'auto'")
    return GPU_PROFILE if profile == "gpu" or (profile == "auto" and device.type == "cuda") else CPU_PROFILE


def train_profile(profile: Profile, train_ids, val_ids, device: torch.device | str = "cpu",
                  eval_windows: int = 256, progress: bool = True) -> dict:
    """Train ``GPT(profile.model)`` (seeded with ``profile.train.seed``) on ``device``; returns
    ``{"model", "train_loss", "val_loss", "seconds", "tokens_per_s"}``.

    Each step is ``training.train``'s (same batches, schedule, clipping; no evaluation during the run)
    with ``fused_sequence_loss`` and the forward pass under ``profile.autocast``. ``seconds`` is the
    training alone, measured after a device sync; ``val_loss`` is ``training.evaluate`` in float32 on
    ``eval_windows`` fixed windows of ``val_ids``.
    """
    if not isinstance(profile, Profile):
        raise TypeError(f"profile must be a Profile, got {type(profile).__name__}")
    _check_ids(train_ids, "train_ids"), _check_ids(val_ids, "val_ids")
    positive_int("eval_windows", eval_windows)
    cfg, device = profile.train, torch.device(device)
    if min(len(train_ids), len(val_ids)) <= profile.model.n_ctx:
        raise ValueError(f"train_ids and val_ids need more than n_ctx={profile.model.n_ctx} tokens each")
    check_tokens(train_ids[None], replace(profile.model, n_ctx=len(train_ids)))  # ids in the vocabulary, once
    model = GPT(profile.model)
    model.reset_parameters(torch.Generator().manual_seed(cfg.seed))
    model = model.to(device).train()
    optimizer = make_optimizer(model, cfg)
    # GPT.forward checks every batch's ids with two host syncs, which on a GPU stall each step until the
    # last one finished; the ids were checked above, so a pre-norm model goes straight to the fused kernels
    forward = model._fused_forward if profile.model.norm == "pre" else functools.partial(model, impl="fused")
    if profile.compile:
        forward = torch.compile(forward)
    generator, losses = torch.Generator().manual_seed(cfg.seed), []
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    for step in progress_bar(range(cfg.steps), desc=f"training ({profile.name} profile)", disable=not progress,
                             mininterval=1.0):
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, cfg)
        x, y = (t.to(device, non_blocking=True) for t in _get_batch(train_ids, cfg.batch_size, model.cfg.n_ctx,
                                                                     generator))
        with torch.autocast(device.type, dtype=profile.autocast, enabled=profile.autocast is not None):
            loss = fused_sequence_loss(forward(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        losses.append(loss.detach())  # read after the run: no sync per step
    sync()
    seconds = time.perf_counter() - start
    return {"model": model, "train_loss": torch.stack(losses).float().cpu().tolist(),
            "val_loss": evaluate(model, val_ids, eval_windows), "seconds": seconds,
            "tokens_per_s": cfg.steps * cfg.batch_size * model.cfg.n_ctx / seconds}


def profile_samples(model: GPT, tokenizer, prompt: str = "ROMEO:\n", n_new: int = 120, n: int = 2,
                    temperature: float = 0.8, seed: int = 0) -> list[str]:
    """``n`` continuations of ``prompt`` by a float32 CPU copy of ``model``, from a generator seeded with ``seed``."""
    positive_int("n", n)
    cpu_model = copy.deepcopy(model).float().cpu().eval()
    prompt_ids = torch.tensor([tokenizer.encode(prompt)] * n)
    out = generate(cpu_model, prompt_ids, n_new, temperature=temperature,
                   generator=torch.Generator().manual_seed(seed), impl="fused")
    return [tokenizer.decode(row.tolist()) for row in out]
