# ---
# jupyter:
#   course:
#     exercises:
#       attention_head:
#         difficulty: 2
#         minutes: 15
#         points: 3
#       attention_head_backward:
#         difficulty: 3
#         minutes: 20
#         points: 3
#       attention_scores:
#         difficulty: 1
#         minutes: 5
#         points: 1
#       blockwise_attention_backward:
#         difficulty: 3
#         minutes: 25
#         points: 3
#       blockwise_attention:
#         difficulty: 3
#         minutes: 20
#         points: 3
#       cross_attention_head:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       sdp_attention:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       sdp_attention_backward:
#         difficulty: 3
#         minutes: 25
#         points: 3
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
# # 03 · Queries, keys, values and scaled dot-product attention
#
# After notebook 02 each position holds one vector: what the token is, plus where it sits. Each
# vector still knows nothing about its neighbours. Attention is the step that lets positions read
# from each other, and it is the only place in a transformer where they do.
#
# In this notebook you will:
#
# 1. turn each token vector into a **query**, a **key** and a **value** with three matrices;
# 2. follow a three-token example by hand: scores, the $\sqrt{d_k}$ scale, softmax, weighted values;
# 3. write attention scores and scaled dot-product attention yourself, then attention over blocks of
#    keys with an online softmax, the way FlashAttention computes it;
# 4. measure *why* the scores are divided by $\sqrt{d_k}$, watch softmax saturate with a slider, and write
#    attention's backward pass by hand to see where the gradient goes, then block by block as FlashAttention-2
#    does;
# 5. see why queries and keys need different matrices, and build a cross-attention head;
# 6. package one attention head as a PyTorch module, write its backward pass down to the weights, and
#    count what its value/output matrices save.
#
# **8 exercises, 20 points, about 130 minutes in all.** Each heading gives its points, difficulty and minutes.

# %% [markdown]
# ## 1 · Set up

# %%
import math

import matplotlib.pyplot as plt
import torch

from course_utils.env import describe_device, pick_device, seed_everything

seed_everything(0)
device = pick_device()
print("computing on", describe_device(device))  # this machine's device: the tests mask it

# %% [markdown]
# ## 2 · Three roles for every token
#
# Each row $x$ of the input is multiplied by three learned matrices, each `d_model × d_k`:
#
# * the **query** $q = x W_Q$: what this position is looking for;
# * the **key** $k = x W_K$: what this position offers to others who look;
# * the **value** $v = x W_V$: what this position hands over when someone attends to it.
#
# **Names.** $d_k$ is the width of the queries and keys, the name the original paper uses; the values'
# width is $d_v$. In this course's code and exercises, as in interpretability libraries, both are called
# `d_head`, the width of one attention head: `d_k`, `d_v` and `d_head` are the same number here.
#
# A tiny example: three tokens *the cat sat*, `d_model = 4`, `d_k = 2`, with small integer weights
# chosen so you can follow every number.

# %%
tokens = ["the", "cat", "sat"]
X = torch.tensor([[1, 0, 1, 0],
                  [0, 2, 0, 2],
                  [1, 1, 1, 1]], dtype=torch.float64)          # (pos, d_model)
W_Q = torch.tensor([[1, 0], [0, 1], [1, 0], [0, 1]], dtype=torch.float64)   # (d_model, d_k)
W_K = torch.tensor([[0, 1], [1, 0], [0, 1], [1, 0]], dtype=torch.float64)
W_V = torch.tensor([[1, 0], [0, 1], [0, 0], [0, 0]], dtype=torch.float64)
Q, K, V = X @ W_Q, X @ W_K, X @ W_V                                       # each (pos, d_k)
print(f"{'token':>5}  {'x':>14}  {'q':>8}  {'k':>8}  {'v':>8}")
for t, x, q, k, v in zip(tokens, X.int().tolist(), Q.int().tolist(), K.int().tolist(), V.int().tolist()):
    print(f"{t:>5}  {str(x):>14}  {str(q):>8}  {str(k):>8}  {str(v):>8}")

# %% [markdown]
# ## 3 · Attention, step by step, for the query of *cat*
#
# 1. **Score** every key against the query: the dot product $q \cdot k_j$.
# 2. **Scale** by $1/\sqrt{d_k}$ (section 4 says why).
# 3. **Softmax** the scaled scores into weights that are positive and sum to 1.
# 4. **Mix** the values: the output is $\sum_j w_j v_j$, a weighted average of the value rows.

# %%
q_cat = Q[1]
d_k = Q.shape[-1]
raw = K @ q_cat                                    # (k_pos,)
scaled = raw / math.sqrt(d_k)
weights = torch.softmax(scaled, dim=-1)
print(f"query of cat: {q_cat.tolist()},  d_k = {d_k},  sqrt(d_k) = {math.sqrt(d_k):.3f}")
print(f"{'key':>5} {'k':>11} {'q·k':>5} {'÷√d_k':>7} {'weight':>7}   weighted value")
for t, k, r, s, w, v in zip(tokens, K.int().tolist(), raw.tolist(), scaled.tolist(), weights.tolist(), V):
    print(f"{t:>5} {str(k):>11} {r:5.0f} {s:7.2f} {w:7.3f}   {[round(x, 3) for x in (w * v).tolist()]}")
out_cat = weights @ V
print("output for cat:", [round(x, 3) for x in out_cat.tolist()])

