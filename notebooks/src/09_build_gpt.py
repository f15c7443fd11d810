# ---
# jupyter:
#   course:
#     exercises:
#       causal_attention:
#         difficulty: 2
#         minutes: 25
#         points: 3
#       embed_tokens:
#         difficulty: 1
#         minutes: 5
#         points: 1
#       gelu_mlp:
#         difficulty: 1
#         minutes: 10
#         points: 2
#       gpt_forward:
#         difficulty: 2
#         minutes: 20
#         points: 3
#       init_weights:
#         difficulty: 2
#         minutes: 15
#         points: 2
#       kv_cache_step:
#         difficulty: 3
#         minutes: 15
#         points: 2
#       layer_norm:
#         difficulty: 1
#         minutes: 5
#         points: 1
#       next_token_loss:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       transformer_block:
#         difficulty: 2
#         minutes: 10
#         points: 2
#     numbers_allowed:
#       '2017': the year of the Transformer paper, a citation
#       '2020': the year of Xiong et al.'s paper on warm-up, a citation
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
# # 09 · Build a GPT, class by class
#
# Every piece is here already: tokens (01), embeddings and positions (02), attention (03), masks and
# sampling (04), heads (05), the MLP (06). This notebook assembles them into one decoder-only model of
# your own, class by class, under the parameter names of the course's `GPT`. The next two notebooks
# use what you build here: notebook 10 trains your model with training code you write there, and
# notebook 11 samples from it through your KV cache, looks inside it and loads GPT-2's tensors into the
# same class. They read your classes from this notebook's file, which sits beside them in your folder,
# so save it once your checks pass.
#
# You write most of it: **9 exercises, 18 points, about 115 minutes in all.** Each heading gives
# its share.
#
# 1. LayerNorm by hand; layer norm vs batch norm; pre-norm vs post-norm
# 2. The model: your own GPT class by class (its attention takes a KV cache), nanoGPT's
#    initialisation, logits and the loss

# %%
import math

import torch
import torch.nn.functional as F

from course_utils.env import describe_device, pick_device, seed_everything

seed_everything(0)
device = pick_device()
print("computing on", describe_device(device))  # this machine's device: the tests mask it

# %% [markdown]
# ## 1. LayerNorm
#
# A block's sub-layers keep adding to the residual stream, so the size of its vectors drifts. Layer
# normalisation resets each position's vector on its own: subtract its mean μ, divide by its standard
# deviation √(σ² + ε), then apply a learned scale `w` (γ) and shift `b` (β), one per feature. The
# worked vector is [2, 4, 6, 8]:

# %%
from course_utils import layernorm
from course_utils.layernorm import LayerNorm, batch_norm, norm_stats

x = torch.tensor([2.0, 4.0, 6.0, 8.0])
mean, var = norm_stats(x)
print(f"mean {mean.item():g}, variance {var.item():g}, standard deviation {var.sqrt().item():.3f}")
print("normalised:", [round(v, 3) for v in layernorm.layer_norm(x, eps=0.0).tolist()])
print("same as torch.nn.LayerNorm (w = 1, b = 0 at the start):",
      torch.allclose(LayerNorm(4)(x[None]), torch.nn.LayerNorm(4)(x[None])))


# %% [markdown]
# The variance divides by the number of features (here 4), not by one less: it describes this
# vector, it does not estimate a population. ε (1e-5) only matters when a vector is nearly constant.
#
# ### Exercise: LayerNorm (1 point, difficulty 1/3, about 5 min)
#
# Write `layer_norm(x, w, b, eps=1e-5)` for `x` of shape `(..., d_model)` and `w`, `b` of shape
# `(d_model,)`, returning a tensor shaped like `x`. Do not call `torch.nn.functional.layer_norm`
# (the check accepts it, but the point is to write it).

# %%
def layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    # BEGIN SOLUTION
    centred = x - x.mean(dim=-1, keepdim=True)
    var = (centred ** 2).mean(dim=-1, keepdim=True)
    return centred / torch.sqrt(var + eps) * w + b
    # END SOLUTION


# %%
from course_utils.checks.build_gpt import check_layer_norm

