"""The course's trained small GPT: the recipe that makes it, and saving / loading it.

``train_course_model()`` is the whole recipe: the course BPE at 512 ids (``small_gpt_tokenizer()``), the corpus
encoded with it, the last tenth held out, ``GPT(COURSE_MODEL)`` initialised from ``seed``, then
``training.train`` with ``TrainConfig()``. Its result is committed in ``data/small_gpt/``
(``model.pt``: the state dict; ``config.json``: both configs; ``tokenizer.json``: the BPE merges;
``log.json``: the training log), so a notebook short of time can ``load_checkpoint()``.
Remake it with ``python -m course_utils.gpt.checkpoint`` (the command is in ``data/README.md``).
The same recipe at seeds 1-4 (``SEEDS``) is committed in ``data/small_gpt_seeds/seed_N/``, its weights
stored in float16 (``python -m course_utils.gpt.checkpoint --seeds 1 2 3 4``): claims notebook 11 makes
about one run are tested on all five (``seed_checkpoint(seed)`` finds each; ``replay_first_steps``
reruns the start of a seed's run, to prove a checkpoint comes from it).
Leaves out optimiser state (the checkpoint is for using the model): a run that stops and resumes
saves its whole state with ``resume.save_training_state`` (``training.train(..., save_state_to=...)``).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch

from course_utils.corpus import DATA_DIR, load_corpus
from course_utils.gpt.model import GPT
from course_utils.gpt.config import GPTConfig, check_state_dict
from course_utils.gpt.token_cache import cached
from course_utils.env.threads import torch_threads
from course_utils.tokenisation.byte_bpe import ByteBPETokenizer
from course_utils.tokenisation.course import SPECIAL_TOKENS
from course_utils.gpt.training import TrainConfig, split_tokens, train
from course_utils.validate import int_in, one_of, positive_int

COURSE_CHECKPOINT = DATA_DIR / "small_gpt"
SEED_CHECKPOINTS = DATA_DIR / "small_gpt_seeds"
SEEDS = (0, 1, 2, 3, 4)  # seed 0 is the course checkpoint; 1-4 live in SEED_CHECKPOINTS
SMALL_GPT_VOCAB_SIZE = 512
COURSE_MODEL = GPTConfig(
    d_vocab=SMALL_GPT_VOCAB_SIZE, n_ctx=64, d_model=128, n_heads=4, n_layers=4, tie_embeddings=False
)
FILES = ("model.pt", "config.json", "tokenizer.json", "log.json")
# Where notebook 10 saves the student's own run (git-ignored, beside their copy of the notebooks).
STUDENT_CHECKPOINT = DATA_DIR.parent / "notebooks" / "student" / "my_small_gpt"
# Set to 1, load_own_or_course() acts as on a fresh checkout, as if STUDENT_CHECKPOINT held nothing: the tests
# and `make notebooks` set it, so a student run saved on a developer's machine never reaches stored outputs.
IGNORE_STUDENT_CHECKPOINT = "COURSE_IGNORE_STUDENT_CHECKPOINT"


_TOKENIZER: dict[int, ByteBPETokenizer] = {}


def small_gpt_tokenizer() -> ByteBPETokenizer:
    """The course's byte-level BPE trained on the whole corpus with 512 ids (once per session).

    Smaller than notebook 01's 2,048: in a 3-minute CPU run a small model sees about a million
    tokens, too few to learn 2,048² next-token statistics, but plenty for 512 ids. Kept between
    processes in ``data/cache/`` (``token_cache``), so only the first process trains it.
    """
    if SMALL_GPT_VOCAB_SIZE not in _TOKENIZER:
        _TOKENIZER[SMALL_GPT_VOCAB_SIZE] = cached(
            f"small_gpt_tokenizer_{SMALL_GPT_VOCAB_SIZE}.json",
            lambda: ByteBPETokenizer.train(load_corpus(), SMALL_GPT_VOCAB_SIZE, special_tokens=SPECIAL_TOKENS),
            lambda tokenizer, path: tokenizer.save(path),
            ByteBPETokenizer.load,
        )
    return _TOKENIZER[SMALL_GPT_VOCAB_SIZE]


def _load_ids(path: Path) -> torch.Tensor:
    ids = torch.load(path, weights_only=True)
    if not isinstance(ids, torch.Tensor) or ids.dtype != torch.int16 or ids.ndim != 1:
        raise ValueError(f"{str(path)!r} does not hold a 1-d int16 tensor of token ids")
    return ids.long()


def corpus_tokens(tokenizer: ByteBPETokenizer | None = None) -> torch.Tensor:
    """The whole corpus as one 1-d tensor of BPE ids (``small_gpt_tokenizer()`` by default, whose ids are
    kept between processes in ``data/cache/``)."""
    if tokenizer is not None:
        return torch.tensor(tokenizer.encode_ordinary(load_corpus()), dtype=torch.long)
    return cached(
        f"small_gpt_tokens_{SMALL_GPT_VOCAB_SIZE}.pt",
        lambda: torch.tensor(small_gpt_tokenizer().encode_ordinary(load_corpus()), dtype=torch.long),
        lambda ids, path: torch.save(ids.to(torch.int16), path),  # 512 ids fit in int16: half the file
        _load_ids,
    )


def train_course_model(
    train_cfg: TrainConfig | None = None,
    model_cfg: GPTConfig = COURSE_MODEL,
    device: torch.device | str = "cpu",
    on_eval=None,
    progress: bool = True,
) -> dict:
    """Run the recipe; returns ``{"model", "tokenizer", "log", "train_ids", "val_ids", "train_config"}``."""
    train_cfg = TrainConfig() if train_cfg is None else train_cfg
    tokenizer = small_gpt_tokenizer()
    train_ids, val_ids = split_tokens(corpus_tokens(tokenizer))
    model = GPT(model_cfg)
    model.reset_parameters(torch.Generator().manual_seed(train_cfg.seed))
    model = model.to(device)
    log = train(model, train_ids, val_ids, train_cfg, on_eval=on_eval, progress=progress)
    return {
        "model": model,
        "tokenizer": tokenizer,
        "log": log,
        "train_ids": train_ids,
        "val_ids": val_ids,
        "train_config": train_cfg,
    }


def seed_checkpoint(seed: int) -> Path:
    """The folder of the recipe's run at ``seed``: ``seed_checkpoint(0)`` -> ``COURSE_CHECKPOINT``."""
    int_in("seed", seed, min(SEEDS), max(SEEDS))
    return COURSE_CHECKPOINT if seed == 0 else SEED_CHECKPOINTS / f"seed_{seed}"


