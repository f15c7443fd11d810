# ---
# jupyter:
#   course:
#     exercises:
#       fused_multi_head_attention:
#         difficulty: 2
#         minutes: 15
#         points: 3
#       grouped_query_attention:
#         difficulty: 3
#         minutes: 20
#         points: 3
#       induction_scores:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       merge_heads:
#         difficulty: 1
#         minutes: 5
#         points: 1
#       multi_head_attention:
#         difficulty: 3
#         minutes: 25
#         points: 4
#       previous_token_scores:
#         difficulty: 1
#         minutes: 5
#         points: 1
#       split_heads:
#         difficulty: 1
#         minutes: 5
#         points: 1
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
# # 05 · Multi-head attention
#
# One attention head produces one pattern per query: one way of spreading its attention. A real layer
# runs several heads **side by side**, each with its own $W_Q$, $W_K$, $W_V$, and sums what they
# propose. In this notebook you will
#
# 1. store each head's weights with a head axis in front (`W_Q` of shape `(n_heads, d_model, d_head)`,
#    the layout of notebook 03 and of interpretability code), and split a wide vector into heads and
#    merge it back (`split_heads`, `merge_heads`: exercises);
# 2. write a whole `MultiHeadAttention` layer from scratch, batched and masked (exercise), checked
#    against PyTorch's own `nn.MultiheadAttention` holding the same weights;
# 3. see that "concatenate, then multiply by $W_O$" is the same as "every head proposes a change
#    through its own slice of $W_O$, and the proposals are summed";
# 4. count parameters and FLOPs to see why 8 heads of width 64 cost the same as one head of 512, and
#    how many weights GPT-3's attention holds;
# 5. write the layer again the way PyTorch and nanoGPT store it, with one fused $W_{QKV}$ projection, and
#    then with fewer key/value heads than query heads (**grouped-query attention**, exercises);
# 6. train a tiny two-layer model (it takes seconds on a CPU; the cell times it) and find two heads
#    that learned different jobs, a **previous-token head** and an **induction head**, by writing
#    the two scores that detect them (exercises).
#
# **7 exercises, 15 points, about 85 minutes in all.**

# %% [markdown]
# ## 1 · Set up

# %%
import torch
from torch import nn

from course_utils.env import describe_device, pick_device, seed_everything

seed_everything(0)
device = pick_device()
print("computing on", describe_device(device))  # this machine's device: the tests mask it

# %% [markdown]
# ## 2 · Weights per head, and splitting a wide vector into heads
#
# Each head keeps its own matrices, stored exactly as notebook 03 stored its single head, with a head
# axis in front: $W_Q$, $W_K$, $W_V$ of shape `(n_heads, d_model, d_head)`, $W_O$ of shape
# `(n_heads, d_head, d_model)`, biases $b_Q, b_K, b_V$ of shape `(n_heads, d_head)` and $b_O$ of shape
# `(d_model,)`, where $d_\text{head} = d_\text{model} / n_\text{heads}$. So `W_Q[h]` *is* head $h$'s
# query matrix (interpretability code such as TransformerLens uses this layout). In notebook 03 the
# width of a query or key was called $d_k$; it is the same number as $d_\text{head}$, and the width
# of a value, $d_v$, is $d_\text{head}$ too.
#
# Other code (PyTorch's `nn.MultiheadAttention`, GPT-2's checkpoints) stores the same numbers
# differently: the heads' matrices side by side as one `d_model × d_model` matrix, head $h$ owning the
# block of columns $h \cdot d_\text{head}$ to $(h+1) \cdot d_\text{head}$. Its product with $x$ is one
# wide vector per position, and cutting that vector back into heads is a reshape of the last axis into
# `(n_heads, d_head)` followed by moving the head axis in front of the positions:
# `(batch, pos, d_model) → (batch, pos, n_heads, d_head) → (batch, n_heads, pos, d_head)`.
# With 8 columns and 2 heads, head 0 gets columns 0–3 and head 1 gets columns 4–7:

# %%
from course_utils.attention import multihead

x_small = torch.arange(16.0).reshape(1, 2, 8)  # (batch=1, pos=2, d_model=8)
print("x:", x_small.tolist())
split = multihead.split_heads(x_small, n_heads=2)
print("split shape:", tuple(split.shape), "(batch, head, pos, d_head)")
print("head 0:", split[0, 0].tolist())
print("head 1:", split[0, 1].tolist())


