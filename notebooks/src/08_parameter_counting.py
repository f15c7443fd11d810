# ---
# jupyter:
#   course:
#     numbers_allowed:
#       '2019': a citation year (Zhang and Sennrich)
#       '2020': a citation year (Kaplan et al.)
#       '2021': a citation year (Narayanan et al.)
#       '2022': a citation year (Korthikanti et al., Hoffmann et al., Chowdhery et al.)
#     exercises:
#       attention_parameter_count:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       flops_by_operation:
#         difficulty: 2
#         minutes: 15
#         points: 3
#       mlp_parameter_count:
#         difficulty: 1
#         minutes: 5
#         points: 1
#       model_parameter_count:
#         difficulty: 2
#         minutes: 15
#         points: 3
#       parameters_by_category:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       training_flops_estimate:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       training_memory_breakdown:
#         difficulty: 2
#         minutes: 15
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
# # 08 · Counting parameters and compute
#
# How big is a model? "175 billion" or "8x7B" is a headline; here we take such numbers apart until
# every parameter has a place, and then ask the two follow-up questions that matter in practice:
# how much arithmetic does a token cost, and how much memory does training need?
#
# Everything comes from one configuration object, `ModelConfig`, and one counter in
# `course_utils.counting.parameters`. Every count is then compared with `sum(p.numel())` of a real module built
# on PyTorch's `meta` device, where tensors have shapes but no storage, so even GPT-3 can be built
# without using any memory.
#
# What you will do:
# 1. count a model from its configuration, category by category, and read a real module back into the same
#    categories;
# 2. rebuild GPT-3's parameter table, and see why two careful counts differ;
# 3. count GPT-2, the 2017 Transformer, Llama 3 8B and Mixtral 8x7B (total vs active);
# 4. turn parameters into FLOPs (forward ≈ 2N per token, training ≈ 6ND), check that with PyTorch's FLOP counter,
#    and take a token's FLOPs apart operation by operation;
# 5. turn parameters into bytes: weights, gradients, Adam's moments, activations (the whole training step's
#    memory is an exercise) and the KV cache;
# 6. turn FLOPs into days at a given utilisation, and ask how many tokens a model should see (Chinchilla);
# 7. see why generating text is limited by memory bandwidth rather than arithmetic.
#
# **7 exercises, 16 points, about 80 minutes in all.**

# %%
import torch

from course_utils.counting import compute, parameters as counting
from course_utils.counting import ModelConfig
from course_utils.env import describe_device, pick_device, seed_everything

seed_everything(0)
device = pick_device()
print("computing on", describe_device(device))  # this machine's device: the tests mask it

# %% [markdown]
# ## 1. A model is its configuration
#
# A decoder-only transformer is fixed by a handful of sizes, in the course's vocabulary: `d_vocab`
# tokens, a context of `n_ctx` positions, a residual stream of width `d_model`, `n_layers` blocks,
# `n_heads` attention heads of `d_head = d_model / n_heads` dimensions, and an MLP of hidden width
# `d_mlp`. A few architectural choices change the count: biases or not, LayerNorm or RMSNorm, learned
# or rotary positions, tied or separate embedding and unembedding, how many key/value heads
# (grouped-query attention), a gated MLP (SwiGLU), and mixture-of-experts layers.
#
# Two of these choices deserve a definition now. Both norms act on one residual vector x of
# d = `d_model` numbers. **LayerNorm** re-centres and rescales it, then applies a learned gain g and
# bias b: LayerNorm(x) = g ⊙ (x − mean(x)) / √(var(x) + ε) + b, so 2d parameters.
# **RMSNorm** (Zhang and Sennrich 2019; Llama and Mixtral use it) only rescales, by the root mean
# square, with no mean subtraction and no bias: RMSNorm(x) = g ⊙ x / √(mean(x²) + ε), so d parameters.
# The next cell checks the formula against `torch.nn.RMSNorm` and counts both.

# %%
from torch import nn

x = torch.randn(768, dtype=torch.float64)
rms_norm = nn.RMSNorm(768, eps=1e-6, dtype=torch.float64)  # gain g starts at 1
by_formula = x / torch.sqrt(x.pow(2).mean() + 1e-6)
print("formula == torch.nn.RMSNorm:", torch.allclose(by_formula, rms_norm(x)))
for norm in (nn.LayerNorm(768), rms_norm):
    print(f"{type(norm).__name__:>9} of width 768: {sum(p.numel() for p in norm.parameters()):,} parameters")

# %% [markdown]
# Here is GPT-2 small, the model of the lab, counted by category. A category includes its biases.

# %%
cfg = counting.GPT2_SMALL
print(cfg)
print("d_head:", cfg.d_head, " d_mlp:", cfg.mlp_width)
for name, n in counting.count_parameters(cfg).items():
    print(f"{name:>12}: {n:>13,}")

# %% [markdown]
# The embedding `W_E` (one row per token) is the largest single matrix. The unembedding shows 0
# because GPT-2 *ties* it to the embedding: the same matrix, transposed, turns the final residual
# vector back into token scores, and a shared matrix is counted once. The twelve blocks hold the
# rest: four attention projections and the two MLP matrices each, plus two LayerNorms (and one more
# at the end).

# %% [markdown]
# ## 2. GPT-3, category by category
#
# GPT-3 175B has `d_model` = 12,288, 96 layers of 96 heads (so `d_head` = 128), an MLP four times as
# wide as the residual stream, a vocabulary of 50,257 tokens and a context of 2,048. A common way to
# account for its size counts only the big matrices: no biases, no norms, no position table, and the
# embedding and unembedding as two separate matrices. The preset `GPT3_175B_WEIGHTS_ONLY` switches
# exactly those things off.
#
# One simplification runs through this notebook: GPT-3 alternates ordinary dense attention layers
# with *locally banded sparse* ones (as in the Sparse Transformer), where a position attends only to
# a band of recent positions. A banded layer has the same four matrices, so every parameter count
# here is exact; only the FLOPs of attention (section 5) are computed as if every layer were dense.

# %%
gpt3 = counting.GPT3_175B_WEIGHTS_ONLY
d, L, H, dh, V, m = gpt3.d_model, gpt3.n_layers, gpt3.n_heads, gpt3.d_head, gpt3.d_vocab, gpt3.mlp_width
shapes = {"embedding": f"{d:,} x {V:,}", "query": f"{dh} x {d:,} x {H} x {L}", "key": f"{dh} x {d:,} x {H} x {L}",
          "value": f"{dh} x {d:,} x {H} x {L}", "output": f"{d:,} x {dh} x {H} x {L}",
          "mlp_up": f"{m:,} x {d:,} x {L}", "mlp_down": f"{d:,} x {m:,} x {L}", "unembedding": f"{V:,} x {d:,}"}
gpt3_counts = counting.count_parameters(gpt3)
for name, shape in shapes.items():
    print(f"{name:>12}  {shape:<26} {gpt3_counts[name]:>16,}")
print(f"{'total':>12}  {'':<26} {gpt3_counts['total']:>16,}")

