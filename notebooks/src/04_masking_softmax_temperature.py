# ---
# jupyter:
#   course:
#     exercises:
#       beam_search:
#         difficulty: 3
#         minutes: 20
#         points: 3
#       causal_mask:
#         difficulty: 1
#         minutes: 5
#         points: 1
#       cross_entropy:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       generate_tokens:
#         difficulty: 2
#         minutes: 15
#         points: 2
#       left_pad_batch:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       safe_masked_softmax:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       sliding_window_attention:
#         difficulty: 3
#         minutes: 20
#         points: 3
#       softmax_with_temperature:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       top_k_top_p_filter:
#         difficulty: 3
#         minutes: 15
#         points: 2
#     numbers_allowed:
#       '115': the exercises' minutes added up from this metadata (tests/test_exercise_lines.py checks the line)
#   jupytext:
#     cell_metadata_filter: all
#     notebook_metadata_filter: course,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 04 · Masking, softmax and temperature
#
# Attention and next-token prediction both end the same way: a row of scores goes through a softmax
# and becomes a probability distribution. This notebook is about controlling that step.
#
# 1. **Masks** decide which scores are allowed at all: a causal mask hides the future, and other
#    masks (padding, sliding windows, prefix-LM, packed documents) are the same idea with different
#    shapes. You will edit one cell by cell and watch the pattern change, and build the mask (and the
#    positions) for a batch of prompts of different lengths.
# 2. **Softmax with a temperature** decides how sharp the distribution is, from "always the top
#    token" (greedy) to nearly uniform. A slider lets you go all the way down to T = 0.01 without
#    anything overflowing. The same softmax gives the training loss, **cross-entropy**.
# 3. **Top-k and top-p** cut off the unlikely tail before sampling, and **generation** is the loop
#    that picks a token, appends it and runs again: you write it, and **beam search**, which keeps
#    several candidate continuations instead of one.
# 4. **The cost**: the readable attention scores every query against every key whatever the mask,
#    so its work grows with the square of the length. Kernels that know the mask's shape can skip
#    the blocked part: about half of it for a causal mask, and all but a band of width $w$ for a
#    sliding window ($n \cdot w$ instead of $n^2$). You write a sliding-window attention that computes
#    only that band, and we measure both.
#
# **9 exercises, 19 points, about 115 minutes in all.**

# %% [markdown]
# ## 1 · Set up

# %%
import math

import torch

from course_utils.env import describe_device, pick_device, seed_everything

seed_everything(0)
device = pick_device()
print("computing on", describe_device(device))  # this machine's device: the tests mask it

# %% [markdown]
# ## 2 · The causal mask
#
# A model that predicts the next token must not read it. In the table of scores, row $i$ is the
# query (the token doing the looking) and column $j$ the key (the token looked at); every cell with
# $j > i$ is a peek into the future and gets blocked. In this course a mask is a `torch.bool` tensor
# with **True = may attend**. For *YOUR CAT IS A LOVELY CAT* (✓ allowed, 0 blocked):

# %%
from course_utils import masking

tokens = "YOUR CAT IS A LOVELY CAT".split()
print(masking.mask_table(masking.causal_mask(len(tokens)), tokens))


# %% [markdown]
# The first token sees only itself and the last sees everything: the allowed cells form the lower
# triangle, which is why this mask is also called *triangular*.
#
# ### Exercise: The causal mask (1 point, difficulty 1/3, about 5 min)
#
# Write `causal_mask(n_ctx)`: an `(n_ctx, n_ctx)` tensor of dtype **`torch.bool`** (the form every
# mask in this course takes; 0/1 floats are not accepted), True where the key is at or before the
# query (row = query, column = key).

# %%
def causal_mask(n_ctx: int) -> torch.Tensor:
    # (n_ctx, n_ctx) torch.bool, True where key position <= query position.
    # BEGIN SOLUTION
    return torch.ones(n_ctx, n_ctx, dtype=torch.bool).tril()
    # END SOLUTION


# %%
from course_utils.checks.masking_softmax_temperature import check_causal_mask

