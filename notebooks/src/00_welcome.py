# ---
# jupyter:
#   course:
#     exercises:
#       stable_softmax:
#         difficulty: 1
#         minutes: 10
#         points: 2
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
# # 00 · Welcome to *Inside the Transformer*
#
# This course takes you from raw text to a small GPT that you train and sample yourself. Each
# notebook teaches one idea, lets you poke at it with code (and, in places, sliders and editors), and
# asks you to write a few key functions yourself. A **check** tells you immediately whether your
# function is right, and if not, what the likely mistake is.
#
# | notebook | what you build |
# |---|---|
# | 00 welcome | this page: environment check, how exercises work, the names we use, a warm-up |
# | 01 tokenisation | BPE, byte-level BPE, WordPiece and Unigram; real GPT tokenizers offline |
# | 02 embeddings & positions | token ids as rows of $W_E$; sinusoidal, learned and rotary positions |
# | 03 Q/K/V & attention | scaled dot-product attention, why $\sqrt{d_\text{head}}$ |
# | 04 masking, softmax & temperature | causal and other masks, a temperature slider, a mask editor |
# | 05 multi-head attention | heads in parallel, $W_O$, heads that learn different jobs |
# | 06 MLP & superposition | the per-position MLP and how features share dimensions |
# | 07 mixture of experts | routing tokens to experts, load balancing |
# | 08 parameter counting | count GPT-3 and Mixtral parameters from their configs |
# | 09 a small GPT | build, train and sample a model on Shakespeare |
#
# Run the cells from top to bottom (Shift+Enter); nothing is downloaded. **1 exercise, 2 points, about 10 minutes in all.**

# %% [markdown]
# ## 1 · Set up: seed and device
#
# Every notebook starts the same way, in a cell you can see: seed all random generators (so your
# numbers match the ones in the text) and pick where tensors live. `pick_device()` takes a CUDA GPU if
# there is one, then an Apple-silicon GPU (MPS), then the CPU; set the environment variable
# `COURSE_DEVICE=cpu` to force a choice.

# %%
import torch

from course_utils.env import describe_device, pick_device, seed_everything

seed_everything(0)
device = pick_device()
print("computing on", describe_device(device))  # this machine's device: the tests mask it

# %% [markdown]
# ## 2 · Is this machine ready?
#
# The report below checks Python, PyTorch and the device, the widget extension, and the data files
# the course reads (a Shakespeare corpus and the GPT-2 and GPT-4-family vocabularies, all shipped
# inside installed packages). Every line should say **OK**; a **PROBLEM** line says what to do.

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: it reports this machine's Python, PyTorch, device and thread count.
from course_utils.env import environment_report, format_report

report = environment_report()
print(format_report(report))

# %%
# The same verdict as one value (the course's tests check this cell's output).
all(check.ok for check in report)

# %% [markdown]
# Widgets are how several notebooks let you *feel* an idea. If a slider appears below, they work in
# your JupyterLab. Drag it: it sets the gap between two **logits** and the line under it shows the two
# probabilities that softmax (the subject of the warm-up below) turns them into. *Logits* are the raw
# scores a model gives its options before they become probabilities: any real numbers, negative or
# positive, where higher means more likely. A language model's last layer produces one logit per token
# of its vocabulary; softmax turns them into the probabilities of the next token.

# %%
from course_utils.viz.welcome import softmax_gap_slider

softmax_gap_slider()

