# ---
# jupyter:
#   course:
#     exercises:
#       alibi_bias:
#         difficulty: 2
#         minutes: 15
#         points: 2
#       embedding_backward:
#         difficulty: 2
#         minutes: 15
#         points: 2
#       embedding_lookup:
#         difficulty: 1
#         minutes: 5
#         points: 1
#       rope_rotate:
#         difficulty: 3
#         minutes: 20
#         points: 3
#       tied_embedding_backward:
#         difficulty: 3
#         minutes: 20
#         points: 3
#       shift_rotation:
#         difficulty: 2
#         minutes: 15
#         points: 2
#       sinusoidal_encoding:
#         difficulty: 2
#         minutes: 15
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
# # 02 · Embeddings and positions
#
# Notebook 01 turned text into a list of integer token ids. A network cannot do much with a bare
# integer, so the first layer of every transformer swaps each id for a vector of `d_model` numbers,
# read from a learned table $W_E$. Then it adds something that says *where* each token sits, because
# attention on its own cannot tell word order apart.
#
# In this notebook you will:
#
# 1. see that a token id is nothing more than a row number of $W_E$ (and write the lookup), that a
#    word gets one fixed row whatever it means, and that new tokens mean new rows;
# 2. take one gradient-descent step on a row by hand and check that autograd agrees; then find out
#    which rows a training step moves: only the tokens seen in a plain lookup, but every row once the
#    output layer shares $W_E$ (as in GPT-2), and rows with no gradient at all under Adam or weight decay;
# 3. prove to yourself that attention without positions ignores order;
# 4. build the sinusoidal position table of the original transformer, add it to *YOUR CAT IS A LOVELY
#    CAT*, see why it needs a sine **and** a cosine at many speeds, and build the rotation that shifts it;
# 5. meet learned positions (GPT-2, GPT-3) and write the backward pass of GPT-2's input layer by hand,
#    then of a table that is also the unembedding;
# 6. meet rotary positions (RoPE), and verify their selling point: the query–key score depends only on
#    how far apart two tokens are; then ALiBi, which adds no position vector at all.
#
# **7 exercises, 15 points, about 105 minutes in all.** Each heading gives its points, difficulty and minutes.

# %% [markdown]
# ## 1 · Set up
#
# Seed every generator and choose a device, in a cell you can see. The small worked examples below
# run on the CPU in float64 so that their printed digits are the same on every machine.

# %%
import math

import matplotlib.pyplot as plt
import torch

from course_utils.env import describe_device, pick_device, seed_everything

seed_everything(0)
device = pick_device()
print("computing on", describe_device(device))  # this machine's device: the tests mask it

# %% [markdown]
# ## 2 · A token id is a row number
#
# Take a toy vocabulary of six tokens. The embedding table $W_E$ has one row per token and `d_model`
# columns; here `d_model = 3` so that the rows fit on screen (real models use hundreds or thousands).
# The numbers are made up, standing in for values that training would have produced.

# %%
vocab = {"LOVELY": 0, "YOUR": 1, "A": 2, "DOG": 3, "IS": 4, "CAT": 5}
W_E = torch.tensor([
    [0.45, 0.62, -0.11],   # LOVELY
    [0.12, -0.40, 0.33],   # YOUR
    [-0.05, 0.08, 0.91],   # A
    [0.77, 0.15, -0.48],   # DOG
    [-0.30, 0.66, 0.05],   # IS
    [0.81, 0.10, -0.52],   # CAT
], dtype=torch.float64)
d_vocab, d_model = W_E.shape
print(f"W_E has shape (d_vocab, d_model) = {tuple(W_E.shape)}")

# %% [markdown]
# Embedding the text `YOUR CAT IS` means: tokenise it to ids, then read those rows of $W_E$, in order.

# %%
from course_utils.embeddings import TokenEmbedding, embed, embed_via_one_hot, one_hot

ids = torch.tensor([vocab[w] for w in "YOUR CAT IS".split()])
print("token ids:", ids.tolist())
print(embed(ids, W_E))

# %% [markdown]
# The same lookup can be written as a matrix product. Turn each id into a **one-hot** row (all zeros
# except a 1 in the id's column) and multiply by $W_E$: the 1 picks out exactly one row. Libraries
# never do it this way (a lookup is far cheaper than multiplying by a `d_vocab`-wide matrix of
# zeros), but it shows that an embedding layer is an ordinary linear layer fed one-hot inputs.

# %%
print(one_hot(ids, d_vocab, dtype=torch.float64))
print("one-hot @ W_E equals the lookup:", torch.equal(embed_via_one_hot(ids, W_E), embed(ids, W_E)))


# %% [markdown]
# **The id itself means nothing.** Ids 4 (IS) and 5 (CAT) are neighbours, yet their rows are unrelated;
# DOG (id 3) sits further away in id order but its row points almost the same way as CAT's. Cosine
# similarity (1 = same direction, 0 = unrelated) makes that concrete:

# %%
def cosine(a, b):
    return (a @ b / (a.norm() * b.norm())).item()

for a, b in [("CAT", "DOG"), ("CAT", "IS"), ("CAT", "YOUR")]:
    print(f"cos({a}, {b}) = {cosine(W_E[vocab[a]], W_E[vocab[b]]):+.3f}    ids {vocab[a]} and {vocab[b]}")

# %% [markdown]
# And relabelling the vocabulary changes nothing: give every token a new id, move its row to the new
# position in the table, and the embedded sentence is identical. Only the *rows* carry information.

# %%
perm = torch.tensor([3, 0, 5, 1, 4, 2])          # old id -> new id
W_E_relabelled = torch.empty_like(W_E)
W_E_relabelled[perm] = W_E                         # row for old id i now lives at perm[i]
print("new ids:", perm[ids].tolist())
print("same embeddings:", torch.equal(embed(perm[ids], W_E_relabelled), embed(ids, W_E)))

# %% [markdown]
# ### One row per token, whatever the word means
#
# The table holds exactly one vector per token, so a word with several meanings still gets a single
# row. Here is GPT-2's real tokenizer (from notebook 01, read from files on disk) with a random table of
# GPT-2's height: *bank* by a river and *bank* that lends money are the same token id, so they receive
# the same vector; so do the *mole* of chemistry and the *mole* on your skin.

# %%
from course_utils.tokenisation.real import tiktoken_encoding

