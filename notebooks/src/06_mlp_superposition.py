# ---
# jupyter:
#   course:
#     exercises:
#       angle_deviation_summary:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       feature_dimensionality:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       gelu_tanh:
#         difficulty: 1
#         minutes: 5
#         points: 1
#       importance_weighted_loss:
#         difficulty: 1
#         minutes: 5
#         points: 1
#       mlp_with_residual:
#         difficulty: 1
#         minutes: 8
#         points: 2
#       sae_forward:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       sae_loss:
#         difficulty: 1
#         minutes: 5
#         points: 1
#       sae_training_step:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       toy_model_forward:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       welch_bound:
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
# # 06 · The MLP and superposition
#
# Attention moves information between positions. The other half of every block, the **MLP**, never
# looks sideways: it takes one position's vector, widens it, bends it through a nonlinearity, narrows
# it again and adds the result back to the residual stream. It holds most of a block's weights and,
# as far as anyone can tell, much of what a model *knows*. In this notebook you will
#
# 1. write the position-wise MLP with its residual, and the tanh-approximate GELU that GPT-2 uses
#    (exercises), and see that changing one position's input changes only that position's output;
# 2. build one neuron that acts as an AND gate ("Michael" *and* "Jordan" → add "basketball"), and give
#    it a margin against interference;
# 3. count where a block's weights sit (about two-thirds in the MLP);
# 4. measure how close to perpendicular random directions are in high dimensions, the geometry that
#    lets a model store more features than it has dimensions, and compare with the Welch bound
#    (exercises);
# 5. train Anthropic's toy model of superposition to convergence, many instances at once, and watch
#    features pile into fewer dimensions as they get sparser: the linear baseline that never does, the
#    pentagon, feature dimensionality (exercises), and a phase picture of importance against sparsity;
# 6. pull the hidden features back out with a small sparse autoencoder whose forward pass, loss and
#    training step you write (exercises).
#
# **10 exercises, 16 points, about 78 minutes in all.**

# %% [markdown]
# ## 1 · Set up

# %%
import math

import torch
from torch import nn

from course_utils import mlp, superposition
from course_utils.env import describe_device, pick_device, seed_everything

seed_everything(0)
device = pick_device()
print("computing on", describe_device(device))  # this machine's device: the tests mask it

# %% [markdown]
# ## 2 · The position-wise MLP
#
# For each position's vector $x$ (a row of width $d_\text{model}$) the MLP computes
#
# $$\text{MLP}(x) = \sigma(x W_\text{in} + b_\text{in})\, W_\text{out} + b_\text{out}, \qquad x \leftarrow x + \text{MLP}(x)$$
#
# with $W_\text{in}$ of shape $(d_\text{model}, d_\text{mlp})$ (the up-projection), an elementwise
# nonlinearity $\sigma$, and $W_\text{out}$ of shape $(d_\text{mlp}, d_\text{model})$ (the
# down-projection). The $d_\text{mlp}$ intermediate values are the **neurons**; in GPT-style models
# $d_\text{mlp} = 4\, d_\text{model}$:

# %%
for name, d_model in [("base Transformer", 512), ("GPT-2 small", 768), ("GPT-3", 12_288)]:
    with torch.device("meta"):  # shapes only: no memory, no arithmetic
        d_mlp = mlp.MLP(d_model).d_mlp
    print(f"{name:<17} d_model = {d_model:>6,}  ->  d_mlp = {d_mlp:>6,} neurons")

# %% [markdown]
# The same two matrices are applied to every position, and nothing in the formula refers to any
# other position. So changing one token's vector can change only that token's output. The course's
# `mlp.MLP` module (GPT-2's initialisation: weights with standard deviation 0.02, zero biases) on a
# batch of 2 sequences of 5 positions, before and after nudging position 3 of the second sequence:

# %%
torch.manual_seed(0)
block_mlp = mlp.MLP(d_model=16).double()
x = torch.randn(2, 5, 16, dtype=torch.float64)  # (batch, pos, d_model)
x_nudged = x.clone()
x_nudged[1, 3] += 1.0
changed = (block_mlp(x_nudged) - block_mlp(x)).abs().amax(dim=-1) > 0  # (batch, pos)
print(block_mlp)
print("outputs that changed (batch x pos):")
print(changed.int())


# %% [markdown]
# Only one output moved. Attention is the only place where positions talk to each other.
#
# ### Exercise: the MLP with its residual (2 points, difficulty 1/3, about 8 min)
#
# Write `mlp_with_residual(x, W_in, b_in, W_out, b_out)` for `x` of shape `(batch, pos, d_model)`,
# `W_in` of shape `(d_model, d_mlp)` and `W_out` of shape `(d_mlp, d_model)` (the layout above: row
# vectors times matrices). Return the residual stream **after** the block has added its change, using
# the **tanh-approximate** GELU as $\sigma$. You may use `torch.nn.functional.gelu(h, approximate="tanh")`
# or the course's `mlp.gelu_tanh`.

# %%
def mlp_with_residual(x, W_in, b_in, W_out, b_out):
    # BEGIN SOLUTION
    hidden = mlp.gelu_tanh(x @ W_in + b_in)  # (batch, pos, d_mlp)
    return x + hidden @ W_out + b_out  # (batch, pos, d_model)
    # END SOLUTION


# %%
from course_utils.checks.mlp_superposition import (check_angle_deviation_summary, check_feature_dimensionality,
                                                   check_gelu_tanh, check_importance_weighted_loss,
                                                   check_mlp_with_residual, check_sae_forward, check_sae_loss,
                                                   check_sae_training_step, check_toy_model_forward, check_welch_bound)

check_mlp_with_residual(mlp_with_residual)

# %% [markdown]
# Stuck? Run `from course_utils.checks import hint` and then `hint("mlp_with_residual")` for a nudge, or `hint("mlp_with_residual", 2)` for a stronger one.

# %% [markdown]
# ## 3 · ReLU, GELU and GPT-2's tanh GELU
#
# ReLU is $\max(0, x)$: negative in, zero out. GELU is a smooth version, $x\,\Phi(x)$ with $\Phi$ the
# standard normal CDF: a negative input is not cut off at once but fades out. GPT-2's released code
# computes GELU through a cheaper tanh formula (GPT-3's paper names no activation at all; it presumably
# kept GPT-2's),
#
# $$\text{GELU}_\text{tanh}(x) = \tfrac12\, x \left(1 + \tanh\!\left(\sqrt{2/\pi}\,(x + c\,x^3)\right)\right)$$
#
# with the constant $c$ printed below. How far apart are the two GELUs, and does the course's code
# agree with PyTorch's own modules?