# %% [markdown]
# Where the weights come from: exponentiate the scaled scores and divide by their total (the cell
# below). The score of *the* and *sat* is exactly $8/\sqrt 2 = 5.657\ldots$; the table above shows it
# rounded to 5.66. Exponentiating the rounded number gives a slightly larger result than exponentiating
# the exact one, because rounding added about 0.003 to the exponent and $e^{x + 0.003} = e^x \times
# e^{0.003}$, about 0.3% more. Both are printed; the weights agree to three decimals either way. The
# same goes for *cat*'s weighted value: its exact weight times its value 2 rounds to 0.003, while the
# weight rounded first (0.002) times 2 is 0.004, which is what you get working by hand.
#
# *The* and *sat* share almost all of the weight and *cat* keeps a sliver for itself, even though it is
# the query's own token: its key points in a different direction from its query, which is only
# possible because $W_Q \ne W_K$ (section 5).

# %%
exact = scaled[0].item()                          # 8 / sqrt(2), unrounded
for label, s in (("exact score", exact), ("score rounded to 2 decimals", round(exact, 2))):
    e = math.exp(s)
    print(f"{label:>27}: e^{s:.4f} = {e:.1f},  total = {e:.1f} + 1.0 + {e:.1f} = {2 * e + 1:.1f},  "
          f"weights {e / (2 * e + 1):.3f} and {1 / (2 * e + 1):.3f}")
cat_weight, cat_value = weights[1].item(), V[1, 1].item()
print(f"cat's weighted value: exact weight {cat_weight:.5f} × {cat_value:.0f} = {cat_weight * cat_value:.5f} -> {cat_weight * cat_value:.3f};"
      f"  rounded weight {round(cat_weight, 3)} × {cat_value:.0f} = {round(cat_weight, 3) * cat_value:.3f}")

# %% [markdown]
# All queries at once is a pair of matrix products: $\operatorname{softmax}(QK^\top/\sqrt{d_k})\,V$.
# `course_utils.attention.dot_product` has the readable version, and its row for *cat* matches the hand computation.

# %%
from course_utils.attention import dot_product as attention  # the reference implementations
from course_utils.attention import attention_pattern, scaled_dot_product_attention
from course_utils.viz.attention import plot_pattern
from course_utils.viz.style import course_style

pattern = attention_pattern(Q, K)
print("scores (÷√d_k):\n", attention.attention_scores(Q, K).round(decimals=2))
print("output:\n", scaled_dot_product_attention(Q, K, V).round(decimals=3))
with course_style():  # the course's figure style: transparent, grey ink, readable in light and dark themes
    fig, ax = plt.subplots(figsize=(3.6, 3.2))
    plot_pattern(ax, pattern, tokens, "attention pattern")
plt.show()


# %% [markdown]
# ### Exercise: attention scores (1 point, difficulty 1/3, about 5 min)
#
# Write `attention_scores(q, k)` for `q` of shape `(..., q_pos, d_head)` and `k` of shape
# `(..., k_pos, d_head)`: return $q k^\top / \sqrt{d_\text{head}}$ (here $d_\text{head} = d_k$). The
# form the check requires: shape `(..., q_pos, k_pos)`, **one row per query** and one column per key.
# Leading (batch, head) dimensions must work too, so transpose only the last two dimensions.

# %%
def attention_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    # BEGIN SOLUTION
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    # END SOLUTION


# %%
from course_utils.checks.attention import check_attention_scores
from course_utils.checks import hint

check_attention_scores(attention_scores)


# %% [markdown]
# Stuck? Ask for a hint in a new cell: `hint("attention_scores")` gives a nudge, `hint("attention_scores", 2)` a stronger one. Hints never show the code.

# %% [markdown]
# ### Exercise: scaled dot-product attention (2 points, difficulty 2/3, about 10 min)
#
# Write `sdp_attention(q, k, v)` (no mask yet; masks come in notebook 04): the softmax of the scaled
# scores over the **keys** (the last dimension, so each query's weights sum to 1), then a weighted sum
# of the value rows. `v` has shape `(..., k_pos, d_v)` and the result `(..., q_pos, d_v)`. Use
# `torch.softmax` or the course's `softmax`.

# %%
def sdp_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    # BEGIN SOLUTION
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return torch.softmax(scores, dim=-1) @ v
    # END SOLUTION


# %%
from course_utils.checks.attention import check_sdp_attention

check_sdp_attention(sdp_attention)

# %% [markdown]
# Stuck? Ask for a hint in a new cell: `hint("sdp_attention")` gives a nudge, `hint("sdp_attention", 2)` a stronger one. Hints never show the code.

# %% [markdown]
# ### The same thing, fused
#
# PyTorch ships the whole operation as one function,
# `torch.nn.functional.scaled_dot_product_attention`, which picks a fused kernel (on a GPU,
# FlashAttention-style kernels never build the full `q_pos × k_pos` matrix). The course's function
# calls it with `impl="fused"`; the course's tests check that both paths agree in float32 and
# float64, with and without masks. On this random batch of 12 heads:

# %%
gen = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(2, 12, 64, 64, generator=gen).to(device) for _ in range(3))   # (batch, head, pos, d_head)
reference = scaled_dot_product_attention(q, k, v)
fused = scaled_dot_product_attention(q, k, v, impl="fused")
print("shapes:", tuple(reference.shape), " agree within float32 tolerance:", torch.allclose(reference, fused, atol=1e-5, rtol=1e-4))