def replay_first_steps(seed: int, steps: int = 5, split: tuple | None = None) -> dict:
    """The log of the recipe's first ``steps`` steps at ``seed`` (one thread): a committed log must start so.

    ``split`` is ``split_tokens(corpus_tokens())``, passed in to encode the corpus once for several seeds.
    """
    positive_int("steps", steps)
    train_ids, val_ids = split_tokens(corpus_tokens()) if split is None else split
    model = GPT(COURSE_MODEL)
    model.reset_parameters(torch.Generator().manual_seed(seed))
    with torch_threads(1):
        return train(model, train_ids, val_ids, TrainConfig(seed=seed), progress=False, stop_after=steps)


def save_checkpoint(
    folder, model: GPT, tokenizer: ByteBPETokenizer, train_cfg: TrainConfig, log: dict, dtype=torch.float32
) -> None:
    """Write the four files of ``FILES`` into ``folder`` (created if needed), the weights as ``dtype``
    (``torch.float16`` halves the file; ``load_checkpoint`` turns them back into float32)."""
    one_of("dtype", dtype, (torch.float32, torch.float16))
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().to(dtype).contiguous() for k, v in model.state_dict().items()}
    torch.save(state, folder / "model.pt")
    config = {"model": model.cfg.to_dict(), "train": train_cfg.to_dict()}
    (folder / "config.json").write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
    tokenizer.save(folder / "tokenizer.json")
    (folder / "log.json").write_text(json.dumps(log) + "\n", encoding="utf-8")