# %%
xs = torch.linspace(-6, 6, 120_001, dtype=torch.float64)
gap = mlp.gelu_exact(xs) - mlp.gelu_tanh(xs)
worst = int(gap.abs().argmax())
print("constant c in the tanh formula:", 0.044715)
print(f"largest |exact - tanh| on [-6, 6]: {gap.abs().max().item():.2e} at x = {xs[worst].item():+.3f}")
print("gelu_exact == nn.GELU():                    ", torch.allclose(mlp.gelu_exact(xs), nn.GELU()(xs), atol=1e-12))
print("gelu_tanh  == nn.GELU(approximate='tanh'):  ", torch.allclose(mlp.gelu_tanh(xs), nn.GELU(approximate="tanh")(xs), atol=1e-12))

# %%
from course_utils.viz import mlp_superposition as viz

curves = {"ReLU": mlp.relu(xs), "GELU (exact, erf)": mlp.gelu_exact(xs), "GELU (tanh)": mlp.gelu_tanh(xs)}
fig = viz.plot_activations(xs, curves, gap)


# %% [markdown]
# The two curves differ by less than a thousandth, too little to see, and the course's code matches
# both PyTorch modules. Nothing later depends on which one a model uses, but a checkpoint should be
# run with the one it was trained with.
#
# ### Exercise: tanh-approximate GELU (1 point, difficulty 1/3, about 5 min)
#
# Write `gelu_tanh(x)` for a tensor `x` of any shape, elementwise, with the formula above (not the
# exact erf form, and without calling `F.gelu` if you want the practice; the check accepts it either way).

# %%
def gelu_tanh(x):
    # BEGIN SOLUTION
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    # END SOLUTION


# %%
check_gelu_tanh(gelu_tanh)

# %% [markdown]
# Stuck? Run `from course_utils.checks import hint` and then `hint("gelu_tanh")` for a nudge, or `hint("gelu_tanh", 2)` for a stronger one.

# %% [markdown]
# ## 4 · What one neuron can do
#
# Read $x W_\text{in}$ column by column: neuron $i$ holds the dot product of $x$ with column $i$ of
# $W_\text{in}$, so each column is a question asked of the token. Suppose one column is the sum of a
# "Michael" direction and a "Jordan" direction. A vector that encodes both names gives a dot product
# near 2, a vector with only one of them ("Michael Phelps", "Alexis Jordan") near 1. Subtract a
# **threshold** (the bias is minus the threshold) and the ReLU keeps only what lies above it: with the
# threshold between 1 and 2 the neuron is an AND gate. The matching **row** of $W_\text{out}$ is what
# the neuron writes when it fires; let it be a "basketball" direction, scaled by $1/(2 - \text{threshold})$
# so that a full match writes about one unit of it.
#
# The directions here are random unit vectors in GPT-3's width, so they are only *nearly*
# perpendicular (section 6 measures how nearly). `superposition.and_gate` builds the neuron from
# them; the table runs it through `mlp.mlp_forward`, first with the threshold right at 1, then at 1.5:

# %%
print(f"{'threshold':>9}  {'input':<15} {'dot with column':>15} {'pre-act':>8} {'ReLU':>7} {'adds basketball x':>18}")
for threshold in (1.0, 1.5):
    gate = superposition.and_gate(threshold, seed=0)
    for first, last in superposition.AND_GATE_INPUTS:
        token = gate.directions[first] + gate.directions[last]  # (d_model,)
        dot = (token @ gate.W_in).item()
        out = mlp.mlp_forward(token, gate.W_in, gate.b_in, gate.W_out, None, activation="relu")
        print(f"{threshold:>9}  {first + ' ' + last:<15} {dot:>15.4f} {dot - threshold:>+8.4f} "
              f"{max(dot - threshold, 0):>7.4f} {(out @ gate.directions['basketball']).item():>18.4f}")

# %% [markdown]
# With the threshold at 1, "Alexis Jordan" leaks a little basketball. Its dot product with the column
# is not exactly 1: the random "Alexis" direction overlaps "Michael" and "Jordan" slightly, and so do
# "Michael" and "Jordan" with each other. That is **interference**, the price of directions that are
# only nearly perpendicular. Each stray overlap of two random unit vectors is of order $1/\sqrt{D}$;
# a one-name input's dot product collects three of them. A threshold of exactly 1 sits in the middle of
# that noise, so about half the one-name inputs get through. The remedy is a **margin**: put the
# threshold halfway between one name and two, at 1.5, and the noise would have to be about 30 times its
# typical size to cross it. Over 40 random draws of the five directions (seeds 0 to 39):

# %%
d_model = gate.W_in.shape[0]
noise = math.sqrt(3 / d_model)  # three stray overlaps of size 1/sqrt(D) each
print(f"a stray overlap is about ±1/sqrt(D) = ±{1 / math.sqrt(d_model):.4f}; three of them: ±{noise:.4f}; "
      f"a margin of 0.5 is {0.5 / noise:.0f} times that")
for threshold in (1.0, 1.5):
    pre = torch.stack([superposition.and_gate_preactivations(superposition.and_gate(threshold, seed=seed))
                       for seed in range(40)])  # (seed, input): Michael Jordan, then the two one-name inputs
    single = pre[:, 1:]
    print(f"threshold {threshold}: one-name inputs that fire: {int((single > 0).sum())} of {single.numel()}, "
          f"largest pre-activation {single.max().item():+.4f};  Michael Jordan's smallest {pre[:, 0].min().item():+.4f}")

# %% [markdown]
# With the margin no one-name input fires on any of the 40 draws, and every "Michael Jordan" still
# does. The column of $W_\text{in}$ asks the question, the bias sets the threshold (placed with the
# interference in mind), the ReLU makes the decision, and the row of $W_\text{out}$ is the payload. This is the **key–value
# memory** reading of feed-forward layers (Geva et al.): each neuron's input weights act as a key that
# matches a pattern in the residual stream, and its output weights as the value it then writes.
#
# ## 5 · Where a block's weights sit
#
# A block's attention has four $d_\text{model} \times d_\text{model}$ matrices ($W_Q, W_K, W_V, W_O$);
# its MLP has two $d_\text{model} \times 4 d_\text{model}$ matrices. `block_weight_split` counts both,
# checked here against real modules built on PyTorch's meta device (shapes only, no memory):