check_causal_mask(causal_mask)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("causal_mask")` for a nudge and `hint("causal_mask", 2)` for a stronger one.

# %% [markdown]
# ## 3 · Masking before the softmax = renormalising what is left
#
# How is a blocked cell enforced? Its **score** is set to $-\infty$ *before* the softmax. Since
# $e^{-\infty} = 0$, the blocked keys get weight exactly 0, and the allowed ones are divided by their
# own total only. Take the row of **IS**, with some illustrative weights it would have without a
# mask (we use their logarithms as the scores, so that the unmasked softmax gives them back):

# %%
from course_utils.softmax import masked_softmax, softmax

weights_before = torch.tensor([0.147, 0.132, 0.262, 0.097, 0.218, 0.145], dtype=torch.float64)
scores_is = weights_before.log()
mask_is = masking.causal_mask(len(tokens))[2]  # the row of IS: YOUR, CAT, IS allowed

unmasked = softmax(scores_is)
masked = softmax(masking.apply_mask(scores_is, mask_is))  # -inf in the blocked cells, then softmax
kept_total = weights_before[mask_is].sum()
renormalised = torch.where(mask_is, weights_before, 0.0) / kept_total

print("key:          ", "  ".join(f"{t:>6}" for t in tokens))
print("without mask: ", "  ".join(f"{w:6.3f}" for w in unmasked.tolist()))
print("with mask:    ", "  ".join(f"{w:6.3f}" for w in masked.tolist()))
print(f"kept total {kept_total:.3f}; allowed weights / kept total:", [round(w, 3) for w in renormalised.tolist()])
print("masking to -inf == renormalising:", torch.allclose(masked, renormalised))

# %% [markdown]
# The three future words (A, LOVELY, CAT) drop to 0, and YOUR, CAT and IS share the whole weight in
# the same proportions as before, each divided by the kept total.
#
# ### A row with nothing allowed
#
# What if a query may attend to *nothing*? This happens for real: in a batch of prompts padded on
# the left, a padding position combined with the causal mask may only see padding. Filling with
# $-\infty$ and calling `torch.softmax` then computes $0/0$:

# %%
left_padded = masking.combine_masks(
    masking.causal_mask(4),
    torch.tensor([False, False, True, True]),  # two padding keys, then two real tokens
)
print(left_padded)
print("rows with nothing allowed:", masking.fully_masked_rows(left_padded).tolist())
scores = torch.randn(4, 4)
print("naive:", torch.softmax(scores.masked_fill(~left_padded, float("-inf")), dim=-1)[0].tolist())
print("ours: ", masked_softmax(scores, left_padded)[0].tolist())


# %% [markdown]
# NaN spreads: one NaN weight turns that position's output into NaN, then the next layer's, then the
# loss. The course's `masked_softmax` returns an **all-zero row** for a query with nothing allowed
# (a documented choice; the position then receives no information from attention), and
# `fully_masked_rows` lets a caller find such rows and treat them as errors instead.
#
# ### Exercise: A masked softmax that never returns NaN (2 points, difficulty 2/3, about 10 min)
#
# Write `safe_masked_softmax(scores, mask)`: softmax over the last dimension among the allowed keys
# (`mask` is a `torch.bool` tensor of the same shape, True = may attend), exactly 0 for blocked keys,
# and an **all-zero row** (never NaN) where nothing is allowed. Scores may be as large as ±10,000.

# %%
def safe_masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    # scores (..., k_pos) floats; mask bool, same shape (True = may attend).
    # BEGIN SOLUTION
    filled = scores.masked_fill(~mask, float("-inf"))
    row_max = filled.amax(dim=-1, keepdim=True)
    row_max = torch.where(torch.isinf(row_max), torch.zeros_like(row_max), row_max)
    exps = (filled - row_max).exp()
    total = exps.sum(dim=-1, keepdim=True)
    return torch.where(total > 0, exps / total.clamp_min(1e-300), torch.zeros_like(exps))
    # END SOLUTION


# %%
from course_utils.checks.masking_softmax_temperature import check_safe_masked_softmax

check_safe_masked_softmax(safe_masked_softmax)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("safe_masked_softmax")` for a nudge and `hint("safe_masked_softmax", 2)` for a stronger one.

# %% [markdown]
# ## 4 · Other masks are other shapes
#
# The causal triangle is one choice among several, all built the same way (a boolean table, then
# $-\infty$ before the softmax):
#
# | mask | who may see whom | used for |
# |---|---|---|
# | padding | nobody looks at padding keys | batches of sequences of different lengths |
# | sliding window | only the last $w$ keys, causally | long contexts at a fixed cost per token (Mistral, Gemma) |
# | prefix-LM | everyone sees the whole prefix, then causal | a prompt read in both directions, an answer generated left to right (studied in the T5 paper) |
# | block-diagonal | each token only sees its own document | several short documents packed into one training sequence |

# %%
from course_utils.masking import PRESETS, preset_mask

for name in PRESETS[1:5]:
    print(name)
    print(masking.mask_table(preset_mask(name, len(tokens)), tokens), end="\n\n")

# %% [markdown]
# ### The mask editor
#
# Each button is one (query, key) cell: pressed = may attend. Pick a preset, then click cells on and
# off; the pattern (from fixed scores) is recomputed and redrawn each time, and the readout lists
# every row. Switch off all of one row and you get a **warning** instead of NaN.

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: a widget draws into an Output area, which nbval cannot follow.
from course_utils.viz.mask_editor import mask_editor

demo_scores = torch.randn(len(tokens), len(tokens), generator=torch.Generator().manual_seed(0))
demo_scores[2] = scores_is.float()  # the IS row from section 3
mask_editor(tokens, demo_scores, preset="causal")