# %% [markdown]
# ### Attention one block of keys at a time
#
# How can a kernel compute the softmax over all keys without ever holding a full row of scores? The
# softmax needs each row's maximum (for stability) and the sum of its exponentials, and both can be
# kept **running** while the keys go by in blocks. Per query, keep three things: $m$, the largest score
# seen so far; $\ell$, the sum of $e^{s - m}$ over the keys seen so far; and $o$, the same weighted sum of
# their value rows. A new block of scores $s_1, \dots, s_B$ moves the maximum to
# $m' = \max(m, \max_j s_j)$. Everything summed so far was measured against the old maximum, so multiply
# it by $e^{m - m'}$ (which is 1 if the maximum did not move), then add the block's own terms:
#
# $$\ell \leftarrow \ell\,e^{m - m'} + \sum_j e^{s_j - m'}, \qquad o \leftarrow o\,e^{m - m'} + \sum_j e^{s_j - m'}\,v_j, \qquad m \leftarrow m'.$$
#
# After the last block, $o/\ell$ is exactly the attention output, and $m + \log \ell$ is the row's
# log-sum-exp, $\log \sum_j e^{s_j}$, the one number per query FlashAttention stores for its backward
# pass (with it, the weights can be recomputed block by block instead of stored).
#
# ### Exercise: attention over blocks of keys (3 points, difficulty 3/3, about 20 min)
#
# Write `blockwise_attention(q, k, v, block_size)`: the same attention as `sdp_attention`, computed by
# visiting the keys (and their values) `block_size` at a time with the running updates above. The form
# the check requires: return the tuple `(out, lse)`, the output `(..., q_pos, d_v)` and each query's
# log-sum-exp of its **scaled** scores `(..., q_pos)`; the last block may be shorter than `block_size`.
# The check's inputs include scores in the thousands, where $e^{s}$ overflows unless every exponent is
# measured from the running maximum.

# %%
def blockwise_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                        block_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    # BEGIN SOLUTION
    scale = 1 / math.sqrt(q.shape[-1])
    row_max = torch.full((*q.shape[:-1], 1), float("-inf"), dtype=q.dtype)
    row_sum = torch.zeros(*q.shape[:-1], 1, dtype=q.dtype)
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    for start in range(0, k.shape[-2], block_size):
        scores = q @ k[..., start:start + block_size, :].transpose(-2, -1) * scale  # (..., q_pos, block)
        new_max = torch.maximum(row_max, scores.amax(dim=-1, keepdim=True))
        rescale = torch.exp(row_max - new_max)  # moves the old sums to the new maximum
        weights = torch.exp(scores - new_max)
        row_sum = row_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:start + block_size, :]
        row_max = new_max
    return out / row_sum, (row_max + row_sum.log()).squeeze(-1)
    # END SOLUTION


# %%
from course_utils.checks.attention import check_blockwise_attention

check_blockwise_attention(blockwise_attention)

# %% [markdown]
# Stuck? Ask for a hint in a new cell: `hint("blockwise_attention")` gives a nudge, `hint("blockwise_attention", 2)` a stronger one. Hints never show the code.

# %% [markdown]
# The course's version is `course_utils.attention.blockwise.blockwise_attention`. On 1,024 keys in
# blocks of 64 it never holds more than a 64-column tile of scores, and it gives the same output as
# the full computation (float64, so the comparison is not about rounding):

# %%
from course_utils.attention import blockwise_attention as reference_blockwise

gen = torch.Generator().manual_seed(1)
q_long, k_long, v_long = (torch.randn(1024, 32, generator=gen, dtype=torch.float64) for _ in range(3))   # (pos, d_head)
out_blocks, lse_blocks = reference_blockwise(q_long, k_long, v_long, block_size=64)
print(f"{k_long.shape[0]:,} keys in blocks of 64: largest score tile {q_long.shape[0]:,} × 64 instead of "
      f"{q_long.shape[0]:,} × {k_long.shape[0]:,}")
print("same output as full attention:", torch.allclose(out_blocks, scaled_dot_product_attention(q_long, k_long, v_long)))
print("same log-sum-exp:", torch.allclose(lse_blocks, attention.attention_scores(q_long, k_long).logsumexp(dim=-1)))

# %% [markdown]
# ## 4 · Why divide by √d_k?
#
# If the entries of $q$ and $k$ are independent with mean 0 and variance 1, then $q \cdot k$ is a sum
# of $d_k$ products that each have variance 1, so its variance is $d_k$ and its typical size (standard deviation)
# $\sqrt{d_k}$. Measured on every pair of a few hundred random queries and keys (the cell prints how many):

# %%
from course_utils.attention import random_scores

n_queries = n_keys = 300
print(f"{n_queries * n_keys:,} random (query, key) pairs for each d_k")
print(f"{'d_k':>5} {'var(q·k)':>10} {'var(q·k / √d_k)':>17}")
for d in (1, 4, 16, 64, 256, 1024):
    raw_var = random_scores(n_queries, n_keys, d, scaled=False, seed=1).var().item()
    scaled_var = random_scores(n_queries, n_keys, d, scaled=True, seed=1).var().item()
    print(f"{d:5d} {raw_var:10.1f} {scaled_var:17.3f}")

# %% [markdown]
# Large scores are bad news for softmax because it exponentiates them: differences turn into
# *ratios*. At `d_k = 64` a raw score's standard deviation is $\sqrt{64}$; take two raw scores, one
# two standard deviations above zero and one a single standard deviation above (the cell prints them):

# %%
from course_utils.softmax import softmax

d = 64
sd = math.sqrt(d)                                  # typical size of an unscaled score at d_k = 64
high, low = 2 * sd, sd
pair = torch.tensor([high, low], dtype=torch.float64)
print(f"d_k = {d}: scores {high:.0f} and {low:.0f};  e^{high:.0f} = {math.exp(high):,.0f},  e^{low:.0f} = {math.exp(low):,.0f},"
      f"  ratio e^{high - low:.0f} = {math.exp(high - low):,.0f} : 1")
print(f"softmax([{high:.0f}, {low:.0f}]) puts {100 * softmax(pair)[0].item():.2f}% of the weight on the first key")
pair_scaled = pair / sd
print(f"divided by sqrt({d}) = {sd:.0f} they become {pair_scaled.tolist()}: e^{pair_scaled[0]:.0f} = {math.exp(pair_scaled[0]):.2f} vs "
      f"e^{pair_scaled[1]:.0f} = {math.exp(pair_scaled[1]):.2f}, weights {[round(w, 3) for w in softmax(pair_scaled).tolist()]}")