check_layer_norm(layer_norm)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("layer_norm")` for a nudge and `hint("layer_norm", 2)` for a stronger one.

# %% [markdown]
# **Layer norm vs batch norm.** Batch norm, from image models, takes each feature's statistics over
# the *batch*; layer norm takes them over each vector's own features. So under batch norm one
# sequence's output depends on which other sequences share its batch, and a batch of one has no
# spread at all. Change every row but the first and compare the first row's output:

# %%
rows = torch.randn(4, 6, generator=torch.Generator().manual_seed(0))
others_changed = torch.cat([rows[:1], 3 * rows[1:] + 1])
print("batch norm, first row unchanged?", torch.allclose(batch_norm(rows)[0], batch_norm(others_changed)[0]))
print("layer norm, first row unchanged?", torch.allclose(layernorm.layer_norm(rows)[0], layernorm.layer_norm(others_changed)[0]))

# %% [markdown]
# **Pre-norm vs post-norm.** The 2017 Transformer normalised *after* each addition,
# `x = LN(x + sublayer(x))` (post-norm). GPT-2 and nearly every model since normalise the sub-layer's
# *input* and add its output to an untouched stream, `x = x + sublayer(LN(x))` (pre-norm). In
# post-norm the stream is rescaled after every block; in pre-norm it is a running sum whose size
# grows with depth, and the gradient has a clean path straight through all the additions. Xiong et
# al. (2020) showed what this changes at the start of training: in post-norm the gradients of the
# last layers are large at initialisation, so post-norm only trains with a long learning-rate
# warm-up, while pre-norm trains stably without it. (That is not the same as *no* warm-up: notebook 10
# says why its run still has a short one.) Both arrangements are in `course_utils.gpt.model.Block`
# (`GPTConfig(norm="pre" | "post")`); the stream's size, block by block, in an untrained 12-layer model:

# %%
from course_utils.gpt import GPT, GPTConfig, stream_rms
from course_utils.viz.small_gpt import plot_stream_size

probe = torch.randint(0, 512, (2, 64), generator=torch.Generator().manual_seed(1))
sizes = {}
for norm in ("pre", "post"):
    deep = GPT(GPTConfig(d_vocab=512, n_ctx=64, d_model=128, n_heads=4, n_layers=12, norm=norm))
    deep.reset_parameters(torch.Generator().manual_seed(0))
    sizes[f"{norm}-norm"] = stream_rms(deep, probe)
print({name: [round(v, 3) for v in values[::4]] for name, values in sizes.items()})
fig = plot_stream_size(sizes)

# %% [markdown]
# The pre-norm stream still grows, but slowly, and that is by design. Each block adds two writes to
# the stream (attention's and the MLP's), 2·n_layers in all; writes that start out independent add
# their variances, so at equal size the sum would grow like √(2·n_layers). The GPT-2 paper therefore
# scales the residual layers' weights at initialisation, and nanoGPT's initialisation, which the course
# follows, draws the two matrices that write into the stream, `W_O` and the MLP's `W_out`, with their
# standard deviation divided by √(2·n_layers) (`GPT.reset_parameters` does it), so that the sum of
# all the writes starts about as large as one unscaled write, whatever the depth. For the plotted
# model and for the course model, and the 12-layer stream without the scaling:

# %%
from course_utils.gpt import COURSE_MODEL

for cfg in (deep.cfg, COURSE_MODEL):
    factor = 1 / math.sqrt(2 * cfg.n_layers)
    print(f"n_layers {cfg.n_layers}: factor 1/√(2·{cfg.n_layers}) = {factor:.3f}, "
          f"so W_O and W_out start with std {cfg.init_std} × {factor:.3f} = {cfg.init_std * factor:.4f}")
unscaled = GPT(GPTConfig(d_vocab=512, n_ctx=64, d_model=128, n_heads=4, n_layers=12))
unscaled.reset_parameters(torch.Generator().manual_seed(0))
with torch.no_grad():
    for name, weight in unscaled.named_parameters():
        if name.endswith(("W_O", "W_out")):
            weight.mul_(math.sqrt(2 * unscaled.cfg.n_layers))  # undo the scaling
print(f"RMS after the last block: {sizes['pre-norm'][-1]:.3f} with the scaling, "
      f"{stream_rms(unscaled, probe)[-1]:.3f} without")

# %% [markdown]
# ## 2. The model
#
# `course_utils.gpt.model.GPT` is the whole decoder-only model, in the glossary's names:
#
# * `W_E` (d_vocab × d_model) turns each token id into a vector; `W_pos` (n_ctx × d_model) adds its position;
# * `n_layers` pre-norm **blocks**: `x = x + attn(ln1(x))`, then `x = x + mlp(ln2(x))`, where `attn` is
#   notebook 05's `MultiHeadAttention` with a causal mask and `mlp` is notebook 06's `MLP`;
# * a final LayerNorm `ln_final`, then the **unembedding** `W_U` (d_model × d_vocab) gives one logit per
#   vocabulary entry at every position. With `tie_embeddings=True`, `W_U` is `W_Eᵀ`: the same table
#   reads tokens in and scores them out, saving d_vocab × d_model parameters.
#
# `impl="fused"` runs the same arithmetic through PyTorch's kernels (one matmul for Q, K and V,
# `scaled_dot_product_attention`) and is tested to agree with the readable path; training uses it.
# The code follows its input's device: build the model, `.to(device)` it, and nothing else changes.

# %%
from course_utils.gpt import COURSE_MODEL

print(COURSE_MODEL)
model = GPT(COURSE_MODEL)
model.reset_parameters(torch.Generator().manual_seed(0))
print(f"{model.num_params():,} parameters")
tied = GPT(GPTConfig(**{**COURSE_MODEL.to_dict(), "tie_embeddings": True}))
print(f"tied embeddings would save {model.num_params() - tied.num_params():,} = d_vocab × d_model")

# %% [markdown]
# ## Your GPT, class by class
#
# The next exercises rebuild `course_utils.gpt.model.GPT` as your own classes, block by block: each
# block is `x = x + attn(ln1(x))`, then `x = x + mlp(ln2(x))` (pre-norm, section 1). The classes keep the
# course's parameter names and shapes, because each check loads a course module's weights into yours
# by name (`load_state_dict`) and compares the outputs; the same names are what let your finished
# model take the trained checkpoint, and GPT-2 small's tensors once `course_utils.gpt.gpt2_weights` has
# reshaped them. Every class is built from a `GPTConfig` (`cfg.d_model`, `cfg.n_heads`, `cfg.d_head`,
# `cfg.d_mlp`, `cfg.n_ctx`, `cfg.d_vocab`, `cfg.n_layers`, `cfg.ln_eps`, `cfg.init_std`,
# `cfg.tie_embeddings`); the course's models all have biases. Notebook 10 trains the model you build
# here, with the parts whose checks pass.
#
# ### Exercise: Token and position embeddings (1 point, difficulty 1/3, about 5 min)
#
# Write `embed_tokens(tokens, W_E, W_pos)`: `tokens` is `(batch, pos)` ids with pos ≤ n_ctx, `W_E` is
# `(d_vocab, d_model)` and `W_pos` is `(n_ctx, d_model)`. Return `(batch, pos, d_model)`: each token's
# row of `W_E` plus its position's row of `W_pos` (the first token sits at position 0). The check
# compares with `GPT.embed`.

# %%
def embed_tokens(tokens: torch.Tensor, W_E: torch.Tensor, W_pos: torch.Tensor) -> torch.Tensor:
    # BEGIN SOLUTION
    return W_E[tokens] + W_pos[: tokens.shape[1]]  # (batch, pos, d_model): one position row per column
    # END SOLUTION


# %%
from course_utils.checks.build_gpt import check_embed_tokens

check_embed_tokens(embed_tokens)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("embed_tokens")` for a nudge and `hint("embed_tokens", 2)` for a stronger one.