gpt2_tokenizer = tiktoken_encoding("gpt2")                       # GPT-2's vocabulary, offline
W_E_gpt2 = torch.randn(gpt2_tokenizer.n_vocab, 16, dtype=torch.float64)   # a random (d_vocab, 16) table
pairs = [(" bank", "We sat on the river bank.", "The bank approved the loan."),
         (" mole", "a mole of carbon", "a mole on my skin")]
for word, first, second in pairs:
    (word_id,) = gpt2_tokenizer.encode(word)
    ids_1, ids_2 = gpt2_tokenizer.encode(first), gpt2_tokenizer.encode(second)
    x_1, x_2 = embed(torch.tensor(ids_1), W_E_gpt2), embed(torch.tensor(ids_2), W_E_gpt2)
    same = torch.equal(x_1[ids_1.index(word_id)], x_2[ids_2.index(word_id)])
    print(f"{word!r} is id {word_id} in {first!r} and in {second!r}: same vector? {same}")

# %% [markdown]
# Nothing in the table knows which meaning is meant. Telling them apart is the work of the layers
# above: attention (section 4 here, then notebook 03) mixes each vector with its neighbours', so higher
# up the two *bank* vectors drift apart. That context-dependent meaning is computed afresh on every
# forward pass; the table itself is never edited by reading a sentence.
#
# ### New tokens are new rows
#
# A vocabulary is fixed when the tokenizer is built, but it can be extended later (for example to
# add special tokens before fine-tuning). Each new token gets the next free id and a new row at the
# bottom of $W_E$, starting random and learned from then on; the existing tokens keep their ids and
# rows. The table's size is simply `d_vocab × d_model`: for GPT-3, which reuses GPT-2's vocabulary
# with `d_model = 12,288`, that is already a large block of parameters. PyTorch's **meta** device builds
# it without allocating any memory, so we can count it:

# %%
from course_utils.embeddings import add_token_rows

W_E_grown = add_token_rows(W_E, n_new=2)                         # two new tokens: ids 6 and 7
print("W_E before:", tuple(W_E.shape), " after adding 2 tokens:", tuple(W_E_grown.shape),
      " old rows unchanged:", torch.equal(W_E_grown[:d_vocab], W_E))
with torch.device("meta"):                                       # shapes only, no memory
    gpt3_W_E = TokenEmbedding(d_vocab=gpt2_tokenizer.n_vocab, d_model=12288)
print(f"GPT-3's W_E: {gpt2_tokenizer.n_vocab:,} × {gpt3_W_E.d_model:,} = {gpt3_W_E.W_E.numel():,} parameters")


# %% [markdown]
# ### Exercise: the embedding lookup (1 point, difficulty 1/3, about 5 min)
#
# Write `embedding_lookup(token_ids, W_E)`: for a tensor of ids of any shape, return the matching rows
# of `W_E` (shape `(*token_ids.shape, d_model)`), in order, repeated ids included. The form the check
# requires: `W_E` has shape `(d_vocab, d_model)` as everywhere in this course, so a token id picks a
# **row**, and ids count from 0. One line is enough.

# %%
def embedding_lookup(token_ids: torch.Tensor, W_E: torch.Tensor) -> torch.Tensor:
    # BEGIN SOLUTION
    return W_E[token_ids]
    # END SOLUTION


# %%
from course_utils.checks.embeddings_positions import check_embedding_lookup
from course_utils.checks import hint

check_embedding_lookup(embedding_lookup)

# %% [markdown]
# Stuck? Ask for a hint in a new cell: `hint("embedding_lookup")` gives a nudge, `hint("embedding_lookup", 2)` a stronger one. Hints never show the code.

# %% [markdown]
# ## 3 · How a row is learned: one gradient step
#
# Nobody writes the numbers of $W_E$; they start random and are trained like every other weight. One
# step of plain gradient descent moves each number against its gradient:
# $\text{new} = \text{old} - \text{learning rate} \times \text{gradient}$.
# Suppose CAT's row is `[0.81, 0.10, -0.52]`, backpropagation hands it the gradient
# `[0.20, -0.10, 0.40]`, and the learning rate is 0.1:

# %%
from course_utils.embeddings import gradient_descent_step

old = W_E[vocab["CAT"]]
grad = torch.tensor([0.20, -0.10, 0.40], dtype=torch.float64)
new = gradient_descent_step(old, grad, lr=0.1)
print(f"{'old':>6} {'gradient':>9} {'change':>8} {'new':>6}")
for o, g, n in zip(old.tolist(), grad.tolist(), new.tolist()):
    print(f"{o:6.2f} {g:9.2f} {n - o:+8.2f} {n:6.2f}")

# %% [markdown]
# Now let autograd do it. Put the table inside a `TokenEmbedding` module, embed `YOUR CAT IS`,
# compute a made-up loss, and look at which rows of $W_E$ received a gradient. Only the rows of
# tokens that appeared in the input do: in a plain lookup the other rows play no part in the loss,
# so their gradient is exactly zero, and plain gradient descent leaves them where they were.

# %%
layer = TokenEmbedding(d_vocab, d_model).double()   # float64, like W_E above
with torch.no_grad():
    layer.W_E.copy_(W_E)
target = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)
loss = (layer(ids) @ target).sum()             # any scalar built from the embeddings will do
loss.backward()
for word, row in vocab.items():
    print(f"{word:>6} (id {row}): gradient {layer.W_E.grad[row].tolist()}")

# %%
optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
before = layer.W_E.detach().clone()
optimizer.step()
moved = (layer.W_E.detach() != before).any(dim=1)
print("rows that moved:", [w for w, row in vocab.items() if moved[row]])

# %% [markdown]
# ### Two ways every row moves anyway
#
# That tidy picture holds for a lookup trained by plain gradient descent. Real language models break
# it in two ways.
#
# **Tied embeddings.** GPT-2 reuses $W_E$ at the other end of
# the model: the scores for the next token, called **logits** (one number per vocabulary entry; notebook
# 04 turns them into probabilities), are the final vectors multiplied by $W_E^\top$, i.e. the
# unembedding is $W_U = W_E^\top$. Every row then takes part in every logit. With a real next-token
# loss (cross-entropy, notebook 04) the softmax gives every token some probability and the loss pushes
# the wrong ones down, so **every** row gets a gradient, including tokens that never appear. Below, a
# model with no layers at all (embed, then unembed with the same table) predicts *CAT* after *YOUR*
# and *IS* after *CAT*:

# %%
import torch.nn.functional as F

from course_utils.embeddings import changed_rows, tied_logits

tied = TokenEmbedding(d_vocab, d_model).double()
with torch.no_grad():
    tied.W_E.copy_(W_E)
logits = tied_logits(tied(ids), tied.W_E)               # (pos, d_vocab): W_U = W_E transposed
F.cross_entropy(logits[:-1], ids[1:]).backward()        # targets: the next token at each position
for word, row in vocab.items():
    print(f"{word:>6} (id {row}): gradient norm {tied.W_E.grad[row].norm():.4f}")


# %% [markdown]
# **Optimisers with memory.** GPT-style models are trained with Adam or AdamW, not plain gradient
# descent. Adam keeps a running average of each weight's past gradients (its *momentum*) and keeps
# stepping along it even when today's gradient is zero. AdamW's *weight decay* shrinks every weight a
# little at every step, gradient or not. The same made-up loss as before, on an untied table:

# %%
def rows_moved(layer, optimizer, text):
    optimizer.zero_grad()
    layer(torch.tensor([vocab[w] for w in text.split()])).sum().backward()   # the made-up loss again
    before = layer.W_E.detach().clone()
    optimizer.step()
    return [w for w, row in vocab.items() if row in changed_rows(before, layer.W_E.detach())]

adam_layer = TokenEmbedding(d_vocab, d_model).double()
adam = torch.optim.Adam(adam_layer.parameters(), lr=0.1)
print("Adam, step 1 on 'YOUR CAT IS':", rows_moved(adam_layer, adam, "YOUR CAT IS"))
print("Adam, step 2 on 'A DOG':      ", rows_moved(adam_layer, adam, "A DOG"))
decay_layer = TokenEmbedding(d_vocab, d_model).double()
adamw = torch.optim.AdamW(decay_layer.parameters(), lr=0.1, weight_decay=0.1)
print("AdamW with weight decay, step 1 on 'YOUR CAT IS':", rows_moved(decay_layer, adamw, "YOUR CAT IS"))

# %% [markdown]
# In step 2 *YOUR*, *CAT* and *IS* had a zero gradient and still moved; with weight decay every row
# moves from the first step. So "only the seen rows change" describes a plain lookup with plain
# gradient descent, not how GPT-2 is trained.

# %% [markdown]
# ## 4 · Attention cannot see order
#
# Attention (notebook 03) scores every pair of positions from their *contents* and mixes the values
# with those scores. Nothing in it refers to a position's index, so shuffling the input rows just
# shuffles the output rows the same way: the operation is **permutation-equivariant**. Here is a
# single attention head with random weights applied to `dog bites man` and to `man bites dog`:

# %%
from course_utils.attention import scaled_dot_product_attention

words = {"dog": 0, "bites": 1, "man": 2}
W_E_toy = torch.randn(3, 16, dtype=torch.float64)
W_Q, W_K, W_V = (torch.randn(16, 4, dtype=torch.float64) for _ in range(3))

def head(x):
    return scaled_dot_product_attention(x @ W_Q, x @ W_K, x @ W_V)

x1 = embed(torch.tensor([words[w] for w in "dog bites man".split()]), W_E_toy).to(device)
x2 = embed(torch.tensor([words[w] for w in "man bites dog".split()]), W_E_toy).to(device)
W_Q, W_K, W_V = W_Q.to(device), W_K.to(device), W_V.to(device)
swap = torch.tensor([2, 1, 0])                       # the permutation between the two sentences
print("x2 is x1 with its rows swapped:", torch.equal(x2, x1[swap]))
print("output(x2) equals output(x1) with the same rows swapped:", torch.allclose(head(x2), head(x1)[swap]))
print("'dog' gets the same output in both sentences:", torch.allclose(head(x1)[0], head(x2)[2]))

# %% [markdown]
# So *dog bites man* and *man bites dog* give every word exactly the same vector. The cure is to add a
# position signal to each row before the first layer. With the sinusoidal table of the next section
# added, the two sentences stop being shuffles of each other:

# %%
from course_utils import positions  # the reference implementations

pe = positions.sinusoidal_encoding(3, 16, dtype=torch.float64).to(device)
print("with positions, still a shuffle?", torch.allclose(head(x2 + pe), head(x1 + pe)[swap]))

# %% [markdown]
# Attention is also what separates the two *bank*s of section 2. They enter the head with the same
# vector, but each comes out mixed with its own sentence's neighbours (the same random head, on the
# random GPT-2-sized table from section 2):

# %%
river, loan = gpt2_tokenizer.encode("We sat on the river bank."), gpt2_tokenizer.encode("The bank approved the loan.")
(bank,) = gpt2_tokenizer.encode(" bank")
x_river, x_loan = (embed(torch.tensor(t), W_E_gpt2).to(device) for t in (river, loan))
i_river, i_loan = river.index(bank), loan.index(bank)
print("' bank' goes in with the same vector:", torch.equal(x_river[i_river], x_loan[i_loan]))
print("and comes out with the same vector:", torch.allclose(head(x_river)[i_river], head(x_loan)[i_loan]))

# %% [markdown]
# ## 5 · Sinusoidal positions
#
# The original transformer adds a fixed table: position `pos` gets a `d_model`-long vector whose
# feature pair $(2i, 2i+1)$ holds a sine and a cosine of the same angle,
#
# $$PE_{(pos,\,2i)} = \sin\frac{pos}{10000^{2i/d_\text{model}}}, \qquad PE_{(pos,\,2i+1)} = \cos\frac{pos}{10000^{2i/d_\text{model}}}.$$
#
# Pair 0 turns by one radian per position; each later pair turns more slowly, the last one almost
# 10,000 times more slowly (the exact factor, $10000^{(d_\text{model}-2)/d_\text{model}}$, is printed
# below for `d_model = 512`). Think of clock hands: the fast ones tell neighbours apart, the slow ones
# tell near from far. With `d_model = 4` there are two pairs, with divisors 1 and $10000^{2/4} = 100$:

# %%
table = positions.sinusoidal_encoding(4, 4, dtype=torch.float64)
print("pos   sin(pos)  cos(pos)  sin(pos/100)  cos(pos/100)")
for pos, row in enumerate(table.tolist()):
    print(f"{pos:3d}  " + "  ".join(f"{v:8.3f}" for v in row))