# %%
for name, d_model in [("base Transformer", 512), ("GPT-3", 12_288)]:
    split = mlp.block_weight_split(d_model)
    with torch.device("meta"):
        attention_params = sum(p.numel() for p in nn.MultiheadAttention(d_model, 8, bias=False).parameters())
        mlp_params = sum(p.numel() for p in mlp.MLP(d_model, bias=False).parameters())
    assert (split["attention"], split["mlp"]) == (attention_params, mlp_params)
    share = split["mlp"] / (split["attention"] + split["mlp"])
    print(f"{name:<17} attention {split['attention']:>14,}   MLP {split['mlp']:>14,}   MLP share {share:.3f}")

# %%
with torch.device("meta"):
    gpt3_mlp = mlp.MLP(12_288)
per_layer_weights = gpt3_mlp.W_in.numel() + gpt3_mlp.W_out.numel()
print(f"GPT-3 W_in: {gpt3_mlp.W_in.numel():,}   (W_out the same: {gpt3_mlp.W_out.numel():,})")
print(f"weights per layer: {per_layer_weights:,};  over 96 layers: {96 * per_layer_weights:,}")
print(f"biases per layer: {gpt3_mlp.b_in.numel() + gpt3_mlp.b_out.numel():,}")

# %% [markdown]
# Two-thirds of every block is MLP, because $2 \cdot 4 d^2 = 8 d^2$ against $4 d^2$. The biases are
# a rounding error at this scale.
#
# ## 6 · Superposition: many more directions than dimensions
#
# The AND-gate story is too clean for real models: single neurons are usually **polysemantic**,
# firing for several unrelated things. The leading explanation is geometric. Insist that features be
# exactly perpendicular and $D$ dimensions hold exactly $D$ of them. Allow *nearly* perpendicular and
# the number that fit grows exponentially with $D$ (the Johnson–Lindenstrauss lemma), and random
# directions come nearly perpendicular for free.
#
# Measure it: 4,000 random unit vectors in 100, 1,000 and 12,288 dimensions, and the angle of every
# pair. `superposition.pairwise_angle_stats` does the ~8 million pairs a block of rows at a time (a
# `chunk_size × n` slice of the cosine matrix, never the whole matrix), on whatever device the
# vectors are on, with a progress bar. "Typical" below means the **root-mean-square** deviation of the
# angle from 90°; "worst" is the single pair farthest from 90°.

# %%
angle_stats = {}
for d in (100, 1_000, 12_288):
    vectors = superposition.random_unit_vectors(4_000, d, seed=0).to(device)
    angle_stats[d] = superposition.pairwise_angle_stats(vectors, progress=True)
del vectors

# %%
print(f"{angle_stats[100].n_vectors:,} vectors in each dimension")
print(f"{'D':>6} {'pairs':>10} {'RMS dev':>8} {'1/sqrt(D)':>9} {'mean |dev|':>10} {'worst pair':>10} {'max |cos|':>9}")
for d, s in angle_stats.items():
    print(f"{d:>6,} {s.n_pairs:>10,} {s.rms_deviation_deg:>7.2f}° {math.degrees(1 / math.sqrt(d)):>8.2f}° "
          f"{s.mean_abs_deviation_deg:>9.2f}° {s.max_deviation_deg:>9.2f}° {s.max_abs_cos:>9.4f}")

# %%
fig = viz.plot_angle_histograms(list(angle_stats.values()))


# %%
def one_digit(value):  # 29.4 -> 30, 0.52 -> 0.5: the size of a number, for the sentence below
    return f"{float(f'{value:.1g}'):g}"


for d, s in angle_stats.items():
    print(f"D = {d:>6,}: a typical pair is about {one_digit(s.rms_deviation_deg)}° off perpendicular, "
          f"the worst of the {s.n_pairs / 1e6:.0f} million about {one_digit(s.max_deviation_deg)}°")

# %% [markdown]
# The deviations shrink as the width grows: several degrees for a typical pair in 100 dimensions,
# a fraction of a degree in GPT-3's width, and the worst pair shrinks with them.
# The RMS column tracks $1/\sqrt D$ radians: the dot product of two random unit vectors has mean 0 and
# variance $1/D$, and near 90° the angle moves one-for-one with the cosine.
#
# ### Exercise: angle statistics of a batch of vectors (2 points, difficulty 2/3, about 10 min)
#
# Write `angle_deviation_summary(vectors)` for a tensor of shape `(n, d)` whose rows are **not
# necessarily unit length**. Over every pair $i < j$ (each pair once, never a vector with itself),
# compute the angle in **degrees** and its deviation from 90°, and return a tensor of two numbers:
# `[RMS of the deviations, largest |deviation|]`. A single cosine matrix is fine here (small `n`).

# %%
def angle_deviation_summary(vectors):
    # BEGIN SOLUTION
    unit = vectors / vectors.norm(dim=1, keepdim=True)
    cos = (unit @ unit.T).clamp(-1, 1)  # (n, n)
    i, j = torch.triu_indices(len(unit), len(unit), offset=1)
    deviation = torch.rad2deg(torch.arccos(cos[i, j])) - 90  # (n_pairs,)
    return torch.stack([deviation.square().mean().sqrt(), deviation.abs().max()])
    # END SOLUTION


# %%
check_angle_deviation_summary(angle_deviation_summary)

# %% [markdown]
# Stuck? Run `from course_utils.checks import hint` and then `hint("angle_deviation_summary")` for a nudge, or `hint("angle_deviation_summary", 2)` for a stronger one.

# %% [markdown]
# ### The 1/√D law, fitted
#
# A sweep of dimensions (1,000 vectors each) and a least-squares line through
# $\log(\text{RMS in radians})$ against $\log D$; the law predicts a slope of $-1/2$ and a factor of 1:

# %%
sweep_dims = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
sweep_rms = [math.radians(superposition.pairwise_angle_stats(superposition.random_unit_vectors(1_000, d, seed=1)).rms_deviation_deg)
             for d in sweep_dims]