# %% [markdown]
# **Attention with a KV cache.** Generating (notebook 11) runs the model again for every new token, and
# every earlier position's keys and values are the same as the step before: a causal model never lets
# a position see later ones. A **KV cache** keeps them, layer by layer, so a step computes Q, K and V
# for the new positions only and lets their queries attend over the stored keys. Your attention is
# written that way from the start: one function does the attention over "what is cached, then the new
# positions", and with nothing cached it is ordinary causal attention over the whole input.
#
# ### Exercise: One KV-cache step (2 points, difficulty 3/3, about 15 min)
#
# Write `kv_cache_step(q, k_new, v_new, k_cache=None, v_cache=None)`. All are `(batch, head, ·, d_head)`:
# `q`, `k_new`, `v_new` for the `n_new` newest positions, `k_cache`, `v_cache` for the positions
# before them, or `None` when nothing is cached yet. Return the tuple `(z, k_all, v_all)`: the attention
# output of the new queries `(batch, head, n_new, d_head)`, causal, over every key so far, and the
# keys and values so far, the new ones appended after the cached ones. The new queries are the *last*
# `n_new` positions: `causal_mask(n_new, n_all)` (notebook 04's, `True` = may attend) is the mask.

# %%
from course_utils.masking import causal_mask


def kv_cache_step(q, k_new, v_new, k_cache=None, v_cache=None):
    # BEGIN SOLUTION
    k_all = k_new if k_cache is None else torch.cat([k_cache, k_new], dim=2)  # (batch, head, n_all, d_head)
    v_all = v_new if v_cache is None else torch.cat([v_cache, v_new], dim=2)
    scores = q @ k_all.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (batch, head, n_new, n_all)
    mask = causal_mask(q.shape[2], k_all.shape[2], device=q.device)
    z = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ v_all  # (batch, head, n_new, d_head)
    return z, k_all, v_all
    # END SOLUTION