# %% [markdown]
# The attention numbers are easier to see one head at a time. Each head's `W_Q` maps the 12,288-wide
# residual stream to its 128 query dimensions; `W_K`, `W_V` and the head's slice of `W_O` have the
# same size. If the value map were one square matrix from the residual stream to itself, it alone
# would be far larger than the whole head; writing it as `W_V` (down to 128) followed by `W_O` (back
# up) is a low-rank factorisation.

# %%
attn_layer = counting.attention_parameters(gpt3)  # one layer, all heads
per_matrix = attn_layer["query"] // H
per_head = sum(attn_layer.values()) // H
print(f"one matrix of one head: {per_matrix:,}")
print(f"one head (Q, K, V, O):  {per_head:,}")
print(f"one layer's attention:  {sum(attn_layer.values()):,}  = {H} heads x {per_head:,}")
print(f"all layers' attention:  {L * sum(attn_layer.values()):,}")
square_value = d * d
print(f"a square value matrix:  {square_value:,}  = {square_value // per_head} x one head")
mlp_layer = sum(counting.mlp_parameters(gpt3).values())
print(f"one layer's MLP:        {mlp_layer:,};  all layers: {L * mlp_layer:,}")
print(f"MLP biases per layer:   {m + d:,}")

# %% [markdown]
# Grouped into the four parts of a transformer, the budget is lopsided: the MLPs hold about two
# thirds, attention one third, and the embedding and unembedding together less than one percent.

# %%
from course_utils.viz.parameter_counting import figure_image, plot_budget_shares

for group, n in counting.group_counts(gpt3_counts).items():
    if n:
        print(f"{group:>12}: {100 * n / gpt3_counts['total']:.2f}%")
figure_image(plot_budget_shares(gpt3_counts, "GPT-3 175B, weights only"))

# %% [markdown]
# ### The strict count
#
# The weights-only total is a reconstruction. The real architecture (GPT-3 reuses GPT-2's) also has
# biases in every linear layer, two LayerNorms per block and a final one, a learned position table
# of 2,048 rows, and a *tied* unembedding. Counting all of that strictly gives a slightly smaller
# total: the position table, biases and norms add a little, and the tied unembedding removes a whole
# matrix. Both are reconstructions: the paper itself only gives the rounded size.

# %%
strict = counting.count_parameters(counting.GPT3_175B)
print(f"weights only: {gpt3_counts['total']:,}")
print(f"strict:       {strict['total']:,}")
for name in ("positions", "norms", "unembedding"):
    print(f"  {name:>11}: {strict[name] - gpt3_counts[name]:+,}")
biases = strict["total"] - gpt3_counts["total"] - sum(strict[n] - gpt3_counts[n] for n in ("positions", "norms", "unembedding"))
print(f"       biases: {biases:+,}")


# %% [markdown]
# ### Exercise: attention parameters of one layer (2 points, difficulty 2/3, about 10 min)
#
# Write `attention_parameter_count(d_model, n_heads, n_kv_heads, bias)`: the number of parameters in
# one layer's `W_Q`, `W_K`, `W_V` and `W_O`, with their biases when `bias` is True. With
# grouped-query attention, `n_kv_heads` key/value heads (fewer than `n_heads`) are shared by groups
# of query heads; every head still has `d_head = d_model // n_heads` dimensions, and `n_kv_heads ==
# n_heads` is ordinary multi-head attention. Return a whole number (an `int`, or a float with no
# fractional part).