# %% [markdown]
# ### A batch of prompts of different lengths
#
# To generate for several prompts at once, they go into one `(batch, pos)` tensor, so the shorter ones
# need padding. For generation the padding goes on the **left**: then every prompt ends in the last
# column, and the next token of every prompt is predicted there and appended after it. Two things must
# make the padding invisible. The mask hides the padding keys (on top of the causal mask, so it is one
# `(pos, pos)` table per prompt), and the **positions** given to the position embedding count from 0
# at each prompt's first real token, so that a prompt sees the same positions as it would alone. A
# padding query may then see nothing at all: the empty row of section 3, which the safe softmax turns
# into zeros.
#
# ### Exercise: Left-pad a batch of prompts (2 points, difficulty 2/3, about 10 min)
#
# Write `left_pad_batch(prompts, pad_id)` for a list of prompts (each a list of token ids). Return
# `(ids, mask, positions)`: `ids` of shape `(batch, pos)` (`pos` = the longest prompt's length), each
# prompt with `pad_id` in front of it; `mask` a `torch.bool` tensor of shape `(batch, pos, pos)`, True
# where query $i$ may attend to key $j$ (causal, and never a padding key); `positions` of shape
# `(batch, pos)`, 0 at each prompt's first real token, then 1, 2, ..., and 0 on padding. Careful: a
# prompt may contain the token `pad_id` itself.

# %%
def left_pad_batch(prompts: list[list[int]], pad_id: int):
    # -> ids (batch, pos) long, mask (batch, pos, pos) bool, positions (batch, pos) long
    # BEGIN SOLUTION
    n = max(len(p) for p in prompts)
    ids = torch.tensor([[pad_id] * (n - len(p)) + list(p) for p in prompts])  # (batch, pos)
    real = torch.tensor([[False] * (n - len(p)) + [True] * len(p) for p in prompts])  # (batch, pos)
    positions = (real.cumsum(dim=-1) - 1).clamp_min(0)  # (batch, pos): 0 at each prompt's first real token
    mask = torch.ones(n, n, dtype=torch.bool).tril() & real[:, None, :]  # (batch, q_pos, k_pos)
    return ids, mask, positions
    # END SOLUTION


# %%
from course_utils.checks.masking_softmax_temperature import check_left_pad_batch

check_left_pad_batch(left_pad_batch)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("left_pad_batch")` for a nudge and `hint("left_pad_batch", 2)` for a stronger one.
#
# The course's `masking.left_padded_batch` does the same. Padding *YOUR CAT IS* and *A CAT* (the id is
# each word's place in `tokens`; `-1` marks padding here): in the second prompt, the padding query sees
# nothing and its softmax row is all zeros, and *A* gets position 0 as if it came first.

# %%
prompt_words = [["YOUR", "CAT", "IS"], ["A", "CAT"]]
batch_ids, batch_mask, batch_positions = masking.left_padded_batch(
    [[tokens.index(w) for w in p] for p in prompt_words], pad_id=-1
)
print("ids:      ", batch_ids.tolist())
print("positions:", batch_positions.tolist())
print(masking.mask_table(batch_mask[1], ["pad", "A", "CAT"]))
print("softmax rows of the second prompt:", masked_softmax(torch.zeros(3, 3), batch_mask[1]).tolist())

# %% [markdown]
# ## 5 · Softmax, from logits to next-token probabilities
#
# At the top of the model, the last position's vector becomes one score (logit) per vocabulary
# token, and a softmax turns the scores into probabilities. With a pretend four-token vocabulary:

# %%
from course_utils import sampling

vocab = ["CAT", "DOG", "IS", "LOVELY"]
logits = torch.tensor([6.2, 4.9, 2.1, 1.0], dtype=torch.float64)
probs = sampling.next_token_distribution(logits)
print(f"{'token':<8}{'logit':>7}{'e^logit':>10}{'probability':>13}")
for tok, z, p in zip(vocab, logits.tolist(), probs.tolist()):
    print(f"{tok:<8}{z:>7.1f}{math.exp(z):>10.1f}{p:>13.3f}")
print(f"{'total':<8}{'':>7}{logits.exp().sum().item():>10.1f}{probs.sum().item():>13.3f}")

# %% [markdown]
# The exponential makes differences in score act as **ratios** of probability: two tokens whose
# logits differ by 2 are $e^2$ times apart, whatever the other scores are.

# %%
two = sampling.next_token_distribution(torch.tensor([5.0, 3.0, 0.0, -1.0], dtype=torch.float64))
print(f"p(first) / p(second) = {two[0] / two[1]:.3f};  e^2 = {math.exp(2):.3f}")

# %% [markdown]
# ### The training loss: cross-entropy
#
# Training scores these probabilities against the token that really came next. The loss at one
# position is $-\ln p(\text{right token})$: 0 if the model was sure and right, larger the less
# probability it gave the right token. If the next word really was CAT (the rounded probability
# 0.772 gives 0.259 to three decimals; the unrounded one, a hair larger, gives 0.258):

# %%
p_cat = probs[vocab.index("CAT")].item()
print(f"p(CAT) = {p_cat:.5f};  loss = -ln p(CAT) = {-math.log(p_cat):.4f}")
print(f"from the rounded probability: -ln {p_cat:.3f} = {-math.log(round(p_cat, 3)):.4f}")
p_lovely = probs[vocab.index("LOVELY")].item()
print(f"had the next word been LOVELY: -ln {p_lovely:.4f} = {-math.log(p_lovely):.3f}")


# %% [markdown]
# A whole batch is scored by the **mean** of that loss over its positions. Computing it as
# `-log(softmax(logits)[target])` works on friendly numbers but overflows for large logits; the
# stable way never forms the probabilities: $-\ln p_t = \ln \sum_j e^{z_j} - z_t$, with the maximum
# shifted out of the sum (the log-sum-exp trick, the same shift as the stable softmax).
#
# ### Exercise: Cross-entropy from logits (2 points, difficulty 2/3, about 10 min)
#
# Write `cross_entropy(logits, targets)`: `logits` is `(n, d_vocab)` (one row per position), `targets`
# is `(n,)` of token ids (`torch.long`); return the mean over the rows of $-\ln p(\text{target})$, in
# nats (natural log), as a number (a 0-d tensor or a Python float). It must stay finite for logits in
# the thousands. PyTorch's `torch.nn.functional.cross_entropy` is the oracle the check compares with;
# write it yourself here.

# %%
def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    # logits (n, d_vocab), targets (n,) long -> mean of -ln p(target), a 0-d tensor
    # BEGIN SOLUTION
    top = logits.amax(dim=-1, keepdim=True)
    log_total = top.squeeze(-1) + (logits - top).exp().sum(dim=-1).log()
    right = logits.gather(-1, targets[:, None]).squeeze(-1)
    return (log_total - right).mean()
    # END SOLUTION


# %%
from course_utils.checks.masking_softmax_temperature import check_cross_entropy

check_cross_entropy(cross_entropy)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("cross_entropy")` for a nudge and `hint("cross_entropy", 2)` for a stronger one.