c, k = superposition.fit_power_law(sweep_dims, sweep_rms)
print(f"{1_000:,} vectors per dimension, D from {sweep_dims[0]} to {sweep_dims[-1]:,}")
print(f"fit: RMS deviation = {c:.3f} * D^({k:.3f})  (theory: 1 * D^(-0.5))")

# %%
fig = viz.plot_power_law(sweep_dims, sweep_rms, (c, k))


# %% [markdown]
# ### How far can near-orthogonality go? The Welch bound
#
# Random directions are a free lunch for the *bulk* of the pairs, but not for all of them. For any
# $N$ unit vectors in $D$ dimensions, however cleverly arranged, the largest $|\cos\theta|$ over the
# pairs is at least
#
# $$\sqrt{\frac{N - D}{D\,(N - 1)}} \quad \text{when } N > D \qquad (\text{and } 0 \text{ when } N \le D\text{: an orthonormal set}).$$
#
# ### Exercise: the Welch bound (1 point, difficulty 1/3, about 5 min)
#
# Write `welch_bound(n, d)` returning that number (a float) for integers `n >= 2`, `d >= 1`.

# %%
def welch_bound(n, d):
    # BEGIN SOLUTION
    if n <= d:
        return 0.0
    return math.sqrt((n - d) / (d * (n - 1)))
    # END SOLUTION


# %%
check_welch_bound(welch_bound)

# %% [markdown]
# Stuck? Run `from course_utils.checks import hint` and then `hint("welch_bound")` for a nudge, or `hint("welch_bound", 2)` for a stronger one.

# %% [markdown]
# The bound beside what the random vectors reached (the reference `superposition.welch_bound`):

# %%
print(f"{'D':>6} {'Welch bound |cos|':>18} {'as an angle off 90°':>20} {'random: worst |cos|':>20}")
for d, s in angle_stats.items():
    bound = superposition.welch_bound(s.n_vectors, d)
    print(f"{d:>6,} {bound:>18.4f} {math.degrees(math.asin(bound)):>19.2f}° {s.max_abs_cos:>20.4f}")


# %% [markdown]
# Two things to read off. Where there are more vectors than dimensions (D = 100 and 1,000 here),
# the bound is close to $1/\sqrt D$: however the vectors are placed, some pair is at least about
# $1/\sqrt D$ radians off perpendicular. And random placement is far from the best worst case (its
# worst pair is several times the bound), yet its *typical* pair is already near that scale. In
# GPT-3's width 4,000 vectors could even be exactly orthogonal (the bound is 0). Superposition is a
# statement about the bulk of the pairs, not about every one of them.
#
# ## 7 · A toy model of superposition
#
# Does a trained network actually *use* this room? Elhage et al.'s toy model (Anthropic's "Toy Models
# of Superposition", also the subject of an ARENA chapter) makes the question small enough to watch.
# There are $n$ features, each zero with probability $S$ (the **sparsity**) and otherwise uniform on
# $[0, 1]$. They must pass through $m < n$ hidden dimensions and come back:
#
# $$h = W x, \qquad x' = \text{ReLU}(W^\top h + b), \qquad L = \mathbb{E}_x \sum_i I_i\,(x_i - x'_i)^2$$
#
# with $W$ of shape $(m, n)$ (column $i$ is feature $i$'s direction $W_i$), a bias $b$, and an
# importance $I_i$ per feature. Many instances, each with its own $W$, $b$, sparsity and
# importance, train at once as one tensor: $W$ has shape `(inst, hidden, feat)` and a batch of
# features has shape `(batch, inst, feat)`.
#
# ### Exercise: the toy model's forward pass (2 points, difficulty 2/3, about 10 min)
#
# Write `toy_model_forward(x, W, b_final)` for `x` of shape `(batch, inst, feat)`, `W` of shape
# `(inst, hidden, feat)` and `b_final` of shape `(inst, feat)`, returning $x'$ of shape
# `(batch, inst, feat)`. Instances must not mix.

# %%
def toy_model_forward(x, W, b_final):
    # BEGIN SOLUTION
    hidden = torch.einsum("ihf,bif->bih", W, x)  # (batch, inst, hidden)
    return torch.relu(torch.einsum("ihf,bih->bif", W, hidden) + b_final)  # (batch, inst, feat)
    # END SOLUTION


# %%
check_toy_model_forward(toy_model_forward)


# %% [markdown]
# Stuck? Run `from course_utils.checks import hint` and then `hint("toy_model_forward")` for a nudge, or `hint("toy_model_forward", 2)` for a stronger one.

# %% [markdown]
# ### Exercise: the importance-weighted loss (1 point, difficulty 1/3, about 5 min)
#
# Write `importance_weighted_loss(x, x_hat, importance)` for `x` and `x_hat` of shape
# `(batch, inst, feat)` and `importance` of shape `(inst, feat)`: for each instance, the **mean over
# the batch** of the **sum over features** of $I_i (x_i - x'_i)^2$. Return shape `(inst,)`.

# %%
def importance_weighted_loss(x, x_hat, importance):
    # BEGIN SOLUTION
    return (importance * (x - x_hat) ** 2).sum(dim=-1).mean(dim=0)
    # END SOLUTION


# %%
check_importance_weighted_loss(importance_weighted_loss)

# %% [markdown]
# Stuck? Run `from course_utils.checks import hint` and then `hint("importance_weighted_loss")` for a nudge, or `hint("importance_weighted_loss", 2)` for a stronger one.

# %% [markdown]
# ### From "keep m features" to superposition
#
# Twenty features through five hidden dimensions, importance $0.7^i$ (feature 0 matters most), one
# instance per sparsity. `superposition.train_sweep` builds them from a seed and trains them all in one
# loop (Adam on the summed losses; instances never interact), using the reference forward and loss.
#
# What a model keeps is only worth reading once training has **converged**. Stop early and each model
# is caught half-way: features it has not yet dropped, others it has not yet found room for. Elhage et
# al. train with AdamW at a constant learning rate of 1e-3 on batches of 1,024 for 10,000 steps;
# `train_sweep`'s defaults reach about the same losses in a fifth of the steps (batches of 1,024 for
# 2,000 steps, the learning rate starting at 1e-2 and falling along a cosine to 1e-4;
# `benchmarks/RESULTS_superposition.md` compares the two seed by seed):

# %%
many_sparsity = [0.0, 0.7, 0.9, 0.97, 0.99, 0.997]
steps, batch_size = 2_000, 1_024
many, many_losses = superposition.train_sweep(20, 5, many_sparsity, importance=0.7 ** torch.arange(20.0),
                                           steps=steps, batch_size=batch_size, seed=0, progress=True)
