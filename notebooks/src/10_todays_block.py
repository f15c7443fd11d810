# ---
# jupyter:
#   course:
#     exercises:
#       llama_block:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       llama_model:
#         difficulty: 3
#         minutes: 20
#         points: 3
#       rms_norm:
#         difficulty: 1
#         minutes: 10
#         points: 2
#       rope_layout:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       rotary_attention:
#         difficulty: 3
#         minutes: 25
#         points: 3
#       rotate_queries_keys:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       swiglu_feed_forward:
#         difficulty: 1
#         minutes: 10
#         points: 2
#       swiglu_width:
#         difficulty: 1
#         minutes: 5
#         points: 1
#     grading_cell_timeout_s: 240
#     numbers_allowed:
#       '2019': the year of Zhang and Sennrich's RMSNorm paper, a citation
#       '2020': the year of Shazeer's GLU-variants paper, a citation
#       '2021': the year of Su et al.'s RoFormer paper, a citation
#       '2023': the year of Ainslie et al.'s GQA paper and of Llama 2, a citation
#     time_target_s: 60
#   jupytext:
#     cell_metadata_filter: all
#     notebook_metadata_filter: course,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 10 · Today's block: from GPT-2 to Llama, one change at a time
#
# The model you built in 09 is GPT-2's, from 2019. Open the code of any model released since 2023
# (Llama, Mistral, Qwen, OLMo, DeepSeek) and you find the same skeleton with four parts swapped:
# **RMSNorm** for LayerNorm, **rotary positions inside attention** for a learned position table, a
# **SwiGLU** MLP for the GELU one, and **grouped-query attention** for plain multi-head attention.
# You have met each of them on its own (RoPE in 02, GQA in 05, SwiGLU as an expert in 07, RMSNorm as a
# formula in 08). Here you put them together into one model, check it against the real thing, and
# train it beside a GPT-2-style model of the same size.
#
# 1. The diff from GPT-2's block, one change at a time, each with its cost in parameters and FLOPs
# 2. RMSNorm as a module
# 3. Rotary positions inside attention, at any offset, in both pair layouts
# 4. The SwiGLU feed-forward and its width
# 5. Grouped-query attention with RoPE and a KV cache
# 6. The block and the model
# 7. Trained side by side: a Llama-style and a GPT-2-style model of the same size, five seeds

# %%
import math

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.env import seed_everything

seed_everything(0)

# %% [markdown]
# ## 1 · The diff from GPT-2's block
#
# TODO(lead): the table of changes, each with its reason and its cost from 08's counter.

# %% [markdown]
# ## 2 · RMSNorm
#
# LayerNorm (notebooks 08 and 09) does two things to each vector: it **re-centres** it (subtracts the
# mean) and **re-scales** it (divides by the standard deviation), then applies a learned scale and
# shift. Zhang and Sennrich (2019) argued that the re-scaling is the half that matters, and dropped
# the rest: no centring, no bias. In their experiments the result, RMSNorm, matched LayerNorm's
# quality and ran faster:
#
# $$\text{RMSNorm}(x) = \frac{x}{\sqrt{\text{mean}(x^2) + \varepsilon}} \odot w.$$
#
# One statistic per vector instead of two (the mean of squares, where LayerNorm needs the mean and then
# the variance around it), and one learned vector `w` (the gain) instead of two. ε (eps) sits inside
# the root, as in LayerNorm: it keeps a vector of zeros from dividing by zero. The parameters of one
# norm at Llama 2 7B's width:

# %%
d_llama2_7b = 4096
print("d_model =", d_llama2_7b)
for norm in (nn.LayerNorm(d_llama2_7b), nn.RMSNorm(d_llama2_7b)):
    print(f"{type(norm).__name__:<10} {sum(p.numel() for p in norm.parameters()):>6,} parameters:",
          ", ".join(name for name, _ in norm.named_parameters()))

# %% [markdown]
# Models are trained and served in 16-bit floats, and the sum of squares is where 16 bits break.
# float16 has a short range: its largest number is printed below, so any entry above its square root
# squares to `inf`, and the vector collapses to zeros. bfloat16 keeps float32's range but only 8
# significant bits, so every square and the mean of thousands of them would be rounded to 8 bits.
# Meta's Llama code and `transformers`' `LlamaRMSNorm` therefore compute the norm in float32 and cast
# the result back to the input's dtype before multiplying by the gain, so the output has the input's
# dtype, like every other layer's. Large models do carry a few residual entries in the hundreds:

# %%
big = torch.tensor([300.0, -400.0, 500.0, 100.0])
half_max = torch.finfo(torch.float16).max
print(f"float16: largest number {half_max:,.0f}, whose square root is {math.sqrt(half_max):.1f}")
x16 = big.half()
naive = x16 * torch.rsqrt(x16.pow(2).mean())  # all in float16
x32 = x16.float()
upcast = (x32 * torch.rsqrt(x32.pow(2).mean())).half()  # in float32, cast back
print("x:", big.tolist())
print("mean of squares in float16:", x16.pow(2).mean().item(), "-> normalised:", [f"{v:.3f}" for v in naive.tolist()])
print("in float32, cast back to float16:", [f"{v:.3f}" for v in upcast.tolist()], upcast.dtype)

# %% [markdown]
# ### Exercise: RMSNorm (2 points, difficulty 1/3, about 10 min)
#
# Write `RMSNorm(d_model, eps=1e-5)`: in `__init__`, store `eps` and make the gain, an `nn.Parameter`
# named `w` of shape `(d_model,)` that starts at ones; in `forward(x)`, for `x` of shape
# `(..., d_model)`, normalise over the last axis with eps inside the square root, computing in float32
# when `x` is `torch.bfloat16` or `torch.float16`, cast back to `x.dtype`, then multiply by `w`. The
# check builds your module, moves it to the input's dtype, copies a learned gain into `w` and compares
# with the course's `llama.RMSNorm`, on float64, float16 (entries whose squares overflow) and bfloat16
# inputs; the output's dtype must be the input's.

# %%
class RMSNorm(nn.Module):
    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        # BEGIN SOLUTION
        self.eps = eps
        self.w = nn.Parameter(torch.ones(d_model))  # the gain, one per feature
        # END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # (..., d_model) -> (..., d_model), in x's dtype
        # BEGIN SOLUTION
        wide = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
        mean_square = wide.pow(2).mean(dim=-1, keepdim=True)  # (..., 1): one statistic per vector
        return (wide * torch.rsqrt(mean_square + self.eps)).to(x.dtype) * self.w
        # END SOLUTION


# %%
from course_utils.checks.todays_block import check_rms_norm