print(f"GPT-3's heads have d_k = 128, so it divides by sqrt(128) = {math.sqrt(128):.1f}")

# %% [markdown]
# When nearly all the weight sits on one key, the softmax is **saturated**: its gradient with respect
# to the scores is nearly zero, so the query and key matrices barely learn.
#
# To measure how spread out a row of weights $w_1, \dots, w_n$ is, use its **entropy**,
# $H = -\sum_j w_j \ln w_j$ (with $0 \ln 0 = 0$). With the natural logarithm its unit is the **nat**.
# It is 0 when one key takes all the weight, and largest, $\ln n$, when the weights are uniform; $e^H$
# reads as "the number of keys this query effectively attends to". (`course_utils.attention.dot_product.pattern_entropy`
# computes it.)
#
# The plot measures both on random unit-variance queries and keys over 8 keys: the mean largest weight,
# and the mean entropy ($\ln 8$, printed below, for a uniform row). Unscaled, attention hardens as
# `d_k` grows; scaled, it stays put.

# %%
from course_utils.attention import saturation_stats
from course_utils.viz.attention import plot_saturation

d_ks = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
with_scale = [saturation_stats(8, d, scaled=True) for d in d_ks]
without_scale = [saturation_stats(8, d, scaled=False) for d in d_ks]
for d, s, u in zip(d_ks, with_scale, without_scale):
    if d in (1, 64, 1024):
        print(f"d_k = {d:4d}: max weight {s['max_weight']:.3f} scaled vs {u['max_weight']:.3f} unscaled; "
              f"entropy {s['entropy']:.3f} vs {u['entropy']:.3f} nats")
print(f"entropy of a uniform row over 8 keys: log 8 = {torch.tensor(8.0).log().item():.3f} nats")
fig = plot_saturation(d_ks, with_scale, without_scale, n_keys=8)
plt.show()

# %% [markdown]
# Try it: the slider sets `d_k` for random queries and keys of a short sentence, and the two heatmaps
# show the same scores with and without the scale. Push `d_k` to the far right of the slider and watch
# the unscaled pattern turn into one dark cell per row.

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: a widget draws into an Output area, which nbval cannot follow.
from course_utils.viz.attention import dk_saturation_viewer

dk_saturation_viewer("the cat sat on the mat".split(), d_k=64)

# %% [markdown]
# ### The backward pass, by hand
#
# "The gradient is nearly zero" is a claim about the backward pass, so derive it. Autograd computes
# it for you in every later notebook, but attention's backward is short enough to write once, and
# doing so shows exactly where a saturated softmax blocks the signal. Name the steps of the forward
# pass $S = QK^\top/\sqrt{d_k}$, $P = \operatorname{softmax}(S)$ row by row, $O = PV$, and suppose a
# loss $L$ further up has handed back $\partial L/\partial O$ (`grad_out`, the output's shape). Walk
# back one step at a time:
#
# * **A matrix product.** For $Y = AB$: $\partial L/\partial A = (\partial L/\partial Y)\,B^\top$ and
#   $\partial L/\partial B = A^\top(\partial L/\partial Y)$. Applied to $O = PV$, this gives the
#   gradients of $V$ and of the weights $P$.
# * **The softmax.** Each weight of a row depends on every score of that row: its Jacobian is
#   $\operatorname{diag}(p) - p\,p^\top$. Multiplied out, for one row,
#   $\partial L/\partial s_j = p_j\,(\partial L/\partial p_j - \sum_i p_i\,\partial L/\partial p_i)$:
#   each weight's gradient minus the row's weighted average of them, times the weight. A row whose
#   weights are all 0 but one (saturated) gets almost nothing back.
# * **The scaled product.** $S = QK^\top/\sqrt{d_k}$ is a matrix product times a constant, so the
#   first rule applies again, with the constant carried along.
#
# ### Exercise: the backward pass of attention (3 points, difficulty 3/3, about 25 min)
#
# Write `sdp_attention_backward(q, k, v, grad_out)` for the attention of the previous exercise (no
# mask): given `q` `(..., q_pos, d_head)`, `k` `(..., k_pos, d_head)`, `v` `(..., k_pos, d_v)` and
# `grad_out` $= \partial L/\partial O$ of shape `(..., q_pos, d_v)`, return the tuple
# `(grad_q, grad_k, grad_v)`, each of the shape of its input. The form the check requires: the
# gradients are computed **by hand** from the formulas above (recompute the weights from `q` and `k`
# first); the check compares them with what autograd gets, at float32 precision.

# %%
def sdp_attention_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                           grad_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    # BEGIN SOLUTION
    scale = 1 / math.sqrt(q.shape[-1])
    weights = torch.softmax(q @ k.transpose(-2, -1) * scale, dim=-1)  # (..., q_pos, k_pos)
    grad_v = weights.transpose(-2, -1) @ grad_out  # (..., k_pos, d_v)
    grad_weights = grad_out @ v.transpose(-2, -1)  # (..., q_pos, k_pos)
    grad_scores = weights * (grad_weights - (grad_weights * weights).sum(dim=-1, keepdim=True))
    grad_q = grad_scores @ k * scale
    grad_k = grad_scores.transpose(-2, -1) @ q * scale
    return grad_q, grad_k, grad_v
    # END SOLUTION


# %%
from course_utils.checks.attention import check_sdp_attention_backward

check_sdp_attention_backward(sdp_attention_backward)

# %% [markdown]
# Stuck? Ask for a hint in a new cell: `hint("sdp_attention_backward")` gives a nudge, `hint("sdp_attention_backward", 2)` a stronger one. Hints never show the code.

# %% [markdown]
# The course's version is `course_utils.attention.gradients.sdp_attention_backward`. On the worked
# example, with a made-up upstream gradient, it agrees with autograd:

# %%
from course_utils.attention import sdp_attention_backward as reference_backward
from course_utils.attention import softmax_backward

grad_O = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, -1.0]], dtype=torch.float64)   # (pos, d_v), made up
leaves = [t.clone().requires_grad_() for t in (Q, K, V)]
by_autograd = torch.autograd.grad(scaled_dot_product_attention(*leaves), leaves, grad_O)
by_hand = reference_backward(Q, K, V, grad_O)
for name, mine, theirs in zip(("q", "k", "v"), by_hand, by_autograd):
    print(f"dL/d{name} by hand equals autograd's to float64 precision: {torch.allclose(mine, theirs, rtol=0, atol=1e-12)}")

# %% [markdown]
# Now the claim of this section. The gradient that reaches the scores is the softmax step of your
# backward pass. For random unit-variance queries and keys over 8 keys, and a random upstream
# gradient, here is the typical (median) size of each query's score gradient, and the share of queries
# whose score gradient is below 0.001, i.e. that would barely learn:

# %%
upstream = torch.randn(200, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(2))  # dL/dP, made up
print(f"{'d_k':>5} {'median |dL/dS| scaled':>22} {'unscaled':>9} {'share below 0.001 scaled':>25} {'unscaled':>9}")
for d in (1, 16, 64, 256, 1024):
    sizes = {}
    for scaled in (True, False):
        weights_rand = torch.softmax(random_scores(200, 8, d, scaled=scaled, seed=1), dim=-1)   # (query, key)
        sizes[scaled] = softmax_backward(weights_rand, upstream).norm(dim=-1)                  # (query,)
    print(f"{d:5d} {sizes[True].median():22.4f} {sizes[False].median():9.4f} "
          f"{(sizes[True] < 1e-3).double().mean():25.0%} {(sizes[False] < 1e-3).double().mean():9.0%}")

# %% [markdown]
# Scaled, the score gradient keeps its size at every `d_k`. Unscaled, it shrinks as `d_k` grows, and
# at the largest `d_k` most queries get practically nothing back: their $W_Q$ and $W_K$ would not
# learn. That is the second half of the case for $\sqrt{d_k}$.

# %% [markdown]
# ### The backward pass, block by block
#
# Your backward pass recomputed the whole `q_pos × k_pos` pattern, which is exactly what the blockwise
# forward of section 3 avoided. FlashAttention-2's backward does without it, using two facts:
#
# * the forward's log-sum-exp `lse` gives back any tile of weights exactly: $p_{ij} = e^{s_{ij} - \text{lse}_i}$,
#   for the keys of one block at a time;
# * the softmax's correction term $\sum_j p_j\,\partial L/\partial p_j$ needs a whole row, but it equals
#   $D_i = \sum_e (\partial L/\partial O)_{ie}\,O_{ie}$, because $\partial L/\partial p_j =
#   \partial L/\partial O \cdot v_j$ and $\sum_j p_j v_j$ is the output row itself. So one pass over `grad_out`
#   and `out` before the loop gives it, for every query.
#
# Then each block of keys yields its own rows of `grad_k` and `grad_v` completely, and adds its share to
# `grad_q`, which every block touches.
#
# ### Exercise: attention's backward pass over blocks of keys (3 points, difficulty 3/3, about 25 min)
#
# Write `blockwise_attention_backward(q, k, v, out, lse, grad_out, block_size)`, where `out` and `lse` are
# what your `blockwise_attention` returned for `q`, `k`, `v`. Return `(grad_q, grad_k, grad_v)`, the same
# tuple as `sdp_attention_backward`. The form the check requires: visit the keys `block_size` at a time
# (the last block may be shorter), recompute each tile of weights from `lse`, and take the correction
# term from `D` as above; no autograd.

# %%
def blockwise_attention_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor,
                                 lse: torch.Tensor, grad_out: torch.Tensor,
                                 block_size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    # BEGIN SOLUTION
    scale = 1 / math.sqrt(q.shape[-1])
    D = (grad_out * out).sum(dim=-1, keepdim=True)  # (..., q_pos, 1)
    grad_q, grad_k, grad_v = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    for start in range(0, k.shape[-2], block_size):
        block = slice(start, start + block_size)
        weights = torch.exp(q @ k[..., block, :].transpose(-2, -1) * scale - lse[..., None])  # (..., q_pos, block)
        grad_v[..., block, :] = weights.transpose(-2, -1) @ grad_out
        grad_scores = weights * (grad_out @ v[..., block, :].transpose(-2, -1) - D) * scale
        grad_q += grad_scores @ k[..., block, :]
        grad_k[..., block, :] = grad_scores.transpose(-2, -1) @ q
    return grad_q, grad_k, grad_v
    # END SOLUTION


# %%
from course_utils.checks.attention import check_blockwise_attention_backward

check_blockwise_attention_backward(blockwise_attention_backward)

# %% [markdown]
# Stuck? Ask for a hint in a new cell: `hint("blockwise_attention_backward")` gives a nudge, `hint("blockwise_attention_backward", 2)` a stronger one. Hints never show the code.

# %% [markdown]
# The course's version, `course_utils.attention.blockwise.blockwise_attention_backward`, on the 1,024 keys of
# section 3 in blocks of 64, gives the same gradients as the full backward pass:

# %%
from course_utils.attention import blockwise_attention_backward as reference_blockwise_backward

grad_long = torch.randn(1024, 32, generator=torch.Generator().manual_seed(5), dtype=torch.float64)   # dL/dout, made up
tiled = reference_blockwise_backward(q_long, k_long, v_long, out_blocks, lse_blocks, grad_long, block_size=64)
full = reference_backward(q_long, k_long, v_long, grad_long)
print("same dL/dq, dL/dk, dL/dv as the full backward:", all(torch.allclose(t, f) for t, f in zip(tiled, full)))