print(f"{steps:,} steps of Adam on batches of {batch_size:,}, learning rate 1e-2 falling along a cosine to 1e-4")

# %%
from course_utils.viz import toy_phases as viz_phases

fig = viz_phases.plot_loss_curves(many_losses, many.sparsity)

# %% [markdown]
# Every curve has flattened well before the end (the sparser the features, the lower the loss: a
# feature that is usually zero costs little to get wrong). Now the result, with each loss measured on a
# fresh batch of 100,000 inputs rather than the training batches:

# %%
many_W = many.W.detach()
kept = superposition.represented_features(many_W)  # (inst,): features with norm > 0.5
with torch.no_grad():
    held_out_loss = many.loss(many.generate_batch(100_000, torch.Generator().manual_seed(3)))  # (inst,)
for s, count, loss in zip(many_sparsity, kept.tolist(), held_out_loss.tolist()):
    print(f"sparsity {s:<6} features with norm > 0.5: {count:>2} of 20 (hidden dims: 5)   held-out loss {loss:.6f}")
print("kept at sparsity 0:", torch.nonzero(superposition.feature_norms(many_W[0]) > 0.5).flatten().tolist())

# %%
fig = viz.plot_sparsity_grid(many_W, many.sparsity)

# %% [markdown]
# With dense features (left) the model keeps exactly the five most important features, each on its
# own axis (a clean diagonal block in $W^\top W$), and drops the rest. As features get sparser, more
# and more of them get a direction, at the price of small overlaps (the off-diagonal entries): the
# count never falls as $S$ grows, and at $S = 0.99$ and beyond it is more than twice the number of
# dimensions. The ReLU and a negative bias clean up the interference, which only matters when two
# features are active at once, and that gets rarer the sparser they are.
#
# The exact counts move by a feature or so from seed to seed (the test `tests/test_06_seeds.py` trains
# this sweep from seeds 0 to 4); what is said here holds on every one of them.
#
# A count is a threshold on a norm, so look at the norms themselves. At the sparsest settings most
# features sit near 1 or near 0, but a feature can sit in between, half-kept, and which side of 0.5 it
# lands on moves between equally good solutions: another standard recipe (Elhage et al.'s constant
# learning rate, compared seed by seed in `benchmarks/RESULTS_superposition.md`) reaches the same loss
# with a count one apart. The norms of the two sparsest instances, largest first:

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: each norm's last digits come from float32 training, which rounds differently on each processor.
for s in many_sparsity[-2:]:
    norms = superposition.feature_norms(many_W[many_sparsity.index(s)]).sort(descending=True).values  # (feat,)
    print(f"sparsity {s}: " + " ".join(f"{v:.2f}" for v in norms.tolist()))

# %% [markdown]
# ### Without the ReLU: the linear baseline
#
# Is it the ReLU that makes this possible? Take it out, $x' = W^\top W x + b$, and train the same
# twenty features through five dimensions at sparsity 0.99, with the same seed, steps and optimiser:

# %%
linear, _ = superposition.train_sweep(20, 5, [0.99], importance=0.7 ** torch.arange(20.0), steps=steps, batch_size=batch_size,
                                   seed=0, relu=False)
linear_W = linear.W.detach()
print("features with norm > 0.5 at sparsity 0.99 (of 20, hidden dims: 5):")
print(f"  with the ReLU:    {superposition.represented_features(many_W[many_sparsity.index(0.99)]).item():>2}")
print(f"  linear, no ReLU:  {superposition.represented_features(linear_W[0]).item():>2}   "
      f"(which: {torch.nonzero(superposition.feature_norms(linear_W[0]) > 0.5).flatten().tolist()})")

# %% [markdown]
# The linear model keeps exactly the five most important features, each on its own axis, and
# drops the rest, although 99% of the time a feature is zero: it does what PCA would do (a linear
# model's best answer is the projection onto its top m directions, whatever the sparsity). Without the ReLU, any overlap
# between two feature directions leaks into the output every time either feature is active, and
# nothing can filter it out; with the ReLU and a negative bias, the small leaks fall below zero and
# vanish. This is Elhage et al.'s central contrast: the nonlinearity is what makes superposition pay.
#
# One caution before reading the sparsity pictures as "neurons". The hidden vector $h = Wx$ is never passed
# through a nonlinearity: the ReLU acts on the *output* features, not on the $m$ hidden numbers. Turn
# the hidden space by any rotation $R$ (use $RW$ in place of $W$) and $W^\top W$, hence every output
# and the loss, is unchanged. So no hidden coordinate is special: this toy has **no privileged basis**,
# like the residual stream, and the superposition here is features sharing a *space*, not features
# sharing a *neuron*. Polysemantic neurons need a basis that the model cannot rotate away, which an
# elementwise nonlinearity on the hidden layer supplies (Elhage et al. study that variant too).
# Checked on the trained sweep with a random rotation of the five hidden dimensions:

# %%
rotation, _ = torch.linalg.qr(torch.randn(5, 5, generator=torch.Generator().manual_seed(0)))  # (5, 5) orthogonal
probe = many.generate_batch(256, torch.Generator().manual_seed(1))  # (batch, inst, feat)
with torch.no_grad():
    rotated_output = superposition.toy_model_forward(probe, rotation @ many_W, many.b_final)
    same = torch.allclose(rotated_output, many(probe), atol=1e-5)
print("every output the same after rotating the hidden space (up to float32 rounding, 1e-5):", same)

# %% [markdown]
# ### Five features in two dimensions
#
# The smallest case that can be drawn: 5 features, 2 hidden dimensions, equal importance, twelve
# sparsities from dense to 99% zeros, trained side by side:

# %%
five_sparsity = (1 - torch.logspace(0, -2, 12)).tolist()
five, five_losses = superposition.train_sweep(5, 2, five_sparsity, steps=steps, batch_size=batch_size, seed=0, progress=True)

# %%
five_W = five.W.detach()
sparsest = five_W[-1]  # (hidden=2, feat=5)
angles = torch.rad2deg(torch.atan2(sparsest[1], sparsest[0])).sort().values
gaps = torch.diff(torch.cat([angles, angles[:1] + 360]))
print("sparsest instance: feature norms", [round(v, 2) for v in superposition.feature_norms(sparsest).tolist()])
print("angles between neighbouring features (degrees):", [round(g) for g in gaps.tolist()])