# %%
loss = sampling.cross_entropy(logits[None], torch.tensor([vocab.index("CAT")]))
print(f"course's cross_entropy on the worked example: {loss.item():.3f}")
print("same as torch.nn.functional.cross_entropy:", torch.allclose(loss, torch.nn.functional.cross_entropy(logits[None], torch.tensor([0]))))

# %% [markdown]
# The course's softmax subtracts each row's maximum before exponentiating (notebook 00), so even
# logits of ±10,000 are fine:

# %%
huge = torch.tensor([10_000.0, 9_998.0, -10_000.0])
print("literal exp(x)/sum:", (huge.exp() / huge.exp().sum()).tolist())
print("stable softmax:    ", [round(p, 4) for p in softmax(huge).tolist()])

# %% [markdown]
# ## 6 · Temperature
#
# Dividing the logits by a temperature $T$ before the softmax,
# $p_i = e^{z_i/T} / \sum_j e^{z_j/T}$, reshapes the distribution without changing the order of
# the tokens: $T < 1$ stretches the gaps (sharper), $T > 1$ shrinks them (flatter). The entropy (in
# nats; 0 for a certain outcome, $\ln 4 \approx 1.386$ for four equally likely tokens) measures the
# spread:

# %%
print(f"{'T':>6}  " + "".join(f"{t:>8}" for t in vocab) + f"{'entropy':>10}")
for t in (0.25, 0.5, 1.0, 2.0, 4.0, 10.0):
    p = sampling.next_token_distribution(logits, t)
    print(f"{t:>6}  " + "".join(f"{x:8.3f}" for x in p.tolist()) + f"{sampling.entropy(p).item():10.3f}")
print(f"uniform entropy ln 4 = {math.log(4):.3f}")

# %% [markdown]
# ### T → 0 is greedy, and T = 0 is handled explicitly
#
# As $T$ shrinks, all the weight moves to the largest logit: the limit is **greedy decoding** (always
# pick the top token). But $T = 0$ itself cannot be put in the formula, which divides by $T$. And a
# small $T$ is a trap for a literal implementation: $6.2 / 0.01$ is far beyond the largest exponent
# float32 can hold (both printed below), so $e^{6.2/T}$ overflows to inf and inf/inf is NaN. Browser demos that
# compute softmax literally have to stop their temperature slider well above zero for this reason.
# At the other end, most hosted language-model APIs accept temperatures only up to 2; the widget
# below goes further so you can watch the distribution flatten towards uniform.

# %%
small_t = 0.01
scaled = logits.float() / small_t
float32_max = torch.finfo(torch.float32).max
print(f"6.2 / {small_t} = {6.2 / small_t:.0f}; float32 max = {float32_max:.3g} = e^{math.log(float32_max):.1f}")
print("literal at T=0.01:", (scaled.exp() / scaled.exp().sum()).tolist())
print("course  at T=0.01:", sampling.next_token_distribution(logits.float(), small_t).tolist())
print("course  at T=0   :", sampling.next_token_distribution(logits.float(), 0.0).tolist(), "(the greedy branch)")
print("greedy choice:", vocab[sampling.greedy(logits)])


# %% [markdown]
# The library subtracts the maximum *before* dividing by $T$, so every scaled score is $\le 0$ and
# nothing can overflow; $T = 0$ takes a separate branch that returns a one-hot distribution on the
# top token. A negative, infinite or NaN temperature raises a `ValueError` that says what was
# expected.
#
# ### Exercise: Softmax with a temperature (2 points, difficulty 2/3, about 10 min)
#
# Write `softmax_with_temperature(logits, temperature)`: probabilities over the last dimension,
# stable for small $T$, and for `temperature == 0` a one-hot row on the largest logit. **Tie-break
# rule**: when several logits share the maximum, the one-hot goes to the **first** of them (the
# lowest index, as `torch.argmax` picks). The one-hot may be floats of any dtype; a batch of rows
# `(..., d_vocab)` must work.