# %% [markdown]
# ## 5 · Why three matrices?
#
# Suppose a model used one matrix for both roles, $W_Q = W_K = W$. Then the score of $i$ looking at $j$
# is $x_i W W^\top x_j^\top$, exactly the score of $j$ looking at $i$: the score matrix is symmetric, and
# a token's match with itself, $\lVert x_i W\rVert^2$, is hard to beat. Language is not symmetric (a
# pronoun looks for its noun; the noun is not looking for the pronoun). With random inputs and weights:

# %%
X_rand = torch.randn(5, 8, dtype=torch.float64)             # 5 tokens, d_model = 8
W_a, W_b = torch.randn(8, 2, dtype=torch.float64), torch.randn(8, 2, dtype=torch.float64)
shared = attention.attention_scores(X_rand @ W_a, X_rand @ W_a)        # W_K = W_Q
separate = attention.attention_scores(X_rand @ W_a, X_rand @ W_b)      # W_K != W_Q
print("W_K = W_Q:  scores symmetric:", torch.allclose(shared, shared.T))
print("W_K != W_Q: scores symmetric:", torch.allclose(separate, separate.T))

# %% [markdown]
# (The hand-picked matrices of the worked example happen to give symmetric *scores*, because their
# product $W_Q W_K^\top$ is itself a symmetric matrix; random ones almost never do.) What the worked
# example does show is the self-match: replace $W_K$ by $W_Q$ and look at *cat*'s weights again.

# %%
print("W_Q W_K^T symmetric in the worked example:", torch.equal(W_Q @ W_K.T, (W_Q @ W_K.T).T))
print("cat's weights with W_K = W_Q:", [round(w, 3) for w in attention_pattern(X @ W_Q, X @ W_Q)[1].tolist()],
      " (with the real W_K:", [round(w, 3) for w in pattern[1].tolist()], ")")

# %% [markdown]
# With a shared matrix, *cat* now attends mostly to itself. Separate $W_Q$ and $W_K$ let the question a
# token asks differ from the description it offers; a separate $W_V$ lets what it passes on differ from
# both.
#
# ## 6 · Self-attention and cross-attention
#
# Everything so far is **self**-attention: queries, keys and values all come from the same sequence.
# In **cross**-attention the queries come from one sequence and the keys and values from another, as
# in the original encoder–decoder transformer, where the text being written (decoder) looks up the
# source sentence (encoder). The function is the same; only the inputs differ, and the pattern becomes
# `target_pos × source_pos`.

# %%
d_model, d_head = 16, 4
proj = {name: torch.randn(d_model, d_head, dtype=torch.float64) for name in ("W_Q", "W_K", "W_V")}
source = torch.randn(5, d_model, dtype=torch.float64)        # e.g. 5 encoder positions
target = torch.randn(2, d_model, dtype=torch.float64)        # 2 decoder positions written so far

self_out = scaled_dot_product_attention(source @ proj["W_Q"], source @ proj["W_K"], source @ proj["W_V"])
cross_pattern = attention_pattern(target @ proj["W_Q"], source @ proj["W_K"])
cross_out = scaled_dot_product_attention(target @ proj["W_Q"], source @ proj["W_K"], source @ proj["W_V"])
print("self-attention:  pattern", tuple(attention_pattern(source @ proj["W_Q"], source @ proj["W_K"]).shape), " output", tuple(self_out.shape))
print("cross-attention: pattern", tuple(cross_pattern.shape), " output", tuple(cross_out.shape),
      " rows sum to", [round(s, 12) for s in cross_pattern.sum(-1).tolist()])  # the last bit varies by CPU

# %% [markdown]
# Nothing forces the two sequences to have the same width. In a text-to-image model the image
# features cross-attend to the text encoder's vectors, which are usually wider or narrower than the
# image side's: $W_Q$ reads the query side's `d_model` features, $W_K$ and $W_V$ read the other
# side's `d_context` features, and both land in the same `d_head`, where the dot products happen.
#
# ### Exercise: a cross-attention head (2 points, difficulty 2/3, about 10 min)
#
# Write `CrossAttentionHead(d_model, d_context, d_head)`, an `nn.Module` with four parameters: `W_Q` of
# shape `(d_model, d_head)`, `W_K` and `W_V` of shape `(d_context, d_head)`, and `W_O` of shape
# `(d_head, d_model)`. Its `forward(x, context)` takes the queries' sequence `x` `(..., pos, d_model)`
# and the sequence they read, `context` `(..., context_pos, d_context)`, and returns
# `(..., pos, d_model)`: scaled dot-product attention of `x`'s queries over `context`'s keys and values,
# then `W_O`. The form the check requires: the weight convention of this course, rows times matrices
# (`x @ W_Q`, `context @ W_K`); the check copies its own seeded weights into these four parameters, so
# initialise them any way you like.

# %%
from torch import nn


class CrossAttentionHead(nn.Module):
    def __init__(self, d_model: int, d_context: int, d_head: int):
        super().__init__()
        # BEGIN SOLUTION
        self.W_Q = nn.Parameter(torch.randn(d_model, d_head) * 0.02)
        self.W_K = nn.Parameter(torch.randn(d_context, d_head) * 0.02)
        self.W_V = nn.Parameter(torch.randn(d_context, d_head) * 0.02)
        self.W_O = nn.Parameter(torch.randn(d_head, d_model) * 0.02)
        # END SOLUTION

    def forward(self, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        # BEGIN SOLUTION
        q = x @ self.W_Q  # (..., pos, d_head)
        k, v = context @ self.W_K, context @ self.W_V  # each (..., context_pos, d_head)
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)  # (..., pos, context_pos)
        return weights @ v @ self.W_O
        # END SOLUTION


# %%
from course_utils.checks.attention import check_cross_attention_head