# %%
fig = viz.plot_features_2d(sparsest, f"S = {five_sparsity[-1]:.2f}: five features, a pentagon")


# %% [markdown]
# Five directions 72° apart: a regular pentagon. Each feature shares the plane with four others,
# and the ReLU keeps a lone active feature readable.
#
# ### Exercise: feature dimensionality (2 points, difficulty 2/3, about 10 min)
#
# How much of a dimension does each feature get? Elhage et al. define
#
# $$D_i = \frac{\lVert W_i \rVert^2}{\sum_j (\hat W_i \cdot W_j)^2}, \qquad \hat W_i = W_i / \lVert W_i \rVert,$$
#
# where the sum runs over **all** $j$, including $j = i$. A feature alone in its direction gets 1;
# two features pointing in opposite directions get 1/2 each; a pentagon's corners 2/5 each.
# Write `feature_dimensionality(W)` for `W` of shape `(..., hidden, feat)` (features are the
# **columns**, any leading instance axes), returning shape `(..., feat)`. No column will be zero.

# %%
def feature_dimensionality(W):
    # BEGIN SOLUTION
    norms = W.norm(dim=-2, keepdim=True)  # (..., 1, feat)
    overlaps = ((W / norms).transpose(-1, -2) @ W).square().sum(dim=-1)  # (..., feat)
    return norms.squeeze(-2) ** 2 / overlaps
    # END SOLUTION


# %%
check_feature_dimensionality(feature_dimensionality)

# %% [markdown]
# Stuck? Run `from course_utils.checks import hint` and then `hint("feature_dimensionality")` for a nudge, or `hint("feature_dimensionality", 2)` for a stronger one.

# %% [markdown]
# Every feature's $D_i$ in the five-in-two sweep against $1/(1 - S)$ (the average number of
# inputs between two appearances of a feature), with the reference `superposition.feature_dimensionality`:

# %%
five_dims = superposition.feature_dimensionality(five_W)  # (inst, feat)
per_feature = 2 / five_W.square().sum(dim=(-2, -1))  # m / ||W||_F^2: hidden dims per represented feature
fig = viz.plot_dimensionality(five.sparsity, five_dims, per_feature)

# %%
for level, name in [(0.5, "1/2 (antipodal pairs)"), (0.4, "2/5 (pentagon)")]:
    near = ((five_dims - level).abs() < 0.03).any(dim=-1) & ((five_dims - level).abs() < 0.03).sum(dim=-1).ge(4)
    print(f"instances with at least 4 features at D = {name}: {int(near.sum())} of {len(five_sparsity)}")

# %% [markdown]
# The values do not drift smoothly: they stick to simple fractions. At moderate sparsity features
# pair up, two of them pointing opposite ways along one line (an antipodal pair, 1/2 each; in this run
# one instance holds four of the five as two such pairs and drops the fifth); at high sparsity all five
# form the pentagon (2/5 each). Which sparsity gives which shape moves a little from seed to seed, but
# pairs at moderate sparsity and the pentagon at high sparsity appear on every seed we tried (seeds 0
# to 4 in `tests/test_06_seeds.py`). Elhage et al. see the same "sticky" fractions, with tetrahedra
# and other shapes, in models with hundreds of features.
#
# ### Sparsity explorer
#
# Slide through the twelve trained instances: $W^\top W$ and the feature directions are redrawn from
# the stored weights (nothing is trained while you slide). Below it, a static picture of four of them
# for readers without a running kernel.

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: a widget draws into an Output area, which nbval cannot follow.
viz.sparsity_explorer(five)

# %%
fig = viz.plot_instances_2d(five_W, five.sparsity, [0, 4, 7, 11])

# %% [markdown]
# ### What importance does: a phase picture
#
# Every sweep so far varied the sparsity and fixed the importances. Importance is the other dial: it
# says how much the loss cares about each feature, so it decides *which* features are worth a
# direction. Elhage et al. make this sharp in the smallest case there is, **two features and one
# hidden dimension**. Feature 0 has importance 1, the "extra" feature 1 a relative importance $r$, and
# both the same density $1 - S$ (the chance of being non-zero). A trained model ends in one of three
# arrangements:
#
# - the extra feature is **not represented** ($W_1 \approx 0$; feature 0 has the dimension to itself);
# - the extra feature gets a **dedicated dimension** (feature 0 is dropped instead);
# - **superposition**: both are represented, pointing opposite ways along the one axis, and the ReLU with
#   a negative bias cuts off the interference when only one of them is active.
#
# `toy_phases.phase_sweep` trains one model per cell of a grid of $r$ and density, all of them instances
# of one `ToyModel`, and calls a feature represented when its norm exceeds 0.5. Two details keep it cheap
# and clean. With two features the *expected* loss can be summed exactly over a grid of inputs (each
# feature 0 with probability $S$, else one of 8 values spread over $[0, 1]$), so rare features do not
# make training noisy. And gradient descent on two weights can stall in a worse arrangement (weights that
# start on the same side of zero rarely cross it), so every cell is trained three times, once from each
# arrangement, and keeps the lowest loss:

# %%
from course_utils.superposition import phases as toy_phases

phases = toy_phases.phase_sweep(torch.logspace(-2, 2, 12), torch.logspace(-3, 0, 12), seed=0)
fig = viz_phases.plot_phase_diagram(phases)

# %%
r = phases.relative_importance
dense = phases.phases[-1]  # density 1
print(f"density 1: extra feature not represented for every r < 1: {bool((dense[r < 1] == 0).all())}, "
      f"dedicated dimension for every r > 1: {bool((dense[r > 1] == 1).all())}")
for row in reversed(range(len(phases.density))):  # densest first
    shared = r[phases.phases[row] == 2]
    span = f"r from {shared.min().item():.3g} to {shared.max().item():.3g}" if len(shared) else "no r"
    print(f"density {phases.density[row].item():<8.3g} superposition for {span:<22} ({len(shared):>2} of {len(r)} cells)")

