"""A Llama-style and a GPT-2-style model of the same size, trained by the same recipe on the same tokens.

Covers ``GPT2_STYLE`` and ``RECIPE`` (a small model trained on notebook 10's corpus and tokenizer by a
short version of its recipe),
``matched_llama`` (the Llama-style config whose parameter count, by notebook 08's counter, is closest
to the GPT's: the SwiGLU width is what is tuned, since RoPE and GQA free parameters the GPT spends on
positions and keys), ``train_pair`` (both models from notebook 09's initialisation rule at one seed,
trained by ``gpt.training.train`` with the same batches) and ``replay`` (a pair's first steps, to
check a committed log). ``python -m course_utils.llama.side_by_side`` trains every seed and writes
``data/todays_block/side_by_side.json``, the log notebook 12 plots.
Leaves out larger models and longer runs (the ranking there is the papers', not measured here).
"""

from __future__ import annotations

import json
import platform
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch

from course_utils.counting.parameters import count_parameters
from course_utils.env.threads import torch_threads
from course_utils.gpt.config import GPTConfig
from course_utils.gpt.model import GPT
from course_utils.gpt.training import TrainConfig, train
from course_utils.llama.config import LlamaConfig
from course_utils.llama.model import Llama
from course_utils.validate import int_in, non_negative_int, positive_int

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "data" / "todays_block" / "side_by_side.json"
SEEDS = (0, 1, 2, 3, 4)
GPT2_STYLE = GPTConfig(d_vocab=512, n_ctx=64, d_model=64, n_heads=4, n_layers=2, tie_embeddings=False)
N_KV_HEADS = 2
RECIPE = TrainConfig(steps=400, batch_size=16, warmup_steps=40, eval_every=50, eval_windows=32)
MODELS = ("gpt2_style", "llama_style")


def gpt_parameters(cfg: GPTConfig) -> int:
    """``sum(p.numel())`` of ``GPT(cfg)``, built on the meta device (no memory, no time)."""
    with torch.device("meta"):
        return sum(p.numel() for p in GPT(cfg).parameters())


def matched_llama(cfg: GPTConfig, n_kv_heads: int, multiple_of: int = 8) -> LlamaConfig:
    """The ``LlamaConfig`` of ``cfg``'s vocabulary, context, width, depth and heads, with ``n_kv_heads``,
    whose SwiGLU width (a multiple of ``multiple_of``) brings ``count_parameters`` closest to the GPT's.

    ``matched_llama(GPT2_STYLE, 2).d_mlp`` -> 208 (170,304 parameters against the GPT's 169,728).
    """
    if not isinstance(cfg, GPTConfig):
        raise TypeError(f"cfg must be a GPTConfig, got {type(cfg).__name__}")
    positive_int("multiple_of", multiple_of)
    target = gpt_parameters(cfg)
    shape = dict(d_vocab=cfg.d_vocab, n_ctx=cfg.n_ctx, d_model=cfg.d_model, n_layers=cfg.n_layers,
                 n_heads=cfg.n_heads, n_kv_heads=n_kv_heads)
    widths = range(multiple_of, 8 * cfg.d_model + 1, multiple_of)
    return min((LlamaConfig(**shape, d_mlp=w) for w in widths),
               key=lambda c: (abs(count_parameters(c)["total"] - target), c.d_mlp))


def build_pair(seed: int, cfg: GPTConfig = GPT2_STYLE, n_kv_heads: int = N_KV_HEADS) -> dict:
    """``{"gpt2_style": GPT, "llama_style": Llama}``, drawn by notebook 09's rule from a generator seeded ``seed``.

    The Llama-style one is ``matched_llama(cfg, n_kv_heads)``, so the two hold about as many parameters.
    """
    non_negative_int("seed", seed)
    gpt, llama = GPT(cfg), Llama(matched_llama(cfg, n_kv_heads))
    for model in (gpt, llama):
        model.reset_parameters(torch.Generator().manual_seed(seed))
    return dict(zip(MODELS, (gpt, llama)))


def train_pair(seed: int, train_ids, val_ids, recipe: TrainConfig = RECIPE, stop_after: int | None = None,
               progress: bool = False) -> dict:
    """Both models' training logs at ``seed`` (the batches and the initial draw seeded by it), one thread."""
    recipe = TrainConfig(**{**asdict(recipe), "seed": seed})
    logs = {}
    with torch_threads(1):
        for name, model in build_pair(seed).items():
            logs[name] = train(model, train_ids, val_ids, recipe, progress=progress, stop_after=stop_after)
    return logs


def replay(seed: int, steps: int, train_ids, val_ids) -> dict:
    """The first ``steps`` training losses of both models at ``seed``: a committed log must start so."""
    int_in("steps", steps, 1, RECIPE.steps, high_name="the recipe's steps")
    logs = train_pair(seed, train_ids, val_ids, stop_after=steps)
    return {name: log["train_loss"] for name, log in logs.items()}


def load_results(path: Path = RESULTS) -> dict:
    """The committed logs: ``{"seeds", "recipe", "parameters", "runs": {seed: {model: log}}, "machine"}``."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"cannot read the side-by-side results {str(path)!r}: {err}") from None
    if set(data.get("runs", {})) != {str(s) for s in data.get("seeds", ())}:
        raise ValueError(f"{str(path)!r} must hold a run for every seed of its 'seeds'")
    return data


def main(argv=None) -> None:  # pragma: no cover - about 4 minutes on one CPU thread
    from course_utils.gpt.checkpoint import corpus_tokens
    from course_utils.gpt.training import split_tokens

    out = Path(argv[0]) if argv else RESULTS
    train_ids, val_ids = split_tokens(corpus_tokens())
    llama_cfg = matched_llama(GPT2_STYLE, N_KV_HEADS)
    data = {"seeds": list(SEEDS), "recipe": RECIPE.to_dict(), "gpt2_style": GPT2_STYLE.to_dict(),
            "llama_style": {k: v for k, v in asdict(llama_cfg).items()},
            "parameters": {"gpt2_style": gpt_parameters(GPT2_STYLE),
                           "llama_style": count_parameters(llama_cfg)["total"]},
            "machine": f"{platform.processor() or platform.machine()}, torch {torch.__version__}, "
                       f"CPU path {torch.backends.cpu.get_cpu_capability()}",
            "runs": {}}
    for seed in SEEDS:
        started = time.perf_counter()
        data["runs"][str(seed)] = train_pair(seed, train_ids, val_ids)
        finals = {m: data["runs"][str(seed)][m]["val_loss"][-1] for m in MODELS}
        print(f"seed {seed}: {finals} in {time.perf_counter() - started:.0f} s", flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data) + "\n", encoding="utf-8")


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