check_cross_attention_head(CrossAttentionHead)

# %% [markdown]
# Stuck? Ask for a hint in a new cell: `hint("cross_attention_head")` gives a nudge, `hint("cross_attention_head", 2)` a stronger one. Hints never show the code.

# %% [markdown]
# The course's `course_utils.attention.dot_product.CrossAttentionHead` is the same head (its tests compare it with
# PyTorch's `nn.MultiheadAttention` given separate key and value widths). Two decoder positions reading
# five encoder positions of another width give one row of weights per decoder position:

# %%
from course_utils.attention import CrossAttentionHead as ReferenceCrossHead

cross_head = ReferenceCrossHead(d_model=16, d_context=24, d_head=4)
encoder_out = torch.randn(5, 24)                 # (context_pos, d_context)
decoder_x = torch.randn(2, 16)                   # (pos, d_model)
print("output:", tuple(cross_head(decoder_x, encoder_out).shape), " W_K:", tuple(cross_head.W_K.shape),
      " W_Q:", tuple(cross_head.W_Q.shape))

# %% [markdown]
# ## 7 · One attention head as a module
#
# ### Exercise: one attention head as a module (3 points, difficulty 2/3, about 15 min)
#
# Package the whole head as an `nn.Module`. `AttentionHead(d_model, d_head)` holds four parameters:
# `W_Q`, `W_K`, `W_V` of shape `(d_model, d_head)` and `W_O` of shape `(d_head, d_model)`. Its
# `forward(x)` takes `x` of shape `(..., pos, d_model)`, computes queries, keys and values, runs
# scaled dot-product attention, and multiplies the result by `W_O`, returning `(..., pos, d_model)`:
# the change this head proposes for every position of the **residual stream**. (The residual stream is
# the running `d_model`-wide vector at each position, introduced in notebook 00: it starts as token plus
# position embedding, and every attention head and MLP reads it and *adds* its output to it rather than
# replacing it.) The check builds your module and copies its own seeded weights into these four
# parameters, so initialise them any way you like, e.g. `torch.randn(...) * 0.02`.
#
# **Weight convention.** Inputs are rows, so a query is `x @ W_Q` with `W_Q` of shape
# `(d_model, d_head)`, the way interpretability code stores weights (PyTorch's `nn.Linear` stores the
# transpose). The head here is *one* head: notebook 05 keeps all heads' query matrices in one tensor
# `W_Q` of shape `(n_heads, d_model, d_head)`, and this exercise's `W_Q` is its slice `W_Q[h]` for one
# head `h`; likewise `W_K`, `W_V` and `W_O` (`W_O[h]` of shape `(d_head, d_model)`). The convention
# does not change from 03 to 05.

# %%
from torch import nn


class AttentionHead(nn.Module):
    def __init__(self, d_model: int, d_head: int):
        super().__init__()
        # BEGIN SOLUTION
        self.W_Q = nn.Parameter(torch.randn(d_model, d_head) * 0.02)
        self.W_K = nn.Parameter(torch.randn(d_model, d_head) * 0.02)
        self.W_V = nn.Parameter(torch.randn(d_model, d_head) * 0.02)
        self.W_O = nn.Parameter(torch.randn(d_head, d_model) * 0.02)
        # END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # BEGIN SOLUTION
        q, k, v = x @ self.W_Q, x @ self.W_K, x @ self.W_V
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
        return weights @ v @ self.W_O
        # END SOLUTION


# %%
from course_utils.checks.attention import check_attention_head

check_attention_head(AttentionHead)

# %% [markdown]
# Stuck? Ask for a hint in a new cell: `hint("attention_head")` gives a nudge, `hint("attention_head", 2)` a stronger one. Hints never show the code.

# %% [markdown]
# From here on the course uses its reference head, `course_utils.attention.dot_product.AttentionHead`. PyTorch's
# own `nn.MultiheadAttention` with a single head computes the same thing (the course's tests compare
# them); it stores the transposed matrices, stacked into one `in_proj_weight`. The cell also stacks
# three heads' `W_Q` into the `(n_heads, d_model, d_head)` tensor of notebook 05 and checks that slice
# `h` gives head `h`'s queries.

# %%
from course_utils.attention import AttentionHead as ReferenceHead

head = ReferenceHead(d_model=64, d_head=16).to(device)
x = torch.randn(2, 10, 64, device=device)                 # (batch, pos, d_model)
print("output shape:", tuple(head(x).shape))
print("parameters:", {name: tuple(p.shape) for name, p in head.named_parameters()})
heads = [ReferenceHead(d_model=64, d_head=16).to(device) for _ in range(3)]
W_Q_all = torch.stack([h.W_Q for h in heads])            # (n_heads, d_model, d_head), as in notebook 05
q_all = torch.einsum("bpm,hmd->bhpd", x, W_Q_all)          # (batch, n_heads, pos, d_head)
print("W_Q of all heads:", tuple(W_Q_all.shape), "; slice h gives head h's queries:",
      all(torch.allclose(q_all[:, i], x @ heads[i].W_Q, atol=1e-6) for i in range(3)))

