# ---
# jupyter:
#   course:
#     exercises:
#       k_composition:
#         difficulty: 2
#         minutes: 15
#         points: 2
#       logit_attribution:
#         difficulty: 2
#         minutes: 25
#         points: 3
#       logit_lens:
#         difficulty: 1
#         minutes: 15
#         points: 2
#       patch_residual:
#         difficulty: 2
#         minutes: 20
#         points: 3
#       sae_metrics:
#         difficulty: 1
#         minutes: 15
#         points: 2
#     grading_cell_timeout_s: 240
#     numbers_allowed:
#       '2020': the year of nostalgebraist's logit lens post, a citation
#       '2021': the year of Elhage et al.'s transformer circuits paper, a citation
#       '2024': the year of Rajamanoharan et al.'s gated SAE paper, a citation
#     time_target_s: 45
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
# # 13 · Inside the trained model
#
# Notebook 10 trained a small GPT on Shakespeare. It predicts the next token well enough to write
# something that looks like a play, but *how*? This notebook opens it up with five tools that
# interpretability researchers use on models far larger than this one: read the stream as it flows
# through the blocks, split one prediction into the parts that wrote it, transplant activations
# from one prompt into another, find a circuit in a model small enough to see whole, and take the
# MLP's neurons apart into sparser pieces.
#
# You write the core of each tool: **5 exercises, 12 points, about 90 minutes in all.** Each heading gives its share.
#
# 1. The model, and prompts it gets right
# 2. The logit lens: the stream after every block, decoded
# 3. Direct logit attribution: which heads and MLPs wrote a prediction
# 4. Activation patching: where the information sits, layer by layer
# 5. An induction circuit, found three ways
# 6. A sparse autoencoder on the MLP's neurons

# %%
import torch

from course_utils.env import seed_everything

_ = seed_everything(0)  # the course seeds every generator it uses

# %% [markdown]
# ## 1 · The model, and prompts it gets right
#
# The notebook reads **your** model if notebook 10 saved it (in `notebooks/student/my_small_gpt/`),
# and the course's checkpoint otherwise (the same recipe, committed in `data/small_gpt/`). The next
# cell says which one it loaded. To read another run, pass its folder: `load_own_or_course("path")`.
#
# A claim about "the model" that holds for one training run only is a claim about a seed. So beside
# the model you read, the course keeps four more runs of the same recipe (seeds 1 to 4); every claim
# below about the GPT is counted over all five course runs, and the counts are printed.

# %%
from course_utils.gpt.checkpoint import SEEDS, load_checkpoint, load_own_or_course, seed_checkpoint

loaded = load_own_or_course()
model, tokenizer = loaded["model"], loaded["tokenizer"]
print("reading", loaded["source"])
course_runs = [load_checkpoint(seed_checkpoint(seed))["model"] for seed in SEEDS]
print(f"and the course's runs at seeds {list(SEEDS)}: {model.cfg.n_layers} blocks of {model.cfg.n_heads} heads, "
      f"d_model {model.cfg.d_model}")

# %% [markdown]
# A small model trained for minutes is wrong about most next tokens, and explaining a wrong guess
# teaches little. So the prompts below were chosen where the model is right, and the next cell
# checks it on every run: the last token of each prompt and the token every run puts first.

# %%
LENS_PROMPT = "GLOUCESTER:\nThou art a traitor to the k"  # -> "ing"
CLEAN_PROMPT = "YORK:\nI say, my lord of Y"  # -> "or", as in York


def encode(text: str) -> torch.Tensor:
    return torch.tensor([tokenizer.encode(text)])  # (1, pos)


def top_tokens(tokens: torch.Tensor) -> list[str]:
    with torch.no_grad():
        return [tokenizer.decode([int(run(tokens)[0, -1].argmax())]) for run in course_runs]


for text in (LENS_PROMPT, CLEAN_PROMPT):
    print(f"{text[-22:]!r}: each run's top next token {top_tokens(encode(text))}")