# %% [markdown]
# ### Exercise: Split a wide vector into heads (1 point, difficulty 1/3, about 5 min)
#
# Write `split_heads(x, n_heads)`: `x` is `(batch, pos, d_model)`, the result
# `(batch, n_heads, pos, d_head)` with head $h$ holding columns $h \cdot d_\text{head}$ to
# $(h+1) \cdot d_\text{head}$. A plain `reshape` to `(batch, n_heads, pos, d_head)` has the right
# shape and the wrong contents: the check will tell you if you fall into that.

# %%
def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    # (batch, pos, d_model) -> (batch, n_heads, pos, d_head)
    # BEGIN SOLUTION
    batch, pos, d_model = x.shape
    return x.reshape(batch, pos, n_heads, d_model // n_heads).transpose(1, 2)
    # END SOLUTION


# %%
from course_utils.checks.multihead_attention import check_merge_heads, check_multi_head_attention, check_split_heads

check_split_heads(split_heads)


# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("split_heads")` for a nudge and `hint("split_heads", 2)` for a stronger one.
#
# ### Exercise: Merge the heads back (1 point, difficulty 1/3, about 5 min)
#
# Write its inverse `merge_heads(z)`: `(batch, n_heads, pos, d_head)` → `(batch, pos, n_heads * d_head)`,
# the heads' outputs side by side again (what PyTorch multiplies by its wide output matrix), so that
# `merge_heads(split_heads(x, h))` gives back `x`.

# %%
def merge_heads(z: torch.Tensor) -> torch.Tensor:
    # (batch, n_heads, pos, d_head) -> (batch, pos, n_heads * d_head)
    # BEGIN SOLUTION
    batch, n_heads, pos, d_head = z.shape
    return z.transpose(1, 2).reshape(batch, pos, n_heads * d_head)
    # END SOLUTION


# %%
check_merge_heads(merge_heads)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("merge_heads")` for a nudge and `hint("merge_heads", 2)` for a stronger one.

# %% [markdown]
# ## 3 · The whole layer
#
# Project into every head at once with one `einsum` (`"bpm,hmd->bhpd"`: batch, position, model
# width times head, model width, head width), attend in every head at once (the attention function
# from notebook 03 accepts any leading axes, here `(batch, head)`), send each head's output back to
# `d_model` through its own $W_O[h]$, and add the heads up. Following the shapes through one layer
# with $d_\text{model} = 16$ and 4 heads on 6 tokens:

# %%
from course_utils.attention import attention_pattern, scaled_dot_product_attention
from course_utils.masking import causal_mask

torch.manual_seed(0)
layer = multihead.MultiHeadAttention(d_model=16, n_heads=4)
x = torch.randn(1, 6, 16)  # (batch, pos, d_model)
q = torch.einsum("bpm,hmd->bhpd", x, layer.W_Q) + layer.b_Q[:, None, :]
k = torch.einsum("bpm,hmd->bhpd", x, layer.W_K) + layer.b_K[:, None, :]
v = torch.einsum("bpm,hmd->bhpd", x, layer.W_V) + layer.b_V[:, None, :]
pattern = attention_pattern(q, k, causal_mask(6))
z = scaled_dot_product_attention(q, k, v, causal_mask(6))
out = torch.einsum("bhpd,hdm->bpm", z, layer.W_O) + layer.b_O
for name, t in [("W_Q", layer.W_Q), ("W_O", layer.W_O), ("x", x), ("q, k, v", q), ("pattern", pattern), ("z", z), ("output", out)]:
    print(f"{name:<8} {tuple(t.shape)}")
print("same as layer(x, mask):", torch.allclose(out, layer(x, causal_mask(6))))
wide_W_Q = torch.cat(list(layer.W_Q), dim=1)  # the heads' W_Q side by side: (d_model, n_heads * d_head)
print("wide W_Q", tuple(wide_W_Q.shape), "then split_heads gives the same q:",
      torch.allclose(multihead.split_heads(x @ wide_W_Q + layer.b_Q.reshape(-1), 4), q))

# %% [markdown]
# ### Exercise: Multi-head attention from scratch (4 points, difficulty 3/3, about 25 min)
#
# Write `forward` for a `MultiHeadAttention` module **from scratch**: projections,
# scores, mask, softmax, mixing, output projection, batched over `(batch, head)`, using torch
# operations only (`torch.einsum` or `@`, `masked_fill`, `softmax`), not the course's attention
# functions. The parameters are given in the layout above: `W_Q`, `W_K`, `W_V` of shape
# `(n_heads, d_model, d_head)`, `W_O` of shape `(n_heads, d_head, d_model)`, biases `b_Q`, `b_K`, `b_V`
# of shape `(n_heads, d_head)` and `b_O` of shape `(d_model,)`. `x` is `(batch, pos, d_model)` and the
# output has the same shape. `mask` is `None` or a boolean tensor with **True = may attend**, of shape
# `(q_pos, k_pos)` or `(batch, q_pos, k_pos)` (give the latter a head axis before using it); every
# query may attend to at least one key. The check loads the same weights into your module and into
# PyTorch's `nn.MultiheadAttention` and compares the outputs.

# %%
import math


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.W_Q = nn.Parameter(torch.randn(n_heads, d_model, self.d_head) / math.sqrt(d_model))
        self.W_K = nn.Parameter(torch.randn(n_heads, d_model, self.d_head) / math.sqrt(d_model))
        self.W_V = nn.Parameter(torch.randn(n_heads, d_model, self.d_head) / math.sqrt(d_model))
        self.W_O = nn.Parameter(torch.randn(n_heads, self.d_head, d_model) / math.sqrt(d_model))
        self.b_Q = nn.Parameter(torch.zeros(n_heads, self.d_head))
        self.b_K = nn.Parameter(torch.zeros(n_heads, self.d_head))
        self.b_V = nn.Parameter(torch.zeros(n_heads, self.d_head))
        self.b_O = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: torch.Tensor, mask=None) -> torch.Tensor:
        # (batch, pos, d_model) -> (batch, pos, d_model)
        # BEGIN SOLUTION
        q = torch.einsum("bpm,hmd->bhpd", x, self.W_Q) + self.b_Q[:, None, :]  # (batch, head, pos, d_head)
        k = torch.einsum("bpm,hmd->bhpd", x, self.W_K) + self.b_K[:, None, :]
        v = torch.einsum("bpm,hmd->bhpd", x, self.W_V) + self.b_V[:, None, :]
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (batch, head, q_pos, k_pos)
        if mask is not None:
            if mask.ndim == 3:
                mask = mask[:, None]  # (batch, 1, q_pos, k_pos)
            scores = scores.masked_fill(~mask, float("-inf"))
        z = scores.softmax(dim=-1) @ v  # (batch, head, q_pos, d_head)
        return torch.einsum("bhpd,hdm->bpm", z, self.W_O) + self.b_O
        # END SOLUTION


# %%
check_multi_head_attention(MultiHeadAttention)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("multi_head_attention")` for a nudge and `hint("multi_head_attention", 2)` for a stronger one.

# %% [markdown]
# ## 4 · Every head proposes a change; the changes are summed
#
# "Concatenate the heads, then multiply by one wide $W_O$" (PyTorch's way) sounds as if the heads get
# mixed together. Write the wide matrix as a stack of row blocks, one block of $d_\text{head}$ rows per
# head; in the course's layout block $h$ is just `W_O[h]`. Multiplying the concatenation
# $[z_0, z_1, \dots]$ by the stack is a block product:
#
# $$\operatorname{concat}(z_0, \dots, z_{n-1})\, W_O = \sum_h z_h\, W_O^{(h)}$$
#
# so each head writes its own proposal $z_h W_O^{(h)}$ (a full `d_model`-wide vector per position)
# and the layer adds them up. `per_head_contributions` computes the proposals separately:

# %%
x64 = x.double()
layer64 = multihead.MultiHeadAttention(16, 4).double()
parts = layer64.per_head_contributions(x64, causal_mask(6))  # (batch, head, pos, d_model)
print("proposals:", tuple(parts.shape), "(batch, head, pos, d_model)")
total = parts.sum(dim=1) + layer64.b_O
concat_then_wide = multihead.merge_heads(layer64.head_outputs(x64, causal_mask(6))) @ layer64.W_O.reshape(16, 16) + layer64.b_O
print("sum of proposals + b_O == concat then wide W_O:", torch.allclose(total, concat_then_wide, atol=1e-12))
print("... == layer64(x):", torch.allclose(total, layer64(x64, causal_mask(6)), atol=1e-12))

# %% [markdown]
# This is the view interpretability work uses. Each position carries one `d_model`-wide vector
# through the whole model, the **residual stream**: it starts as the token's embedding plus its
# position, and every layer *adds* its output to it (`x = x + attention(x)`, and later
# `x = x + mlp(x)`) instead of replacing it. So you can ask what any single head adds to the residual
# stream, or switch one head off, without touching the others.
#
# ## 5 · Same cost as one big head
#
# Splitting does not add weights: $W_Q$, $W_K$, $W_V$ and $W_O$ hold `d_model × d_model` numbers each
# whatever the number of heads. The FLOPs (multiply and add counted as two) come in two parts. The
# four **projections** cost $4 \cdot 2 \cdot n_\text{ctx} \cdot d_\text{model}^2$, independent of
# the heads. The **attention** itself costs $2 \cdot n_\text{ctx}^2 \cdot d_\text{head}$ for the
# scores of one head and the same again to mix the values, so $4 \cdot n_\text{ctx}^2 \cdot
# d_\text{model}$ over all heads, since $n_\text{heads} \cdot d_\text{head} = d_\text{model}$. Neither
# part depends on how the width is cut. The formulas in `attention_cost` against two oracles, the
# parameter count of the real module and PyTorch's FLOP counter, once on the attention alone and once
# on the whole layer (the paper's $d_\text{model} = 512$, 512 tokens):

# %%
from torch.utils.flop_counter import FlopCounterMode


def counted_flops(fn, *args):
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        fn(*args)
    return counter.get_total_flops()


d_model, n_ctx = 512, 512
print(f"{'n_heads':>7} {'d_head':>6} {'params':>10} | {'projection FLOPs':>16} | {'attention FLOPs':>15} {'(counted)':>13} | {'total':>13} {'(counted)':>13}")
for n_heads in (1, 8, 64):
    module = multihead.MultiHeadAttention(d_model, n_heads)
    cost = multihead.attention_cost(d_model, n_heads, n_ctx)
    assert cost["params"] == sum(p.numel() for p in module.parameters())
    x_cost = torch.randn(1, n_ctx, d_model)
    q_c, k_c, v_c = module.qkv(x_cost)
    attention_only = counted_flops(scaled_dot_product_attention, q_c, k_c, v_c)
    total = counted_flops(module, x_cost)
    print(f"{n_heads:>7} {d_model // n_heads:>6} {cost['params']:>10,} | {cost['projection_flops']:>16,} | "
          f"{cost['attention_flops']:>15,} {attention_only:>13,} | {cost['flops']:>13,} {total:>13,}")
print(f"projections = 8·n·d² = {8 * n_ctx * d_model**2:,};  attention = 4·n²·d = {4 * n_ctx**2 * d_model:,}")

# %% [markdown]
# Eight heads of 64 dimensions get eight independent patterns for the price of one 512-dimensional
# pattern. GPT-2 small cuts its width the same way; the course's record of its sizes
# (`course_utils.counting.parameters.GPT2_SMALL`, which the tests compare with `transformers`' GPT-2 defaults) says how:

# %%
from course_utils.counting import GPT2_SMALL as gpt2

print(f"GPT-2 small: d_model = {gpt2.d_model}, n_heads = {gpt2.n_heads}, d_head = {gpt2.d_head}; "
      f"{gpt2.n_heads} × {gpt2.d_head} = {gpt2.n_heads * gpt2.d_head}")

# %% [markdown]
# The same count at GPT-3's size: $d_\text{model}$ = 12,288 cut into 96 heads of 128, and 96 layers
# (no biases in this count). One head's four matrices are thin (`12,288 × 128` or `128 × 12,288`), a
# layer's attention has 96 of them, and the whole model 96 such layers: about a third of GPT-3's
# weights. The module built on PyTorch's `meta` device (shapes only, no memory) confirms the formula:

# %%
d_gpt3, heads_gpt3, layers_gpt3 = 12_288, 96, 96
d_head_gpt3 = d_gpt3 // heads_gpt3
per_head = 4 * d_gpt3 * d_head_gpt3  # W_Q, W_K, W_V: d_model × d_head; W_O: d_head × d_model
per_layer = multihead.attention_cost(d_gpt3, heads_gpt3, n_ctx=2048, bias=False)["params"]
with torch.device("meta"):
    gpt3_layer = multihead.MultiHeadAttention(d_gpt3, heads_gpt3, bias=False)
print(f"d_model = {d_gpt3:,}, {heads_gpt3} heads: d_head = {d_head_gpt3}; one head: {per_head:,} weights")
print(f"one layer: {heads_gpt3} × {per_head:,} = {per_layer:,} (module on the meta device: {sum(p.numel() for p in gpt3_layer.parameters()):,})")
print(f"all {layers_gpt3} layers: {layers_gpt3 * per_layer:,}")

# %% [markdown]
# ## 6 · Agreement with PyTorch, and its two mask conventions
#
# `to_torch_mha` copies the weights into a `torch.nn.MultiheadAttention` (the heads' matrices side by
# side, as in section 2). Mind the masks: PyTorch has **two opposite conventions** for a boolean
# `attn_mask`.
#
# * `nn.MultiheadAttention`: True marks a cell that is **not** allowed, so it gets `~mask`.
# * `torch.nn.functional.scaled_dot_product_attention`: True marks a cell that **may** attend, the
#   course's convention, so it gets the mask as it is (that is what our fused path passes it).
#
# Our reference path, our fused path and PyTorch's module agree, and handing either PyTorch function
# the other's convention gives a different answer:

# %%
import torch.nn.functional as F

torch_mha = multihead.to_torch_mha(layer64)
mask6 = causal_mask(6)
theirs, _ = torch_mha(x64, x64, x64, attn_mask=~mask6, need_weights=False)  # True = blocked
ours = layer64(x64, mask6)
fused = layer64(x64, mask6, impl="fused")
q64, k64, v64 = layer64.qkv(x64)
z_sdpa = F.scaled_dot_product_attention(q64, k64, v64, attn_mask=mask6)  # True = may attend
via_sdpa = torch.einsum("bhpd,hdm->bpm", z_sdpa, layer64.W_O) + layer64.b_O
print("reference vs nn.MultiheadAttention (given ~mask):", torch.allclose(ours, theirs, atol=1e-12))
print("reference vs F.scaled_dot_product_attention (given mask):", torch.allclose(ours, via_sdpa, atol=1e-12))
print("reference vs fused path:", torch.allclose(ours, fused, atol=1e-12))
swapped, _ = torch_mha(x64, x64, x64, attn_mask=mask6, need_weights=False)
print("nn.MultiheadAttention given the course's mask as is, same answer?", torch.allclose(ours, swapped, atol=1e-6))

# %% [markdown]
# ### Exercise: One fused projection (3 points, difficulty 2/3, about 15 min)
#
# `nn.MultiheadAttention` keeps $W_Q$, $W_K$ and $W_V$ as **one** matrix, `in_proj_weight` of shape
# `(3 * d_model, d_model)`, and nanoGPT does the same with its `c_attn` layer: one matrix product gives
# q, k and v side by side, which is faster than three small ones. Write `FusedMultiHeadAttention`:
# `__init__(d_model, n_heads, causal=False)` creates two `nn.Linear` layers with biases, `W_QKV` from
# `d_model` to three times `d_model` and `W_O` from `d_model` to `d_model`; `forward(x)` maps `(batch, pos, d_model)`
# to `(batch, pos, d_model)`. The output features of `W_QKV` are all of q, then all of k, then all of v
# (`d_model` each), and within each, head $h$ owns features $h \cdot d_\text{head}$ onwards, as in
# section 2. With `causal=True` a query sees only keys at or before it. The check copies the weights of
# a seeded `nn.MultiheadAttention` into your module and compares the outputs.

# %%
class FusedMultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, causal: bool = False):
        super().__init__()
        # BEGIN SOLUTION
        self.n_heads, self.causal = n_heads, causal
        self.W_QKV = nn.Linear(d_model, 3 * d_model)
        self.W_O = nn.Linear(d_model, d_model)
        # END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # (batch, pos, d_model) -> (batch, pos, d_model)
        # BEGIN SOLUTION
        batch, pos, d_model = x.shape
        q, k, v = self.W_QKV(x).split(d_model, dim=-1)  # each (batch, pos, d_model)
        q, k, v = (t.view(batch, pos, self.n_heads, -1).transpose(1, 2) for t in (q, k, v))  # (batch, head, pos, d_head)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (batch, head, q_pos, k_pos)
        if self.causal:
            allowed = torch.ones(pos, pos, dtype=torch.bool, device=x.device).tril()
            scores = scores.masked_fill(~allowed, float("-inf"))
        z = scores.softmax(dim=-1) @ v  # (batch, head, q_pos, d_head)
        return self.W_O(z.transpose(1, 2).reshape(batch, pos, d_model))  # heads side by side, then W_O
        # END SOLUTION