check_rms_norm(RMSNorm)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("rms_norm")` for a nudge and `hint("rms_norm", 2)` for a stronger one.
#
# The rest of the notebook uses the course's `llama.RMSNorm`, which your module now matches. PyTorch has
# the same layer as `nn.RMSNorm` (its gain is called `weight`); with the gain copied across, the two
# agree, in float32 and in bfloat16 (where the course's keeps the input's dtype):

# %%
from course_utils import llama

gain = 1 + 0.1 * torch.randn(64, generator=torch.Generator().manual_seed(2))
x_norm = torch.randn(3, 5, 64, generator=torch.Generator().manual_seed(3))
course_norm, torch_norm = llama.RMSNorm(64), nn.RMSNorm(64, eps=1e-5)
with torch.no_grad():
    course_norm.w.copy_(gain)
    torch_norm.weight.copy_(gain)
    print("float32 agrees with nn.RMSNorm:", torch.allclose(course_norm(x_norm), torch_norm(x_norm), atol=1e-6))
    out_bf16 = course_norm.to(torch.bfloat16)(x_norm.bfloat16())
    print("bfloat16 in ->", out_bf16.dtype, "out; agrees to bfloat16's rounding:",
          torch.allclose(out_bf16.float(), torch_norm(x_norm), rtol=2e-2, atol=1e-2))

# %% [markdown]
# ## 3 · Rotary positions inside attention
#
# GPT-2 adds a learned position vector to each token's embedding, once, at the bottom of the model.
# Llama adds nothing: inside every attention layer, after the projections, it rotates each head's
# queries and keys by their positions, as `rope_rotate` did in notebook 02 (Su et al. 2021). A query
# at position m and a key at position n then meet with a score that depends on m − n only, the values
# are not rotated, and there is no position table to learn or to outgrow.
#
# In a layer the queries have shape `(batch, n_heads, pos, d_head)` and the keys
# `(batch, n_kv_heads, pos, d_head)`, with fewer key heads under grouped-query attention (notebook 05);
# every head of a row gets the same angles. The new part is **where the rows sit**. Generating with a
# KV cache (notebook 09), the model has already processed `offset` tokens, their keys stored
# (rotated) in the cache; the new token's query and key must be rotated as position `offset`, not 0.
# Rotated as position 0, the new token would look at the cached keys as if it stood at the start of
# the text, and every score with them would change.
#
# ### Exercise: Rotating queries and keys at an offset (2 points, difficulty 2/3, about 10 min)
#
# Write `rotate_queries_keys(q, k, offset=0, layout="halves")`, returning the pair `(q, k)` rotated:
# row `p` of every head at position `offset + p`, base 10,000, for `q` of shape
# `(batch, n_heads, pos, d_head)` and `k` of shape `(batch, n_kv_heads, pos, d_head)`. `layout` is
# `"halves"` (the default here, pairs `(i, i + d_head/2)`) or `"interleaved"` (pairs `(2i, 2i + 1)`, the
# layout of notebook 02; both are explained after this exercise). You may call the course's version of
# the function you wrote in notebook 02, `rope_rotate(x, positions, base, layout)` from
# `course_utils.positions`: `positions` is a tensor of shape `(pos,)`, and the leading axes broadcast.

# %%
from course_utils.positions import rope_rotate


def rotate_queries_keys(q: torch.Tensor, k: torch.Tensor, offset: int = 0, layout: str = "halves"):
    # q (batch, n_heads, pos, d_head), k (batch, n_kv_heads, pos, d_head) -> (q, k) rotated
    # BEGIN SOLUTION
    positions = torch.arange(offset, offset + q.shape[2])  # (pos,): where these rows sit in the sequence
    return rope_rotate(q, positions, layout=layout), rope_rotate(k, positions, layout=layout)
    # END SOLUTION


# %%
from course_utils.checks.todays_block import check_rotate_queries_keys

check_rotate_queries_keys(rotate_queries_keys)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("rotate_queries_keys")` for a nudge and `hint("rotate_queries_keys", 2)` for a stronger one.
#
# The cache in miniature, with the course's `llama.rotate_queries_keys` (the same function): rotate six
# positions at once, or the first four and then the last two at offset 4, as a generating model does.
# The scores of the last two queries with all six keys agree only when the offset is passed on:

# %%
rope_gen = torch.Generator().manual_seed(4)
q6 = torch.randn(1, 4, 6, 8, generator=rope_gen, dtype=torch.float64)  # 4 query heads
k6 = torch.randn(1, 2, 6, 8, generator=rope_gen, dtype=torch.float64)  # 2 key/value heads
q_all, k_all = llama.rotate_queries_keys(q6, k6)
_, k_past = llama.rotate_queries_keys(q6[:, :, :4], k6[:, :, :4])  # the cache: 4 keys, rotated when they came
for offset in (4, 0):
    q_new, k_new = llama.rotate_queries_keys(q6[:, :, 4:], k6[:, :, 4:], offset=offset)
    keys = torch.cat([k_past, k_new], dim=2).repeat_interleave(2, dim=1)  # (1, 4, 6, 8): each key head twice
    same = torch.allclose(q_new @ keys.mT, q_all[:, :, 4:] @ k_all.repeat_interleave(2, dim=1).mT)
    print(f"new rows rotated at offset {offset}: scores as in one pass? {same}")

# %% [markdown]
# **Two layouts of the same rotation.** RoPE turns pairs of features, and the pairs can be laid out in
# two ways. The RoFormer paper and Meta's Llama code pair neighbours, `(0, 1), (2, 3), ...` (Meta's code
# turns each pair into one complex number): the **interleaved** layout of notebook 02. GPT-NeoX and
# `transformers` pair feature `i` with feature `i + d_head/2`, the **halves** layout, which their
# `rotate_half` implements with two slices and no reshape. Pair `i` turns at the same speed in both;
# only where its two features are stored differs.
#
# So a checkpoint trained with one layout runs with the other once its query and key features are
# reordered: if pair `i`'s features move from places `2i, 2i + 1` to places `i, i + d_head/2`, the
# halves code turns exactly the pairs the interleaved code turned. Reordering the output columns of
# `W_Q[h]` reorders the features of `q = x @ W_Q[h]`, so the reorder can be baked into the weights. The
# scores do not notice: `q · k` is a sum over features, and q and k get the same reorder. `W_V` and `W_O`
# stay as they are (values are not rotated). This is what `transformers`' script that converts Meta's
# Llama checkpoints does to `wq` and `wk` (its `permute` function).
#
# ### Exercise: Converting weights between the layouts (2 points, difficulty 2/3, about 10 min)
#
# Write `to_halves_layout(W)` for `W` of shape `(head, d_model, d_head)` (even `d_head`): the same
# shape, with each head's output features (the last axis) in the order `0, 2, 4, ..., 1, 3, 5, ...`,
# every pair's first feature, then every pair's second. For `d_head = 4`: `[a, b, c, d]` becomes
# `[a, c, b, d]`.