# %% [markdown]
# ## 2 · The logit lens
#
# A pre-norm GPT's residual stream is a running sum: the embedding, plus what each block adds. Only
# the last one is decoded: `ln_final`, then the unembedding. The **logit lens** (nostalgebraist,
# 2020) decodes every partial sum the same way, as if the blocks after it wrote nothing, and so
# shows what the model "would say" after each block.
#
# ### Exercise: The logit lens (2 points, difficulty 1/3, about 15 min)
#
# Write `logit_lens(model, tokens)` for the course's `GPT` and `tokens` of shape `(batch, pos)`:
# return a tensor `(n_layers + 1, batch, pos, d_vocab)` whose entry 0 decodes the stream after the
# embedding (`model.embed(tokens)`: tokens plus positions) and entry `i + 1` the stream after block
# `i` (`model.blocks[i]` maps a stream to the next). Decode each with the model's final LayerNorm
# and its unembedding: `model.unembed(x)`. The last entry is then the model's own logits.

# %%
@torch.no_grad()
def logit_lens(model, tokens: torch.Tensor) -> torch.Tensor:
    # tokens (batch, pos) -> (n_layers + 1, batch, pos, d_vocab)
    # BEGIN SOLUTION
    x = model.embed(tokens)  # (batch, pos, d_model)
    decoded = [model.unembed(x)]
    for block in model.blocks:
        x = block(x)
        decoded.append(model.unembed(x))
    return torch.stack(decoded)
    # END SOLUTION


# %%
from course_utils.checks.inside_the_model import check_logit_lens