# %% [markdown]
# ## 3 · How exercises and checks work
#
# An exercise is a function whose body you write. In your copy of the notebook it looks like this:
#
# ```python
# def stable_softmax(x):
#     raise NotImplementedError("`stable_softmax` is yours to write: replace this line with your code, then run the check cell below; stuck? run hint('stable_softmax') in a new cell.")
# ```
#
# Each exercise's heading shows its points, a difficulty from 1 to 3 and roughly how long it takes,
# for example `### Exercise: a stable softmax (2 points, difficulty 1/3, about 10 min)`.
#
# 1. Replace the `raise NotImplementedError(...)` line with your code. Anything the answer must look
#    like (which dimension, which dtype, a tie-break rule) is said in the text *before* the exercise.
# 2. Run the cell, then run the **check** cell under it. A check calls your function on fixed, seeded
#    inputs (on copies, so a function that works in place is fine), compares the results with a
#    reference implementation at the precision the exercise teaches, and checks properties every right
#    answer has (rows sum to 1, no NaN, the right shape). Any correct way of writing it passes:
#    float32 or float64, a loop or a vectorised expression. It prints **one line**:
#    - ✅ `passed the N public cases; 2N hidden cases remain to be graded`: done here (a graded lab also
#      runs the same exercise on hidden inputs, other seeds, when it is handed in);
#    - ❌ a short description of the likely mistake and the input it showed up on;
#    - ⏳ `not attempted yet`: the stub is still there;
#    - ⚠️ your function raised an error (the line shows which line of your cell), or the check could
#      not call it (wrong signature, not a function).
# 3. Stuck? Run `hint("stable_softmax")` in a new cell for a nudge, then `hint("stable_softmax", 2)` for
#    a stronger one (after `from course_utils.checks import hint`). Hints never contain the code.
# 4. Later cells never use your answer: they use the course's reference implementation from
#    `course_utils`, so an unfinished exercise never breaks the rest of a notebook.
#
# If your course is graded, your instructor runs the same checks (plus hidden inputs) on your saved
# notebook.

# %% [markdown]
# ## 4 · The names we use
#
# Papers and codebases name the same things differently. This course uses the names
# interpretability researchers use (TransformerLens, ARENA), with batch first.
#
# One of them needs a word before the table. Each position of the input carries a vector of width
# `d_model` through the whole model, called the **residual stream**: the token and position embeddings
# start it, and every attention layer and MLP reads it, computes a change, and *adds* that change back
# (a residual connection) instead of replacing it. It is the shared workspace all layers write into;
# at the end, `W_U` reads it to produce the logits.
#
# | name | meaning | nanoGPT | Hugging Face GPT-2 config | *Attention Is All You Need* |
# |---|---|---|---|---|
# | `batch` | sequences processed together | `B` | | |
# | `pos` | positions in a sequence (`q_pos`, `k_pos` for queries and keys) | `T` | | $n$ |
# | `n_ctx` | the longest sequence the model accepts | `block_size` | `n_positions` | |
# | `d_vocab` | vocabulary size | `vocab_size` | `vocab_size` | |
# | `d_model` | width of the residual stream | `C`, `n_embd` | `n_embd` | $d_\text{model}$ |
# | `n_heads` | attention heads per layer | `n_head`, `nh` | `n_head` | $h$ |
# | `d_head` | width of one head's queries, keys and values | `hs` (`C // n_head`) | | $d_k$ (queries, keys), $d_v$ (values) |
# | `n_layers` | transformer blocks | `n_layer` | `n_layer` | $N$ |
# | `d_mlp` | hidden width of the MLP | `4 * n_embd` | `n_inner` | $d_\text{ff}$ |
# | `W_E`, `W_pos` | token and position embedding matrices | `wte`, `wpe` | `wte`, `wpe` | (embeddings, positional encoding) |
# | `W_Q`, `W_K`, `W_V`, `W_O` | query, key, value and output weights of attention | slices of `c_attn`, `c_proj` | `c_attn`, `c_proj` | $W^Q_i$, $W^K_i$, $W^V_i$, $W^O$ |
# | `W_U` | unembedding: residual stream → logits | `lm_head` | `lm_head` | (the pre-softmax linear layer) |
#
# **`d_k`, `d_v` and `d_head` are the same number here.** The original paper allows the query/key
# width $d_k$ and the value width $d_v$ to differ; GPT-2, every model in this course and most models
# in use set both to `d_model / n_heads`, which this course calls `d_head`. Notebook 03 writes `d_k`
# where it follows the paper's formula $\operatorname{softmax}(QK^\top/\sqrt{d_k})$; it means `d_head`.
#
# **Rows, not columns.** The course stores one token's vector as a *row*: `W_E` has shape
# `(d_vocab, d_model)` and looking a token up takes its row; a sequence is a `(pos, d_model)` matrix,
# one row per position; and softmax normalises along the *last* dimension, so each row of an attention
# pattern (one query) sums to 1. PyTorch, nanoGPT and TransformerLens do the same. The 3Blue1Brown
# lessons and their notes draw everything transposed: vectors are columns, `W_E` is
# `d_model × d_vocab` with one *column* per token, each query owns a column of the attention grid, and
# softmax runs down each column. Only the bookkeeping differs, as the next cell checks.
#
# Shapes are written the same way everywhere, for example `Float[Tensor, "batch pos d_model"]` for
# the residual stream and `"batch head q_pos k_pos"` for attention patterns.