# %% [markdown]
# For a realistic width, `d_model = 512`, the table is easier to read as a picture: fast stripes in the
# first dimensions, ever slower waves further right. The cell also prints how much faster the first
# pair turns than the last.

# %%
from course_utils.viz.style import course_style

big_table = positions.sinusoidal_encoding(128, 512)
speeds = positions.sinusoid_frequencies(512)            # radians per position, one per pair
print(f"d_model = 512: {len(speeds)} pairs; the first turns {speeds[0] / speeds[-1]:,.0f} times faster than the last")
with course_style():  # the course's figure style: transparent, grey ink, readable in light and dark themes
    fig, ax = plt.subplots(figsize=(9, 3.5))
    image = ax.imshow(big_table.numpy(), aspect="auto", cmap="RdBu", vmin=-1, vmax=1)
    ax.set_xlabel("dimension"); ax.set_ylabel("position"); ax.set_title("sinusoidal encoding, d_model = 512")
    fig.colorbar(image, ax=ax)
plt.show()

# %% [markdown]
# ### Adding the table: *YOUR CAT IS A LOVELY CAT*
#
# The first layer receives, for every token, its row of $W_E$ plus the position table's row for its
# slot, added entry by entry. In *YOUR CAT IS A LOVELY CAT* the word *CAT* appears twice: both copies
# read the same row of $W_E$, but one gets $PE(1)$ and the other $PE(5)$ (positions count from 0), so the
# model receives two different vectors and can tell the first cat from the second. The toy vocabulary
# of section 2 again, with a random table of width 8:

# %%
sentence = "YOUR CAT IS A LOVELY CAT".split()
cat_ids = torch.tensor([vocab[w] for w in sentence])
W_E_8 = torch.randn(d_vocab, 8, dtype=torch.float64)          # (d_vocab, d_model = 8)
token_part = embed(cat_ids, W_E_8)                            # (pos, d_model): what each token is
position_part = positions.sinusoidal_encoding(len(sentence), 8, dtype=torch.float64)   # where it sits
X = token_part + position_part                                # what the first layer receives
print("positions:", list(enumerate(sentence)))
print("the two CATs: same embedding?", torch.equal(token_part[1], token_part[5]),
      "| same input once positions are added?", torch.equal(X[1], X[5]))

# %% [markdown]
# The position table depends only on the position and `d_model`, never on the words, so it is computed
# once and reused: $PE(1)$ is the same vector whether position 1 holds *CAT* or any other token, in
# every sentence, in training and in use.

# %%
other = "A DOG IS LOVELY".split()
other_positions = positions.sinusoidal_encoding(len(other), 8, dtype=torch.float64)
print(f"PE(1) under {sentence[1]!r} in {' '.join(sentence)!r} equals PE(1) under {other[1]!r} in {' '.join(other)!r}:",
      torch.equal(position_part[1], other_positions[1]))


# %% [markdown]
# ### Exercise: the sinusoidal table (2 points, difficulty 2/3, about 15 min)
#
# Write `sinusoidal_encoding(n_ctx, d_model)`, returning a float32 tensor of shape `(n_ctx, d_model)`.
# The form the check requires is the paper's: positions start at 0, the **sine goes in even
# dimensions and the cosine in odd ones** (sin, cos, sin, cos, ...), and pair $i$ (dimensions $2i$
# and $2i+1$) uses the angle $pos / 10000^{2i/d_\text{model}}$. Computing in float32 or float64 are
# both fine.