# %%
def to_halves_layout(W: torch.Tensor) -> torch.Tensor:
    # W (head, d_model, d_head) -> the same shape, each head's output features reordered
    # BEGIN SOLUTION
    return torch.cat([W[..., 0::2], W[..., 1::2]], dim=-1)  # every pair's first feature, then its second
    # END SOLUTION


# %%
from course_utils.checks.todays_block import check_rope_layout

check_rope_layout(to_halves_layout)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("rope_layout")` for a nudge and `hint("rope_layout", 2)` for a stronger one.
#
# The claim, computed (with the course's `llama.to_halves_layout`): random weights used with
# interleaved RoPE, and the converted weights used with rotate-half RoPE, give different queries but the
# same attention scores, for every head:

# %%
layout_gen = torch.Generator().manual_seed(5)
x_layout = torch.randn(2, 7, 32, generator=layout_gen, dtype=torch.float64)  # (batch, pos, d_model)
W_Q_meta = torch.randn(4, 32, 8, generator=layout_gen, dtype=torch.float64)  # (head, d_model, d_head)
W_K_meta = torch.randn(4, 32, 8, generator=layout_gen, dtype=torch.float64)  # both in the interleaved layout


def rotated_scores(W_Q, W_K, layout):
    q = torch.einsum("bpm,hmd->bhpd", x_layout, W_Q)
    k = torch.einsum("bpm,hmd->bhpd", x_layout, W_K)
    q, k = llama.rotate_queries_keys(q, k, layout=layout)
    return q, q @ k.mT  # (batch, head, pos, pos)


q_inter, s_inter = rotated_scores(W_Q_meta, W_K_meta, "interleaved")
q_halves, s_halves = rotated_scores(llama.to_halves_layout(W_Q_meta), llama.to_halves_layout(W_K_meta), "halves")
print("same queries?", torch.allclose(q_inter, q_halves), "  same scores?", torch.allclose(s_inter, s_halves))
q_mixed, s_mixed = rotated_scores(W_Q_meta, W_K_meta, "halves")
print("original weights with the halves layout, same scores?", torch.allclose(s_inter, s_mixed))

# %% [markdown]
# ## 4 · The SwiGLU feed-forward
#
# GPT-2's MLP is two matrices with a GELU between them: `gelu(x @ W_in) @ W_out`, hidden width
# 4·d_model. Shazeer (2020) tried **gated** variants, where a second up-projection multiplies the
# activated one element by element, so each hidden unit's output is switched on or off by another
# linear view of the same input:
#
# $$\text{SwiGLU}(x) = \big(\text{SiLU}(x W_\text{gate}) \odot x W_\text{in}\big)\, W_\text{out}, \qquad \text{SiLU}(z) = z \cdot \sigma(z).$$
#
# It beat the plain MLPs at the same parameter count, and PaLM and Llama adopted it. You met it in
# notebook 07 as a mixture-of-experts' expert. Meta's code calls the three matrices `w1` (gate), `w3`
# (in) and `w2` (out).
#
# **Its width.** Three matrices instead of two: at the same hidden width the layer would be half as big
# again. The GELU MLP holds 2 · d_model · 4·d_model = 8·d_model² weights; three matrices of
# d_model × d_mlp hold the same at d_mlp = 8/3 · d_model. Meta computes `int(2 * 4 * d_model / 3)` and
# rounds it **up** to a multiple of `multiple_of` (256 in Llama 2), a width that splits evenly into the
# tiles a GPU's matrix units work on; rounding up, not down, keeps the layer from falling short of the
# GELU MLP's size by up to a whole multiple.
#
# ### Exercise: The SwiGLU width (1 point, difficulty 1/3, about 5 min)
#
# Write `swiglu_width(d_model, multiple_of=64)`: `int(2 * 4 * d_model / 3)` rounded up to a multiple of
# `multiple_of` (a width that is a multiple already stays), as a Python `int`.

# %%
def swiglu_width(d_model: int, multiple_of: int = 64) -> int:
    # BEGIN SOLUTION
    hidden = int(2 * 4 * d_model / 3)  # two thirds of the GELU MLP's 4 * d_model, in Meta's order
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)  # round up
    # END SOLUTION


# %%
from course_utils.checks.todays_block import check_swiglu_width

check_swiglu_width(swiglu_width)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("swiglu_width")` for a nudge and `hint("swiglu_width", 2)` for a stronger one.
#
# Llama 2 7B's MLP width comes out of it (here the course's `llama.swiglu_width`, the same function),
# and at both widths the gated layer holds as many weights as the GELU one, a little more after
# rounding up:

# %%
for d_model, multiple_of in ((512, 64), (d_llama2_7b, 256)):
    d_mlp = llama.swiglu_width(d_model, multiple_of)
    gelu_weights, swiglu_weights = 2 * d_model * 4 * d_model, 3 * d_model * d_mlp
    print(f"d_model {d_model:>5}, multiple_of {multiple_of:>3}: d_mlp = {d_mlp:>6,};  GELU MLP {gelu_weights:>11,} "
          f"weights, SwiGLU {swiglu_weights:>11,} (x{swiglu_weights / gelu_weights:.3f})")

# %% [markdown]
# ### Exercise: The SwiGLU feed-forward (2 points, difficulty 1/3, about 10 min)
#
# Write `SwiGLU(d_model, d_mlp)`, without biases (as in Llama): in `__init__`, three `nn.Parameter`s
# named `W_gate` and `W_in`, each `(d_model, d_mlp)`, and `W_out`, `(d_mlp, d_model)` (Meta's `w1`, `w3`
# and `w2`; small random values, say normal times 0.02); `forward(x)` maps `(..., d_model)` to
# `(..., d_model)` by the formula above. The check loads seeded weights into your module by name (an
# `nn.Linear` of the right size under the same name is accepted too) and compares with the course's
# `moe.SwiGLU`, notebook 07's expert.

# %%
class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_mlp: int):
        super().__init__()
        # BEGIN SOLUTION
        self.W_gate = nn.Parameter(torch.randn(d_model, d_mlp) * 0.02)  # Meta's w1
        self.W_in = nn.Parameter(torch.randn(d_model, d_mlp) * 0.02)  # w3
        self.W_out = nn.Parameter(torch.randn(d_mlp, d_model) * 0.02)  # w2
        # END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # (..., d_model) -> (..., d_model)
        # BEGIN SOLUTION
        return (F.silu(x @ self.W_gate) * (x @ self.W_in)) @ self.W_out
        # END SOLUTION


# %%
from course_utils.checks.todays_block import check_swiglu_feed_forward

check_swiglu_feed_forward(SwiGLU)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("swiglu_feed_forward")` for a nudge and `hint("swiglu_feed_forward", 2)` for a stronger one.
#
# The gate at work: SiLU is close to 0 for negative inputs and close to the identity for positive ones,
# so for each token and hidden unit the gate decides how much of `x @ W_in` goes through. Unlike a
# ReLU it lets a little through below zero, and its smallest value is printed below. The course's
# `moe.SwiGLU` (the layer yours matches) at d_model 512 with the width above has exactly the weights
# counted there:

# %%
z = torch.linspace(-6, 6, 1201, dtype=torch.float64)
print("SiLU at -6, 0, 6:", ", ".join(f"{v:.4f}" for v in F.silu(torch.tensor([-6.0, 0.0, 6.0])).tolist()))
print(f"smallest value: {F.silu(z).min().item():.4f} at z = {z[F.silu(z).argmin()].item():.2f}")
from course_utils import moe

swiglu_512 = moe.SwiGLU(512, llama.swiglu_width(512))
print("moe.SwiGLU(512, llama.swiglu_width(512)) weights:", f"{sum(p.numel() for p in swiglu_512.parameters()):,}")

# %% [markdown]
# ## 5 · Grouped-query attention with RoPE and a KV cache
#
# TODO(helper B): the rotary_attention exercise.

# %% [markdown]
# ## 6 · The block and the model
#
# TODO(helper B): the llama_block and llama_model exercises, the parameter count.

# %% [markdown]
# ## 7 · Trained side by side
#
# TODO(lead): GPT-2-style vs Llama-style at matched parameter counts, five seeds.