check_logit_lens(logit_lens)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("logit_lens")` for a nudge and `hint("logit_lens", 2)` for a stronger one.
#
# The lens on the first prompt, with the course's `interp.lens_readout` (the same decoding): after
# each block, the top three tokens and the probability of "ing". (The probabilities' last digits
# depend on the processor, so this cell's output is not compared.)

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: probabilities whose last digits vary with the processor's arithmetic.
from course_utils import interp

lens_tokens = encode(LENS_PROMPT)
ING = tokenizer.encode("ing")[0]
reading = interp.lens_readout(model, lens_tokens, -1, ING, k=3)
for layer in range(model.cfg.n_layers + 1):
    where = "embedding" if layer == 0 else f"after block {layer - 1}"
    tops = ", ".join(f"{tokenizer.decode([int(i)])!r} {float(p):.2f}" for i, p in
                     zip(reading["top_ids"][layer, 0], reading["top_probs"][layer, 0]))
    print(f"{where:>15}: {tops:<40} p('ing') = {float(reading['target_prob'][layer, 0]):.2f}")

# %% [markdown]
# The same lens at every position at once, as a table: one row for the embedding and one for the
# stream after each block, one column per position (labelled by the token read there), and in each
# cell the top token (a space shows as ␣), coloured by its probability (`interp.lens_top_tokens`).
# The outlined last column is the reading above. Below the figure, the table as a widget over three
# prompts: pick a prompt and a position, and the readout lists that position's top token and its
# probability after each block. Where does a column settle at once, and where does the last block
# still change it? On the third prompt a name comes twice: is it guessed sooner the second time?

# %%
from course_utils.viz.lens_table import lens_table_widget, lens_tables, plot_lens_table

LENS_PROMPTS = [LENS_PROMPT, CLEAN_PROMPT, "JULIET:\nO Romeo, Romeo!"]
fig = plot_lens_table(lens_tables(model, tokenizer, [LENS_PROMPT])[LENS_PROMPT], position=lens_tokens.shape[1] - 1)

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: a widget draws into an Output area, which nbval cannot follow.
lens_table_widget(model, tokenizer, LENS_PROMPTS)

# %% [markdown]
# Back to the first prompt's last position, now on all five course runs, as a count: at which depth
# does "ing" come out on top?
# The cell asserts what the prose below says, with a margin: after the first block, "ing" beats the
# runner-up by a clear logit gap on every run.

# %%
on_top = torch.zeros(model.cfg.n_layers + 1, dtype=torch.long)
smallest_gap = float("inf")
for run in course_runs:
    lens = interp.lens_logits(run, lens_tokens)[:, 0, -1]  # (layer, d_vocab)
    on_top += (lens.argmax(-1) == ING).long()
    others = lens.clone()
    others[:, ING] = -float("inf")
    smallest_gap = min(smallest_gap, float((lens[1:, ING] - others[1:].max(-1).values).min()))
assert smallest_gap > 0.3, smallest_gap  # 'ing' leads after every block, on every run, by a margin
for layer, count in enumerate(on_top.tolist()):
    print(f"{'embedding' if layer == 0 else f'after block {layer - 1}':>15}: 'ing' on top in {count} of {len(SEEDS)} runs")

# %% [markdown]
# So on this prompt the first block already does the work: the embedding of " k" alone points at
# several continuations, and one block later every run has settled on "ing", which later blocks
# only confirm. That is typical of easy, local predictions (the word is being completed from its
# last piece); a prediction that needs a token further back must first have it moved into place, as
# section 4 shows.
#
# The lens has a known weakness: the final LayerNorm and unembedding were trained to read the
# *last* stream, and an early stream can use directions they read poorly. The tuned lens learns a
# small translator per layer instead; here the plain lens is enough.
#
# ## 3 · Direct logit attribution
#
# The final stream is a **sum of writes**: the embedding, each attention head's output (through
# its own rows of `W_O`), each MLP's output, and the attention biases. The logit difference between
# two candidate tokens A and B is read from it by `ln_final` and the unembedding. LayerNorm is not
# linear, but it is nearly so once its **scale** is fixed: it centres a vector (linear), divides it
# by its spread `sqrt(var(x) + eps)` (one number for the whole stream), multiplies by the gain `w`
# and adds the bias `b`. Freeze that one number at the value of the real forward pass, and each
# write's part of `logit_A - logit_B` is
#
# $$\text{part}(c) = \frac{(c - \bar c)}{\text{scale}} \cdot \big(w \odot (W_U[:, A] - W_U[:, B])\big),$$
#
# and the parts, plus the bias's own term `b · (W_U[:, A] - W_U[:, B])`, add up to the logit difference
# exactly. Each part is a *direct* effect: what that write does through the unembedding, not what
# later blocks make of it.
#
# ### Exercise: Splitting a logit difference (3 points, difficulty 2/3, about 25 min)
#
# Write `split_logit_difference(writes, ln_w, eps, direction)`: `writes` of shape `(n_parts, d_model)`
# are the writes at one position, whose sum is the final stream; `ln_w` `(d_model,)` is the final
# LayerNorm's gain and `eps` its epsilon; `direction` `(d_model,)` is `W_U[:, A] - W_U[:, B]`. Return
# the `(n_parts,)` direct parts by the formula above, with the scale computed from the final stream
# (the population variance, dividing by `d_model`, as LayerNorm does).

# %%
def split_logit_difference(writes: torch.Tensor, ln_w: torch.Tensor, eps: float, direction: torch.Tensor):
    # writes (n_parts, d_model), ln_w (d_model,), direction (d_model,) -> (n_parts,)
    # BEGIN SOLUTION
    final = writes.sum(0)  # (d_model,): the stream the final LayerNorm reads
    scale = torch.sqrt(final.var(unbiased=False) + eps)  # one number, frozen
    centred = writes - writes.mean(dim=-1, keepdim=True)  # (n_parts, d_model)
    return centred @ (ln_w * direction) / scale
    # END SOLUTION


# %%
from course_utils.checks.inside_the_model import check_logit_attribution

check_logit_attribution(split_logit_difference)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("logit_attribution")` for a nudge and `hint("logit_attribution", 2)` for a stronger one.
#
# The course's `interp.direct_logit_attribution` does the same split on the whole model: it collects
# every write (`interp.component_writes`) and returns each head's, each MLP's and the biases' parts.
# On the first prompt, "ing" against "ind" (another way to go on from " k"), in float64 so that the
# check of the sum is exact to many digits:

# %%
import copy

from course_utils.tolerances import format_up_to_rounding

IND = tokenizer.encode("ind")[0]
wide = copy.deepcopy(model).double()  # a float64 copy: the parts must add up to the last digit
parts = interp.direct_logit_attribution(wide, lens_tokens, -1, ING, IND)
gap = float((parts["total"] - parts["logit_diff"]).abs().max())
print(f"{len(parts['heads'][0].flatten())} heads, {len(parts['mlps'][0])} MLPs, the embedding and the biases")
print("sum of the parts minus the model's logit difference:", format_up_to_rounding(gap))

# %% [markdown]
# The parts for the model you loaded (the values move a little between processors, so only the figure's
# text is compared):

# %%
from course_utils.viz.inside_the_model import plot_attribution

fig = plot_attribution(parts)

# %% [markdown]
# Which kind of component writes the largest part? Counted over the five course runs:

# %%
largest_is_mlp = 0
for run in course_runs:
    run_parts = interp.direct_logit_attribution(run, lens_tokens, -1, ING, IND)
    best_head, best_mlp = float(run_parts["heads"][0].max()), float(run_parts["mlps"][0].max())
    assert best_mlp > best_head + 0.2, (best_mlp, best_head)  # an MLP's part leads, by a margin rounding cannot close
    largest_is_mlp += 1
print(f"the largest single part is an MLP's on {largest_is_mlp} of {len(SEEDS)} runs")

# %% [markdown]
# Completing a word from its last piece is a lookup, and lookups are what MLPs are good at; on
# every run an MLP writes the largest part, ahead of every head. Two things to keep in mind when reading such bars:
# a part can be large and cancelled by another (look for bars of opposite sign), and the final
# LayerNorm's bias has a part too: it favours some tokens whatever the prompt.
#
# ## 4 · Activation patching
#
# Attribution says who wrote into the last stream. **Activation patching** asks where the
# information that decides the prediction sits, by transplanting it. Take two prompts of the same
# length that differ in one token: the **clean** prompt "…my lord of Y", where the model continues
# with "or" (York), and a **corrupted** one, "…my lord. Y", where "Y" more likely starts "You".
# Run the corrupted prompt, but copy one activation from the clean run (the stream at one position,
# entering one block), and measure how much of the logit difference `logit("or") - logit("ou")`
# comes back:
#
# $$\text{restored} = \frac{\text{patched} - \text{corrupted}}{\text{clean} - \text{corrupted}},$$
#
# 1 when the patch brings the clean answer back, 0 when it changes nothing.

# %%
OR, OU = tokenizer.encode("or")[0], tokenizer.encode("ou")[0]
clean_tokens = encode(CLEAN_PROMPT)
corrupted_tokens = clean_tokens.clone()
CORRUPTED_AT = clean_tokens.shape[1] - 3  # " of" becomes "."
corrupted_tokens[0, CORRUPTED_AT] = tokenizer.encode(".")[0]
print("clean:    ", [tokenizer.decode([int(t)]) for t in clean_tokens[0, -5:]], "-> each run:", top_tokens(clean_tokens))
print("corrupted:", [tokenizer.decode([int(t)]) for t in corrupted_tokens[0, -5:]], "-> each run:",
      top_tokens(corrupted_tokens))

# %% [markdown]
# ### Exercise: Patching one position's stream (3 points, difficulty 2/3, about 20 min)
#
# Write `patched_logits(model, tokens, clean_streams, layer, position)`: run `model` on `tokens` (the
# corrupted prompt, `(batch, pos)`) block by block, but just before block `layer` replace the stream
# at `position` (in every row) with the clean run's, `clean_streams[layer][:, position]`, then carry on
# and return the logits `(batch, pos, d_vocab)`. `clean_streams` is `(n_layers + 1, batch, pos, d_model)`,
# what `interp.residual_stream(model, clean_tokens)` returns: index 0 the embedding, index `i` the stream
# entering block `i`, index `n_layers` the final stream (patched before `model.unembed`).

