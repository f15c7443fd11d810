"""The course's trained small GPT: the recipe that makes it, and saving / loading it.

``train_course_model()`` is the whole recipe: the course BPE at 512 ids (``small_gpt_tokenizer()``), the corpus
encoded with it, the last tenth held out, ``GPT(COURSE_MODEL)`` initialised from ``seed``, then
``training.train`` with ``TrainConfig()``. Its result is committed in ``data/small_gpt/``
(``model.pt``: the state dict; ``config.json``: both configs; ``tokenizer.json``: the BPE merges;
``log.json``: the training log), so a notebook short of time can ``load_checkpoint()``.
Remake it with ``python -m course_utils.checkpoint`` (the command is in ``data/README.md``).
Leaves out optimiser state (the checkpoint is for using the model, not for resuming training).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from course_utils.corpus import DATA_DIR, load_corpus
from course_utils.gpt import GPT
from course_utils.gpt_config import GPTConfig, check_state_dict
from course_utils.threads import torch_threads
from course_utils.tokenisation.byte_bpe import ByteBPETokenizer
from course_utils.tokenisation.course import SPECIAL_TOKENS
from course_utils.training import TrainConfig, split_tokens, train

COURSE_CHECKPOINT = DATA_DIR / "small_gpt"
SMALL_GPT_VOCAB_SIZE = 512
COURSE_MODEL = GPTConfig(
    d_vocab=SMALL_GPT_VOCAB_SIZE, n_ctx=64, d_model=128, n_heads=4, n_layers=4, tie_embeddings=False
)
FILES = ("model.pt", "config.json", "tokenizer.json", "log.json")


_TOKENIZER: dict[int, ByteBPETokenizer] = {}


def small_gpt_tokenizer() -> ByteBPETokenizer:
    """The course's byte-level BPE trained on the whole corpus with 512 ids (once per session).

    Smaller than notebook 01's 2,048: in a 3-minute CPU run a small model sees about a million
    tokens, too few to learn 2,048² next-token statistics, but plenty for 512 ids.
    """
    if SMALL_GPT_VOCAB_SIZE not in _TOKENIZER:
        _TOKENIZER[SMALL_GPT_VOCAB_SIZE] = ByteBPETokenizer.train(
            load_corpus(), SMALL_GPT_VOCAB_SIZE, special_tokens=SPECIAL_TOKENS
        )
    return _TOKENIZER[SMALL_GPT_VOCAB_SIZE]


def corpus_tokens(tokenizer: ByteBPETokenizer | None = None) -> torch.Tensor:
    """The whole corpus as one 1-d tensor of BPE ids (``small_gpt_tokenizer()`` by default)."""
    tokenizer = small_gpt_tokenizer() if tokenizer is None else tokenizer
    return torch.tensor(tokenizer.encode_ordinary(load_corpus()), dtype=torch.long)


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


def save_checkpoint(folder, model: GPT, tokenizer: ByteBPETokenizer, train_cfg: TrainConfig, log: dict) -> None:
    """Write the four files of ``FILES`` into ``folder`` (created if needed)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
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
    model.load_state_dict(state)
    return {
        "model": model.to(device).eval(),
        "tokenizer": ByteBPETokenizer.load(folder / "tokenizer.json"),
        "log": log,
        "train_config": train_cfg,
    }


def main() -> None:  # pragma: no cover - the 3-minute training run
    with torch_threads(1):  # the committed run used one thread (notebook 09 compares a fresh run with it)
        result = train_course_model()
    save_checkpoint(COURSE_CHECKPOINT, result["model"], result["tokenizer"], result["train_config"], result["log"])
    print(f"saved {COURSE_CHECKPOINT}: final validation loss {result['log']['val_loss'][-1]:.4f}")


if __name__ == "__main__":  # pragma: no cover
    main()
