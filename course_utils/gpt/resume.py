"""A training run that stops and resumes: one file that holds everything the next step depends on.

``save_training_state(path, model, optimizer, generator, step, log, train_config)`` writes, in one
``torch.save`` file that ``torch.load(weights_only=True)`` can read: the model's weights, the
optimiser's state (AdamW's two moments and step counts), the number of steps done (with the
training config, the position in the learning-rate schedule: ``lr_at(step, cfg)``), the log so far,
and the state of every random generator the run draws from: the batch sampler's ``torch.Generator``,
torch's global CPU generator, CUDA's (one per visible GPU, when there is one), Python's ``random``
and NumPy's legacy global generator. ``load_training_state(path)`` reads it back with each part
checked, and ``restore_training_state`` puts it into a freshly built model, optimiser and
generator. ``training.train(..., resume_from=path)`` does all of that, so that training 2N steps
equals training N, saving, and training N more in another process, bit for bit on the CPU
(tests/test_resume.py).

The file is written to a temporary name and renamed, so a crash while saving leaves the previous
state whole. A file that is missing, not a torch file, truncated, written by something else (for
example ``checkpoint.save_checkpoint``'s ``model.pt``) or lacking a part raises ValueError naming it.
Leaves out: the course checkpoints for using a trained model (``checkpoint.py``), sharded or
distributed optimisers, and data-loader workers.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import torch
from torch import nn

from course_utils.gpt.config import check_state_dict

STATE_FORMAT = "course-training-state/1"  # the "format" entry of a file written by save_training_state
PARTS = ("format", "step", "train_config", "model", "optimizer", "rng", "log")
RNG_PARTS = ("batches", "torch", "cuda", "python", "numpy")


def capture_rng(generator: torch.Generator) -> dict:
    """The state of ``generator`` and of the global generators, as tensors, ints and tuples (weights_only-safe)."""
    version, internal, gauss = random.getstate()  # (3, 625 ints, None)
    kind, keys, pos, has_gauss, cached = np.random.get_state()  # ("MT19937", 624 uint32, ...)
    return {
        "batches": generator.get_state(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "python": (version, list(internal), gauss),
        "numpy": (kind, torch.from_numpy(keys.astype(np.int64)), int(pos), int(has_gauss), float(cached)),
    }


def restore_rng(rng: dict, generator: torch.Generator) -> None:
    """Put the states of ``capture_rng`` back; CUDA's only where this process sees as many GPUs as the saver did."""
    generator.set_state(rng["batches"])
    torch.set_rng_state(rng["torch"])
    if rng["cuda"] and torch.cuda.is_available() and torch.cuda.device_count() == len(rng["cuda"]):
        torch.cuda.set_rng_state_all(rng["cuda"])
    version, internal, gauss = rng["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = rng["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), pos, has_gauss, cached))


def save_training_state(
    path, model: nn.Module, optimizer: torch.optim.Optimizer, generator: torch.Generator, step: int, log: dict,
    train_config: dict,
) -> None:
    """Write the run's state after ``step`` steps to ``path`` (a file; its folder is created if needed)."""
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise ValueError(f"step must be a non-negative int, got {step!r}")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be the batch sampler's torch.Generator, got {type(generator).__name__}")
    if not isinstance(train_config, dict):
        raise TypeError(f"train_config must be a dict (TrainConfig.to_dict()), got {type(train_config).__name__}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": STATE_FORMAT,
        "step": step,
        "train_config": dict(train_config),
        "model": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
        "optimizer": optimizer.state_dict(),
        "rng": capture_rng(generator),
        "log": {k: list(v) for k, v in log.items()},
    }
    partial = path.with_name(path.name + ".partial")
    torch.save(payload, partial)
    os.replace(partial, path)  # atomic: a reader sees the old file or the new one, never half of one


def _bad(path: Path, why: str) -> ValueError:
    return ValueError(f"training state {str(path)!r} {why}")


def load_training_state(path) -> dict:
    """``{"step", "train_config", "model", "optimizer", "rng", "log"}`` from a file of ``save_training_state``."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or Path, got {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise _bad(path, "does not exist (or is not a file)")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # zip, pickle, EOF and weights-only refusals all mean: not a file we wrote, or cut short
        raise _bad(path, f"is not a readable torch file, or was cut short ({type(exc).__name__})") from None
    if not isinstance(payload, dict) or payload.get("format") != STATE_FORMAT:
        found = payload.get("format") if isinstance(payload, dict) else type(payload).__name__
        raise _bad(path, f"was not written by save_training_state (format {found!r}, expected {STATE_FORMAT!r})")
    missing = [p for p in PARTS if p not in payload]
    missing += [f"rng.{p}" for p in RNG_PARTS if "rng" in payload and p not in payload["rng"]]
    if missing:
        raise _bad(path, f"lacks {missing}")
    step = payload["step"]
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise _bad(path, f"has step {step!r}, expected a non-negative int")
    for part, kind in (("train_config", dict), ("model", dict), ("optimizer", dict), ("log", dict)):
        if not isinstance(payload[part], kind):
            raise _bad(path, f"has a {type(payload[part]).__name__} as {part}, expected a {kind.__name__}")
    return {part: payload[part] for part in PARTS[1:]}


def restore_training_state(
    state: dict, model: nn.Module, optimizer: torch.optim.Optimizer, generator: torch.Generator, train_config: dict,
    source: str = "state",
) -> int:
    """Load ``state`` (from ``load_training_state``) into a freshly built run; returns the step to go on from.

    ``train_config`` must equal the saved one (another schedule or batch size is another run): ValueError
    names the fields that differ. The weights are checked against the model's shapes before loading.
    """
    saved = state["train_config"]
    if saved != train_config:
        differ = sorted(k for k in {*saved, *train_config} if saved.get(k) != train_config.get(k))
        raise ValueError(f"{source} was saved with another training config: {differ} differ "
                         f"(saved {[saved.get(k) for k in differ]}, given {[train_config.get(k) for k in differ]})")
    check_state_dict(model, state["model"])
    model.load_state_dict(state["model"])  # copies into the model's own tensors, on its device
    try:
        optimizer.load_state_dict(state["optimizer"])  # moves the moments to their parameters' device
    except (ValueError, KeyError) as exc:
        raise ValueError(f"{source}: the optimiser's state does not fit this model's optimiser ({exc})") from None
    try:
        restore_rng(state["rng"], generator)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise ValueError(f"{source}: a random generator's state is corrupt ({type(exc).__name__}: {exc})") from None
    return state["step"]