# %%
@torch.no_grad()
def patched_logits(model, tokens, clean_streams, layer: int, position: int) -> torch.Tensor:
    # tokens (batch, pos), clean_streams (n_layers + 1, batch, pos, d_model) -> logits (batch, pos, d_vocab)
    # BEGIN SOLUTION
    x = model.embed(tokens)
    for i in range(model.cfg.n_layers + 1):
        if i == layer:
            x = x.clone()
            x[:, position] = clean_streams[layer][:, position]  # the clean run's stream, one position
        if i < model.cfg.n_layers:
            x = model.blocks[i](x)
    return model.unembed(x)
    # END SOLUTION


# %%
from course_utils.checks.inside_the_model import check_patch_residual

check_patch_residual(patched_logits)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("patch_residual")` for a nudge and `hint("patch_residual", 2)` for a stronger one.
#
# `interp.residual_patching_map` patches every (layer, position) in turn, each time through the same
# code (`interp.run_with_patches`), and returns the restored fractions: a map of where the
# information is, block by block. For the model you loaded, first as a figure, then as an explorer
# that also holds the map of whole heads patched one at a time (`interp.head_patching_map`, one
# forward pass per head): pick a map, a row and a column, and the readout gives that cell's restored
# fraction.

# %%
from course_utils.viz.inside_the_model import plot_patching_map

grid = interp.residual_patching_map(model, clean_tokens, corrupted_tokens, -1, OR, OU)
fig = plot_patching_map(grid, [tokenizer.decode([int(t)]) for t in corrupted_tokens[0]])

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: a widget draws into an Output area, which nbval cannot follow.
from course_utils.viz.patching_explorer import patching_explorer

head_grid = interp.head_patching_map(model, clean_tokens, corrupted_tokens, -1, OR, OU)
patching_explorer(grid, [tokenizer.decode([int(t)]) for t in corrupted_tokens[0]], head_grid, start=(0, CORRUPTED_AT))

# %% [markdown]
# Read the map from the top row down. Entering block 0 only the corrupted position matters (it restores
# exactly 1: patching the embedding there *is* the clean prompt), and every other position restores
# exactly 0 (the same token). In the final stream only the last position matters (exactly 1 there: it
# is what is decoded). In between the information **moves**: attention in the first blocks copies what
# " of" said into the last position. The counts over the five runs, for the two positions that matter:

# %%
LAST = clean_tokens.shape[1] - 1


def or_minus_ou(logits: torch.Tensor) -> float:
    return float(logits[0, -1, OR] - logits[0, -1, OU])


counts = {"last": [0] * (model.cfg.n_layers + 1), "corrupted": [0] * (model.cfg.n_layers + 1)}
for run in course_runs:  # the two columns that matter, patched one at a time with run_with_patches
    clean_logits, clean_cache = interp.run_with_patches(run, clean_tokens)
    corrupted_diff = or_minus_ou(interp.run_with_patches(run, corrupted_tokens)[0])
    for layer in range(model.cfg.n_layers + 1):
        for name, pos in (("last", LAST), ("corrupted", CORRUPTED_AT)):
            patched, _ = interp.run_with_patches(run, corrupted_tokens, clean_cache, resid=[(layer, pos)])
            restored = interp.restored_fraction(or_minus_ou(patched), or_minus_ou(clean_logits), corrupted_diff)
            assert abs(restored - 0.5) > 0.02  # no fraction near the threshold: the counts are firm
            counts[name][layer] += restored > 0.5
assert counts["last"][2] == len(SEEDS) and counts["corrupted"][2] == 0  # the prose below
print(f"{'':>16}{'last position':>16}{'the corrupted one':>20}   (runs restoring more than half)")
for layer in range(model.cfg.n_layers + 1):
    where = "final stream" if layer == model.cfg.n_layers else f"into block {layer}"
    print(f"{where:>16}{counts['last'][layer]:>16}{counts['corrupted'][layer]:>20}")

# %% [markdown]
# On every run the information has left " of" and reached the last position before block 2: the move
# happens in blocks 0 and 1, and on some runs already in block 0. The explorer's second map, whole
# heads patched instead of positions, shows which heads carry it in the model you loaded.
#
# ## 5 · An induction circuit, found three ways
#
# The GPT has 16 heads and MLPs between them, which makes its circuits hard to see whole. Notebook 05
# met a cleaner setting: a two-layer, **attention-only** model, trained on sequences whose second half
# repeats the first. Such a model learns an **induction circuit**: a layer-0 "previous-token" head
# writes into each position which token came before it, and a layer-1 "induction" head uses that to
# find the earlier copy of the current token and predict the token that followed it.
#
# `interp.trained_copy_model` trains one in a few seconds (two heads per layer, a random half of 3 to 6
# tokens then its copy, the loss on the copy only). Then three independent kinds of evidence:
#
# 1. **Pattern**: the induction score of notebook 05 (attention on the token after the current token's
#    earlier copy) names the induction head;
# 2. **Ablation**: zeroing that head's output should raise the loss on the repeated half; zeroing each
#    layer-0 head in turn names the one the circuit needs most (the feeding head);
# 3. **Weights**: the composition score of Elhage et al. (2021) reads, from the weights alone, which
#    layer-0 head writes what the induction head's keys read.

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: a model trained here, whose last digits vary with the processor, and its time.
import time

start = time.perf_counter()
copy_model, copy_losses = interp.trained_copy_model(seed=0)
print(f"trained in {time.perf_counter() - start:.1f} s: loss on the copy {copy_losses[0]:.2f} -> {copy_losses[-1]:.3f}")
circuit = interp.circuit_reading(copy_model)
print("induction scores of the layer-1 heads:", [round(float(s), 2) for s in circuit["induction"]])
print("previous-token scores of the layer-0 heads:", [round(float(s), 2) for s in circuit["previous"]])
print(f"loss on the repeated half {circuit['loss']:.3f}; with a layer-1 head zeroed:",
      [round(x, 3) for x in circuit["ablated_loss"]], "; with a layer-0 head zeroed:",
      [round(x, 3) for x in circuit["ablated_loss_0"]])

# %% [markdown]
# The claims the rest of this section makes, asserted with their margins (the course's tests check
# the same on five training seeds and on three numerics paths):

# %%
induction_head = circuit["induction_head"]
assert float(circuit["induction"][induction_head]) > 0.5  # the top head attends mostly along the induction stripe
rise = circuit["ablated_loss"][induction_head] - circuit["loss"]
assert rise > 0.05, rise  # zeroing it costs the copy
print("the top induction head attends to the induction stripe more than half the time: True")
print("zeroing it raises the loss on the repeated half by more than 0.05 nats: True")

# %% [markdown]
# ### Exercise: The K-composition score (2 points, difficulty 2/3, about 15 min)
#
# With row vectors (`x @ W`), a head's attention score between a query x_q and a key x_k is
# `x_q W_QK x_kᵀ` with `W_QK = W_Q W_Kᵀ`, and what it writes is `x W_OV` with `W_OV = W_V W_O`. When
# an earlier head's write enters a later head's **keys**, the later head's scores contain
# `x_q W_QK (x_src W_OV)ᵀ`: the map `W_QK W_OVᵀ` says how much the later head reads what the earlier
# one wrote. Its size, relative to the two maps' sizes, is the **K-composition score**:
#
# $$\frac{\lVert W_{QK}\, W_{OV}^\top \rVert_F}{\lVert W_{QK} \rVert_F\, \lVert W_{OV} \rVert_F}.$$
#
# Write `k_composition_score(W_Q, W_K, W_V, W_O)`: `W_Q`, `W_K` `(d_model, d_head)` of the later head,
# `W_V` `(d_model, d_head)` and `W_O` `(d_head, d_model)` of the earlier one; return the score, a number
# (a 0-d tensor or a float). `‖·‖_F` is the Frobenius norm, the root of the sum of squares.

# %%
def k_composition_score(W_Q, W_K, W_V, W_O):
    # W_Q, W_K, W_V (d_model, d_head), W_O (d_head, d_model) -> a number
    # BEGIN SOLUTION
    W_QK = W_Q @ W_K.T  # (d_model, d_model), query side on the left
    W_OV = W_V @ W_O  # (d_model, d_model)
    return torch.linalg.matrix_norm(W_QK @ W_OV.T) / (torch.linalg.matrix_norm(W_QK) * torch.linalg.matrix_norm(W_OV))
    # END SOLUTION


# %%
from course_utils.checks.inside_the_model import check_k_composition

check_k_composition(k_composition_score)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("k_composition")` for a nudge and `hint("k_composition", 2)` for a stronger one.
#
# `interp.k_composition_scores` computes it for every pair (layer-0 head, layer-1 head), and
# `interp.random_composition_baseline` gives the score of random heads of the same sizes, the level
# that means "no composition":

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: scores of a model trained here, whose last digits vary with the processor.
print("K-composition, rows: layer-0 heads, columns: layer-1 heads\n", circuit["k_composition"].numpy().round(2))
print(f"random heads of these sizes score {circuit['baseline']:.2f} on average")
print(f"the induction head's top partner is layer-0 head {circuit['partner']}; "
      f"the layer-0 head whose ablation costs most is head {circuit['feeding_head']}")