def load_checkpoint(folder=COURSE_CHECKPOINT, device: torch.device | str = "cpu") -> dict:
    """``{"model", "tokenizer", "log", "train_config"}`` from a folder written by ``save_checkpoint``.

    ValueError names a missing file, a corrupt one, or weights whose shapes do not fit the config.
    """
    folder = Path(folder)
    missing = [f for f in FILES if not (folder / f).is_file()]
    if missing:
        raise ValueError(f"checkpoint folder {str(folder)!r} lacks {missing}")
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        log = json.loads((folder / "log.json").read_text(encoding="utf-8"))
        cfg, train_cfg = GPTConfig.from_dict(config["model"]), TrainConfig(**config["train"])
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"checkpoint {str(folder)!r}: config.json or log.json is corrupt ({exc})") from None
    try:
        state = torch.load(folder / "model.pt", map_location="cpu", weights_only=True)
    except Exception as exc:  # zip, pickle and EOF errors all mean the same thing here
        raise ValueError(f"checkpoint {str(folder)!r}: model.pt is corrupt ({type(exc).__name__})") from None
    model = GPT(cfg)
    check_state_dict(model, state)
    model.load_state_dict({k: v.float() for k, v in state.items()})  # float16 weights come back as float32
    return {
        "model": model.to(device).eval(),
        "tokenizer": ByteBPETokenizer.load(folder / "tokenizer.json"),
        "log": log,
        "train_config": train_cfg,
    }


def load_own_or_course(folder=None, device: torch.device | str = "cpu") -> dict:
    """The student's trained model where there is one, else the course's: ``load_checkpoint``'s dict plus
    ``"source"``, a sentence saying which was loaded.

    ``folder`` (default ``STUDENT_CHECKPOINT``) is used when it holds a whole checkpoint (all of ``FILES``);
    otherwise the course checkpoint is. A folder that holds the files but does not load raises, as
    ``load_checkpoint`` does: a broken checkpoint should not be replaced silently. With the environment variable
    ``COURSE_IGNORE_STUDENT_CHECKPOINT=1`` (``IGNORE_STUDENT_CHECKPOINT``) the default folder counts as empty,
    the sentence included, so a test run gives a fresh checkout's output; a ``folder`` passed in is still read.
    """
    ignore = folder is None and os.environ.get(IGNORE_STUDENT_CHECKPOINT, "") not in ("", "0")
    folder = STUDENT_CHECKPOINT if folder is None else Path(folder)
    try:  # shown from the course's folder, so the sentence is the same on every machine
        shown = folder.resolve().relative_to(DATA_DIR.parent.resolve()).as_posix()
    except ValueError:
        shown = str(folder)
    if not ignore and all((folder / f).is_file() for f in FILES):
        return {**load_checkpoint(folder, device), "source": f"your own model, from {shown}"}
    return {**load_checkpoint(COURSE_CHECKPOINT, device),
            "source": f"the course's model (no checkpoint of yours in {shown})"}


def main(argv=None) -> None:  # pragma: no cover - 3 minutes of training per seed
    parser = argparse.ArgumentParser(description="Train the course model and commit it (seed 0 in float32, "
                                     "other seeds in float16 under data/small_gpt_seeds/).")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], choices=SEEDS)
    for seed in parser.parse_args(argv).seeds:
        with torch_threads(1):  # the committed runs used one thread (notebook 10 compares a fresh run with seed 0)
            result = train_course_model(TrainConfig(seed=seed))
        folder, dtype = seed_checkpoint(seed), torch.float32 if seed == 0 else torch.float16
        save_checkpoint(folder, result["model"], result["tokenizer"], result["train_config"], result["log"], dtype)
        print(f"saved {folder}: final validation loss {result['log']['val_loss'][-1]:.4f}", flush=True)


if __name__ == "__main__":  # pragma: no cover
    main()
