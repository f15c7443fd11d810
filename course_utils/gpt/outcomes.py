"""What notebook 11 reads off the trained model, one function each, so every reading repeats on every seed.

The committed course model is one random run (seed 0); the same recipe at seeds 1-4 is committed too
(``checkpoint.SEEDS``). Covers ``probe_windows`` (section 5's held-out windows), ``tail_counts`` (how
many sampled tokens the unfiltered model gave p < 1e-3, per sampler), ``repeated_share`` (how much of a
text repeats its own n-token runs), ``read_seed`` (these and ``ablation.head_findings`` for one seed's
committed model) and ``claims`` (what the notebook's prose says about one reading, each a bool;
``tests/test_gpt_outcomes.py`` requires every claim, with margin, on all five seeds).
``claims(read_seed(0, tokenizer, val_ids))`` -> ``{"the previous-token head is in the first layer": True, ...}``.
Leaves out training (``checkpoint``) and the measurements' own pieces (``head_scores``, ``ablation``,
``sample_tails``).
"""

from __future__ import annotations

import torch
from jaxtyping import Int
from torch import Tensor

from course_utils.gpt.ablation import head_findings, inside_word
from course_utils.gpt.checkpoint import load_checkpoint, seed_checkpoint
from course_utils.gpt.generation import generate
from course_utils.gpt.model import GPT
from course_utils.gpt.sample_tails import sampled_probabilities
from course_utils.validate import number_in, positive_int

SAMPLERS = {"plain sampling": {}, "top-k 20": {"top_k": 20}, "top-p 0.9": {"top_p": 0.9}}
RARE = 1e-3  # a drawn token the unfiltered model gave less than this is "nearly impossible"
PROMPT = "ROMEO:\n"
# The claims' bounds, chosen to hold on all five seeds with margin (``claims(..., margin=1.2)``).
NEWLINE_X = 4  # the newline head's share of attention on newlines, over chance
COST_X = 5  # how much more the previous-token head's ablation costs overall than the newline head's
FILTER_X = 10  # how many times fewer rare tokens top-k and top-p draw than plain sampling
PLAIN_RARE = 0.02  # share of plain-sampled tokens under RARE
GREEDY_REPEATS, SAMPLED_REPEATS = 0.1, 0.05  # repeated 4-token runs in 120 greedy / temperature-0.8 tokens


def probe_windows(val_ids: Int[Tensor, "n"], n_ctx: int, n_windows: int = 32, stride: int = 1280) -> Tensor:
    """(n_windows, n_ctx): held-out windows starting every ``stride`` tokens (section 5 reads 32)."""
    positive_int("n_windows", n_windows)
    if (n_windows - 1) * stride + n_ctx > len(val_ids):
        raise ValueError(f"val_ids has {len(val_ids)} tokens, too few for {n_windows} windows {stride} apart")
    return torch.stack([val_ids[s:s + n_ctx] for s in range(0, n_windows * stride, stride)])


def tail_counts(model: GPT, prompt: Int[Tensor, "batch pos"], seed: int = 0) -> dict[str, tuple[int, int]]:
    """Per sampler of ``SAMPLERS``: ``(rare, drawn)``, tokens drawn (a CPU generator seeded ``seed``,
    filling the context) that the unfiltered model gave p < ``RARE``, out of all drawn."""
    n_new = model.cfg.n_ctx - prompt.shape[1] + 1
    counts = {}
    for name, kw in SAMPLERS.items():
        gen = torch.Generator().manual_seed(seed)
        drawn = sampled_probabilities(model, prompt, n_new, generator=gen, **kw)["probs"]  # (batch, n_new)
        counts[name] = (int((drawn < RARE).sum()), drawn.numel())
    return counts


def repeated_share(ids: list[int], n: int = 4) -> float:
    """Share of the ``n``-token runs of ``ids`` that already occurred earlier in it.

    ``repeated_share([1, 2, 1, 2, 1, 2], 2)`` -> 0.6 (runs 12 21 12 21 12: three of five are repeats).
    """
    positive_int("n", n)
    if not isinstance(ids, list) or len(ids) < n:
        raise ValueError(f"ids must be a list of at least n={n} token ids")
    runs = [tuple(ids[i:i + n]) for i in range(len(ids) - n + 1)]
    return 1 - len(set(runs)) / len(runs)