# %% [markdown]
# The weights and the ablation name the same layer-0 head, and its composition with the induction
# head is above the random baseline:

# %%
partner = circuit["partner"]
assert partner == circuit["feeding_head"]
assert float(circuit["k_composition"][partner, induction_head]) > circuit["baseline"]
print("the top K-composition partner is the feeding head, above the random baseline: True")

# %% [markdown]
# Three methods, three kinds of evidence (behaviour, intervention, weights), one circuit. On the real
# GPT the same tools apply, but with four layers, MLPs between them and heads that share work, the
# answers are rarely this clean.
#
# ## 6 · A sparse autoencoder on the MLP's neurons
#
# Notebook 06 showed that a layer can hold more features than it has neurons, in superposition, and
# that a **sparse autoencoder** (SAE) can pull them apart: a wide layer of latents, most of them zero
# on any one input, whose weighted sum rebuilds the activations. Here it is trained on the real
# thing: block 1's MLP hidden layer (`d_mlp` neurons after the GELU), read on windows of held-out
# Shakespeare (`interp.mlp_hidden`). Training takes a few seconds.

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: an SAE trained here, whose last digits vary with the processor, and its time.
SAE_LAYER = 1
windows = interp.held_out_windows(tokenizer, model.cfg.n_ctx, 160)  # (160, n_ctx) token ids
hidden = interp.mlp_hidden(model, windows, SAE_LAYER)  # (160, n_ctx, d_mlp)
TRAIN_WINDOWS = 128
train_rows, test_rows = hidden[:TRAIN_WINDOWS].flatten(0, 1), hidden[TRAIN_WINDOWS:].flatten(0, 1)  # the SAE is judged on tokens it did not train on
start = time.perf_counter()
trained_sae = interp.train_mlp_sae(train_rows, d_sae=512)
print(f"{hidden.shape[-1]} neurons -> {trained_sae.sae.W_enc.shape[1]} latents, trained on {len(train_rows)} tokens "
      f"in {time.perf_counter() - start:.1f} s")