# %% [markdown]
# Read it from the top. Dense features never share: one dimension holds one feature, and importance
# alone decides which, so the extra feature is dropped when it matters less than feature 0 and takes
# the dimension when it matters more. As both features get rarer, superposition appears where the two
# are worth about the same ($r$ near 1), and the band widens as the density falls: the rarer the
# features, the rarer the inputs where both are active and interfere, so sharing pays even for a
# lopsided pair. At the bottom of the grid it wins everywhere, even at a hundredfold difference in
# importance. So importance moves the boundary: the less a feature matters next to its rival, the
# sparser it must be before it earns a share of the dimension. The edges between the colours are
# sharp, which is why Elhage et al. call them **phase changes**: a small step in $r$ or $S$ flips which
# arrangement is best, with no gradual drift in between. (The test `tests/test_06_seeds.py` checks
# these statements for seeds 0 to 4.)

# %% [markdown]
# ## 8 · Getting the features back: a sparse autoencoder
#
# In a real model nobody hands us $W$. We see only the hidden activations $h$, and if features are
# in superposition, no single hidden unit means one thing. A **sparse autoencoder** (SAE) learns an
# overcomplete dictionary instead: many more latent directions than $h$ has dimensions, with an L1
# penalty so that each $h$ is rebuilt from only a few of them. If the hidden space really is a sparse
# sum of feature directions, the dictionary should line up with those directions.
#
# Written out: the latents are $f = \text{ReLU}\big((h - b_\text{dec}) W_\text{enc} + b_\text{enc}\big)$
# (one non-negative number per dictionary entry), the reconstruction is $\hat h = f\, W_\text{dec} + b_\text{dec}$,
# and training minimises, averaged over a batch,
#
# $$L = \lVert h - \hat h \rVert^2 + \lambda\, \lVert f \rVert_1 ,$$
#
# a reconstruction term plus an L1 penalty of strength $\lambda$ (`l1` in the code) that pushes most
# latents to exactly zero. The rows of $W_\text{dec}$ (the dictionary directions) are kept at **unit
# norm**; the course's SAE divides each row by its length when it decodes. Without that constraint
# the penalty has a loophole: halve every latent and double every decoder row, and $\hat h$ is
# unchanged while $\lVert f \rVert_1$ is halved. Repeat, and the optimiser drives $f$ towards zero
# and the decoder towards infinity, paying almost no penalty and learning nothing sparse.
#
# ### Exercise: the SAE's forward pass (2 points, difficulty 2/3, about 10 min)
#
# Write `sae_forward(h, W_enc, b_enc, W_dec, b_dec)` for activations `h` of shape `(batch, d_in)`,
# `W_enc` of shape `(d_in, d_sae)`, `b_enc` of shape `(d_sae,)`, `W_dec` of shape `(d_sae, d_in)` (one
# row per latent) and `b_dec` of shape `(d_in,)`. Return the pair `(acts, h_hat)`: the latents $f$,
# shape `(batch, d_sae)`, and the reconstruction $\hat h$, shape `(batch, d_in)`, as written above,
# decoding with **each row of `W_dec` divided by its length** (the course's `SparseAutoencoder` does
# the same, and the check compares with it on the same weights).

# %%
def sae_forward(h, W_enc, b_enc, W_dec, b_dec):
    # h (batch, d_in) -> acts (batch, d_sae), h_hat (batch, d_in)
    # BEGIN SOLUTION
    centred = h - b_dec  # (batch, d_in): the encoder reads h relative to the decoder's bias
    pre_acts = centred @ W_enc + b_enc  # (batch, d_sae)
    acts = torch.relu(pre_acts)
    row_lengths = W_dec.norm(dim=-1, keepdim=True)  # (d_sae, 1)
    directions = W_dec / row_lengths  # (d_sae, d_in): the dictionary, unit rows
    h_hat = acts @ directions + b_dec  # (batch, d_in)
    return acts, h_hat
    # END SOLUTION


# %%
check_sae_forward(sae_forward)

# %% [markdown]
# Stuck? Run `from course_utils.checks import hint` and then `hint("sae_forward")` for a nudge, or `hint("sae_forward", 2)` for a stronger one.

# %% [markdown]
# ### Exercise: the SAE's loss (1 point, difficulty 1/3, about 5 min)
#
# Write `sae_loss(h, acts, h_hat, l1)`: $L$ above, one number. For each input, the squared length of
# its error $\lVert h - \hat h \rVert^2$ (a sum over `d_in`) plus `l1` times the L1 norm of its latents
# (a sum over `d_sae`); then the **mean over the batch**.

# %%
def sae_loss(h, acts, h_hat, l1):
    # h, h_hat (batch, d_in), acts (batch, d_sae) -> one number
    # BEGIN SOLUTION
    reconstruction = (h - h_hat).square().sum(dim=-1)  # (batch,): squared length of each error
    sparsity = acts.abs().sum(dim=-1)  # (batch,): L1 norm of each input's latents
    per_input = reconstruction + l1 * sparsity
    return per_input.mean()
    # END SOLUTION


# %%
check_sae_loss(sae_loss)

# %% [markdown]
# Stuck? Run `from course_utils.checks import hint` and then `hint("sae_loss")` for a nudge, or `hint("sae_loss", 2)` for a stronger one.

# %% [markdown]
# ### Exercise: one training step (2 points, difficulty 2/3, about 10 min)
#
# Write `sae_training_step(sae, optimiser, h, l1)`. `sae` is a course `SparseAutoencoder` (calling
# `sae(h)` returns `(acts, h_hat)`, the forward you just wrote), `optimiser` an optimiser over its
# parameters and `h` one batch of activations. Compute the batch's loss, clear the gradients left by
# the previous step, backpropagate, step the optimiser, and return the loss (computed before the
# step). The check builds an SAE and an Adam optimiser, runs three of your steps and three of the
# course's from the same start, and compares the losses and every parameter.

# %%
def sae_training_step(sae, optimiser, h, l1):
    # one step on the batch h (batch, d_in); returns the loss before the step
    # BEGIN SOLUTION
    acts, h_hat = sae(h)  # (batch, d_sae), (batch, d_in)
    reconstruction = (h - h_hat).square().sum(dim=-1).mean()
    loss = reconstruction + l1 * acts.sum(dim=-1).mean()
    optimiser.zero_grad()  # gradients add up across backward calls unless cleared
    loss.backward()
    optimiser.step()
    return loss.detach()
    # END SOLUTION


# %%
check_sae_training_step(sae_training_step)

# %% [markdown]
# Stuck? Run `from course_utils.checks import hint` and then `hint("sae_training_step")` for a nudge, or `hint("sae_training_step", 2)` for a stronger one.