def read_seed(seed: int, tokenizer, val_ids: Int[Tensor, "n"], samples: bool = True, n_new: int = 120) -> dict:
    """Every reading above for the committed model of ``seed``, on the CPU: ``{"val_loss", "heads"}`` and,
    with ``samples``, ``"tails"`` (``tail_counts`` of 16 continuations of ``PROMPT``) and ``"repeats"``
    (``repeated_share`` of ``n_new`` tokens after ``PROMPT``, greedy and at temperature 0.8, a generator
    seeded 0), all as notebook 11 draws them. The heads take ~0.6 s of CPU, the samples ~3 s more."""
    ckpt = load_checkpoint(seed_checkpoint(seed))
    model = ckpt["model"]
    windows = probe_windows(val_ids, model.cfg.n_ctx)  # (32, n_ctx)
    is_newline = windows == tokenizer.encode("\n")[0]
    inside = inside_word([[tokenizer.decode([t]) for t in row] for row in windows.tolist()])[:, :-1]
    reading = {"val_loss": ckpt["log"]["val_loss"][-1], "heads": head_findings(model, windows, is_newline, inside)}
    if not samples:
        return reading
    prompt = torch.tensor([tokenizer.encode(PROMPT)])  # (1, pos)
    repeats = {}
    for name, temperature in {"greedy": 0.0, "temperature 0.8": 0.8}.items():
        gen = torch.Generator().manual_seed(0)
        out = generate(model, prompt, n_new, temperature=temperature, generator=gen, use_cache=False)
        repeats[name] = repeated_share(out[0, prompt.shape[1]:].tolist())
    return {**reading, "tails": tail_counts(model, prompt.repeat(16, 1)), "repeats": repeats}


def claims(reading: dict, margin: float = 1.0) -> dict[str, bool]:
    """What notebook 11's prose says about one ``read_seed`` reading, each claim a bool (the sampling
    claims only when the reading has samples).

    ``margin`` > 1 makes every threshold that many times stricter (a ratio must exceed ``margin`` x its
    bound, a share stay under bound / ``margin``): the tests require ``margin=1.2`` on every seed, so that
    each claim holds with room to spare, not by a hair.
    """
    number_in("margin", margin, 1.0, 10.0)
    prev, newline = reading["heads"]["previous"], reading["heads"]["delimiter"]
    modes = ("zero", "mean")
    found = {
        "the previous-token head is in the first layer": prev["head"][0] == 0,
        "the newline head is in a later layer": newline["head"][0] > 0,
        f"the newline head puts over {NEWLINE_X}x chance on newlines": newline["ratio"] > NEWLINE_X * margin,
        "without the previous-token head the loss rises more inside words than elsewhere (both ablations)":
            all(prev[m][0] > prev[m][1] * margin for m in modes),
        f"without the newline head the loss rises less than 1/{COST_X} as much as without the previous-token head":
            all(newline[m][2] * COST_X * margin < prev[m][2] for m in modes),
    }
    if "tails" not in reading:
        return found
    tails, repeats = reading["tails"], reading["repeats"]
    (plain, drawn), filtered = tails["plain sampling"], [tails[k][0] for k in SAMPLERS if k != "plain sampling"]
    return {
        **found,
        f"plain sampling draws a token with p < {RARE:g} more than once in {round(1 / PLAIN_RARE)}":
            plain / drawn > PLAIN_RARE * margin,
        f"top-k and top-p each draw at most 1/{FILTER_X} as many":
            all(f * FILTER_X * margin <= plain for f in filtered),
        f"greedy text repeats over {GREEDY_REPEATS:.0%} of its 4-token runs":
            repeats["greedy"] > GREEDY_REPEATS * margin,
        f"temperature 0.8 repeats under {SAMPLED_REPEATS:.0%}": repeats["temperature 0.8"] < SAMPLED_REPEATS / margin,
    }