# %%
def softmax_with_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    # BEGIN SOLUTION
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    scaled = (logits - logits.amax(dim=-1, keepdim=True)) / temperature
    exps = scaled.exp()
    return exps / exps.sum(dim=-1, keepdim=True)
    # END SOLUTION


# %%
from course_utils.checks.masking_softmax_temperature import check_softmax_with_temperature

check_softmax_with_temperature(softmax_with_temperature)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("softmax_with_temperature")` for a nudge and `hint("softmax_with_temperature", 2)` for a stronger one.

# %% [markdown]
# ## 7 · Top-k and top-p
#
# Sampling from the full distribution occasionally picks something from the long tail of unlikely
# tokens. Two common filters remove the tail first and renormalise what is left:
#
# * **top-k** keeps the $k$ most likely tokens;
# * **top-p** (nucleus) keeps the most likely tokens until their total probability reaches $p$,
#   including the token that crosses $p$, so the top token always survives.
#
# Applied in that order (temperature, then top-k, then top-p), on the worked example at $T = 2$:

# %%
hot = sampling.next_token_distribution(logits, 2.0)
for label, kwargs in [("T=2", {}), ("T=2, top-k 2", {"top_k": 2}), ("T=2, top-p 0.9", {"top_p": 0.9}),
                      ("T=2, top-p 0.5", {"top_p": 0.5})]:
    p = sampling.next_token_distribution(logits, 2.0, **kwargs)
    print(f"{label:<16}", "  ".join(f"{t} {x:.3f}" for t, x in zip(vocab, p.tolist())))

# %% [markdown]
# Bad settings are refused rather than silently producing NaN: `top_p` must lie in $(0, 1]$ and
# `top_k` between 1 and the vocabulary size.

# %%
for bad in ({"top_p": 0.0}, {"top_p": 1.5}, {"top_k": 0}, {"top_k": 5}):
    try:
        sampling.next_token_distribution(logits, 1.0, **bad)
    except ValueError as err:
        print(f"{bad}: ValueError: {err}")


# %% [markdown]
# ### Exercise: Top-k and top-p filtering (2 points, difficulty 3/3, about 15 min)
#
# Write `top_k_top_p_filter(probs, top_k, top_p)`: either filter may be `None` (skipped); after top-k
# renormalise, then apply top-p to that renormalised distribution, and renormalise again. Top-p keeps
# a token while the probability *before* it (in descending order) is below $p$, so the token that
# crosses $p$ stays. Work on the last dimension; a batch of rows should work too. (The check's
# distributions have no ties, so which of two equal tokens top-k keeps does not matter, and no mass
# before a token lands exactly on $p$, where float rounding alone would decide between `<` and `<=`.)

# %%
def top_k_top_p_filter(probs: torch.Tensor, top_k, top_p) -> torch.Tensor:
    # BEGIN SOLUTION
    if top_k is not None:
        rank = probs.argsort(dim=-1, descending=True, stable=True).argsort(dim=-1)
        probs = probs * (rank < top_k)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    if top_p is not None:
        sorted_probs, order = probs.sort(dim=-1, descending=True, stable=True)
        before = sorted_probs.cumsum(dim=-1) - sorted_probs
        keep = torch.zeros_like(before, dtype=torch.bool).scatter(-1, order, before < top_p)
        probs = probs * keep
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs
    # END SOLUTION


# %%
from course_utils.checks.masking_softmax_temperature import check_top_k_top_p_filter

check_top_k_top_p_filter(top_k_top_p_filter)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("top_k_top_p_filter")` for a nudge and `hint("top_k_top_p_filter", 2)` for a stronger one.

# %% [markdown]
# Sampling then draws from the filtered distribution. With a seeded generator the draws are
# reproducible, and over many draws their frequencies approach the probabilities:

# %%
gen = torch.Generator().manual_seed(0)
draws = sampling.sample_next_token(logits.expand(10_000, 4), temperature=1.0, generator=gen)
share = torch.bincount(draws, minlength=4) / 10_000
print("probability:", [round(p, 3) for p in probs.tolist()])
print("share of 10,000 draws:", [round(s, 3) for s in share.tolist()])

# %% [markdown]
# ### Generation: pick, append, repeat
#
# A model predicts one token at a time. To write a sentence, pick the next token from the
# distribution, append it to the input, run the model on the longer input, and repeat until an
# end-of-sequence token or a length limit. `sampling.generate` is that loop; any function from the
# ids so far to next-token logits can drive it. Here the "model" is a table of word-pair counts from
# a few made-up sentences (a bigram model; `.` ends a sentence):