# %% [markdown]
# ### Exercise: How good is the SAE? (2 points, difficulty 1/3, about 15 min)
#
# Four numbers tell how well an SAE works. Write `sae_metrics(h, latents, h_hat)`: `h` `(n, d)` are the
# activations, `latents` `(n, d_sae)` the SAE's latents on them (zero or positive) and `h_hat` `(n, d)`
# its reconstructions. Return a dict with:
#
# * `"l0"`: the mean over rows of the number of latents above zero (how sparse);
# * `"variance_explained"`: `1 - Σ‖h - ĥ‖² / Σ‖h - mean(h)‖²`, the mean taken over rows (how faithful);
# * `"dead_fraction"`: the fraction of latents above zero on no row at all (wasted width);
# * `"norm_ratio"`: the mean over rows of `‖ĥ‖ / ‖h‖` (below 1: **shrinkage**, reconstructions too
#   short, the price of the L1 penalty, which pulls every latent towards zero).

# %%
def sae_metrics(h: torch.Tensor, latents: torch.Tensor, h_hat: torch.Tensor) -> dict:
    # h (n, d), latents (n, d_sae), h_hat (n, d) -> {"l0", "variance_explained", "dead_fraction", "norm_ratio"}
    # BEGIN SOLUTION
    active = latents > 0  # (n, d_sae)
    return {
        "l0": active.sum(-1).float().mean().item(),
        "variance_explained": (1 - (h - h_hat).pow(2).sum() / (h - h.mean(0)).pow(2).sum()).item(),
        "dead_fraction": (~active.any(0)).float().mean().item(),
        "norm_ratio": (h_hat.norm(dim=-1) / h.norm(dim=-1)).mean().item(),
    }
    # END SOLUTION