# %%
from course_utils.checks.multihead_attention import check_fused_multi_head_attention

check_fused_multi_head_attention(FusedMultiHeadAttention)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("fused_multi_head_attention")` for a nudge and `hint("fused_multi_head_attention", 2)` for a stronger one.
#
# The fused layer holds exactly the numbers of the per-head one, only arranged differently:
# `multihead.to_fused` rearranges `layer64`'s weights into a `W_QKV`, and the two layers agree:

# %%
fused_layer = multihead.to_fused(layer64, causal=True)
print("W_QKV weight:", tuple(fused_layer.W_QKV.weight.shape), " W_O weight:", tuple(fused_layer.W_O.weight.shape))
print("same parameter count:", sum(p.numel() for p in fused_layer.parameters()) == sum(p.numel() for p in layer64.parameters()))
print("fused layer == per-head layer with the causal mask:", torch.allclose(fused_layer(x64), ours, atol=1e-12))

# %% [markdown]
# ## 7 · Grouped-query attention: fewer keys and values to keep
#
# When a model generates text, it keeps every earlier token's keys and values (the **KV cache**, notebook
# 09) so that it does not recompute them at each step. With ordinary multi-head attention that is one key
# and one value of width $d_\text{head}$ per head, per layer, per token, and at long contexts the cache
# outweighs the model. **Grouped-query attention** (GQA) keeps all the query heads but only `n_kv_heads`
# key/value heads: the query heads are cut into groups of `n_heads // n_kv_heads` consecutive heads, and
# each group shares one key/value head. `n_kv_heads = n_heads` is ordinary multi-head attention and
# `n_kv_heads = 1` is **multi-query attention**. Llama 2 70B uses 64 query heads and 8 key/value heads of
# width 128 over 80 layers; the cache for one sequence of 4,096 tokens, in numbers and in bf16 bytes:

# %%
from course_utils.attention import kv_cache_values

llama2_70b = {"n_layers": 80, "d_head": 128, "n_ctx": 4096}
print("Llama 2 70B:", llama2_70b, "and 64 query heads")
for label, kv_heads in (("multi-head, 64 KV heads", 64), ("grouped, 8 KV heads", 8), ("multi-query, 1 KV head", 1)):
    values = kv_cache_values(n_kv_heads=kv_heads, **llama2_70b)
    print(f"{label:<24} {values:>14,} numbers = {2 * values / 2**30:5.2f} GiB in bf16")

# %% [markdown]
# ### Exercise: Grouped-query attention (3 points, difficulty 3/3, about 20 min)
#
# Write `GroupedQueryAttention(d_model, n_heads, n_kv_heads)`, without biases (as in Llama): `__init__`
# already makes `W_Q` `(n_heads, d_model, d_head)` and `W_O` `(n_heads, d_head, d_model)` as in section 3;
# add the parameters `W_K` and `W_V`, each of shape `(n_kv_heads, d_model, d_head)`, with
# $d_\text{head} = d_\text{model} / n_\text{heads}$; in `forward(x, mask=None)`, the multi-head attention
# of section 3 in which query head $h$ uses key/value head $h$ // (`n_heads // n_kv_heads`). `mask` is `None`
# or a boolean tensor, True = may attend, of shape `(q_pos, k_pos)` or `(batch, q_pos, k_pos)` (one
# table per sequence, such as a padding mask: give it a head axis). The check loads seeded weights into your module
# by name and compares with PyTorch's `F.scaled_dot_product_attention(..., enable_gqa=True)`.