# %% [markdown]
# ### The head's backward pass, down to the weights
#
# Training updates the head's four matrices, so the gradient must go one step further back than the
# attention exercise of section 4: through $W_O$ before it, and through the three projections after it.
# Two rules do all the work. A weight multiplies **every** row of its input (every position of every
# sequence in the batch), so its gradient is the sum over those rows: for $q = xW_Q$,
# $\partial L/\partial W_Q = \sum_{\text{rows}} x^\top\,\partial L/\partial q$, one matrix product once the
# rows are stacked. And a tensor used several times collects one gradient per use: $x$ makes the queries,
# the keys **and** the values, so $\partial L/\partial x$ is the sum of three terms.
#
# ### Exercise: the backward pass of one head (3 points, difficulty 3/3, about 20 min)
#
# Write `attention_head_backward(x, W_Q, W_K, W_V, W_O, grad_out)` for the head of the previous exercise,
# out $= \operatorname{attention}(xW_Q, xW_K, xW_V)\,W_O$, with `x` and `grad_out` $= \partial L/\partial
# \text{out}$ of shape `(..., pos, d_model)`. Return the tuple `(grad_x, grad_W_Q, grad_W_K, grad_W_V, grad_W_O)`,
# each of the shape of its tensor. The form the check requires: no autograd; for the attention step in the
# middle, call the course's `reference_backward` (section 4's `sdp_attention_backward`), and use the
# course's `scaled_dot_product_attention` to recompute the attention output.

# %%
def attention_head_backward(x: torch.Tensor, W_Q: torch.Tensor, W_K: torch.Tensor, W_V: torch.Tensor,
                            W_O: torch.Tensor, grad_out: torch.Tensor) -> tuple[torch.Tensor, ...]:
    # BEGIN SOLUTION
    q, k, v = x @ W_Q, x @ W_K, x @ W_V  # each (..., pos, d_head)
    z = scaled_dot_product_attention(q, k, v)  # (..., pos, d_head)
    grad_q, grad_k, grad_v = reference_backward(q, k, v, grad_out @ W_O.T)
    rows, d_head = x.reshape(-1, x.shape[-1]), W_Q.shape[-1]  # (batch * pos, d_model)
    grad_W_Q = rows.T @ grad_q.reshape(-1, d_head)
    grad_W_K = rows.T @ grad_k.reshape(-1, d_head)
    grad_W_V = rows.T @ grad_v.reshape(-1, d_head)
    grad_W_O = z.reshape(-1, d_head).T @ grad_out.reshape(-1, grad_out.shape[-1])
    grad_x = grad_q @ W_Q.T + grad_k @ W_K.T + grad_v @ W_V.T
    return grad_x, grad_W_Q, grad_W_K, grad_W_V, grad_W_O
    # END SOLUTION


# %%
from course_utils.checks.attention import check_attention_head_backward

check_attention_head_backward(attention_head_backward)

# %% [markdown]
# Stuck? Ask for a hint in a new cell: `hint("attention_head_backward")` gives a nudge, `hint("attention_head_backward", 2)` a stronger one. Hints never show the code.

# %% [markdown]
# The course's `course_utils.attention.gradients.attention_head_backward`, checked against autograd on the
# reference head built above (a batch of 2 × 10 positions, float64) and then used for one step of plain
# gradient descent: the loss (a made-up one, the sum of the outputs times a fixed random tensor) goes
# down.

# %%
from course_utils.attention import attention_head_backward as reference_head_backward

head64 = ReferenceHead(d_model=64, d_head=16, init_std=0.2).double()
x64 = torch.randn(2, 10, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
target_direction = torch.randn(2, 10, 64, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
weights64 = [head64.W_Q, head64.W_K, head64.W_V, head64.W_O]
by_autograd = torch.autograd.grad((head64(x64) * target_direction).sum(), weights64)
by_hand = reference_head_backward(x64, *(w.detach() for w in weights64), target_direction)[1:]
print("weight gradients equal autograd's:", all(torch.allclose(h, a) for h, a in zip(by_hand, by_autograd)))
with torch.no_grad():
    loss_before = (head64(x64) * target_direction).sum().item()
    for w, g in zip(weights64, by_hand):
        w -= 0.001 * g
    print(f"loss before the step {loss_before:.3f}, after {(head64(x64) * target_direction).sum().item():.3f}")

# %% [markdown]
# ## 8 · Values and outputs: a low-rank map
#
# $W_V$ followed by $W_O$ maps a `d_model` vector down to `d_head` numbers and back up. Together they act
# like one `d_model × d_model` matrix $W_V W_O$, but one whose rank is at most `d_head`: a **low-rank
# factorisation**. A small head shows the rank limit:

# %%
small = ReferenceHead(d_model=64, d_head=16)
W_VO = (small.W_V @ small.W_O).detach()                   # (d_model, d_model)
print("W_V W_O is", tuple(W_VO.shape), "with rank", torch.linalg.matrix_rank(W_VO).item())

# %% [markdown]
# Why bother? Count GPT-3's numbers (`d_model = 12,288`, `d_head = 128`). Building the head on
# PyTorch's **meta** device allocates no memory, so even the full-size head is free to create and
# count:

# %%
with torch.device("meta"):
    gpt3_head = ReferenceHead(d_model=12288, d_head=128)
head_params = sum(p.numel() for p in gpt3_head.parameters())
square_value_map = 12288 * 12288
thin_pair = gpt3_head.W_V.numel() + gpt3_head.W_O.numel()
print(f"one GPT-3 head (W_Q, W_K, W_V, W_O):        {head_params:>13,}")
print(f"  of which W_V and W_O (the two thin ones): {thin_pair:>13,}")
print(f"a square 12,288 × 12,288 value map:         {square_value_map:>13,}")
print(f"square map / whole head = {square_value_map // head_params}×,  square map / thin pair = {square_value_map // thin_pair}×")

# %% [markdown]
# ## Summary
#
# * Each position emits a query, a key and a value through three learned matrices.
# * Scores are query–key dot products, divided by $\sqrt{d_k}$ so that their spread does not grow with
#   $d_k$; softmax over the keys turns each row into weights; the output is the weighted average of
#   the values.
# * Separate $W_Q$ and $W_K$ make attention directional; cross-attention takes keys and values from
#   another sequence.
# * A head writes back through $W_O$; $W_V W_O$ is a low-rank stand-in for a huge square matrix.
#
# Next, **04 · masking, softmax and temperature** stops positions from reading the future.