# %%
from course_utils.checks.inside_the_model import check_sae_metrics

check_sae_metrics(sae_metrics)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("sae_metrics")` for a nudge and `hint("sae_metrics", 2)` for a stronger one.
#
# The course's `interp.sae_report` computes the same four on the held-out tokens, and a fifth measure
# of shrinkage, the relative reconstruction bias γ of Rajamanoharan et al. (2024) (the factor that
# best rescales the reconstructions, below 1 when they are too short):

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: the metrics of an SAE trained here, whose last digits vary with the processor.
report = interp.sae_report(trained_sae, test_rows)
for name, value in report.items():
    print(f"{name:>30}: {value:.3f}")

# %% [markdown]
# The L1 penalty buys sparsity with shrinkage: the reconstructions come out shorter than the
# activations, by both measures. (The course's tests train this SAE on block 1 of all five course runs,
# on the lowest numerics path as well as the native one, and check the variance explained, L0, the dead
# latents and both measures of shrinkage with margins: `tests/test_sae_on_mlp.py`.)

# %%
assert report["norm_ratio"] < 0.95 and report["relative_reconstruction_bias"] < 0.99, report
print("both measures of shrinkage below 1: True")

# %% [markdown]
# What do the latents respond to? For the three latents that fire most often on the held-out tokens,
# the tokens where each fires hardest, with the text before them (`interp.top_activating_snippets`).
# Look for latents that pick out one token wherever it stands, or a token in one kind of context;
# others are hard to name. Which latents these are changes with the SAE's training, so read them as
# examples.

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: which latents an SAE trained here learns varies with the processor's arithmetic.
test_windows, test_hidden = windows[TRAIN_WINDOWS:], hidden[TRAIN_WINDOWS:]  # the tokens of test_rows, as windows
fires = (trained_sae.encode(test_hidden) > 0).flatten(0, 1).float().mean(0)  # (d_sae,): how often each fires
for latent in fires.topk(3).indices.tolist():
    print(f"latent {latent} (fires on {float(fires[latent]):.0%} of tokens):")
    for snip in interp.top_activating_snippets(trained_sae, test_windows, test_hidden, latent, tokenizer, k=4):
        print(f"    {snip['activation']:6.2f}  …{snip['before']!r} → {snip['token']!r}")

# %% [markdown]
# ## What you have seen
#
# * The **logit lens** reads what the stream would predict after every block; an easy prediction
#   settles early.
# * **Direct logit attribution** splits a logit difference exactly into the writes of every head and
#   MLP, once the final LayerNorm's scale is frozen; it sees direct effects only.
# * **Activation patching** finds where the deciding information sits and watches it move between
#   positions, block by block.
# * An **induction circuit** shows up the same way in the attention patterns, in an ablation and in the
#   weights alone.
# * A **sparse autoencoder** turns the MLP's neurons into sparser latents, at the price of some error and
#   some shrinkage, which its four numbers measure.