# %%
class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.d_head = n_heads, n_kv_heads, d_model // n_heads
        self.W_Q = nn.Parameter(torch.randn(n_heads, d_model, self.d_head) / math.sqrt(d_model))
        self.W_O = nn.Parameter(torch.randn(n_heads, self.d_head, d_model) / math.sqrt(d_model))
        # BEGIN SOLUTION
        self.W_K = nn.Parameter(torch.randn(n_kv_heads, d_model, self.d_head) / math.sqrt(d_model))
        self.W_V = nn.Parameter(torch.randn(n_kv_heads, d_model, self.d_head) / math.sqrt(d_model))
        # END SOLUTION

    def forward(self, x: torch.Tensor, mask=None) -> torch.Tensor:
        # (batch, pos, d_model) -> (batch, pos, d_model)
        # BEGIN SOLUTION
        q = torch.einsum("bpm,hmd->bhpd", x, self.W_Q)  # (batch, n_heads, pos, d_head)
        k = torch.einsum("bpm,hmd->bhpd", x, self.W_K)  # (batch, n_kv_heads, pos, d_head)
        v = torch.einsum("bpm,hmd->bhpd", x, self.W_V)
        group = self.n_heads // self.n_kv_heads
        k = k.repeat_interleave(group, dim=1)  # (batch, n_heads, pos, d_head): head h reads kv head h // group
        v = v.repeat_interleave(group, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (batch, n_heads, q_pos, k_pos)
        if mask is not None:
            if mask.ndim == 3:
                mask = mask[:, None]  # (batch, 1, q_pos, k_pos): the same table for every head
            scores = scores.masked_fill(~mask, float("-inf"))
        z = scores.softmax(dim=-1) @ v  # (batch, n_heads, q_pos, d_head)
        return torch.einsum("bhpd,hdm->bpm", z, self.W_O)
        # END SOLUTION


# %%
from course_utils.checks.multihead_attention import check_grouped_query_attention

check_grouped_query_attention(GroupedQueryAttention)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("grouped_query_attention")` for a nudge and `hint("grouped_query_attention", 2)` for a stronger one.
#
# The course's `grouped_query.GroupedQueryAttention` can skip the copies: PyTorch's fused kernel, told
# `enable_gqa=True`, reads each key/value head for its whole group. Both paths agree, and the weights
# shrink with the key/value heads (here 8 query heads of width 8 sharing 2 key/value heads):

# %%
from course_utils.attention import GroupedQueryAttention as CourseGQA

gqa = CourseGQA(64, 8, 2, generator=torch.Generator().manual_seed(0)).double()
x_gqa = torch.randn(2, 6, 64, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
print(f"d_model = {gqa.d_model}: {gqa.n_heads} query heads of width {gqa.d_head}, {gqa.n_kv_heads} key/value heads")
print("copies of K, V vs enable_gqa=True:", torch.allclose(gqa(x_gqa, mask6), gqa(x_gqa, mask6, impl="fused"), atol=1e-12))
print("parameters: grouped", sum(p.numel() for p in gqa.parameters()), "vs multi-head",
      sum(p.numel() for p in multihead.MultiHeadAttention(64, 8, bias=False).parameters()))

# %% [markdown]
# ## 8 · Different heads learn different jobs
#
# Why have several heads at all? Because training makes them specialise. To see it happen in
# seconds, take a toy task where specialisation is *required*: sequences that repeat a random block
# of tokens (`3 9 4 17 3 9 4 17 3 ...`), with a different block length in every sequence. Once the
# block has been seen, every next token is predictable, but only by finding where the current token
# appeared before and copying what came **after** it. One attention layer cannot do that; two can:
#
# * a **previous-token head** (layer 0) writes into each position "the token before me was ...";
# * an **induction head** (layer 1) then looks for the position whose *previous* token equals the
#   current token, which is exactly the position right after the earlier copy, and copies it.
#
# The model has only attention (no MLP, no LayerNorm): token and position embeddings, two layers of
# two heads, and an unembedding. Training runs on the device picked at the top; the next cells time
# it and show the loss.

# %%
import time

from course_utils.attention import induction

cfg = induction.InductionConfig()
print(cfg)
start = time.perf_counter()
model, losses = induction.trained_induction_model(cfg, seed=0, device=device)
train_seconds = time.perf_counter() - start

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: training time, and losses of a model trained on `device` (digits vary by device).
import math

print(f"trained {cfg.steps} steps on {describe_device(device)} in {train_seconds:.1f} s")
print(f"loss at step 0: {losses[0]:.2f} (chance: ln {cfg.d_vocab} = {math.log(cfg.d_vocab):.2f});  "
      f"mean of the last 20 steps: {sum(losses[-20:]) / 20:.2f}")


# %% [markdown]
# To read the heads, feed the model 200 fresh sequences of 10 random tokens followed by the same 10
# tokens, and score each head by its average attention on two stripes of its pattern
# (a `(batch, head, q_pos, k_pos)` tensor, one per layer):
#
# * **previous-token score**: the weight on the key just before the query (key = query − 1),
#   averaged over the batch and over queries 1 to the end (query 0 has no previous token);
# * **induction score**: with sequences made of a first half of `half_len` tokens repeated once,
#   query $i \ge$ `half_len` holds the same token as position $i -$ `half_len`; an induction head
#   looks at the key right **after** that earlier copy, $i -$ `half_len` $+ 1$. The score is the weight
#   on that key, averaged over the batch and over the second-half queries only.
#
# A perfect head of either kind scores 1. Both scores return **one number per head**, shape `(head,)`.
#
# ### Exercise: The previous-token score (1 point, difficulty 1/3, about 5 min)
#
# Write `previous_token_scores(pattern)`. The check runs it on random and hand-built patterns and on
# the patterns of the model you just trained (the check gets the same model from
# `induction.trained_induction_model`, which remembers a training run), against the course's version.

# %%
def previous_token_scores(pattern: torch.Tensor) -> torch.Tensor:
    # pattern (batch, head, q_pos, k_pos) -> (head,)
    # BEGIN SOLUTION
    return pattern.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, -1))
    # END SOLUTION


# %%
from course_utils.checks.multihead_attention import check_induction_scores, check_previous_token_scores

check_previous_token_scores(previous_token_scores)


# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("previous_token_scores")` for a nudge and `hint("previous_token_scores", 2)` for a stronger one.
#
# ### Exercise: The induction score (2 points, difficulty 2/3, about 10 min)
#
# Write `induction_scores(pattern, half_len)`, as defined above.

# %%
def induction_scores(pattern: torch.Tensor, half_len: int) -> torch.Tensor:
    # pattern (batch, head, q_pos, k_pos); queries >= half_len repeat the first half -> (head,)
    # BEGIN SOLUTION
    stripe = pattern.diagonal(offset=-(half_len - 1), dim1=-2, dim2=-1)
    return stripe[..., 1:].mean(dim=(0, -1))
    # END SOLUTION


# %%
check_induction_scores(induction_scores)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("induction_scores")` for a nudge and `hint("induction_scores", 2)` for a stronger one.
#
# The course's versions (`induction.previous_token_scores`, `induction.induction_scores`) score every
# head of the trained model. The exact values can move in the second decimal on other machines, so
# the course's tests only check which heads win and that they score above 0.5.

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: scores of the model trained on `device` above (digits vary by device).
probe = induction.repeated_sequences(200, 10, cfg.d_vocab, torch.Generator().manual_seed(123)).to(device)
patterns = [p.cpu() for p in model.patterns(probe)]  # one (batch, head, q_pos, k_pos) tensor per layer
prev = [induction.previous_token_scores(p) for p in patterns]
ind = [induction.induction_scores(p, 10) for p in patterns]
for layer_index in range(cfg.n_layers):
    for head in range(cfg.n_heads):
        print(f"layer {layer_index} head {head}: previous-token {prev[layer_index][head]:.2f}, induction {ind[layer_index][head]:.2f}")

# %%
prev_head = int(prev[0].argmax())
ind_head = int(ind[1].argmax())
print(f"previous-token head: layer 0 head {prev_head}; score above 0.5: {bool(prev[0][prev_head] > 0.5)}")
print(f"induction head:      layer 1 head {ind_head}; score above 0.5: {bool(ind[1][ind_head] > 0.5)}")

# %% [markdown]
# All four patterns on one probe sequence (keys across, queries down). Look for the stripe one below
# the diagonal in the previous-token head, and the stripe 9 below the diagonal, in the second half
# only, in the induction head:

# %%
from course_utils.viz.head_viewer import attention_viewer, plot_heads

labels = [str(t) for t in probe[0].tolist()]
one = [p[0] for p in patterns]  # (head, q_pos, k_pos) per layer, first probe sequence
scores = {"previous-token": prev, "induction": ind}
fig = plot_heads(one, labels, scores)

# %% [markdown]
# ### The attention-pattern viewer
#
# Choose a layer, a head and a query position; the readout lists that query's weights on every key
# it may see, and the head's two scores.

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: a widget draws into an Output area, which nbval cannot follow.
attention_viewer(one, labels, scores)

# %% [markdown]
# Does the task really need two layers? Train the same model with a single layer (its heads can
# still look anywhere, but there is no earlier layer to tell them what the *previous* token was):

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: losses of a model trained on `device` (digits vary by device).
from dataclasses import replace

one_layer, one_layer_losses = induction.train_induction_model(replace(cfg, n_layers=1), seed=0, device=device)
final_two, final_one = sum(losses[-20:]) / 20, sum(one_layer_losses[-20:]) / 20
print(f"final loss, two layers: {final_two:.2f};  one layer: {final_one:.2f}")

# %%
print("one layer ends at least 3 times higher:", final_one > 3 * final_two)

# %% [markdown]
# The single-layer model can only guess from the tokens it has seen; the two-layer model copies. In
# real language models the same two kinds of head show up early in training, next to many others
# (heads that track syntax, names or positions).
#
# ## Next
#
# **06 · MLP & superposition**: the other half of every block, where each position computes on its
# own.