# %%
from course_utils.checks.build_gpt import check_kv_cache_step

check_kv_cache_step(kv_cache_step)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("kv_cache_step")` for a nudge and `hint("kv_cache_step", 2)` for a stronger one.

# %% [markdown]
# ### Exercise: Causal multi-head attention (3 points, difficulty 2/3, about 25 min)
#
# Write the class `CausalAttention`: notebook 05's multi-head attention, causal, through your
# `kv_cache_step`. `__init__(cfg)` creates these `nn.Parameter`s, under exactly these names: `W_Q`,
# `W_K`, `W_V` of shape `(n_heads, d_model, d_head)`, `W_O` of shape `(n_heads, d_head, d_model)`,
# `b_Q`, `b_K`, `b_V` of shape `(n_heads, d_head)` and `b_O` of shape `(d_model,)` (weights drawn with
# standard deviation `cfg.init_std`, biases zero: the check overwrites them anyway). `forward(x,
# cache=None)` maps `(batch, pos, d_model)` to the same shape: Q, K and V of every head for x's
# positions, your `kv_cache_step` for the attention, every head's output back through `W_O`, summed,
# plus `b_O`. Without a cache it is causal on its own, with no mask argument. With a cache (a
# `LayerCache`, below: `cache.k`, `cache.v`, both `None` until the first call), x holds the positions
# after the cached ones: give `kv_cache_step` the cached keys and values, and store the `k_all`, `v_all`
# it returns back in `cache.k`, `cache.v`. The module holds no other persistent state (a mask buffer
# would need `persistent=False`; nanoGPT's persistent `bias` buffer would land in the `state_dict`).
# The check loads a course block's attention weights into yours by name and compares, on whole
# sequences and on one sequence fed in three pieces with one cache.

# %%
from torch import nn

from course_utils.gpt import LayerCache, new_cache

print(LayerCache(), "->", new_cache(2))  # one layer's cache; one per block of a model


class CausalAttention(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        # BEGIN SOLUTION
        heads, d_model, d_head = cfg.n_heads, cfg.d_model, cfg.d_head
        self.W_Q = nn.Parameter(torch.randn(heads, d_model, d_head) * cfg.init_std)
        self.W_K = nn.Parameter(torch.randn(heads, d_model, d_head) * cfg.init_std)
        self.W_V = nn.Parameter(torch.randn(heads, d_model, d_head) * cfg.init_std)
        self.W_O = nn.Parameter(torch.randn(heads, d_head, d_model) * cfg.init_std)
        self.b_Q = nn.Parameter(torch.zeros(heads, d_head))
        self.b_K = nn.Parameter(torch.zeros(heads, d_head))
        self.b_V = nn.Parameter(torch.zeros(heads, d_head))
        self.b_O = nn.Parameter(torch.zeros(d_model))
        # END SOLUTION

    def forward(self, x: torch.Tensor, cache: LayerCache | None = None) -> torch.Tensor:
        # BEGIN SOLUTION
        q = torch.einsum("bpm,hmd->bhpd", x, self.W_Q) + self.b_Q[:, None]  # (batch, head, pos, d_head)
        k = torch.einsum("bpm,hmd->bhpd", x, self.W_K) + self.b_K[:, None]
        v = torch.einsum("bpm,hmd->bhpd", x, self.W_V) + self.b_V[:, None]
        cached = (None, None) if cache is None else (cache.k, cache.v)
        z, k_all, v_all = kv_cache_step(q, k, v, *cached)  # z: (batch, head, pos, d_head)
        if cache is not None:
            cache.k, cache.v = k_all, v_all  # the next call sees these positions too
        return torch.einsum("bhpd,hdm->bpm", z, self.W_O) + self.b_O  # the heads' writes, summed
        # END SOLUTION


# %%
from course_utils.checks.build_gpt import check_causal_attention

check_causal_attention(CausalAttention)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("causal_attention")` for a nudge and `hint("causal_attention", 2)` for a stronger one.

# %% [markdown]
# ### Exercise: The MLP (2 points, difficulty 1/3, about 10 min)
#
# Write the class `GeluMLP`: `__init__(cfg)` creates `W_in` `(d_model, d_mlp)`, `b_in` `(d_mlp,)`,
# `W_out` `(d_mlp, d_model)` and `b_out` `(d_model,)`; `forward(x)` applies notebook 06's MLP to every
# position: up-projection, GPT-2's GELU (the tanh approximation, `cfg.activation` is `'gelu_tanh'`),
# down-projection. No residual inside: the block adds it.

# %%
class GeluMLP(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        # BEGIN SOLUTION
        self.W_in = nn.Parameter(torch.randn(cfg.d_model, cfg.d_mlp) * cfg.init_std)
        self.b_in = nn.Parameter(torch.zeros(cfg.d_mlp))
        self.W_out = nn.Parameter(torch.randn(cfg.d_mlp, cfg.d_model) * cfg.init_std)
        self.b_out = nn.Parameter(torch.zeros(cfg.d_model))
        # END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # BEGIN SOLUTION
        hidden = F.gelu(x @ self.W_in + self.b_in, approximate="tanh")  # (batch, pos, d_mlp)
        return hidden @ self.W_out + self.b_out
        # END SOLUTION


# %%
from course_utils.checks.build_gpt import check_gelu_mlp

check_gelu_mlp(GeluMLP)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("gelu_mlp")` for a nudge and `hint("gelu_mlp", 2)` for a stronger one.

# %% [markdown]
# ### Exercise: The block (2 points, difficulty 2/3, about 10 min)
#
# Write the class `TransformerBlock`: `__init__(cfg)` holds `ln1`, `attn` (your `CausalAttention`),
# `ln2` and `mlp` (your `GeluMLP`); for the LayerNorms use `OwnLayerNorm` below, your `layer_norm` from
# section 1 with the course's parameter names `w` and `b`. `forward(x, cache=None)` is the pre-norm
# block, `(batch, pos, d_model)` to the same shape: `x + attn(ln1(x))`, then that plus `mlp(ln2(that))`,
# the attention given the block's cache (None without one). The check loads a course block's weights
# (`course_utils.gpt.model.Block`) into yours by name and compares, with and without a cache; the
# sub-layers are yours, so it passes once they do.

# %%
class OwnLayerNorm(nn.Module):
    """Your layer_norm from section 1, with a learned scale w and shift b (the course's names)."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.w, self.b, self.eps = nn.Parameter(torch.ones(d_model)), nn.Parameter(torch.zeros(d_model)), eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return layer_norm(x, self.w, self.b, self.eps)


# %%
class TransformerBlock(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        # BEGIN SOLUTION
        self.ln1, self.attn = OwnLayerNorm(cfg.d_model, cfg.ln_eps), CausalAttention(cfg)
        self.ln2, self.mlp = OwnLayerNorm(cfg.d_model, cfg.ln_eps), GeluMLP(cfg)
        # END SOLUTION

    def forward(self, x: torch.Tensor, cache: LayerCache | None = None) -> torch.Tensor:
        # BEGIN SOLUTION
        x = x + self.attn(self.ln1(x), cache)
        return x + self.mlp(self.ln2(x))
        # END SOLUTION


# %%
from course_utils.checks.build_gpt import check_transformer_block

check_transformer_block(TransformerBlock)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("transformer_block")` for a nudge and `hint("transformer_block", 2)` for a stronger one.

# %% [markdown]
# ### Exercise: The whole GPT (3 points, difficulty 2/3, about 20 min)
#
# Write the class `SmallGPT`: `__init__(cfg)` keeps `self.cfg = cfg` (given) and holds `W_E`
# `(d_vocab, d_model)`, `W_pos` `(n_ctx, d_model)`, `blocks` (an `nn.ModuleList` of `n_layers` of your
# blocks), `ln_final` (an `OwnLayerNorm`), and `W_U` `(d_model, d_vocab)` only when
# `cfg.tie_embeddings` is False (tied: the attribute `W_U` is None, and the unembedding is `W_E`ᵀ).
# `forward(tokens, cache=None)` maps `(batch, pos)` ids to `(batch, pos, d_vocab)` logits: your
# `embed_tokens`, the blocks in order, `ln_final`, the unembedding. The cache, when there is one, is
# a list of one `LayerCache` per block (`new_cache(cfg.n_layers)`): block i gets `cache[i]`, and the
# tokens are the positions after the `cache[0].length` cached ones, so their position embeddings are
# the rows of `W_pos` from there on. The check loads a course model's `state_dict` (tied and untied)
# into `SmallGPT` and compares the logits, whole and fed in pieces with one cache, so it passes only
# once every piece above does.

# %%
class SmallGPT(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        # BEGIN SOLUTION
        self.W_E = nn.Parameter(torch.randn(cfg.d_vocab, cfg.d_model) * cfg.init_std)
        self.W_pos = nn.Parameter(torch.randn(cfg.n_ctx, cfg.d_model) * cfg.init_std)
        self.blocks = nn.ModuleList([TransformerBlock(cfg) for _ in range(cfg.n_layers)])
        self.ln_final = OwnLayerNorm(cfg.d_model, cfg.ln_eps)
        if cfg.tie_embeddings:
            self.W_U = None
        else:
            self.W_U = nn.Parameter(torch.randn(cfg.d_model, cfg.d_vocab) * cfg.init_std)
        # END SOLUTION

    def forward(self, tokens: torch.Tensor, cache: list | None = None) -> torch.Tensor:
        # BEGIN SOLUTION
        start = 0 if cache is None else cache[0].length  # positions already cached
        x = embed_tokens(tokens, self.W_E, self.W_pos[start:])  # (batch, pos, d_model)
        for i, block in enumerate(self.blocks):
            x = block(x, None if cache is None else cache[i])
        unembedding = self.W_E.T if self.W_U is None else self.W_U  # (d_model, d_vocab)
        return self.ln_final(x) @ unembedding  # (batch, pos, d_vocab)
        # END SOLUTION


# %%
from course_utils.checks.build_gpt import check_gpt_forward

check_gpt_forward(SmallGPT)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("gpt_forward")` for a nudge and `hint("gpt_forward", 2)` for a stronger one.

# %% [markdown]
# ### Exercise: nanoGPT's initialisation (2 points, difficulty 2/3, about 15 min)
#
# Section 1 showed why the two matrices that write into the residual stream start smaller. Now write
# the whole initialisation: `init_weights(model, generator)` sets, in place, every parameter of a model
# that uses the course's names (yours or `course_utils.gpt.model.GPT`), as `GPT.reset_parameters` does:
#
# * every LayerNorm scale `w` to one, and every bias to zero: LayerNorm's shift `b` and `b_Q`, `b_K`,
#   `b_V`, `b_O`, `b_in`, `b_out` (the per-head biases have two dimensions, so go by the name, not the shape);
# * `W_O` and `W_out` from a normal distribution with mean 0 and standard deviation
#   `cfg.init_std / sqrt(2 * cfg.n_layers)`;
# * every other matrix and embedding (`W_E`, `W_pos`, `W_Q`, `W_K`, `W_V`, `W_in`, and `W_U` when it
#   exists) with standard deviation `cfg.init_std`.
#
# Draw every random number from `generator`, so that one seed always gives one model. The order of the
# draws is yours: the check runs your function on course models and compares the size (root mean
# square) of each parameter with the course's initialisation, and the constant ones exactly.
#
# This is nanoGPT's reading of GPT-2, not GPT-2's own code: nanoGPT draws every matrix and embedding
# with one standard deviation, while GPT-2's released code draws the position table `W_pos` at 0.01,
# half the token embedding's (the sizes notebook 02 prints; the last cell after this exercise prints both).

# %%
@torch.no_grad()  # the weights are set, not learned: nothing to record for backward
def init_weights(model: nn.Module, generator: torch.Generator) -> None:
    # BEGIN SOLUTION
    residual_std = model.cfg.init_std / math.sqrt(2 * model.cfg.n_layers)
    for name, p in model.named_parameters():
        leaf = name.split(".")[-1]  # 'blocks.0.attn.W_O' -> 'W_O'
        if leaf == "w":  # a LayerNorm scale
            p.fill_(1.0)
        elif leaf.startswith("b"):  # every bias, LayerNorm's shift included
            p.zero_()
        elif leaf in ("W_O", "W_out"):  # the two writes into the residual stream
            p.normal_(0.0, residual_std, generator=generator)
        else:
            p.normal_(0.0, model.cfg.init_std, generator=generator)
    # END SOLUTION


# %%
from course_utils.checks.build_gpt import check_init_weights

check_init_weights(init_weights)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("init_weights")` for a nudge and `hint("init_weights", 2)` for a stronger one.
#
# The course's initialisation beside GPT-2's position table (notebook 02's `LearnedPositionEmbedding`
# starts it as GPT-2's code does), the course's as the size of an entry (its root mean square):

# %%
import inspect

from course_utils.positions import LearnedPositionEmbedding

course_init = GPT(COURSE_MODEL)
course_init.reset_parameters(torch.Generator().manual_seed(0))  # its own generator: the global seed is untouched
gpt2_pos_std = inspect.signature(LearnedPositionEmbedding).parameters["init_std"].default
print(f"course (nanoGPT's rule, std {COURSE_MODEL.init_std}): RMS of W_E {course_init.W_E.square().mean().sqrt():.3f}, "
      f"of W_pos {course_init.W_pos.square().mean().sqrt():.3f}")
print(f"GPT-2's code: W_pos drawn with std {gpt2_pos_std}")

# %% [markdown]
# **Logits, probabilities, the next token.** Only the last position's logits choose what follows.
# With the four-token toy vocabulary of the worked example, after YOUR CAT IS A LOVELY:

# %%
from course_utils.sampling import cross_entropy, next_token_distribution

vocab = ["CAT", "DOG", "IS", "LOVELY"]
logits = torch.tensor([6.2, 4.9, 2.1, 1.0])
probs = next_token_distribution(logits)
print({word: round(p, 3) for word, p in zip(vocab, probs.tolist())})
print("next token:", vocab[int(probs.argmax())])
loss = cross_entropy(logits[None], torch.tensor([0]))
print(f"if CAT is right, the loss is -ln {probs[0].item():.3f} = {-math.log(0.772):.3f} "
      f"(from the unrounded probability: {loss.item():.4f})")

# %% [markdown]
# A whole sequence is scored at every position at once: position i's logits against token i + 1,
# averaged. That shift by one is the whole training objective.
#
# ### Exercise: The next-token loss (2 points, difficulty 2/3, about 10 min)
#
# Write `next_token_loss(logits, tokens)`: `logits` of shape `(batch, pos, d_vocab)` from the model
# run on `tokens` `(batch, pos)`; return the mean cross-entropy (natural log) of each position's
# logits against the token that follows it, a 0-d tensor. Positions with no next token are not scored.

# %%
def next_token_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    # BEGIN SOLUTION
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
    # END SOLUTION


# %%
from course_utils.checks.build_gpt import check_next_token_loss

check_next_token_loss(next_token_loss)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("next_token_loss")` for a nudge and `hint("next_token_loss", 2)` for a stronger one.

# %% [markdown]
# ## What to remember
#
# * A GPT is embeddings, a stack of pre-norm blocks that each add to the residual stream, a final
#   LayerNorm and an unembedding; the loss is next-token cross-entropy at every position, about
#   ln(d_vocab) before any training.
# * Pre-norm leaves the stream a running sum; the two matrices that write into it start smaller, by
#   1/√(2·n_layers), so the sum starts about as large as one write whatever the depth.
# * Your attention already runs through one KV-cache step: with nothing cached it is ordinary causal
#   attention over the whole input.
#
# **Next: notebook 10** trains this model with your own optimiser, schedule, clipping, loop and
# evaluation. It reads `SmallGPT`, `next_token_loss` and `init_weights` (and everything they call) from
# this notebook's file, so save it before you open the next one.