# %% [markdown]
# `train_sparse_autoencoder` below repeats the course's version of this step with Adam, on a fresh
# batch each time. Here we know the truth, so we can score it: an SAE with 40 latents trained on the
# 5-dimensional hidden activations of the 20-feature model at sparsity 0.99, and for each feature the
# model represents, its best cosine with any dictionary direction:

# %%
from course_utils.superposition import SparseAutoencoder, hidden_activation_sampler, recovered_features, train_sparse_autoencoder

instance = many_sparsity.index(0.99)
true_W = many_W[instance]  # (hidden=5, feat=20)
represented = superposition.feature_norms(true_W) > 0.5
sae = SparseAutoencoder(d_in=5, d_sae=40, seed=0)
sae_l1 = 0.1  # the penalty's strength, λ
sae_losses = train_sparse_autoencoder(sae, hidden_activation_sampler(many, instance), steps=1000, batch_size=512, l1=sae_l1, seed=0, progress=True)

# %%
best, found = recovered_features(true_W.T[represented], sae.directions().detach(), threshold=0.9)
_, found_by_chance = recovered_features(true_W.T[represented], torch.randn(40, 5, generator=torch.Generator().manual_seed(0)))
print(f"true feature directions found by the SAE (cosine > 0.9): {int(found.sum())} of {int(represented.sum())}")
print(f"the same count for 40 random directions: {int(found_by_chance.sum())}")
print(f"worst best-cosine: {best.min().item():.3f}")

# %%
fig = viz.plot_sae_cosines(best, 0.9)

# %% [markdown]
# The loophole, on this SAE: the same reconstruction from latents ten times smaller and decoder rows
# ten times longer, at a tenth of the penalty:

# %%
h_probe = hidden_activation_sampler(many, instance)(1024, torch.Generator().manual_seed(1))  # (batch, 5)
with torch.no_grad():
    f = sae.encode(h_probe)  # (batch, 40)
    same = torch.allclose((f / 10) @ (10 * sae.directions()), f @ sae.directions(), atol=1e-6)
print("same reconstruction:", same)
print(f"L1 penalty, mean per input: {f.sum(dim=-1).mean().item():.4f} -> {(f / 10).sum(dim=-1).mean().item():.4f}")

# %% [markdown]
# Three numbers every SAE report gives, measured on a **held-out** batch (not the training data):
# **L0**, the average number of latents active per input (the sparsity actually reached);
# the **fraction of variance explained**, $1 - \sum \lVert h - \hat h \rVert^2 / \sum \lVert h - \bar h \rVert^2$
# (1 is a perfect reconstruction, 0 no better than always answering the mean); and the **dead latents**,
# those active on no input at all, dictionary entries that were paid for and never used.
# `sparse_autoencoder.sae_diagnostics` computes them; beside L0, the number of the toy model's
# represented features that are actually non-zero per input:

# %%
from course_utils.superposition import sae_diagnostics

held_out = many.generate_batch(8192, torch.Generator().manual_seed(2))  # (batch, inst, feat), unseen in training
diagnostics = sae_diagnostics(sae, many.hidden(held_out)[:, instance].detach())
true_active = (held_out[:, instance, represented] > 0).sum(dim=-1).float().mean().item()
print(f"L0: {diagnostics.l0:.2f} latents active per input   (represented features active per input: {true_active:.2f})")
print(f"fraction of variance explained: {diagnostics.variance_explained:.3f}")
print(f"dead latents: {diagnostics.n_dead} of {sae.W_enc.shape[1]}")

# %% [markdown]
# The reconstruction is nearly complete, and a few latents never fire. L0 is several times the number
# of features really present: with 40 latents for fewer than half as many represented features, an
# input switches on more latents than it has features (several latents can share one feature, or fire on the small overlaps
# between features). A good variance score does not make a clean dictionary; L0 and the dead count
# are how you notice.
#
# **Shrinkage.** The L1 penalty charges for every unit of a latent's size, not only for its being on,
# so the trained latents come out smaller than the features they stand for: for one active latent
# with a unit decoder row, the loss $(a - f)^2 + \lambda f$ is lowest at $f = a - \lambda / 2$, so every
# active latent falls short by about $\lambda/2$, and the reconstruction is pulled towards
# zero. Measured as the scale of the reconstruction along the input, $\sum \langle \hat h, h \rangle / \sum \lVert h \rVert^2$
# on the held-out batch (1 would be no shrinkage):

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: a ratio from float32 training, whose last digits differ between processors.
h_held_out = many.hidden(held_out)[:, instance].detach()  # (batch, 5)
with torch.no_grad():
    _, h_hat_held_out = sae(h_held_out)  # (batch, 5)
shrink = (h_hat_held_out * h_held_out).sum() / h_held_out.square().sum()
print(f"λ / 2 = {sae_l1 / 2}; reconstruction scale along the input: {shrink.item():.3f}")

# %% [markdown]
# The scale is below one, and `tests/test_06_seeds.py` requires it on every seed it trains. Dead latents and
# shrinkage are the two standing faults of the plain L1 SAE, and the usual remedies aim at them:
# **resampling** (Bricken et al.) re-initialises each dead latent towards inputs the SAE rebuilds
# badly, part-way through training; a **TopK** SAE (Gao et al.) keeps only the k largest latents
# per input and drops the L1 term, so nothing pulls the survivors down, with an auxiliary loss that
# gives dead latents a gradient; a **JumpReLU** SAE (Rajamanoharan et al.) zeroes each latent
# below a learned threshold and passes it whole above, so small activations are cut without shrinking
# large ones.
#
# On this run the SAE found every represented direction from the activations alone (the count above),
# more directions than there are hidden dimensions. That is not guaranteed: on other seeds of the toy
# model an SAE trained the same way can miss one or two, so the directions an SAE reports are checked
# against what is known, never assumed complete. This is what interpretability research does on real models: train an SAE on
# a layer's activations (usually the residual stream or the MLP's neurons), then read each latent
# by the inputs that switch it on. The picture has moved on since (Anthropic's later circuit work
# uses cross-layer transcoders, and how much SAEs help on downstream tasks is debated), but the
# idea is the one you just ran: features are directions, sparse, and more numerous than the neurons.
#
# ## Next
#
# **07 · Mixture of experts**: if the MLP holds most of the knowledge, make many MLPs and let each
# token use only a few of them.