# %%
words = "YOUR CAT IS A LOVELY CAT . A CAT IS A DOG . YOUR DOG IS A LOVELY DOG . A CAT IS LOVELY .".split()
gen_vocab = sorted(set(words))
ids = torch.tensor([gen_vocab.index(w) for w in words])
pair_counts_table = torch.ones(len(gen_vocab), len(gen_vocab))  # add-one smoothing
pair_counts_table.index_put_((ids[:-1], ids[1:]), torch.ones(len(ids) - 1), accumulate=True)
bigram_logits = pair_counts_table.log()  # row = current word, column = next word


def next_word_logits(seq):
    return bigram_logits[seq]  # (pos, d_vocab): one row per position, like a model's output


start, stop = [gen_vocab.index("YOUR")], gen_vocab.index(".")
for seed, t in enumerate((0.0, 1.0, 1.0)):
    out = sampling.generate(next_word_logits, start, 10, temperature=t, eos_id=stop, generator=torch.Generator().manual_seed(seed))
    print(f"T={t}, seed {seed}:", " ".join(gen_vocab[i] for i in out))

# %% [markdown]
# Greedy decoding (T = 0) writes the same text every time, and here it goes round in a circle until
# the length limit stops it (always taking the most likely next word is a known way to get
# repetitive text); sampling writes a different text for every seed. A real model is driven the same
# way (notebook 09), with a KV cache so that the earlier positions are not recomputed at every step.
#
# ### Exercise: The generation loop (2 points, difficulty 2/3, about 15 min)
#
# Write `generate_tokens(next_token_logits, prompt, max_new_tokens, temperature, top_k, top_p, eos_id,
# generator)`. `next_token_logits(ids)` takes the 1-d tensor of the ids so far and returns logits of
# shape `(pos, d_vocab)`, one row per position, like a model (the bigram table above returns its rows
# for every word); the **last** row predicts the next token. At each step, turn that row into the
# distribution with **your** `softmax_with_temperature` and then `top_k_top_p_filter` from above, draw
# one token with `torch.multinomial(probs, 1, generator=generator)`, and append it. Stop after
# `max_new_tokens` new tokens, or right after appending `eos_id` (when it is not `None`). Return prompt
# and new tokens as one list of ints. The check runs the course's `sampling.generate` with a generator
# seeded the same way, so a right loop writes the same tokens, one for one.

# %%
def generate_tokens(next_token_logits, prompt, max_new_tokens, temperature, top_k, top_p, eos_id, generator):
    # BEGIN SOLUTION
    ids = list(prompt)
    for _ in range(max_new_tokens):
        logits = next_token_logits(torch.tensor(ids))[-1]  # the last position predicts the next token
        probs = top_k_top_p_filter(softmax_with_temperature(logits, temperature), top_k, top_p)
        token = int(torch.multinomial(probs, 1, generator=generator))
        ids.append(token)
        if token == eos_id:
            break
    return ids
    # END SOLUTION


# %%
from course_utils.checks.masking_softmax_temperature import check_generate_tokens

check_generate_tokens(generate_tokens)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("generate_tokens")` for a nudge and `hint("generate_tokens", 2)` for a stronger one.

# %% [markdown]
# ### Beam search: keep several candidates
#
# Greedy decoding takes the likeliest *next* token, which need not start the likeliest *sequence*: a
# likely word can lead into a place where everything after it is unlikely. The probability of a
# sequence is the product of its tokens' probabilities, so its logarithm, the **score**, is the sum
# of their log-probabilities. **Beam search** keeps the `beam_width` best-scoring partial sequences
# (the beams): at each step it extends every beam by every token of the vocabulary, scores all these
# candidates, and keeps the best `beam_width` of them. A width of 1 is greedy decoding; a width large
# enough to keep every sequence finds the likeliest one, which only a listing of all sequences could
# otherwise promise (impossible for a real vocabulary). Translation and summarisation systems used beam
# search for years; open-ended text generation mostly samples instead, because the likeliest text
# tends to be bland and repetitive.
#
# ### Exercise: Beam search (3 points, difficulty 3/3, about 20 min)
#
# Write `beam_search(next_token_logits, prompt, max_new_tokens, beam_width, eos_id=None)`, with the
# model interface of the previous exercise. Start from one beam, the prompt, with score 0. At each of
# `max_new_tokens` steps, every beam becomes `d_vocab` candidates, one token longer, each scored by the
# beam's score plus the natural log of that token's probability (`log_softmax` of the last row of
# logits). A beam whose last new token is `eos_id` is **finished**: it goes into the candidates as it
# is, unchanged, and competes with its score. Keep the `beam_width` best candidates, best first (ties:
# the candidate met first wins, which a stable sort gives; the check's scores have none). Return the
# best beam after the last step as `(ids, score)`, ids a list with the prompt in front.

# %%
def beam_search(next_token_logits, prompt, max_new_tokens, beam_width, eos_id=None):
    # BEGIN SOLUTION
    beams = [(list(prompt), 0.0)]  # (ids, sum of the new tokens' log-probabilities)
    for _ in range(max_new_tokens):
        candidates = []
        for ids, score in beams:
            if len(ids) > len(prompt) and ids[-1] == eos_id:
                candidates.append((ids, score))  # finished: carried over unchanged
                continue
            log_probs = next_token_logits(torch.tensor(ids))[-1].log_softmax(dim=-1)
            for token, log_p in enumerate(log_probs.tolist()):
                candidates.append((ids + [token], score + log_p))
        beams = sorted(candidates, key=lambda c: c[1], reverse=True)[:beam_width]
    return beams[0]
    # END SOLUTION


# %%
from course_utils.checks.masking_softmax_temperature import check_beam_search

check_beam_search(beam_search)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("beam_search")` for a nudge and `hint("beam_search", 2)` for a stronger one.
#
# On the bigram table, three words after *LOVELY*: greedy decoding, the course's beam search
# (`beam_search.beam_search`, the same rules as yours) with 2 and 4 beams, and the likeliest sequence of
# all, found by scoring every one of the $7^3$ possible continuations (`beam_search.exhaustive_search`).
# The score is the log of the sequence's probability:

# %%
from course_utils import beam_search as search
from course_utils.beam_search import exhaustive_search

after_lovely = [gen_vocab.index("LOVELY")]
first_step = bigram_logits[after_lovely[0]].softmax(dim=-1)
print("after LOVELY:", ", ".join(f"{w} {p:.3f}" for w, p in zip(gen_vocab, first_step.tolist())))
for label, (seq, score) in [
    ("greedy", search.beam_search(next_word_logits, after_lovely, 3, 1)),
    ("2 beams", search.beam_search(next_word_logits, after_lovely, 3, 2)),
    ("4 beams", search.beam_search(next_word_logits, after_lovely, 3, 4)),
    (f"all {len(gen_vocab)}^3", exhaustive_search(next_word_logits, after_lovely, 3, len(gen_vocab))),
]:
    print(f"{label:>8}: {' '.join(gen_vocab[i] for i in seq):<28} score {score:.3f}  probability {math.exp(score):.4f}")

# %% [markdown]
# After *LOVELY*, the words `.`, *CAT* and *DOG* are equally likely; greedy decoding takes the first
# of them, `.`, after which nothing is very likely. Two beams keep *CAT* alive as well, and its
# continuation wins: the same sequence as the full search.

# %% [markdown]
# ### The temperature widget
#
# Drag $T$ on a log scale from 0.01 to 10, or tick **greedy**; set top-k and top-p. The bars show the
# probabilities and, beside them, where 1,000 seeded samples landed; the readout gives each token's
# probability, the entropy and $T$.

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: a widget draws into an Output area, which nbval cannot follow.
from course_utils.viz.temperature import temperature_widget

temperature_widget(vocab, logits)

# %% [markdown]
# ## 8 · The cost: what a mask saves, and when
#
# The readable attention from notebook 03 builds the whole $n \times n$ table of scores whatever the
# mask: the blocked cells are computed and then set to $-\infty$. For that code a mask saves nothing,
# and the number of token pairs it scores grows as $n^2$:

# %%
from course_utils.attention import fit_exponent, measure_attention, pair_counts

for row in pair_counts([1_000, 4_000, 32_000]):
    print(f"{row['n_ctx']:>7,} tokens  {row['pairs']:>15,} pairs  {row['relative']:>7,.0f}×")

# %% [markdown]
# The last column is the square of the length ratio: each step of the table multiplies the text by
# the ratio in the first column and the work by its square. Let us measure it on this machine: time
# the reference attention (scores, causal mask, softmax, weighted sum) for one head with
# $d_\text{head} = 64$ at growing lengths, and fit the exponent $b$ in
# $\text{time} \approx a \cdot n^b$ on a log-log plot. (Timings vary from run to run, so those cells
# are not compared by the course's tests; on a busy machine the exponent can wobble around 2.)

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: timings depend on the machine and its load.
lengths = [512, 768, 1024, 1536, 2048, 3072]
runs = measure_attention(lengths, d_head=64, n_heads=1, device=device, repeats=3)
for r in runs:
    print(f"n_ctx {r['n_ctx']:>5}: {1000 * r['seconds']:8.2f} ms")
time_exponent = fit_exponent(lengths, [r["seconds"] for r in runs])
print(f"fitted time exponent: {time_exponent:.2f}")

# %%
from course_utils.viz.scaling import plot_scaling

fig = plot_scaling(lengths, [r["seconds"] for r in runs])

# %% [markdown]
# Memory is the other half. The pattern tensor alone holds $n^2$ numbers per head; its size does
# not depend on timing noise, so it is exactly quadratic:

# %%
for r in runs:
    print(f"n_ctx {r['n_ctx']:>5}: pattern {r['pattern_bytes'] / 2**20:7.2f} MiB")
print(f"fitted memory exponent: {fit_exponent(lengths, [r['pattern_bytes'] for r in runs]):.2f}")

# %% [markdown]
# ### Kernels that know the mask's shape skip work
#
# Fused kernels (FlashAttention, and PyTorch's `scaled_dot_product_attention`) never store the full
# pattern, which saves the memory, and they work through the table **tile by tile** (blocks of, say,
# 64 queries × 64 keys). A tile in which every cell is blocked need not be computed at all, *if the
# kernel knows it is blocked without reading it*: told `is_causal=True`, a kernel skips the tiles above
# the diagonal. Given the same causal mask as an $n \times n$ boolean table, it has to read the
# table and gains nothing. A **sliding window** of $w$ keys leaves only a band of tiles, so its work
# grows as $n \cdot w$, linearly in the length. The share of 64 × 64 tiles each mask touches:

# %%
from course_utils.attention import scaled_dot_product_attention
from course_utils.attention import measure_mask_savings, visited_tiles

n_long, window = 4096, 128
tiles = {"causal": visited_tiles(masking.causal_mask(n_long)),
         f"sliding window of {window}": visited_tiles(masking.sliding_window_mask(n_long, window))}
for name, share in tiles.items():
    print(f"{name:>24}: {share:.3f} of the tiles at n_ctx = {n_long:,}")

# %% [markdown]
# ### Exercise: Sliding-window attention, band only (3 points, difficulty 3/3, about 20 min)
#
# Write `sliding_window_attention(q, k, v, window)` that computes only the band. `q`, `k`, `v` have
# shape `(..., pos, d_head)` (the same positions: self-attention); query $i$ attends to keys
# $i - w + 1$ to $i$ (fewer at the start), with the usual $1/\sqrt{d_\text{head}}$ scale; the output has
# shape `(..., pos, d_head)`. Never build the `pos × pos` table: take the queries in blocks of `window`,
# and score each block only against the keys that its queries may see, from `window - 1` positions
# before the block's start to its end, masking what is outside the band. The check compares with the
# full table under `sliding_window_mask` and counts the matrix-multiply FLOPs of your call (as PyTorch's
# `FlopCounterMode` counts them): it accepts at most what the blocked approach needs.

# %%
def sliding_window_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int) -> torch.Tensor:
    # q, k, v (..., pos, d_head) -> (..., pos, d_head); query i sees keys i - window + 1 .. i
    # BEGIN SOLUTION
    pos = q.shape[-2]
    out = torch.empty_like(v)
    for start in range(0, pos, window):
        stop = min(start + window, pos)
        first = max(start - window + 1, 0)  # the earliest key a query of this block may see
        scores = q[..., start:stop, :] @ k[..., first:stop, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        query_pos = torch.arange(start, stop, device=q.device)[:, None]
        key_pos = torch.arange(first, stop, device=q.device)[None, :]
        allowed = (key_pos <= query_pos) & (query_pos - key_pos < window)
        scores = scores.masked_fill(~allowed, float("-inf"))  # (..., block, keys)
        out[..., start:stop, :] = scores.softmax(dim=-1) @ v[..., first:stop, :]
    return out
    # END SOLUTION


# %%
from course_utils.checks.masking_softmax_temperature import check_sliding_window_attention

check_sliding_window_attention(sliding_window_attention)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("sliding_window_attention")` for a nudge and `hint("sliding_window_attention", 2)` for a stronger one.
#
# The course's `attention_scaling.sliding_window_attention` computes the same band in one batched
# step: it pads the queries to whole blocks and gives every block the $2w$ keys of its own block and
# the previous one, masked to the band. On 300 positions with a window of 32 it agrees with the full
# table, and the FLOP counter shows the saving (scores and mixing, 2 FLOPs per multiply-add):

# %%
from torch.utils.flop_counter import FlopCounterMode

from course_utils.attention import scaling as attention_scaling

n_band, w_band, d_band = 300, 32, 16
q_w, k_w, v_w = torch.randn(3, 1, n_band, d_band, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
full_table = scaled_dot_product_attention(q_w, k_w, v_w, masking.sliding_window_mask(n_band, w_band))
with FlopCounterMode(display=False) as flops:
    banded = attention_scaling.sliding_window_attention(q_w, k_w, v_w, w_band)
print(f"{n_band} positions, window {w_band}: band only == full table with the window mask:", torch.allclose(banded, full_table))
print(f"FLOPs: band {flops.get_total_flops():,}; full table 4·n²·d = {4 * n_band**2 * d_band:,}")

# %% [markdown]
# Now the clock: PyTorch's fused kernel at $n_\text{ctx}$ = 4,096 on one head with no mask, told
# `is_causal=True`, given the causal mask as a boolean table, and the windowed version (each time
# relative to no mask; the variants run in turn so a busy machine slows them alike):

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: timings depend on the machine and its load.
savings = measure_mask_savings(n_long, window, d_head=64, device=device)
for name, row in savings.items():
    print(f"{name:>16}: {1000 * row['seconds']:8.1f} ms   {row['relative']:5.2f} × the time of no mask")

# %% [markdown]
# On a quiet machine the causal run takes close to the share of tiles it visits (about half), the
# boolean table saves nothing (reading it costs extra), and the window takes a small
# fraction, a fraction that keeps shrinking as $n$ grows because its work is linear in $n$. So "a
# mask does not make attention cheaper" is true of the reference code and false of a kernel that is
# told the mask's shape. A full causal model still does quadratic work, only half as much; that is
# why long contexts are expensive, and why some long-context models (Mistral, Gemma) use sliding
# windows in some or all of their layers.
#
# ## Next
#
# **05 · multi-head attention** runs several attentions side by side and trains a tiny model whose
# heads learn different jobs.