# %%
def attention_parameter_count(d_model: int, n_heads: int, n_kv_heads: int, bias: bool) -> int:
    """Parameters of one layer's W_Q, W_K, W_V, W_O (and their biases when bias=True)."""
    # BEGIN SOLUTION
    d_kv = n_kv_heads * (d_model // n_heads)  # width of the keys and of the values
    weights = 2 * d_model * d_model + 2 * d_model * d_kv
    biases = 2 * d_model + 2 * d_kv if bias else 0
    return weights + biases
    # END SOLUTION


# %%
from course_utils.checks.parameter_counting import (check_attention_parameter_count, check_mlp_parameter_count,
                                                    check_model_parameter_count, check_training_flops_estimate)
from course_utils.checks.parameter_counting import check_flops_by_operation, check_training_memory_breakdown

check_attention_parameter_count(attention_parameter_count)


# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("attention_parameter_count")` for a nudge and
# `hint("attention_parameter_count", 2)` for more.
#
# ### Exercise: MLP parameters, plain and gated (1 point, difficulty 1/3, about 5 min)
#
# Write `mlp_parameter_count(d_model, d_mlp, gated, bias)`: one MLP's parameters. A plain MLP has an
# up-projection (`d_model` to `d_mlp`) and a down-projection back; a gated one (SwiGLU, as in Llama and
# Mixtral) has a third matrix, the gate, of the same shape as the up-projection. With `bias`, each
# projection has one bias per output. Return a whole number.

# %%
def mlp_parameter_count(d_model: int, d_mlp: int, gated: bool, bias: bool) -> int:
    """Parameters of one MLP: up, down and (when gated) gate projections, with biases when bias=True."""
    # BEGIN SOLUTION
    n_in = 2 if gated else 1  # projections from d_model to d_mlp
    weights = (n_in + 1) * d_model * d_mlp
    biases = n_in * d_mlp + d_model if bias else 0
    return weights + biases
    # END SOLUTION


# %%
check_mlp_parameter_count(mlp_parameter_count)

# %% [markdown]
# Hints: `hint("mlp_parameter_count")`, then `hint("mlp_parameter_count", 2)`.
#
# ## 3. Checked against real modules, on the meta device
#
# A formula is only as good as its check. PyTorch can build a module on the `meta` device: every
# parameter has its shape, none has storage. `course_utils.counting.decoder.Decoder` builds a decoder from
# any `ModelConfig` out of plain `torch.nn` layers; building it on `meta` and adding up `p.numel()`
# must give the counter's total for every preset, GPT-3 included, in a fraction of a second and
# without allocating memory.

# %%
from course_utils.counting import Decoder

for name, preset in counting.PRESETS.items():
    with torch.device("meta"):
        model = Decoder(preset)
    built = sum(p.numel() for p in model.parameters())
    print(f"{name:>13}: {built:>16,} parameters on {next(model.parameters()).device}, "
          f"counter agrees: {built == counting.count_parameters(preset)['total']}")

# %% [markdown]
# ### Exercise: a real module's parameters by category (2 points, difficulty 2/3, about 10 min)
#
# The total is one check; the categories are a sharper one. Write `parameters_by_category(model)` for
# a `Decoder` (built on `meta` in the checks): go through `model.named_parameters()` and add each
# parameter's `numel()` to its category, returning a dict with every key of `counting.CATEGORIES`
# (zeros included) and `"total"`, as `counting.count_parameters` does. The category follows the layer
# that holds the parameter, the second-to-last piece of its name: `blocks.0.attn.W_Q.bias` is in
# `W_Q`, so under `"query"`; `W_E`, `W_pos`, `W_K`, `W_V`, `W_O`, `W_up`, `W_gate`, `W_down`, `router`
# and `W_U` name the other categories, and every layer whose name starts with `norm` counts under
# `"norms"`. (`named_parameters` lists a tensor that two modules share only once.)

# %%
def parameters_by_category(model: nn.Module) -> dict[str, int]:
    """A Decoder's parameters by counting.CATEGORIES, and their total, from the parameters' names."""
    # BEGIN SOLUTION
    by_layer = {"W_E": "embedding", "W_pos": "positions", "W_Q": "query", "W_K": "key", "W_V": "value",
                "W_O": "output", "W_up": "mlp_up", "W_gate": "mlp_gate", "W_down": "mlp_down", "router": "router",
                "W_U": "unembedding"}
    counts = dict.fromkeys(counting.CATEGORIES, 0)
    for name, parameter in model.named_parameters():
        layer = name.split(".")[-2]  # blocks.0.attn.W_Q.bias -> W_Q
        counts["norms" if layer.startswith("norm") else by_layer[layer]] += parameter.numel()
    counts["total"] = sum(counts.values())
    return counts
    # END SOLUTION


# %%
from course_utils.checks.parameter_counting import check_parameters_by_category

check_parameters_by_category(parameters_by_category)

# %% [markdown]
# Hints: `hint("parameters_by_category")`, then `hint("parameters_by_category", 2)`.
#
# The course's `decoder.count_by_category` does the same; on every preset it agrees with the formula
# counter in every category, not just in the total:

# %%
from course_utils.counting import count_by_category

for name, preset in counting.PRESETS.items():
    with torch.device("meta"):
        model = Decoder(preset)
    by_category = count_by_category(model)
    print(f"{name:>13}: every category agrees: {by_category == counting.count_parameters(preset)}; "
          f"attention {sum(by_category[c] for c in ('query', 'key', 'value', 'output')):,}, "
          f"MLP {sum(by_category[c] for c in ('mlp_up', 'mlp_gate', 'mlp_down', 'router')):,}")

# %% [markdown]
# The course's own model gives the same answer. `course_utils.gpt.model.GPT` is the decoder you build and
# train in notebook 09 (learned positions, LayerNorm, biases: GPT-2's choices; the embeddings can be
# tied as in GPT-2, though the model 09 trains keeps a separate unembedding, printed below). Built
# on `meta` at GPT-2 small's and at GPT-3's sizes, its parameters add up to the counter's strict,
# GPT-2-style totals.

# %%
from course_utils.gpt import GPT, GPTConfig

for name in ("GPT-2 small", "GPT-3 175B"):
    preset = counting.PRESETS[name]
    with torch.device("meta"):
        capstone = GPT(GPTConfig(d_vocab=preset.d_vocab, n_ctx=preset.n_ctx, d_model=preset.d_model,
                                 n_heads=preset.n_heads, n_layers=preset.n_layers, d_mlp=preset.d_mlp))
    built = sum(p.numel() for p in capstone.parameters())
    print(f"{name:>11}: notebook 09's GPT has {built:,} parameters, "
          f"counter agrees: {built == counting.count_parameters(preset)['total']}")
from course_utils.gpt import COURSE_MODEL

print(f"the model notebook 09 trains: tie_embeddings={COURSE_MODEL.tie_embeddings} (its own W_U)")

# %% [markdown]
# That module is the course's own, so it is not an independent witness. The independent ones are
# the Hugging Face `transformers` implementations: `GPT2LMHeadModel` (with GPT-2's sizes and with a
# GPT-3-shaped configuration), `LlamaForCausalLM` and `MixtralForCausalLM`, built from a config, with
# nothing downloaded. `transformers` is a test-only dependency of the course; `tests/test_counting.py`
# compares every category, not just the total, with those modules. If it is installed here, the next
# cell repeats the check for GPT-3; if not, it says how to run the tests.

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: it depends on whether `transformers` (a test-only package) is installed; where it is, the asserts check the result.
try:
    import transformers
except ImportError:
    print("transformers is not installed: the comparison runs in the tests (pip install transformers; "
          "pytest tests/test_counting.py)")
else:
    hf_cfg = transformers.GPT2Config(n_embd=12288, n_layer=96, n_head=96, n_positions=2048, vocab_size=50257)
    with torch.device("meta"):
        hf_gpt3 = transformers.GPT2LMHeadModel(hf_cfg)
    hf_total = sum(p.numel() for p in hf_gpt3.parameters())
    print(f"GPT2LMHeadModel with GPT-3's shape: {hf_total:,}; strict count agrees: {hf_total == strict['total']}")
    assert hf_total == strict["total"]

# %% [markdown]
# ## 4. A family of models
#
# ### GPT-2, small to XL
#
# The four GPT-2 sizes share the vocabulary, the context of 1,024 and the architecture, and differ
# in width, depth and head count.

# %%
for name in ("GPT-2 small", "GPT-2 medium", "GPT-2 large", "GPT-2 XL"):
    c = counting.PRESETS[name]
    print(f"{name:>12}: d_model {c.d_model:>5}, {c.n_layers} layers, {c.n_heads} heads -> "
          f"{counting.count_parameters(c)['total']:>13,}")

# %% [markdown]
# ### The 2017 Transformer
#
# The original Transformer is an encoder-decoder for translation: an encoder layer has self-attention
# and an MLP, a decoder layer adds cross-attention (queries from the decoder, keys and values from
# the encoder), and each sub-layer has its LayerNorm. Its positions are sinusoidal (no parameters)
# and one embedding matrix over a shared vocabulary of about 37,000 word pieces is used three times:
# for the source, for the target and, transposed, as the output layer. The paper quotes about 65M
# parameters for the base model and about 213M for the big one; counting every weight, bias and
# norm with that shared embedding gives the following, and `torch.nn.Transformer` on the meta device
# agrees (it also closes each stack with a LayerNorm, which the post-norm original does not have).

# %%
from torch import nn

print("Vaswani et al. 2017; quoted sizes: base about 65M, big about 213M")
for name, sizes in (("base", counting.TRANSFORMER_BASE), ("big", counting.TRANSFORMER_BIG)):
    counts = counting.count_encoder_decoder(**sizes)
    with torch.device("meta"):
        reference = nn.Transformer(sizes["d_model"], sizes["n_heads"], sizes["n_layers"], sizes["n_layers"],
                                   sizes["d_mlp"], batch_first=True)
    closing_norms = 4 * sizes["d_model"]  # nn.Transformer's final LayerNorm of each stack
    blocks = sum(p.numel() for p in reference.parameters()) - closing_norms
    print(f"{name} (d_vocab {sizes['d_vocab']:,}, d_model {sizes['d_model']:,}, d_mlp {sizes['d_mlp']:,}): {counts['total']:,} ({counts['total'] / 1e6:.1f}M; embedding {counts['embedding']:,}, "
          f"encoder {counts['encoder']:,}, decoder {counts['decoder']:,}); nn.Transformer agrees: "
          f"{blocks + counts['embedding'] == counts['total']}")

# %% [markdown]
# Close, but not equal, and the gaps are not "the vocabulary". Each embedding row costs `d_model`
# parameters, so we can ask which vocabulary would close each gap exactly:

# %%
quoted = {"base": 65e6, "big": 213e6}  # Vaswani et al. 2017, Table 3, rounded to the million
for name, sizes in (("base", counting.TRANSFORMER_BASE), ("big", counting.TRANSFORMER_BIG)):
    total = counting.count_encoder_decoder(**sizes)["total"]
    gap = total - quoted[name]
    vocab_to_close = sizes["d_vocab"] - gap / sizes["d_model"]
    print(f"{name}: counted {total:,} - quoted {quoted[name]:,.0f} = {gap:+,.0f} ({gap / quoted[name]:+.1%}); "
          f"a vocabulary of {vocab_to_close:,.0f} would close it")

# %% [markdown]
# The gaps have opposite signs: the base count is too small, the big one too large, so the base
# model would need a vocabulary above 37,000 and the big one below it. No single vocabulary explains
# both. The paper's counts are rounded to the million, and its exact configuration is unspecified
# (the vocabulary is "about" 37,000 for one language pair and 32,000 for the other; which biases,
# norms and shared tables are counted is not said), so a reconstruction can only land near them.
#
# ### Llama 3 8B: grouped-query attention and SwiGLU
#
# Llama 3 8B has 32 layers of width 4,096, 32 query heads but only 8 key/value heads, a gated MLP of
# width 14,336, RMSNorm, rotary positions, no biases, and a separate unembedding over a vocabulary of
# 128,256 tokens.

# %%
llama = counting.LLAMA3_8B
print(llama)
print(f"d_mlp {llama.mlp_width:,}, d_vocab {llama.d_vocab:,}, d_model {llama.d_model:,}")
llama_counts = counting.count_parameters(llama)
for name, n in llama_counts.items():
    if n:
        print(f"{name:>12}: {n:>14,}")

# %% [markdown]
# Keys and values are a quarter of the size of queries (8 heads instead of 32), and the MLP has three
# matrices instead of two.
#
# ### Mixtral 8x7B: two answers to "how big"
#
# Mixtral has Llama's block shape (with a vocabulary of 32,000), but each MLP is replaced by 8
# experts and a small router that sends each token through the 2 best-scoring ones. The model holds
# every expert (its capacity), but a token only runs through 2 of them (its cost). The name's
# arithmetic does not work, because attention, embeddings and norms are shared, not replicated.

# %%
mixtral = counting.MIXTRAL_8X7B
print(mixtral)
total, active = counting.count_parameters(mixtral), counting.active_parameters(mixtral)
print(f"total:  {total['total']:,}  ({total['total'] / 1e9:.1f}B)")
print(f"active: {active['total']:,}  ({active['total'] / 1e9:.1f}B per token)")
print(f"8 x 7B would be {8 * 7}B; experts' share of the total: {(total['mlp_up'] + total['mlp_gate'] + total['mlp_down']) / total['total']:.1%}")
print(f"router: {total['router']:,} parameters")

# %%
from course_utils.viz.parameter_counting import plot_models

rows = {name: (counting.count_parameters(c)["total"], counting.active_parameters(c)["total"])
        for name, c in counting.PRESETS.items()}
figure_image(plot_models(rows))


# %% [markdown]
# ### Exercise: the whole model from a config (3 points, difficulty 2/3, about 15 min)
#
# Write `model_parameter_count(cfg)`: every parameter of the model a `ModelConfig` describes. Use the
# config's fields and properties (`cfg.d_head`, `cfg.kv_heads`, `cfg.mlp_width`, `cfg.gated`), and
# the conventions of this notebook: `bias` covers every linear layer and LayerNorm's bias (RMSNorm has
# only a gain, norm `"none"` has nothing); two norms per block and one final norm; only learned
# positions have parameters, an `n_ctx x d_model` table (any other kind has none); a tied unembedding counts nothing
# extra; with `n_experts > 1` each block has that many MLPs and a bias-free router of `d_model x n_experts`.
# Count all experts, not just the active ones. Do not call the counter in `course_utils.counting.parameters`.

# %%
def model_parameter_count(cfg: ModelConfig) -> int:
    """Every parameter of the model ``cfg`` describes."""
    # BEGIN SOLUTION
    b = int(cfg.bias)
    d, d_kv, width = cfg.d_model, cfg.kv_heads * cfg.d_head, cfg.mlp_width
    attention = 2 * d * d + 2 * d * d_kv + b * (2 * d + 2 * d_kv)
    mlp = (3 if cfg.gated else 2) * d * width + b * ((2 if cfg.gated else 1) * width + d)
    router = d * cfg.n_experts if cfg.n_experts > 1 else 0
    norm = {"layernorm": d * (1 + b), "rmsnorm": d, "none": 0}[cfg.norm]
    block = attention + cfg.n_experts * mlp + router + 2 * norm
    embeddings = cfg.d_vocab * d * (1 if cfg.tie_embeddings else 2)
    positions = cfg.n_ctx * d if cfg.positions == "learned" else 0
    return embeddings + positions + cfg.n_layers * block + norm
    # END SOLUTION


# %%
check_model_parameter_count(model_parameter_count)

# %% [markdown]
# Hints: `hint("model_parameter_count")`, then `hint("model_parameter_count", 2)`.
#
# ## 5. From parameters to FLOPs
#
# **The course's FLOPs convention** (notebook 07 uses the same): a multiply-add counts as **2 FLOPs**.
# A vector times a `d_in x d_out` weight matrix is `d_in * d_out` multiply-adds, 2 FLOPs per weight,
# so the forward pass of one token costs about **2N** FLOPs, N the weights it runs through, and a
# training step (forward and backward, shown below) about **6N** per token: **6ND** for D tokens. Attention adds a term that grows with the context: each of
# the `n_layers` layers compares the query with every earlier key (`Q K^T`) and mixes the values
# (`pattern V`), 2 FLOPs per dimension of each, `4 * n_layers * seq_len * d_model` per token when the
# full square is computed (a causal mask makes half of it wasted work). `compute.forward_flops`
# counts both exactly (matrix products only, as PyTorch's `FlopCounterMode` does); we measure real
# forward passes to check it, on small models of two architectures.

# %%
small_gpt = ModelConfig(d_vocab=256, n_ctx=32, d_model=64, n_layers=2, n_heads=4)
small_moe = ModelConfig(d_vocab=256, n_ctx=32, d_model=64, n_layers=2, n_heads=8, n_kv_heads=2, d_mlp=128,
                        mlp="swiglu", norm="rmsnorm", positions="rotary", bias=False, tie_embeddings=False,
                        n_experts=4, experts_per_token=2)
batch, seq_len = 2, 32
for name, c in (("GPT-2-style", small_gpt), ("GQA + SwiGLU + 4 experts, top-2", small_moe)):
    model = Decoder(c).to(device)
    tokens = torch.randint(0, c.d_vocab, (batch, seq_len), device=device)
    predicted = compute.forward_flops(c, seq_len, batch)
    measured = compute.measure_flops(model, tokens)
    trained = compute.measure_flops(model, tokens, backward=True)
    print(f"{name}: forward predicted {predicted['total']:,} (weights {predicted['weights']:,}, attention "
          f"{predicted['attention']:,}), measured {measured:,}; forward + backward = {trained / measured:.1f} x forward")

# %% [markdown]
# The measured numbers equal the formula for both models, the mixture of experts included: each
# token really runs through only its 2 experts, so the cost follows the *active* parameters. The
# backward pass costs twice the forward (one product for the gradient with respect to the
# activations, one for the weights), so a training step costs 3 x 2N = **6N** FLOPs per token, and
# training on D tokens about **6ND**.
#
# ### Which N? Two conventions
#
# "N" is quoted two ways. Kaplan et al. 2020 (the first scaling laws) count **non-embedding**
# parameters: everything but the token embedding, the position table and a separate unembedding,
# because their laws fit more cleanly that way; for a plain GPT block that is close to
# `12 * n_layers * d_model**2`. Hoffmann et al. 2022 (Chinchilla) count **all** parameters. The
# headline sizes ("124M", "175B") count all of them too.

# %%
for name, c in (("GPT-2 small", counting.GPT2_SMALL), ("GPT-3 175B", counting.GPT3_175B)):
    n_all, n_non_embedding = counting.count_parameters(c)["total"], counting.non_embedding_parameters(c)
    print(f"{name}: with embeddings {n_all:,}; without {n_non_embedding:,} ({n_non_embedding / n_all:.1%} of it); "
          f"12 n_layers d_model^2 = {12 * c.n_layers * c.d_model**2:,}")

# %% [markdown]
# For GPT-3 the choice hardly matters; for GPT-2 small the embedding table is almost a third of the
# model, and a scaling law fitted with one convention gives different answers with the other.
#
# The rule of thumb 2N leaves out two products: the attention term and the unembedding (N, in
# Kaplan et al.'s convention, excludes the embedding matrices, but the unembedding is still a matrix
# product, tied or not). For a small model both matter; for a large one they are a few percent:

# %%
for name, c, seq in (("GPT-2 small", counting.GPT2_SMALL, 1024), ("GPT-3 175B", counting.GPT3_175B, 2048)):
    exact, rule = compute.forward_flops_per_token(c, seq), compute.approximate_forward_flops(c)
    print(f"{name}: exact {exact:.4g} FLOPs per token at {seq:,} tokens, 2N = {rule:.4g} ({exact / rule:.3f} x)")
gpt3_flops_per_seq = compute.forward_flops(counting.GPT3_175B, 2048)
attention_share = gpt3_flops_per_seq["attention"] / gpt3_flops_per_seq["total"]
print(f"GPT-3's attention products: {attention_share:.2%} of its forward FLOPs at 2,048 tokens, counted dense")
gpt3_n = counting.count_parameters(counting.GPT3_175B)["total"]
print(f"GPT-3 training on 300B tokens: 6ND = {compute.training_flops(gpt3_n, 300e9):.3g} FLOPs")


# %% [markdown]
# That last figure is the training compute the GPT-3 paper reports for its 300B training tokens,
# recovered from nothing but the shape of the model and the number of tokens. The dense
# approximation matters little here: GPT-3's banded sparse layers (half of them) compute fewer
# attention products, but all attention products together are a small share of its forward FLOPs,
# so the dense count overstates the total by less than half that share.
#
# ### Exercise: training FLOPs (2 points, difficulty 2/3, about 10 min)
#
# Write `training_flops_estimate(cfg, n_tokens)`: the 6ND estimate for training the model `cfg` on
# `n_tokens` tokens, where N is the number of parameters one token runs through *without* the
# embedding, position and unembedding matrices (Kaplan et al.'s non-embedding convention; biases and
# norms stay in). For a mixture of experts, only the `experts_per_token` experts a token uses count.
# You may use `counting.active_parameters(cfg)`, which returns the same categories as
# `count_parameters` for one token's path. An answer within float32 rounding passes.

# %%
def training_flops_estimate(cfg: ModelConfig, n_tokens: int) -> float:
    """About 6 N D: N the active non-embedding parameters, D = n_tokens."""
    # BEGIN SOLUTION
    counts = counting.active_parameters(cfg)
    n = counts["total"] - counts["embedding"] - counts["positions"] - counts["unembedding"]
    return 6 * n * n_tokens
    # END SOLUTION


# %%
check_training_flops_estimate(training_flops_estimate)

# %% [markdown]
# Hints: `hint("training_flops_estimate")`, then `hint("training_flops_estimate", 2)`.
#
# ### Exercise: a token's FLOPs, operation by operation (3 points, difficulty 2/3, about 15 min)
#
# Kaplan et al. 2020 (Table 1) split a token's forward pass into the products it runs. Write
# `flops_by_operation(cfg, seq_len)`: the forward FLOPs of one token at a context of `seq_len`,
# summed over the layers, as a dict with these keys:
#
# - `"qkv"`: the token's query, key and value projections (with grouped-query attention, keys and
#   values are only `n_kv_heads * d_head` wide);
# - `"scores"`: its query against the `seq_len` keys, every head; `"reduce"`: the pattern-weighted
#   sum of the `seq_len` values, every head (the dense square, as above);
# - `"output"`: the output projection `W_O`; `"mlp"`: the MLP, and for a mixture of experts the
#   `experts_per_token` experts the token runs through plus the router (`d_model x n_experts`);
# - `"unembedding"`: the last product, a product even when the matrix is tied to the embedding;
# - `"total"`: their sum.
#
# The conventions of this section hold: 2 FLOPs per multiply-add, matrix products only (no biases,
# norms, softmax or activation), the embedding lookup free. Use the config's fields and properties
# (`cfg.kv_heads`, `cfg.d_head`, `cfg.mlp_width`, `cfg.gated`); do not call `compute`. The check wants
# whole numbers, exactly.

# %%
def flops_by_operation(cfg: ModelConfig, seq_len: int) -> dict[str, int]:
    """Forward FLOPs per token by operation, summed over the layers, and their total."""
    # BEGIN SOLUTION
    d, layers = cfg.d_model, cfg.n_layers
    d_kv = cfg.kv_heads * cfg.d_head  # width of the keys and of the values
    expert = (3 if cfg.gated else 2) * d * cfg.mlp_width  # weights of one MLP
    router = d * cfg.n_experts if cfg.n_experts > 1 else 0
    flops = {
        "qkv": 2 * layers * d * (d + 2 * d_kv),
        "scores": 2 * layers * seq_len * d,  # every head: its query against seq_len keys of d_head
        "reduce": 2 * layers * seq_len * d,  # every head: seq_len values of d_head, weighted by the pattern
        "output": 2 * layers * d * d,
        "mlp": 2 * layers * (cfg.experts_per_token * expert + router),
        "unembedding": 2 * d * cfg.d_vocab,
    }
    flops["total"] = sum(flops.values())
    return flops
    # END SOLUTION


# %%
check_flops_by_operation(flops_by_operation)

# %% [markdown]
# Hints: `hint("flops_by_operation")`, then `hint("flops_by_operation", 2)`.
#
# The course's `compute.forward_flops_by_operation` gives the same table (the course's tests match
# every entry with PyTorch's FLOP counter, module by module). For GPT-3 at its full context, and what
# the rule of thumb 2N leaves out:

# %%
gpt3_ops = compute.forward_flops_by_operation(counting.GPT3_175B, 2048)
for op, n in gpt3_ops.items():
    print(f"{op:>12}: {n:>16,} FLOPs per token ({n / gpt3_ops['total']:6.2%})")
rule = compute.approximate_forward_flops(counting.GPT3_175B)  # 2N, N without the embedding matrices
in_no_product = counting.non_embedding_parameters(gpt3_strict := counting.GPT3_175B) - (
    compute.matmul_parameters(gpt3_strict) - gpt3_strict.d_model * gpt3_strict.d_vocab)  # biases and norms
print(f"total - 2N = {gpt3_ops['total'] - rule:,} = scores + reduce + unembedding "
      f"- 2 x the {in_no_product:,} biases and norms, which are in N but in no product: "
      f"{gpt3_ops['total'] - rule == gpt3_ops['scores'] + gpt3_ops['reduce'] + gpt3_ops['unembedding'] - 2 * in_no_product}")

# %% [markdown]
# At GPT-3's size the MLP and the projections are nearly everything; attention's two products over
# the context and the unembedding are the part of the count that 2N leaves out.
#
# Our attention term is twice the one in Kaplan et al.'s Table 1. They count
# `2 n_layers n_ctx d_attn` FLOPs per token, about what a token does when it meets, on average, half
# the context (the causal half of the square); we count every query against every key of the window,
# the full square that a dense attention kernel computes, `4 n_layers seq_len d_model`:

# %%
gpt3_shape = counting.GPT3_175B
kaplan_attention = 2 * gpt3_shape.n_layers * 2048 * gpt3_shape.d_model  # Table 1: 2 n_layer n_ctx d_attn
our_attention = gpt3_ops["scores"] + gpt3_ops["reduce"]
print(f"GPT-3 at 2,048 tokens, attention FLOPs per token: {our_attention:,} here, {kaplan_attention:,} by Kaplan "
      f"et al.'s Table 1 ({our_attention / kaplan_attention:.0f}x)")

# %% [markdown]
# ### Capacity and cost of a mixture of experts
#
# For Mixtral the two answers differ by a factor of more than three: the FLOPs per token follow the
# active parameters, while the memory needed to hold the model follows the total.

# %%
moe = compute.moe_capacity_and_cost(counting.MIXTRAL_8X7B, seq_len=4096)
print(f"total parameters:  {moe['total_parameters'] / 1e9:.1f}B")
print(f"active parameters: {moe['active_parameters'] / 1e9:.1f}B ({moe['active_fraction']:.1%} of the total)")
print(f"forward FLOPs per token: {moe['flops_per_token']:.3g} (with one expert per layer: {moe['flops_per_token_one_expert']:.3g})")
every_expert = compute.forward_flops(counting.MIXTRAL_8X7B.with_(experts_per_token=8), seq_len=1)["weights"]
print(f"a dense model of the same size (every expert for every token) would cost {every_expert / 1e9:.1f} GFLOP "
      f"per token through its weights (notebook 07's figure)")

# %% [markdown]
# ## 6. From parameters to bytes
#
# Training with Adam keeps, per parameter: the weight, its gradient, and two moment estimates. In
# float32 that is 4 bytes each, 16 bytes per parameter. Storing everything in bfloat16 halves it;
# the usual *mixed* precision keeps bf16 weights and gradients but float32 moments plus a float32
# master copy of the weights, so it saves nothing here (it saves on activations and arithmetic). The
# test suite compares these with the bytes of a real `torch.optim.Adam` state.

# %%
GB = 1e9
for name, c in (("GPT-2 small", counting.GPT2_SMALL), ("Llama 3 8B", counting.LLAMA3_8B), ("GPT-3 175B", counting.GPT3_175B)):
    n = counting.count_parameters(c)["total"]
    parts = {p: compute.training_memory(n, p)["total"] / GB for p in compute.PRECISIONS}
    print(f"{name:>11}: " + ", ".join(f"{p} {gb:,.1f} GB" for p, gb in parts.items()) + f"  (weights alone in bf16: {2 * n / GB:,.1f} GB)")

# %% [markdown]
# ### Activations
#
# The backward pass needs what the forward pass computed: every matrix product's input, the
# softmax's output, the dropout masks. Korthikanti et al. 2022 add these up for a GPT-style layer
# with 16-bit activations (and 1-byte dropout masks), for `s` positions, `b` sequences,
# `h = d_model` and `a = n_heads`:
#
# - attention: `11sbh + 5as²b` bytes (its input, Q, K, V, the softmax output, its dropout mask and
#   output, the output projection's input and its dropout mask);
# - MLP: `19sbh` (its input, the GELU's input and output at width `4h`, a dropout mask);
# - two LayerNorms: `4sbh` (their inputs);
#
# together **sbh(34 + 5as/h)** bytes per layer, that is `34h + 5as` bytes per token per layer.
# `course_utils.counting.memory.activation_bytes_per_layer` computes it (and `tests/test_memory.py` checks it
# against the bytes autograd really saves in a bfloat16 block). For GPT-3 at its full context:

# %%
from course_utils.counting import memory

s_gpt3, h_gpt3, a_gpt3 = gpt3.n_ctx, gpt3.d_model, gpt3.n_heads
print(f"34h = {34 * h_gpt3:,} and 5as = {5 * a_gpt3 * s_gpt3:,} bytes per token per layer")
for recompute in memory.RECOMPUTE:
    per_layer = memory.activation_bytes_per_layer(counting.GPT3_175B, s_gpt3, 1, recompute=recompute)["total"]
    print(f"recompute {recompute!r:>11}: {per_layer // s_gpt3:>9,} bytes per token per layer; one sequence of "
          f"{s_gpt3:,} tokens through {L} layers: {per_layer * L / GB:,.1f} GB")
attention_flops = compute.forward_flops(counting.GPT3_175B, s_gpt3)["attention"]
step_flops = 3 * compute.forward_flops(counting.GPT3_175B, s_gpt3)["total"]
print(f"selective recomputation redoes the attention products: +{attention_flops / step_flops:.1%} FLOPs per step")
print(f"full recomputation redoes the whole forward pass: 8N instead of 6N per token, +{8 / 6 - 1:.1%}")

# %% [markdown]
# At GPT-3's length the square term `5as` is larger than `34h`: the attention scores and their
# dropout take most of the memory. Hence **recomputation**: *selective* recomputation keeps `34sbh`
# and recomputes the scores during the backward pass, for a small share of extra FLOPs; *full*
# recomputation keeps only each layer's input (`2sbh`) and reruns the whole layer's forward pass,
# trading memory for a third more arithmetic. Without dropout (Llama and most recent models train
# without it) this block's count is `32sbh + 2as²b`; a Llama block, with RMSNorm and a gated MLP of
# another width, keeps a different amount; kernels such as FlashAttention never store the scores at all.
#
# Activations grow with the batch, weights and optimizer state do not; none of this fits GPT-3 on
# one accelerator, which is why such models are trained across many.
#
# ### Exercise: the memory of a training step (3 points, difficulty 2/3, about 15 min)
#
# Put the two parts together. Write `training_memory_breakdown(cfg, seq_len, batch, recompute)`: the
# bytes of one training step with Adam in mixed precision, for a GPT-style `cfg` (LayerNorm, a plain
# MLP, dropout, no grouped-query attention, no experts), as a dict with the keys `"weights"` and
# `"gradients"` (bf16), `"master_weights"`, `"adam_m"` and `"adam_v"` (float32), `"activations"` and
# `"total"`. Count every parameter of `cfg` (you may use `counting.count_parameters(cfg)["total"]`).
# For the activations of each of the `n_layers` layers, take the breakdown above with any `d_mlp`:
# the MLP keeps `3sbh + 4sb·d_mlp` bytes (so the part without the scores is `18sbh + 4sb·d_mlp`),
# and attention's scores add `5as²b`. `recompute` is `"none"`, `"selective"` (the scores are not
# kept) or `"full"` (only each layer's input, `2sbh`). Whole numbers of bytes, exactly; do not call
# `compute` or `memory`.

# %%
def training_memory_breakdown(cfg: ModelConfig, seq_len: int, batch: int, recompute: str) -> dict[str, int]:
    """Bytes of one mixed-precision Adam training step, part by part, and their total."""
    # BEGIN SOLUTION
    n = counting.count_parameters(cfg)["total"]
    s, b, h, a = seq_len, batch, cfg.d_model, cfg.n_heads
    kept = 18 * s * b * h + 4 * s * b * cfg.mlp_width  # inputs of the products, Q, K, V, the MLP's hidden pair, masks
    scores = 5 * a * s * s * b  # the softmax output, its dropout mask and the dropped-out pattern
    per_layer = {"none": kept + scores, "selective": kept, "full": 2 * s * b * h}[recompute]
    parts = {
        "weights": 2 * n,  # bf16
        "gradients": 2 * n,  # bf16
        "master_weights": 4 * n,  # the float32 copy the optimizer updates
        "adam_m": 4 * n,
        "adam_v": 4 * n,
        "activations": cfg.n_layers * per_layer,
    }
    parts["total"] = sum(parts.values())
    return parts
    # END SOLUTION


# %%
check_training_memory_breakdown(training_memory_breakdown)

# %% [markdown]
# Hints: `hint("training_memory_breakdown")`, then `hint("training_memory_breakdown", 2)`.
#
# The course's `memory.training_bytes` gives the same breakdown. GPT-3 with 8 sequences of its full
# context, under each kind of recomputation:

# %%
for recompute in memory.RECOMPUTE:
    step = memory.training_bytes(counting.GPT3_175B, gpt3.n_ctx, 8, recompute)
    print(f"recompute {recompute!r:>11}: parameters and Adam {(step['total'] - step['activations']) / GB:,.0f} GB, "
          f"activations {step['activations'] / GB:,.0f} GB, total {step['total'] / GB:,.0f} GB")

# %% [markdown]
# ### The KV cache
#
# Generating text one token at a time, a model keeps every earlier token's keys and values so it
# does not recompute them: per token, `2 * n_layers * n_kv_heads * d_head` numbers. Grouped-query
# attention exists mostly for this: with 8 key/value heads instead of 32, Llama 3 8B's cache is four
# times smaller.

# %%
for name, c in (("Llama 3 8B (8 KV heads)", llama), ("same without GQA (32 KV heads)", llama.with_(n_kv_heads=None))):
    per_token = compute.kv_cache_bytes_per_token(c, bytes_per_value=2)
    print(f"{name:>31}: {per_token:,} bytes per token in bf16, {per_token * c.n_ctx / GB:.2f} GB for {c.n_ctx:,} tokens")

# %% [markdown]
# ## 7. From FLOPs to days, and how many tokens
#
# ### Time to train at a given MFU
#
# An accelerator's datasheet gives its peak FLOP/s; a real training run reaches a fraction of it,
# its **model FLOPs utilisation** (MFU, Chowdhery et al. 2022): the model's FLOPs per token times
# the tokens per second, over the peak. PaLM's definition counts the model's FLOPs per token as 6N plus
# attention's term, `12 n_layers d_model seq_len` (the forward attention products above, three times
# over for the forward and backward passes); for GPT-3 at its context that term is a few percent
# (printed below), and the estimate here keeps 6N, as the 6ND figure above does. MFU counts only the
# model's own FLOPs, so the extra forward
# pass of full recomputation is work the hardware does but MFU does not credit. Well-tuned large
# runs reach roughly 40 to 50%; we assume 40%. Time to train is then 6ND / (accelerators x peak x MFU).
# The last line redoes the estimate of Narayanan et al. 2021 (Megatron-LM), who counted the hardware's
# FLOPs with full recomputation, 8ND, at the throughput they measured per A100.

# %%
from course_utils.counting import A100_80GB, H100_SXM
from course_utils.counting import training_seconds

gpt3_flops = compute.training_flops(gpt3_n, 300e9)
n_accelerators, mfu = 1024, 0.4
palm_attention = 12 * gpt3_shape.n_layers * gpt3_shape.d_model * 2048  # per token, forward and backward
print(f"PaLM's attention term for GPT-3 at 2,048 tokens: {palm_attention:.3g} FLOPs per token, "
      f"{palm_attention / (6 * gpt3_n):.1%} on top of 6N")
for accelerator in (A100_80GB, H100_SXM):
    days = training_seconds(gpt3_flops, n_accelerators, accelerator.peak_flops, mfu) / 86400
    print(f"GPT-3 ({gpt3_flops:.3g} FLOPs) on {n_accelerators:,} x {accelerator.name} "
          f"({accelerator.peak_flops / 1e12:,.1f} TFLOP/s peak, dense bf16) at {mfu:.0%} MFU: {days:.1f} days")
megatron_days = training_seconds(8 * 175e9 * 300e9, 1024, 140e12, 1.0) / 86400  # 8ND: with full recomputation
print(f"Narayanan et al.: 8ND on 1,024 A100s at 140 TFLOP/s each ({140e12 / A100_80GB.peak_flops:.0%} of peak): "
      f"{megatron_days:.1f} days")

# %% [markdown]
# ### How many tokens? The Chinchilla rule
#
# Hoffmann et al. 2022 trained hundreds of models at fixed compute budgets and found that, for a
# given budget, loss is lowest when parameters and tokens grow together, at about **20 tokens per
# parameter**: D ≈ 20N (N counting every parameter). Chinchilla itself, 70B parameters trained on
# 1.4T tokens, beat the four times larger Gopher on the same budget.

# %%
from course_utils.counting import scaling

chinchilla_d = scaling.chinchilla_tokens(gpt3_n)
print(f"GPT-3: N = {gpt3_n / 1e9:.1f}B -> 20N = {chinchilla_d / 1e12:.2f}T tokens, "
      f"{chinchilla_d / 300e9:.1f} x the 300B it saw")
n_opt, d_opt = scaling.compute_optimal(gpt3_flops)
print(f"GPT-3's budget spent the Chinchilla way: N = {n_opt / 1e9:.0f}B parameters on D = {d_opt / 1e12:.2f}T tokens")

# %% [markdown]
# By this rule GPT-3 was far too large for its data, or saw far too few tokens for its size. Later
# models go the other way on purpose: a smaller model trained on many more tokens than 20N spends
# more training compute than the compute-optimal model of the same loss would, but is cheaper to
# run, and running is where most of a deployed model's compute goes.
#
# ## 8. Why generating text waits on memory
#
# Generating one token for each of `batch` sequences reads every weight once and does 2 FLOPs per
# weight per sequence. In bf16 a weight is 2 bytes, so at batch 1 that is **1 FLOP per byte read**
# (2 with 1-byte weights). An accelerator's ratio of peak FLOP/s to memory bandwidth is in the
# hundreds: it can do that many FLOPs in the time it reads one byte. A decode step at small batch
# therefore waits on memory, and its time is about the bytes read over the bandwidth. (Every weight
# but one table: the input embedding is looked up, a row per token, so the bytes read per step are the
# weights without it, less than the weights held, as the first lines below print.) Batching
# helps, because sequences share the weights. It does not help the **KV cache**: each sequence reads
# its own keys and values, 2 FLOPs per cached number per query head that reads it, so its
# arithmetic intensity stays at `n_heads / n_kv_heads` FLOPs per byte in bf16 whatever the batch.
# Grouped-query attention cuts those bytes and raises that intensity by the same factor.

# %%
from course_utils.counting import decode_step, decode_step_seconds

for accelerator in (A100_80GB, H100_SXM):
    print(f"{accelerator.name}: {accelerator.flops_per_byte:.0f} FLOPs per byte read (peak / bandwidth)")
llama_counts = counting.count_parameters(llama)
print(f"Llama 3 8B's weights in bf16: {2 * llama_counts['total'] / GB:.1f} GB held, of which the embedding table's "
      f"{2 * llama_counts['embedding'] / GB:.1f} GB is looked up (one row per token), not read whole: "
      f"{decode_step(llama, 0, 1)['weight_bytes'] / GB:.1f} GB read per step")
context = 2048
for batch in (1, 8, 32, 128):
    step = decode_step(llama, context, batch)
    bound = decode_step_seconds(step, H100_SXM)
    print(f"Llama 3 8B, batch {batch:>3}, {context:,} cached tokens: weights {step['weight_bytes'] / GB:.1f} GB + "
          f"KV cache {step['kv_bytes'] / GB:.1f} GB read, {step['intensity']:5.1f} FLOPs/byte -> at least "
          f"{bound['seconds'] * 1e3:.1f} ms per step on an H100 ({'memory' if bound['memory_bound'] else 'compute'}-bound)")

# %% [markdown]
# The same in a picture, at 8,192 cached tokens (Llama 3 8B's full context): how the arithmetic
# intensity of a step grows with the batch (whether or not that many caches fit in memory), with
# and without grouped-query attention, against the two accelerators' ratios.

# %%
from course_utils.viz.parameter_counting import plot_decode_intensity

batches = [2**k for k in range(11)]
curves = {name: [(b, decode_step(c, llama.n_ctx, b)["intensity"]) for b in batches]
          for name, c in (("Llama 3 8B, 8 KV heads", llama), ("same, 32 KV heads", llama.with_(n_kv_heads=None)))}
curves["weights alone (cache not counted)"] = [(b, decode_step(llama, 0, b)["intensity"]) for b in batches]
print(", ".join(f"{name}: {points[-1][1]:.1f} at batch {points[-1][0]:,}" for name, points in curves.items()))
figure_image(plot_decode_intensity(curves, {a.name: a.flops_per_byte for a in (A100_80GB, H100_SXM)}))

# %% [markdown]
# At batch 1 the H100 could have done hundreds of times more arithmetic in the time it spent
# reading. As the batch grows, the weights' intensity grows with it, but the KV cache grows too and
# its intensity does not, so at long contexts the cache, not the weights, sets the pace: with the
# cache counted, neither curve comes near either ridge point, however large the batch. Without the
# cache each step would recompute every earlier token's keys and values (notebook 09 counts that
# work); with it, the cost moves from arithmetic to bytes, and grouped-query attention shrinks the
# bytes, which also decides how many sequences fit on one accelerator at once:

# %%
for name, c in (("8 KV heads (GQA)", llama), ("32 KV heads (no GQA)", llama.with_(n_kv_heads=None))):
    step = decode_step(c, context, batch=64)
    fits = step["bytes"] <= H100_SXM.memory_bytes
    print(f"{name:>20}, batch 64: KV cache {step['kv_bytes'] / GB:5.1f} GB, its intensity "
          f"{step['attention_intensity']:.0f} FLOPs/byte; whole step {step['intensity']:.1f} FLOPs/byte; "
          f"weights + cache fit in an H100's {H100_SXM.memory_bytes / GB:.0f} GB: {fits}")

# %% [markdown]
# ## 9. Explore: a live parameter and FLOP breakdown
#
# First a static picture for one setting (Llama 3 8B's shape), for readers without a running kernel;
# then the widget. Move the sliders for width, depth, heads, key/value heads, vocabulary, context,
# experts and k; the bars show the parameters per part (total and active) and the forward FLOPs per
# token at the full context. A setting the counter refuses shows the library's error instead.

# %%
from course_utils.viz.parameter_counting import STYLES, counter_readout, counter_state, counter_widget, plot_counter

llama_style = list(STYLES)[1]
static = counter_state(llama_style, d_model=4096, n_layers=32, n_heads=32, n_kv_heads=8, d_vocab=128256,
                       n_ctx=8192, n_experts=1, experts_per_token=1)
print(counter_readout(static).replace("<br>", "\n"))
figure_image(plot_counter(static))

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: a widget draws into an Output area, which nbval cannot follow.
counter_widget()

# %% [markdown]
# ## 10. When the configuration is wrong
#
# A configuration that cannot describe a model is refused where it enters the library, with the
# name of the field at fault, rather than producing a silently wrong count.

# %%
bad_settings = [dict(d_model=100, n_heads=12), dict(n_heads=12, n_kv_heads=5), dict(n_layers=0),
                dict(n_experts=4, experts_per_token=6), dict(mlp="swish"), dict(positions="alibi")]
base = dict(d_vocab=1000, n_ctx=64, d_model=96, n_layers=2, n_heads=12)
for change in bad_settings:
    try:
        ModelConfig(**{**base, **change})
    except (ValueError, TypeError) as error:
        print(f"{type(error).__name__}: {error}")

# %% [markdown]
# ## Summary
#
# - One configuration and one counter account for every parameter, by category; real modules built
#   on the meta device (the course's own and, in the tests, Hugging Face's GPT-2, Llama and Mixtral)
#   agree category by category.
# - GPT-3's 175B is about two thirds MLP and one third attention; careful counts differ by what they
#   include (biases, norms, positions, tying).
# - Forward ≈ 2N FLOPs per token plus an attention term, training ≈ 6ND; a mixture of experts costs
#   what its active parameters cost but must hold all of them.
# - "N" is quoted with embeddings (Chinchilla, headline sizes) or without (Kaplan et al.); for small
#   models the two differ by a third.
# - Training with Adam needs about 16 bytes per parameter, plus activations of `sbh(34 + 5as/h)`
#   bytes per layer, which recomputation trades for extra FLOPs.
# - Time to train is 6ND over the accelerators' peak times the MFU; Chinchilla's rule asks for about
#   20 tokens per parameter.
# - Decoding does about 1 FLOP per byte it reads, far below what an accelerator can do per byte, so
#   it is bound by memory bandwidth; the KV cache and grouped-query attention decide how many bytes.