# %%
def sinusoidal_encoding(n_ctx: int, d_model: int) -> torch.Tensor:
    # BEGIN SOLUTION
    pos = torch.arange(n_ctx, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angles = pos / 10000 ** (two_i / d_model)
    pe = torch.zeros(n_ctx, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = angles.sin(), angles.cos()
    return pe.float()
    # END SOLUTION


# %%
from course_utils.checks.embeddings_positions import check_sinusoidal_encoding

check_sinusoidal_encoding(sinusoidal_encoding)

# %% [markdown]
# Stuck? Ask for a hint in a new cell: `hint("sinusoidal_encoding")` gives a nudge, `hint("sinusoidal_encoding", 2)` a stronger one. Hints never show the code.

# %% [markdown]
# ### Why a sine *and* a cosine, at many speeds: one wave is ambiguous
#
# Picture a clock hand. Knowing only how far right its tip is (the sine) cannot tell 1 o'clock from
# 5 o'clock: $\sin 30° = \sin 150°$. Knowing also how high it is (the cosine) settles it, because the
# pair (sine, cosine) is the point on the circle itself. A cosine alone fails the same way, for other
# angles ($\cos 30° = \cos 330°$).

# %%
for a, b in ((30, 150), (30, 330)):
    print(f"{a:3d}° vs {b:3d}°:  sin {math.sin(math.radians(a)):+.3f} vs {math.sin(math.radians(b)):+.3f},"
          f"  cos {math.cos(math.radians(a)):+.3f} vs {math.cos(math.radians(b)):+.3f}")

# %% [markdown]
# One pair is still not enough for a long sentence: a hand that turns one radian per position comes
# back almost to the same place every few dozen positions. Many pairs turning at different speeds
# fix that, because two positions would have to line up on every clock at once. Over the first 512
# positions of the `d_model = 512` table, here are the two positions whose codes lie closest together,
# reading one dimension, one pair, or all of them:

# %%
from course_utils.positions import closest_positions

pe_all = positions.sinusoidal_encoding(512, 512, dtype=torch.float64)   # (pos, d_model)
for label, columns in (("one sine (dim 0)", slice(0, 1)), ("one sin/cos pair (dims 0, 1)", slice(0, 2)),
                       ("all 512 dimensions", slice(None))):
    closest = closest_positions(pe_all[:, columns])  # pairs within 1.5e-8 of the smallest tie: the first is shown
    ties = f"; {closest.n_tied} pairs tie" if closest.n_tied > 1 else ""
    print(f"{label:>29}: positions {closest.i:3d} and {closest.j:3d} are closest, distance {closest.distance:.2g}{ties}")
print(f"distance between neighbours 0 and 1 in the full table: {(pe_all[1] - pe_all[0]).norm():.2g}")

# %% [markdown]
# With one sine, two positions far apart get practically the same value; with one pair, nearly so,
# and many pairs of positions the same number of steps apart are equally close (the pair's distance
# depends only on the offset). With the whole table the closest two positions are plain neighbours, and
# *every* pair of neighbours ties: the distance between `pos` and `pos + 1` is the same at every `pos`,
# which is the rotation property of the next section. Every position has its own vector, well apart
# from all others. (When pairs tie, `closest_positions` shows the first in order; without that rule the
# winner would be whichever pair rounding happened to favour, and it changes from one processor to
# another.)
#
# Storing sines in even and cosines in odd dimensions is only a convention: putting all the sines in
# the first half and all the cosines in the second is the same table with its columns reordered, and a
# model trained on either works equally well, as long as the order never changes. (The sinusoidal exercise
# above asks for the paper's interleaved order.)

# %%
halves_table = torch.cat([pe_all[:, 0::2], pe_all[:, 1::2]], dim=-1)   # all sines, then all cosines
print("halves layout is the interleaved table with its columns reordered:",
      torch.equal(halves_table, pe_all[:, positions.halves_order(512)]))

# %% [markdown]
# ### The second reason for pairs: shifting is a rotation
#
# The addition formulas $\sin(a+b) = \sin a\cos b + \cos a\sin b$ and
# $\cos(a+b) = \cos a\cos b - \sin a\sin b$ say that the pair at position `pos + k` is the pair at
# `pos` multiplied by a 2 × 2 matrix that depends only on `k`. From (sin 1, cos 1) one step later,
# by hand with four-decimal inputs (the last digit of cos 2 reflects that rounding):

# %%
s1, c1 = round(math.sin(1), 4), round(math.cos(1), 4)       # the pair at position 1, to 4 decimals
print(f"(sin 1, cos 1) = ({s1:.4f}, {c1:.4f})")
print(f"sin 2 = sin1·cos1 + cos1·sin1 = {s1 * c1 + c1 * s1:.4f}   (math.sin(2) = {math.sin(2):.5f})")
print(f"cos 2 = cos1·cos1 - sin1·sin1 = {c1 * c1 - s1 * s1:.4f}   (math.cos(2) = {math.cos(2):.5f})")

# %% [markdown]
# Stack one such 2 × 2 rotation per pair and you get a block-diagonal matrix $R_k$ with
# $PE(pos + k) = R_k \, PE(pos)$ for **every** position. So "three tokens back" is the same linear map
# wherever you are in the sentence, which is easy for a network to learn.
#
# ### Exercise: the rotation that shifts the table (2 points, difficulty 2/3, about 15 min)
#
# Write `shift_rotation(k, d_model)`, returning the `(d_model, d_model)` matrix $R_k$ with
# $PE(pos + k) = R_k\,PE(pos)$, where $PE(pos)$ is a **column** vector of the interleaved table of the
# previous exercise. The form the check requires: one 2 × 2 block per pair $(2i, 2i+1)$ on the diagonal
# and zeros elsewhere; work out each block from the two addition formulas above, remembering that the
# pair holds the sine **first**. `k` is any integer, negative ones included (a shift back). Float64 or
# float32 are both fine.

# %%
def shift_rotation(k: int, d_model: int) -> torch.Tensor:
    # BEGIN SOLUTION
    R = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i in range(d_model // 2):
        b = k / 10000 ** (2 * i / d_model)
        c, s = math.cos(b), math.sin(b)
        R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = c, s
        R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = -s, c
    return R
    # END SOLUTION


# %%
from course_utils.checks.embeddings_positions import check_shift_rotation

check_shift_rotation(shift_rotation)

# %% [markdown]
# Stuck? Ask for a hint in a new cell: `hint("shift_rotation")` gives a nudge, `hint("shift_rotation", 2)` a stronger one. Hints never show the code.

# %% [markdown]
# With the course's `positions.shift_rotation`, checked numerically for `d_model = 512` over every
# position of a 200-row table (in row form, $PE(pos+k)^\top = PE(pos)^\top R_k^\top$):

# %%
pe512 = positions.sinusoidal_encoding(200, 512, dtype=torch.float64)
for k in (1, 3, 50):
    R_k = positions.shift_rotation(k, 512)
    error = (pe512[k:] - pe512[:-k] @ R_k.T).abs().max().item()
    print(f"k = {k:2d}: largest |PE(pos+k) - R_k PE(pos)| over all positions below 1e-12: {error < 1e-12};",
          "R_k is orthogonal:", torch.allclose(R_k @ R_k.T, torch.eye(512, dtype=torch.float64)))

# %% [markdown]
# ### Scaling the embeddings by √d_model
#
# The original paper multiplies the embeddings by $\sqrt{d_\text{model}}$ before adding the table, and
# does not say why. Its code makes the reason visible: it starts $W_E$ with standard deviation
# $d_\text{model}^{-1/2}$, so every embedding entry is tiny next to the position entries, which are
# sines and cosines between −1 and 1. Unscaled, the position signal would swamp the token signal at the
# start of training; multiplied by $\sqrt{d_\text{model}}$, the embedding entries are about 1 in size,
# comparable with the table's. GPT-2 does not scale: both its tables are learned and both start small,
# so neither dominates. The typical size of an entry (its root mean square) in each case:

# %%
from course_utils.positions import LearnedPositionEmbedding

d_model = 512
original = TokenEmbedding(d_vocab=1000, d_model=d_model, scale=True, init_std=d_model ** -0.5)
sample = torch.arange(1000)
print(f"original transformer: init std d_model^-1/2 = {d_model ** -0.5:.4f}, scale sqrt(d_model) = {math.sqrt(d_model):.2f}")
print(f"  RMS of an entry: embedding {original.W_E.square().mean().sqrt():.3f}, scaled embedding "
      f"{original(sample).square().mean().sqrt():.3f}, position table {pe_all.square().mean().sqrt():.3f}")
gpt2_tokens, gpt2_positions = TokenEmbedding(d_vocab=1000, d_model=768), LearnedPositionEmbedding(n_ctx=1024, d_model=768)
print(f"GPT-2 (no scale): RMS of an entry: W_E {gpt2_tokens.W_E.square().mean().sqrt():.3f}, "
      f"W_pos {gpt2_positions.W_pos.square().mean().sqrt():.3f}")

# %% [markdown]
# ## 6 · Learned positions (GPT-2, GPT-3)
#
# GPT-2, GPT-3 and BERT skip the formula: they learn a second table, $W_{pos}$, with one row per position
# up to the context length `n_ctx`, trained exactly like $W_E$. It costs `n_ctx × d_model` parameters and
# has nothing to say about positions beyond `n_ctx`, which is one reason newer models moved on. The
# context length is a hard limit on how much text one forward pass can see: GPT-2 small's and GPT-3's
# are printed below.

# %%
W_pos = LearnedPositionEmbedding(n_ctx=1024, d_model=768)     # GPT-2 small's sizes
print("W_pos shape:", tuple(W_pos.W_pos.shape), " parameters:", f"{sum(p.numel() for p in W_pos.parameters()):,}")
print("positions for a 5-token input:", tuple(W_pos(5).shape))
try:
    W_pos(1025)
except ValueError as err:
    print("ValueError:", err)
with torch.device("meta"):
    gpt3_W_pos = LearnedPositionEmbedding(n_ctx=2048, d_model=12288)
print(f"GPT-3: n_ctx = {gpt3_W_pos.n_ctx:,}, so W_pos has {gpt3_W_pos.n_ctx:,} × {gpt3_W_pos.d_model:,} = {gpt3_W_pos.W_pos.numel():,} parameters")


# %% [markdown]
# ### The backward pass of the input layer
#
# GPT-2's first layer is therefore `x = W_E[token_ids] + W_pos[:pos]`: a lookup in each table, added.
# Section 3 let autograd find which rows of $W_E$ a loss reaches; here you write that gradient yourself.
# Each row of `x` is a **copy** of one row of $W_E$ plus one row of $W_{pos}$, so the gradient of that
# row of `x` flows back unchanged into exactly those two rows, and a row used several times collects
# the **sum** of its gradients (the rule for any weight used more than once, the same that sums a
# shared weight's gradient over a batch). Libraries do this with a *scatter-add*
# (`Tensor.index_add_`); `nn.Embedding`'s backward is exactly that.
#
# ### Exercise: the gradients of token and position embeddings (2 points, difficulty 2/3, about 15 min)
#
# Write `embedding_backward(token_ids, grad_out, d_vocab, n_ctx)`: `token_ids` of shape `(batch, pos)`,
# `grad_out` $= \partial L/\partial x$ of shape `(batch, pos, d_model)`. Return the tuple
# `(grad_W_E, grad_W_pos)` of shapes `(d_vocab, d_model)` and `(n_ctx, d_model)`. The form the check
# requires: the gradients of the **whole** tables, computed by hand (no autograd): rows of tokens that do
# not occur, and rows of positions the input does not reach, are zero.

# %%
def embedding_backward(token_ids: torch.Tensor, grad_out: torch.Tensor, d_vocab: int,
                       n_ctx: int) -> tuple[torch.Tensor, torch.Tensor]:
    # BEGIN SOLUTION
    n_pos, d_model = grad_out.shape[-2:]
    grad_W_E = torch.zeros(d_vocab, d_model, dtype=grad_out.dtype)
    grad_W_E.index_add_(0, token_ids.reshape(-1), grad_out.reshape(-1, d_model))
    grad_W_pos = torch.zeros(n_ctx, d_model, dtype=grad_out.dtype)
    grad_W_pos[:n_pos] = grad_out.sum(dim=0)
    return grad_W_E, grad_W_pos
    # END SOLUTION


# %%
from course_utils.checks.embeddings_positions import check_embedding_backward

check_embedding_backward(embedding_backward)

# %% [markdown]
# Stuck? Ask for a hint in a new cell: `hint("embedding_backward")` gives a nudge, `hint("embedding_backward", 2)` a stronger one. Hints never show the code.

# %% [markdown]
# The course's version is `course_utils.embeddings.input_embedding_backward`. On *YOUR CAT IS A LOVELY
# CAT* with small tables, a made-up upstream gradient of all ones makes the sums easy to read: *CAT*'s
# row collects two copies, *DOG*'s row (absent) none, and every used position one copy per sequence.
# Autograd agrees:

# %%
from course_utils.embeddings import input_embedding_backward

tables = [torch.randn(d_vocab, 3, dtype=torch.float64, requires_grad=True),     # W_E  (d_vocab, d_model = 3)
          torch.randn(8, 3, dtype=torch.float64, requires_grad=True)]           # W_pos (n_ctx = 8, d_model = 3)
batch_ids = cat_ids[None]                                                        # (batch = 1, pos = 6)
ones = torch.ones(1, len(sentence), 3, dtype=torch.float64)                      # dL/dx, made up
by_autograd = torch.autograd.grad(embed(batch_ids, tables[0]) + tables[1][: len(sentence)], tables, ones)
by_hand = input_embedding_backward(batch_ids, ones, d_vocab, 8)
for word in ("CAT", "YOUR", "DOG"):
    print(f"row of {word:>4}: {by_hand[0][vocab[word]].tolist()}")
print("rows of W_pos:", by_hand[1][:, 0].tolist(), "(first feature of each)")
print("equal to autograd's:", all(torch.equal(h, a) for h, a in zip(by_hand, by_autograd)))

# %% [markdown]
# ### When the table is also the unembedding
#
# Section 3 showed that tying $W_U = W_E^\top$, as GPT-2 does, gives **every** row of $W_E$ a gradient.
# Now compute that gradient yourself, for the zero-layer model of section 3: look up the rows
# `x = W_E[token_ids]`, score every vocabulary entry with `logits = x @ W_E.T`, and take the mean
# cross-entropy against the next tokens `targets`. One fact from notebook 04 is needed: for the mean
# cross-entropy over $N$ predictions, the gradient of the logits is
# $(\operatorname{softmax}(\text{logits}) - \operatorname{one\_hot}(\text{target}))/N$, row by row. After that it is
# the two rules of the previous exercise: $W_E$ is used **twice**, so its gradient is the sum of two shares.
#
# * As the unembedding, every row of $W_E$ makes one logit at every position: that share is the logits'
#   gradient (rows stacked, transposed) times the embedded rows `x`, and it reaches every row of $W_E$.
# * As the lookup, the gradient that reaches `x` (the logits' gradient times $W_E$) is scatter-added into
#   the rows of the input tokens, exactly as in `embedding_backward`.
#
# ### Exercise: the gradient of a tied embedding (3 points, difficulty 3/3, about 20 min)
#
# Write `tied_embedding_backward(token_ids, targets, W_E)` for `token_ids` and `targets` of the same shape
# (any leading dims) and `W_E` of shape `(d_vocab, d_model)`; return $\partial L/\partial W_E$, shape
# `(d_vocab, d_model)`. The form the check requires: $L$ is the **mean** cross-entropy over all the
# predictions, and the gradient is computed by hand (no autograd), both shares included.

# %%
def tied_embedding_backward(token_ids: torch.Tensor, targets: torch.Tensor, W_E: torch.Tensor) -> torch.Tensor:
    d_vocab, d_model = W_E.shape
    # BEGIN SOLUTION
    x = W_E[token_ids]  # (..., pos, d_model)
    probs = torch.softmax(x @ W_E.T, dim=-1)  # (..., pos, d_vocab)
    grad_logits = (probs - F.one_hot(targets, d_vocab).to(W_E.dtype)) / targets.numel()
    grad_W_E = grad_logits.reshape(-1, d_vocab).T @ x.reshape(-1, d_model)  # W_E as the unembedding
    grad_x = grad_logits @ W_E  # back through the unembedding to the looked-up rows
    grad_W_E.index_add_(0, token_ids.reshape(-1), grad_x.reshape(-1, d_model))  # W_E as the lookup
    return grad_W_E
    # END SOLUTION


# %%
from course_utils.checks.embeddings_positions import check_tied_embedding_backward

check_tied_embedding_backward(tied_embedding_backward)

# %% [markdown]
# Stuck? Ask for a hint in a new cell: `hint("tied_embedding_backward")` gives a nudge, `hint("tied_embedding_backward", 2)` a stronger one. Hints never show the code.

# %% [markdown]
# The course's `course_utils.embeddings.tied_embedding_backward` on section 3's example (*YOUR CAT IS*
# predicting *CAT* and *IS*) gives the gradient autograd gave there, and shows how it splits: *DOG* and
# *LOVELY*, which never appear, get only the unembedding's share.

# %%
from course_utils.embeddings import tied_embedding_backward as reference_tied_backward

tied_by_hand = reference_tied_backward(ids[:-1], ids[1:], W_E)
print("equal to section 3's autograd gradient:", torch.allclose(tied_by_hand, tied.W_E.grad))
for word in ("CAT", "DOG"):
    print(f"{word:>4}: gradient norm {tied_by_hand[vocab[word]].norm():.4f}")

# %% [markdown]
# ## 7 · Rotary positions (RoPE)
#
# Most recent open models (Llama, Mistral, Qwen and others) add nothing to the embeddings. Instead,
# inside every attention layer, they **rotate** each query and key: feature pair $(2i, 2i+1)$ of the
# vector at position `m` is turned by the angle $m\,\theta_i$ with $\theta_i = 10000^{-2i/d_\text{head}}$,
# the same speeds as the sinusoidal table. A rotation by angle $m\theta$ of the query and by $n\theta$ of
# the key leaves their dot product depending only on the *difference* $m - n$, so attention scores see
# relative offsets directly.
#
# ### Exercise: rotate queries and keys with RoPE (3 points, difficulty 3/3, about 20 min)
#
# Write `rope_rotate(x)` for `x` of shape `(..., pos, d_head)` (even `d_head`): row `pos` has each pair
# `(a, b) = (x[..., 2i], x[..., 2i+1])` replaced by `(a·cos φ − b·sin φ, a·sin φ + b·cos φ)` with
# `φ = pos / 10000^(2i/d_head)`. The form the check requires: pairs are **neighbouring** features, (0, 1), (2, 3), ... (the
# **interleaved** layout of the RoPE paper, RoFormer, and of Meta's original Llama code, which treats each pair as
# one complex number), not the "rotate-half" layout of GPT-NeoX and Hugging Face `transformers` (its Llama
# included), which pairs feature `i` with `i + d_head/2` (the end of this section compares the two);
# and positions count from 0 (row `pos` of `x` sits at position `pos`). Return a tensor of `x`'s shape.

# %%
def rope_rotate(x: torch.Tensor) -> torch.Tensor:
    # BEGIN SOLUTION
    n_pos, d_head = x.shape[-2], x.shape[-1]
    freqs = 10000 ** (-torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)
    angles = torch.arange(n_pos, dtype=torch.float64)[:, None] * freqs
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).reshape(x.shape)
    # END SOLUTION


# %%
from course_utils.checks.embeddings_positions import check_rope_rotate

check_rope_rotate(rope_rotate)

# %% [markdown]
# Stuck? Ask for a hint in a new cell: `hint("rope_rotate")` gives a nudge, `hint("rope_rotate", 2)` a stronger one. Hints never show the code.

# %% [markdown]
# Now the promised property, with the reference `rope_rotate` (which also accepts explicit
# positions). Fix one query vector and one key vector, place them at positions `(m + offset, m)` for
# several `m`, and compute the score after rotation. Along each row the score does not change: only
# the offset matters. Without rotation the score would be the same for every offset, i.e. blind to
# position.

# %%
q = torch.randn(64, dtype=torch.float64)
k = torch.randn(64, dtype=torch.float64)

def rope_score(m, n):
    return (positions.rope_rotate(q[None], torch.tensor([m]))[0] @ positions.rope_rotate(k[None], torch.tensor([n]))[0]).item()

print(f"no rotation: q·k = {(q @ k).item():.4f} for every pair of positions")
for offset in (0, 1, 5, 20):
    print(f"offset {offset:2d}: " + "  ".join(f"{rope_score(m + offset, m):8.4f}" for m in (0, 10, 100, 1000)))

# %% [markdown]
# A rotation never changes a vector's length, so RoPE moves no information in or out of a query or
# key; it only changes directions:

# %%
x = torch.randn(6, 64, dtype=torch.float64)
print("lengths kept:", torch.allclose(positions.rope_rotate(x).norm(dim=-1), x.norm(dim=-1)))

# %% [markdown]
# ### Interleaved or halves: only a storage convention
#
# Two layouts are in use, and the name "Llama" is attached to both. Meta's original Llama code (like the
# RoFormer paper and GPT-J) pairs neighbours, $(2i, 2i+1)$, and multiplies each pair, read as one complex
# number, by $e^{i m \theta_i}$: the interleaved layout of the exercise. GPT-NeoX and Hugging Face
# `transformers` (its Llama included) pair feature $i$ with feature $i + d_\text{head}/2$ instead, the
# "rotate-half" or "halves" layout. That is the same rotation applied to
# the same numbers stored in another order: reorder a query's and a key's features once, by the fixed
# permutation `halves_order` (all even features, then all odd ones), and the "halves" rotation gives
# exactly the interleaved result, so the attention scores are identical. What does matter is
# consistency: rotating vectors stored one way with the other layout gives different scores, which is
# why `transformers` permutes the query and key weights of Meta's checkpoints when it converts them.

# %%
qs, ks = torch.randn(8, 64, dtype=torch.float64), torch.randn(8, 64, dtype=torch.float64)   # (pos, d_head)
print("the fixed permutation for d_head = 8:", positions.halves_order(8).tolist())
order = positions.halves_order(64)
interleaved = positions.rope_rotate(qs) @ positions.rope_rotate(ks).T                     # (q_pos, k_pos)
halves = positions.rope_rotate(qs[:, order], layout="halves") @ positions.rope_rotate(ks[:, order], layout="halves").T
mixed = positions.rope_rotate(qs, layout="halves") @ positions.rope_rotate(ks, layout="halves").T
print("halves layout on reordered features, same scores:", torch.allclose(interleaved, halves))
print("halves layout on the interleaved storage, same scores:", torch.allclose(interleaved, mixed))

# %% [markdown]
# ## 8 · ALiBi: a penalty instead of a position vector
#
# ALiBi (*Attention with Linear Biases*, Press, Smith and Lewis; used by BLOOM and MPT) adds nothing to
# the embeddings and rotates nothing. Inside every attention layer it adds to each score a penalty
# proportional to how far back the key sits: the score of query $i$ for key $j \le i$ becomes
# $q_i \cdot k_j/\sqrt{d_k} - m_h\,(i - j)$, and future keys are masked as usual. Each head $h$ has its own
# fixed slope $m_h$, so some heads look far back and others mostly at the last few tokens. For $n$ heads,
# $n$ a power of two, the slopes are the geometric sequence that starts at $2^{-8/n}$ and has that number
# as its ratio. For 8 heads, worked by hand: $2^{-8/8} = 1/2$, then $1/4$, $1/8$, and so on down to
# $2^{-8} = 1/256$. For a head count that is not a power of two, the paper's code takes the slopes of the
# largest power of two below $n$, then the 1st, 3rd, 5th, ... slopes of twice that power until there
# are $n$ (for 12 heads: the 8 slopes above, then $2^{-0.5}, 2^{-1.5}, 2^{-2.5}, 2^{-3.5}$ from the
# 16-head sequence).
#
# ### Exercise: ALiBi's slopes and bias (2 points, difficulty 2/3, about 15 min)
#
# Write `alibi_bias(n_heads, n_pos)`, returning the `(n_heads, n_pos, n_pos)` tensor to add to the
# scores: entry `[h, i, j]` is $-m_h\,(i - j)$ for a key at or before the query ($j \le i$) and `-inf`
# for a future key ($j > i$). The form the check requires: the slopes follow the rule above, for any
# number of heads, and rows are queries, columns keys.

# %%
def alibi_bias(n_heads: int, n_pos: int) -> torch.Tensor:
    # BEGIN SOLUTION
    closest = 2 ** math.floor(math.log2(n_heads))
    slopes = [2 ** (-8 * h / closest) for h in range(1, closest + 1)]
    slopes += [2 ** (-4 * h / closest) for h in range(1, 2 * (n_heads - closest), 2)]
    pos = torch.arange(n_pos)
    distance = pos[:, None] - pos[None, :]  # (q_pos, k_pos): how far back key j sits from query i
    bias = -torch.tensor(slopes, dtype=torch.float64)[:, None, None] * distance  # (n_heads, q_pos, k_pos)
    return bias.masked_fill(distance < 0, float("-inf"))
    # END SOLUTION


# %%
from course_utils.checks.embeddings_positions import check_alibi_bias

check_alibi_bias(alibi_bias)

# %% [markdown]
# Stuck? Ask for a hint in a new cell: `hint("alibi_bias")` gives a nudge, `hint("alibi_bias", 2)` a stronger one. Hints never show the code.

# %% [markdown]
# The course's `positions.alibi_slopes` and `positions.alibi_bias` give the hand-worked 8-head slopes
# and the 12-head rule. To see what the bias alone does, give every key the same score, so that only
# the penalty decides: the last query of a 6-token text then spreads its weight very differently in
# head 1 (steepest slope) and head 8 (flattest):

# %%
print("8 heads, slopes as fractions 1/x, x =", [int(1 / m) for m in positions.alibi_slopes(8).tolist()])
print("12 heads, slopes as powers of 2:", [round(math.log2(m), 1) for m in positions.alibi_slopes(12).tolist()])
alibi = positions.alibi_bias(8, 6)                                  # (n_heads, q_pos, k_pos)
print("head 1's bias, rows = queries:\n", alibi[0])
weights_equal_scores = torch.softmax(alibi[:, -1], dim=-1)          # (n_heads, k_pos): the last query's weights
for h in (0, 7):
    print(f"head {h + 1}: last query's weights over keys 0..5 = {[round(w, 3) for w in weights_equal_scores[h].tolist()]}")

# %% [markdown]
# Head 1 puts 0.414 of its weight on the query's own position and 0.034 on the key five tokens back;
# head 8 is nearly uniform. Because the penalty depends only on $i - j$, ALiBi, like RoPE, sees relative
# positions only, and it has no table to run out of: the paper trains on short texts and evaluates on
# longer ones.

# %% [markdown]
# ## Summary
#
# | | where | trained? | beyond the training length |
# |---|---|---|---|
# | token embedding $W_E$ | row lookup before the first layer | yes | — |
# | sinusoidal table | added to the embeddings | no (a formula) | defined for every position |
# | learned $W_{pos}$ (GPT-2, GPT-3) | added to the embeddings | yes | no rows past `n_ctx` |
# | RoPE | rotates q and k inside each attention layer | no (a formula) | defined, quality varies |
# | ALiBi (BLOOM, MPT) | a distance penalty on each attention score | no (a formula) | defined, built to extrapolate |
#
# Next, **03 · attention** builds the mechanism these vectors feed: queries, keys, values and the
# scaled dot product.