# %%
from course_utils.softmax import softmax

W_E = torch.randn(10, 4)  # the course's convention: (d_vocab, d_model), one row per token
W_E_columns = W_E.T       # 3Blue1Brown's: (d_model, d_vocab), one column per token
print("token 7's row == token 7's column:", torch.equal(W_E[7], W_E_columns[:, 7]))
scores = torch.randn(3, 3)  # rows are queries here, columns are queries there
print("row-wise softmax == column-wise softmax of the transpose:",
      torch.allclose(softmax(scores, dim=-1), softmax(scores.T, dim=0).T))

# %% [markdown]
# For GPT-2 small the names take these values (note that `d_head` is derived):

# %%
gpt2_small = {"d_vocab": 50257, "n_ctx": 1024, "d_model": 768, "n_heads": 12, "n_layers": 12}
gpt2_small["d_head"] = gpt2_small["d_model"] // gpt2_small["n_heads"]
gpt2_small["d_mlp"] = 4 * gpt2_small["d_model"]
gpt2_small

# %% [markdown]
# ## 5 · Warm-up exercise: a numerically stable softmax
#
# Softmax turns a row of scores $z$ into probabilities:
# $\operatorname{softmax}(z)_j = e^{z_j} / \sum_k e^{z_k}$. Every entry is positive and the row sums
# to 1. It appears at the end of every language model (scores over the vocabulary) and inside every
# attention head (scores over positions).
#
# Written literally, it breaks on large scores: $e^{z}$ overflows float32 once $z$ passes $\ln$ of
# float32's largest value (printed first below).

# %%
import math

print("exp overflows float32 above z =", round(math.log(torch.finfo(torch.float32).max), 2))
big = torch.tensor([1000.0, 999.0, 0.0])
print("exp(big)         =", big.exp())
print("literal softmax  =", big.exp() / big.exp().sum())


# %% [markdown]
# The fix: subtract the row's maximum $m$ first. The answer does not change, since
# $e^{z_j - m} / \sum_k e^{z_k - m} = e^{z_j} / \sum_k e^{z_k}$ (the factor $e^{-m}$ cancels),
# but now the largest exponent is $e^0 = 1$, so nothing overflows.
#
# ### Exercise: a stable softmax (2 points, difficulty 1/3, about 10 min)
#
# Write `stable_softmax(x)` for a floating-point tensor of any shape, normalising over the **last**
# dimension (each row along it must sum to 1). The check compares at float32 precision, so computing
# in float32 or float64 are both fine, and it must not overflow for logits near ±10,000.

# %%
def stable_softmax(x: torch.Tensor) -> torch.Tensor:
    # Softmax over the last dimension of x, safe for very large and very negative logits.
    # BEGIN SOLUTION
    shifted = x - x.amax(dim=-1, keepdim=True)
    exps = shifted.exp()
    return exps / exps.sum(dim=-1, keepdim=True)
    # END SOLUTION


# %%
from course_utils.checks.welcome import check_stable_softmax

check_stable_softmax(stable_softmax)

# %% [markdown]
# Stuck? `hint("stable_softmax")` gives a nudge and `hint("stable_softmax", 2)` a stronger one (run `from course_utils.checks import hint` first). This is what the first one looks like:

# %%
from course_utils.checks import hint

hint("stable_softmax")


# %% [markdown]
# This is what a check says about a typical mistake: the literal formula passes on small inputs, but
# the check also tries logits near ±10,000.

# %%
def literal_softmax(x):
    return x.exp() / x.exp().sum(dim=-1, keepdim=True)

check_stable_softmax(literal_softmax)

# %% [markdown]
# From here on the course uses its reference softmax, `course_utils.softmax.softmax`, so the rest
# of the course does not depend on your warm-up being right:

# %%
from course_utils.softmax import softmax

probs = softmax(torch.tensor([10_000.0, 9_998.0, -10_000.0], dtype=torch.float64))
print("probabilities:", [round(p, 4) for p in probs.tolist()], "sum:", round(probs.sum().item(), 12))
print("a gap of 2 makes the first", round((probs[0] / probs[1]).item(), 3), "times as likely; e² =", round(torch.e**2, 3))

# %% [markdown]
# ## Next
#
# Open **01 · tokenisation** to see how text becomes the integer ids a model reads.
