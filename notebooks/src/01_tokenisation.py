# ---
# jupyter:
#   course:
#     exercises:
#       bpe_count_pairs:
#         difficulty: 1
#         minutes: 5
#         points: 1
#       bpe_decode:
#         difficulty: 1
#         minutes: 5
#         points: 1
#       bpe_encode_word:
#         difficulty: 1
#         minutes: 10
#         points: 2
#       bpe_merge_pair:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       bpe_train:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       byte_bpe_encode:
#         difficulty: 2
#         minutes: 15
#         points: 3
#       byte_bpe_train:
#         difficulty: 2
#         minutes: 20
#         points: 3
#       unigram_viterbi:
#         difficulty: 3
#         minutes: 20
#         points: 3
#       wordpiece_score:
#         difficulty: 1
#         minutes: 10
#         points: 1
#     numbers_allowed:
#       '1994': year of Gage's BPE article (a citation)
#       '2016': year of Sennrich et al.'s BPE paper (a citation)
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
# # 01 · Tokenisation: from text to integer ids
#
# A language model never sees letters. Before anything else, a **tokenizer** cuts the text into
# pieces (**tokens**) from a fixed list (the **vocabulary**, of size `d_vocab`) and hands the model
# one integer id per piece. This notebook builds the tokenizers used in practice, from scratch:
#
# 1. what the unit should be: words, characters, subwords or bytes;
# 2. **BPE** (byte pair encoding), trained by hand on a four-word corpus, then encoding and decoding;
# 3. **byte-level BPE**, the GPT-2 kind, trained on the course's Shakespeare corpus;
# 4. **WordPiece** (BERT) and **Unigram** (T5): the same goal, different choices;
# 5. special tokens, and why a tokenizer is frozen once trained;
# 6. the real GPT-2, GPT-4 (`cl100k_base`) and GPT-4o (`o200k_base`) tokenizers, offline;
# 7. a widget to watch any text being cut up.
#
# **9 exercises, 18 points, about 105 minutes in all.** Seven on the classic algorithms, then two on
# byte-level BPE as real tokenizers run it; each has a check cell under it and hints on request.

# %%
from course_utils.env import seed_everything

# Nothing below is random, but every notebook seeds its generators in a visible cell.
seed_everything(0)
print("seeded with 0")

# %% [markdown]
# ## 1 · Which unit? Words, characters, subwords, bytes
#
# Take one word and cut it four ways. A **word** vocabulary stores `unbelievable` whole, if it has
# ever seen it. A **character** vocabulary spells it out. A **subword** vocabulary (here GPT-2's)
# uses a few frequent pieces. **Bytes** are what the computer stores: UTF-8 turns each character into
# one to four bytes, each one of 256 possible values.

# %%
from course_utils.tokenisation import real

word = "unbelievable"
gpt2 = real.load("gpt2")  # GPT-2's tokenizer, from files shipped in an installed package
print("characters:", list(word), "->", len(word), "tokens")
print("bytes:     ", list(word.encode("utf-8")), "->", len(word.encode("utf-8")), "tokens")
print("GPT-2:     ", [gpt2.decode([i]) for i in gpt2.encode(word)], "->", len(gpt2.encode(word)), "tokens")

# %% [markdown]
# A word vocabulary fails on any word it never met: the word is **out of vocabulary (OOV)** and
# becomes the placeholder `[UNK]`, and whatever it meant is lost. Let us build a word vocabulary
# from the 10,000 most common words of every play but the last (the cell prints how many) and
# read a line about the last one, *Timon of Athens*.

# %%
import re
from collections import Counter

from course_utils.corpus import load_corpus, play_files

corpus = load_corpus()  # every play, cleaned; built from package data on first use, then cached
last_play = corpus.index("\nTimon of Athens\n")  # the plays are in path order; Timon of Athens is last
words_before = re.findall(r"[a-z']+", corpus[:last_play].lower())
word_vocab = {w for w, _ in Counter(words_before).most_common(10_000)}
print(f"word vocabulary from the first {len(play_files()) - 1} of {len(play_files())} plays: {len(word_vocab):,} words")
line = "Apemantus, the churlish philosopher, asks the chatbot to tokenise Timon"
print(" ".join(w if w in word_vocab else "[UNK]" for w in re.findall(r"[a-z']+", line.lower())))

# %% [markdown]
# Characters never fail, but sequences get long, and attention's cost grows with the square of the
# length. Bytes never fail either and need only 256 ids, for every language at once. The catch is
# that characters beyond plain English take several bytes:

# %%
for text in ["cafe", "café", "😀", "日本"]:
    print(f"{text!r}: {len(text)} characters, {len(text.encode('utf-8'))} bytes {list(text.encode('utf-8'))}")

# %% [markdown]
# Subwords sit in the middle: frequent words are one token, rare words are a few known pieces, and
# with bytes as the starting alphabet nothing is ever unknown. BPE is how the pieces are chosen.
#
# ## 2 · BPE training by hand
#
# Byte pair encoding (Gage, 1994, as a compressor; Sennrich et al., 2016, for translation) learns
# its vocabulary from a corpus:
#
# 1. write every word as characters plus an end-of-word marker `</w>`;
# 2. count every adjacent pair of symbols, each word weighted by how often it occurs;
# 3. merge the most frequent pair into one new symbol, and record the merge;
# 4. repeat until the vocabulary is as large as wanted.
#
# **Tie-break rule** (ours, so results are deterministic): when several pairs share the top count,
# merge the smallest pair in Python's string order, i.e. `min` over `(-count, pair)`.
#
# The worked corpus has four words:

# %%
from course_utils.tokenisation import bpe

print(bpe.WORKED_CORPUS)
words = bpe.split_corpus(bpe.WORKED_CORPUS)
words


# %% [markdown]
# ### Exercise: pair counting (1 point, difficulty 1/3, about 5 min)
#
# `words` maps a tuple of symbols to a count. Return a dict mapping
# each adjacent pair `(a, b)` to its total count over the corpus.

# %%
def count_pairs(words: dict) -> dict:
    # {('l','o','w','</w>'): 5, ...} -> {('l','o'): 7, ('o','w'): 7, ...}
    # BEGIN SOLUTION
    counts = {}
    for symbols, count in words.items():
        for pair in zip(symbols, symbols[1:]):
            counts[pair] = counts.get(pair, 0) + count
    return counts
    # END SOLUTION


# %%
from course_utils.checks.tokenisation import check_bpe_count_pairs

check_bpe_count_pairs(count_pairs)

# %% [markdown]
# Stuck? `hint("bpe_count_pairs")` gives a nudge and `hint("bpe_count_pairs", 2)` a stronger one (after `from course_utils.checks import hint`); neither gives the code.

# %%
pair_counts = bpe.count_pairs(words)  # the reference from here on
top = sorted(pair_counts.items(), key=lambda kv: (-kv[1], kv[0]))[:6]
for pair, count in top:
    print(pair, count)


# %% [markdown]
# Three pairs tie at the top; by the rule, `('e', 's')` goes first.
#
# ### Exercise: one merge (2 points, difficulty 2/3, about 10 min)
#
# Return a new `words` dict in which every occurrence of `pair` is
# joined into one symbol, scanning each word left to right (so `a a a` with `('a', 'a')` becomes
# `aa a`). If two words end up identical, add their counts.

# %%
def merge_pair(words: dict, pair: tuple) -> dict:
    # {('n','e','w','e','s','t','</w>'): 6}, ('e','s') -> {('n','e','w','es','t','</w>'): 6}
    # BEGIN SOLUTION
    a, b = pair
    out = {}
    for symbols, count in words.items():
        merged, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
                merged.append(a + b)
                i += 2
            else:
                merged.append(symbols[i])
                i += 1
        out[tuple(merged)] = out.get(tuple(merged), 0) + count
    return out
    # END SOLUTION


# %%
from course_utils.checks.tokenisation import check_bpe_merge_pair

check_bpe_merge_pair(merge_pair)


# %% [markdown]
# Stuck? `hint("bpe_merge_pair")` gives a nudge and `hint("bpe_merge_pair", 2)` a stronger one (after `from course_utils.checks import hint`); neither gives the code.

# %% [markdown]
# ### Exercise: the BPE training loop (2 points, difficulty 2/3, about 10 min)
#
# Put the two together: starting from `bpe.split_corpus(word_counts)`,
# count, pick the best pair with the tie-break rule of section 2 (the smallest pair among
# equal counts, `min` over `(-count, pair)`), merge, and repeat `n_merges` times (stop early
# if no pair is left). Return the merges in order. You may call `bpe.count_pairs` and
# `bpe.merge_pair`.

# %%
def train_bpe(word_counts: dict, n_merges: int) -> list:
    # {'low': 5, ...}, 2 -> [('e', 's'), ('es', 't')]
    # BEGIN SOLUTION
    words = bpe.split_corpus(word_counts)
    merges = []
    for _ in range(n_merges):
        pairs = bpe.count_pairs(words)
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        words = bpe.merge_pair(words, best)
    return merges
    # END SOLUTION


# %%
from course_utils.checks.tokenisation import check_bpe_train

check_bpe_train(train_bpe)

# %% [markdown]
# Stuck? `hint("bpe_train")` gives a nudge and `hint("bpe_train", 2)` a stronger one (after `from course_utils.checks import hint`); neither gives the code.
#
# The five merges of the worked corpus, with the count that won each step, and the corpus before
# and after:

# %%
steps = bpe.training_steps(bpe.WORKED_CORPUS, 5)
for k, (pair, count, _) in enumerate(steps, start=1):
    print(f"step {k}: {pair[0]!r} + {pair[1]!r} -> {pair[0] + pair[1]!r}  (count {count})")
print()
after = steps[-1][2]
for (word, n), (before_syms, after_syms) in zip(bpe.WORKED_CORPUS.items(), zip(words, after)):
    print(f"{word:>7} x{n}:  {' '.join(before_syms):<22} ->  {' '.join(after_syms)}")


# %% [markdown]
# `low` is now one symbol and every `-est` ending is one symbol `est</w>`. Counts of 9 are
# newest (6) + widest (3); counts of 7 are low (5) + lower (2).
#
# ## 3 · Encoding and decoding
#
# A trained BPE tokenizer is just the **ordered merge list** plus a table from pieces to ids. To
# encode a word, split it into characters plus `</w>`, then replay the merges **in the order they
# were learned**, each one joining every occurrence of its pair.
#
# ### Exercise: encoding a word (2 points, difficulty 1/3, about 10 min)
#
# Return the list of symbols, `</w>` included.

# %%
def encode_word(word: str, merges: list) -> list:
    # "lowest" with the five worked merges -> ['low', 'est</w>']
    # BEGIN SOLUTION
    symbols = list(word) + [bpe.EOW]
    for a, b in merges:
        merged, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
                merged.append(a + b)
                i += 2
            else:
                merged.append(symbols[i])
                i += 1
        symbols = merged
    return symbols
    # END SOLUTION


# %%
from course_utils.checks.tokenisation import check_bpe_encode_word

check_bpe_encode_word(encode_word)

# %% [markdown]
# Stuck? `hint("bpe_encode_word")` gives a nudge and `hint("bpe_encode_word", 2)` a stronger one (after `from course_utils.checks import hint`); neither gives the code.

# %%
merges = bpe.train_bpe(bpe.WORKED_CORPUS, 5)
for w in ["lowest", "newer", "widest"]:
    pieces = bpe.encode_word(w, merges)
    print(f"{w!r}: {pieces} ({len(pieces)} symbols)")

# %% [markdown]
# `lowest` never occurred in training, yet it comes out as two known pieces. `newer` stays as six
# single symbols: none of our five merges applies to it. That is a symptom of the toy size: GPT-2
# learned 50,000 merges, and single characters are only the fallback for whatever no merge covers.
#
# The vocabulary gives each piece an id: the characters (sorted), then `</w>`, then one id per merge.
#
# ### Exercise: decoding (1 point, difficulty 1/3, about 5 min)
#
# Turn ids back into text: look up each piece, glue them together, and
# make each `</w>` a space.

# %%
vocab = bpe.build_vocab(bpe.WORKED_CORPUS, merges)
print(list(enumerate(vocab)))
ids = [vocab.index(p) for w in ["lowest", "newer"] for p in bpe.encode_word(w, merges)]
ids


# %%
def decode_ids(ids: list, vocab: list) -> str:
    # ids of ['low', 'est</w>'] -> 'lowest '
    # BEGIN SOLUTION
    return "".join(vocab[i] for i in ids).replace(bpe.EOW, " ")
    # END SOLUTION


# %%
from course_utils.checks.tokenisation import check_bpe_decode

check_bpe_decode(decode_ids)

# %% [markdown]
# Stuck? `hint("bpe_decode")` gives a nudge and `hint("bpe_decode", 2)` a stronger one (after `from course_utils.checks import hint`); neither gives the code.

# %%
repr(bpe.decode_ids(ids, vocab))

# %% [markdown]
# ## 4 · Byte-level BPE, the GPT-2 way
#
# Real tokenizers change two things.
#
# * **Bytes, not characters.** The starting alphabet is the 256 byte values, so any text in any
#   language (or any emoji) can be encoded, and no `[UNK]` is ever needed.
# * **Pre-tokenisation instead of `</w>`.** A regular expression first cuts the text into chunks
#   (words, numbers, punctuation runs, whitespace), and merges never cross a chunk boundary. In
#   GPT-2's pattern a word's **leading space belongs to the word**: `" cat"` is one chunk. GPT-2
#   prints that space as `Ġ` (every byte gets a visible stand-in character).

# %%
from course_utils.tokenisation.pretokenise import GPT2_PATTERN, pretokenise, visible

chunks = pretokenise("To be, or not to be: that is the question.\n", GPT2_PATTERN)
print(chunks)
print([visible(c.encode("utf-8")) for c in chunks])

# %% [markdown]
# ### Exercise: byte-level BPE training (3 points, difficulty 2/3, about 20 min)
#
# Write the training loop on bytes: `learn_byte_merges(text, n_merges)`.
#
# * Cut `text` into GPT-2 chunks with their counts: `chunk_counts(text)` (imported below) returns
#   `{chunk: count}`, each distinct chunk once.
# * Each chunk starts as the ids of its UTF-8 bytes (`chunk.encode("utf-8")`: one id per byte value, all below 256).
# * Each round: count adjacent pairs of ids over all chunks, each weighted by its chunk's count; merge
#   the best pair in every chunk; the k-th merge (counting from 0) creates the new id `256 + k`.
#   Stop early if no pair is left.
# * **Tie-break rule:** among pairs with the same count, merge the smallest pair of ids
#   `(left, right)`, i.e. `min` over `(-count, pair)`, the same rule as in section 2 but on ids.
# * Return the merged pairs in order, as a list of `(left id, right id)` tuples.
#
# The check compares your merges with the course's trainer (`course_utils/tokenisation/trainer.py`) on
# a few small texts and on slices of the corpus (its message says which); a plain loop like section 2's is fast enough.

# %%
from collections import Counter

from course_utils.tokenisation.trainer import chunk_counts


def learn_byte_merges(text: str, n_merges: int) -> list:
    # "aaabdaaabac", 3 -> [(97, 97), (97, 98), (256, 257)]
    # BEGIN SOLUTION
    words = {tuple(chunk.encode("utf-8")): count for chunk, count in chunk_counts(text).items()}
    merges = []
    for k in range(n_merges):
        pairs = Counter()
        for ids, count in words.items():
            for pair in zip(ids, ids[1:]):
                pairs[pair] += count
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        merged_words = Counter()
        for ids, count in words.items():
            out, j = [], 0
            while j < len(ids):
                if j + 1 < len(ids) and (ids[j], ids[j + 1]) == best:
                    out.append(256 + k)
                    j += 2
                else:
                    out.append(ids[j])
                    j += 1
            merged_words[tuple(out)] += count
        words = merged_words
    return merges
    # END SOLUTION


# %%
from course_utils.checks.tokenisation import check_byte_bpe_train

check_byte_bpe_train(learn_byte_merges)

# %% [markdown]
# Stuck? `hint("byte_bpe_train")` gives a nudge and `hint("byte_bpe_train", 2)` a stronger one (after `from course_utils.checks import hint`); neither gives the code.
#
# **Other trainers break ties their own way.** Ties at the top are common in the first merges of a
# small text and rare later in a large one, but each tie decided differently changes every merge after
# it, so two trainers agree merge for merge only if their rules agree. Hugging Face's `tokenizers`
# takes the smallest pair of ids, as the course does; Karpathy's minbpe takes `max` over its dict of
# counts, which keeps the pair met first in the text; Stanford CS336's first assignment asks for the
# greatest pair, comparing the byte strings. On a text whose three pairs tie:

# %%
tied = Counter(zip(b"mzab", b"mzab"[1:]))  # (m, z), (z, a), (a, b): once each
rules = {
    "the course and Hugging Face: smallest ids": min(tied, key=lambda p: (-tied[p], p)),
    "minbpe: the first one seen": max(tied, key=tied.get),
    "CS336: the greatest bytes": max(tied, key=lambda p: (tied[p], bytes([p[0]]), bytes([p[1]]))),
}
for rule, pair in rules.items():
    print(f"{rule:<44} merges {bytes(pair)!r}")

# %% [markdown]
# The course's trainer learns the same merges; here are its first few on the first 12 kB of the
# corpus (shown with GPT-2's visible stand-ins, `Ġ` for a space):

# %%
from course_utils.corpus import corpus_slice
from course_utils.tokenisation.trainer import train_byte_bpe

first = train_byte_bpe(corpus_slice(corpus, 12_000), 256 + 12)
print([visible(token) for token, _ in first])

# %% [markdown]
# Training is the same loop as before, on bytes: count the distinct chunks once (a chunk that occurs
# 3,000 times is stored once with weight 3,000), then merge. The course's trainer keeps the pair
# counts up to date instead of recounting: each merge only revisits the chunks that contain the
# merged pair (see `course_utils/tokenisation/trainer.py`; a test checks it learns exactly the merges
# of the plain recount-everything trainer, and `benchmarks/bench_bpe.py` times it against Hugging
# Face `tokenizers`). We train on the whole corpus, up to 2,048 ids, the last six reserved for
# special tokens (section 6).

# %%
print(f"corpus: {len(corpus):,} characters, {len(corpus.encode('utf-8')):,} bytes, {len(corpus.split()):,} words")

# %%
from course_utils.tokenisation.course import SPECIAL_TOKENS, course_tokenizer

course_bpe = course_tokenizer(progress=True)  # once per session; the progress bar (not compared by the tests) shows how long

# %%
print("vocabulary size:", course_bpe.n_vocab, "= 256 bytes +", course_bpe.n_vocab - 256 - len(SPECIAL_TOKENS),
      "merges +", len(SPECIAL_TOKENS), "special tokens")
print("first 20 merges:", [visible(course_bpe.decoder[i]) for i in range(256, 276)])
print("last 8 merges:  ", [visible(course_bpe.decoder[i]) for i in range(2034, 2042)])

# %%
line = "Now is the winter of our discontent"
ids = course_bpe.encode(line)
print(ids)
print([visible(p) for p in course_bpe.pieces(ids)])
print(repr(course_bpe.decode(ids)), "| round trip ok:", course_bpe.decode(ids) == line)
print("corpus:", len(corpus.encode("utf-8")), "bytes ->", len(course_bpe.encode(corpus)), "tokens")

# %% [markdown]
# A byte-level token need not be a whole character: an emoji is 4 bytes, and a small vocabulary may
# split it. Decoding only part of it gives bytes that are not valid UTF-8; the course's `decode`
# then shows U+FFFD, the replacement character `�` (`decode_bytes` returns the raw bytes).

# %%
ids = course_bpe.encode("😀")
print(ids, "->", [course_bpe.decode([i]) for i in ids], "| all together:", course_bpe.decode(ids))


# %% [markdown]
# ## 5 · WordPiece and Unigram
#
# **WordPiece** (BERT) also merges pairs, but ranks them by a score instead of a raw count:
#
# $$\text{score}(a, b) = \frac{\text{count}(a\,b)}{\text{count}(a)\times\text{count}(b)}$$
#
# with every count weighted by word frequency. A pair scores high when its parts seldom appear apart.
#
# ### Exercise: the WordPiece score (1 point, difficulty 1/3, about 10 min)
#
# A pair that never occurs side by side scores 0, also when its symbols never occur at all (where the
# formula would read 0/0). You may use `bpe.count_pairs(words)`.

# %%
def wordpiece_score(words: dict, pair: tuple) -> float:
    # worked corpus, ('i', 'd') -> 3 / (3 * 3) = 0.333...
    # BEGIN SOLUTION
    pair_count = bpe.count_pairs(words).get(tuple(pair), 0)
    if pair_count == 0:
        return 0.0
    symbol_counts = {}
    for symbols, count in words.items():
        for s in symbols:
            symbol_counts[s] = symbol_counts.get(s, 0) + count
    return pair_count / (symbol_counts[pair[0]] * symbol_counts[pair[1]])
    # END SOLUTION


# %%
from course_utils.checks.tokenisation import check_wordpiece_score

check_wordpiece_score(wordpiece_score)

# %% [markdown]
# Stuck? `hint("wordpiece_score")` gives a nudge and `hint("wordpiece_score", 2)` a stronger one (after `from course_utils.checks import hint`); neither gives the code.

# %%
from course_utils.tokenisation import wordpiece

symbol_counts = wordpiece.count_symbols(words)
for a, b in [("e", "s"), ("i", "d")]:
    n_pair = pair_counts[(a, b)]
    score = wordpiece.wordpiece_score(words, (a, b))
    print(f"{a}+{b}: pair {n_pair}, {a} {symbol_counts[a]}, {b} {symbol_counts[b]}, "
          f"score {n_pair}/({symbol_counts[a]}x{symbol_counts[b]}) = {score:.3f}")
print("BPE's first merge:      ", bpe.train_bpe(bpe.WORKED_CORPUS, 1))
print("WordPiece's first merge:", wordpiece.train_wordpiece(words, 1))

# %% [markdown]
# `e` turns up all over the corpus (lower, both e's of newest, widest), so `e s` is diluted; `i`
# and `d` occur only in widest, always together. WordPiece also marks a piece that **continues** a
# word with `##`, so word starts stay visible. Encoding is greedy: the longest known piece first.

# %%
wp_vocab = {"play", "##ing", "##ed", "##er", "un", "##believ", "##able", "low", "##est"}
for w in ["playing", "played", "unbelievable", "lowest", "xylophone"]:
    print(w, "->", wordpiece.wordpiece_tokenize(w, wp_vocab))

# %% [markdown]
# **Unigram** (T5, via SentencePiece) goes the other way: start from a large vocabulary and remove
# pieces. Each piece has a probability; a split's probability is the product of its pieces'. To
# encode, pick the most probable split. With made-up probabilities (low .04, est .03, lo .01,
# west .005, single letters .001):

# %%
from course_utils.tokenisation import unigram

probs = {"low": 0.04, "est": 0.03, "lo": 0.01, "west": 0.005, **{c: 0.001 for c in "lowest"}}
splits = unigram.all_splits("lowest", probs)
for s in sorted(splits, key=lambda s: -unigram.split_probability(s, probs))[:4]:
    print(" · ".join(s), f"{unigram.split_probability(s, probs):.3g}")
print(len(splits), "splits in all")

# %% [markdown]
# Listing every split is exponential in the word's length. The **Viterbi** search does it in
# quadratic time: for each end position `i`, keep only the best split of `word[:i]`, found by
# trying every last piece `word[j:i]` on top of the best split of `word[:j]`. Work with
# log-probabilities (a sum instead of a product) so long words do not underflow to 0.
#
# ### Exercise: Viterbi segmentation (3 points, difficulty 3/3, about 20 min)
#
# Return the most probable split as a list of pieces. If several splits are exactly as probable
# (`bb · bbb` and `bbb · bb` when both pieces exist), any of them is accepted.

# %%
import math


def viterbi_segment(word: str, probs: dict) -> list:
    # "lowest" with the probabilities above -> ['low', 'est']
    # BEGIN SOLUTION
    n = len(word)
    best = [0.0] + [-math.inf] * n
    start = [0] * (n + 1)
    for end in range(1, n + 1):
        for begin in range(end):
            piece = word[begin:end]
            if piece in probs and best[begin] > -math.inf:
                score = best[begin] + math.log(probs[piece])
                if score > best[end]:
                    best[end], start[end] = score, begin
    pieces, end = [], n
    while end > 0:
        pieces.append(word[start[end]:end])
        end = start[end]
    return pieces[::-1]
    # END SOLUTION


# %%
from course_utils.checks.tokenisation import check_unigram_viterbi

check_unigram_viterbi(viterbi_segment)

# %% [markdown]
# Stuck? `hint("unigram_viterbi")` gives a nudge and `hint("unigram_viterbi", 2)` a stronger one (after `from course_utils.checks import hint`); neither gives the code.
#
# Training, in miniature. The candidates are every substring (up to 5 letters) of the worked corpus.
#
# * **Fit:** split the words so that the whole corpus is as probable as possible, and give each piece
#   its share of all uses. A piece no split uses gets probability 0 (there is no smoothing).
# * **Prune:** for each multi-letter piece, measure how much the corpus log-likelihood drops if it is
#   removed and the words are split again; remove the cheapest, fit again, repeat.
#
# Single letters always stay, so every word can still be split. A smaller vocabulary has fewer ways to
# split each word, so the likelihood can only go down; a piece that no word uses costs nothing, so
# those go first. Below, one piece goes per round, all the way down to the letters:

# %%
from course_utils.viz.tokenisation import plot_pruning

candidates = unigram.candidate_pieces(bpe.WORKED_CORPUS)
letters = {ch for word in bpe.WORKED_CORPUS for ch in word}
final, history = unigram.prune(bpe.WORKED_CORPUS, candidates, target_size=len(letters), drop=0)
start = history[0].log_likelihood
n_free = sum(1 for r in history[1:] if r.log_likelihood > start - 1e-9)  # removals that cost nothing
print(f"{history[0].size} candidates, fitted: corpus log-likelihood {start:.2f}")
print(f"the first {n_free} removals cost nothing; {sum(bool(r.unused) for r in history[1:])} of them were pieces no word used")
for r in history[1 + n_free:]:
    print(f"remove {r.removed[0]!r:8} -> {r.size} pieces, log-likelihood {r.log_likelihood:.2f}")
fig = plot_pruning(history)

# %% [markdown]
# A removal that costs nothing either takes a piece no word uses, or one whose words have another
# split that is just as good. Stop just before the first removal that costs anything, and every
# multi-letter piece left is in use; only letters can be unused. A word never seen in training falls
# back on them:

# %%
kept, _ = unigram.prune(bpe.WORKED_CORPUS, candidates, target_size=history[n_free].size, drop=0)
splits = unigram.segment(bpe.WORKED_CORPUS, kept)
uses = unigram.usage(bpe.WORKED_CORPUS, splits)
print(splits)
print("multi-letter pieces and their uses:", {p: uses[p] for p in kept if len(p) > 1})
print("lowest ->", unigram.segment({"lowest": 1}, kept)["lowest"])

# %% [markdown]
# | algorithm | builds its vocabulary by | used by |
# |---|---|---|
# | BPE (usually on bytes) | merging the most frequent pair | GPT-2 and later GPTs, Llama 3 |
# | WordPiece | merging the highest-scoring pair | BERT and relatives |
# | Unigram | removing the least useful pieces of a large set | T5 (through SentencePiece) |
#
# SentencePiece is a library, not a fourth algorithm: it runs BPE or Unigram on raw text and treats
# the space as an ordinary symbol `▁`, which suits languages written without spaces.
#
# ## 6 · Special tokens, and a frozen tokenizer
#
# Besides text pieces, a vocabulary reserves a few **special tokens** that mark structure. They get
# ids and embedding rows like any token, but splitting ordinary text never produces them: the code
# that prepares the input inserts them. The course tokenizer reserved its last six ids:

# %%
roles = {"<|bos|>": "start of sequence ([BOS], <s>, <|begin_of_text|>)",
         "<|eos|>": "end of sequence; generating it stops ([EOS], </s>, <|endoftext|>)",
         "<|pad|>": "filler that makes a batch's rows equally long ([PAD])",
         "<|mask|>": "a hidden token an encoder must predict ([MASK], BERT)",
         "<|im_start|>": "opens a chat message, followed by its role",
         "<|im_end|>": "closes a chat message"}
for token, tid in course_bpe.special_tokens.items():
    print(f"{tid:5d}  {token:<13} {roles[token]}")
print("GPT-2's only special token:", real.special_tokens("gpt2"))

# %%
chat = "<|im_start|>user\nWho's there?<|im_end|>"
print("as special tokens:", course_bpe.encode(chat, allowed_special="all"))
print("as plain text:    ", course_bpe.encode(chat))

# %% [markdown]
# `[UNK]` is missing on purpose: a byte-level tokenizer never needs it. `[CLS]` and `[SEP]`
# (BERT's summary position and segment separator) belong to encoder models, which this course
# does not train.
#
# **Frozen.** The tokenizer is trained first, on its own (counting and merging, no gradients), and
# then never changes: the model's embedding table has one row per id, so the id of a piece must mean
# the same row in training and in use. Hand the same ids to a different tokenizer and they point to
# different pieces:

# %%
ids = course_bpe.encode("Now is the winter of our discontent")
print("course BPE reads them as:", repr(course_bpe.decode(ids)))
print("GPT-2 reads them as:     ", repr(gpt2.decode(ids)))

# %% [markdown]
# ## 7 · Real tokenizers, offline
#
# The course loads three published vocabularies from files inside installed packages, checks each
# file's SHA-256 against the hash OpenAI publishes, and builds both its own readable tokenizer
# (`real.load`) and tiktoken's fast one (`real.tiktoken_encoding`) from them. Nothing is downloaded.
# A test checks that the two give identical ids on the whole corpus and on a set of unicode,
# whitespace and emoji edge cases.

# %%
tokenizers = {name: real.load(name) for name in real.NAMES}  # the course's readable tokenizer
fast = {name: real.tiktoken_encoding(name) for name in real.NAMES}  # tiktoken, built from the same files
for name, tok in tokenizers.items():
    print(f"{name:12s} d_vocab = {tok.n_vocab:,}  ({len(tok.ranks):,} ordinary tokens + {len(tok.special_tokens)} special)")
print(f"GPT-2 learned {len(tokenizers['gpt2'].ranks) - 256:,} merges on top of the 256 bytes")

# %% [markdown]
# Vocabularies keep growing. Llama 3 did not start from scratch: Meta kept the 100k ordinary tokens
# of cl100k_base, added about 28k more (mostly for languages other than English) and reserved a
# block of special tokens. Its tokenizer file is not shipped with the course, so the size below is the
# one in the model's published configuration. GPT-4o's o200k_base, loaded above, roughly doubles
# cl100k again. A bigger vocabulary makes texts shorter in tokens, at the price of a bigger embedding
# table: one row of `W_E` per token (notebook 02).

# %%
sizes = {name: tok.n_vocab for name, tok in tokenizers.items()}
sizes["Llama 3 (published size)"] = real.LLAMA3_VOCAB_SIZE
for name, n in sorted(sizes.items(), key=lambda kv: kv[1]):
    print(f"{name:25s} d_vocab = {n:>7,}  ({n / sizes['gpt2']:.1f} x GPT-2)")
added = real.LLAMA3_VOCAB_SIZE - real.LLAMA3_SPECIAL_TOKENS - len(tokenizers["cl100k_base"].ranks)
print(f"Llama 3 = cl100k's {len(tokenizers['cl100k_base'].ranks):,} + {added:,} new tokens + {real.LLAMA3_SPECIAL_TOKENS} special")

# %% [markdown]
# **How a rank file encodes.** A published tokenizer file is a table from each token's bytes to its
# **rank**: the 256 single bytes first, then every merged token in the order its merge was learned
# (the rank is also the token's id). Encoding a chunk needs nothing else: start from its single
# bytes, and repeatedly join the neighbouring pair whose joined bytes have the **lowest rank** (the
# earliest merge), taking the leftmost pair if two are equal; stop when no neighbouring pair forms a
# token. That gives the same tokens as replaying the merges in training order.
#
# ### Exercise: encoding with a rank file (3 points, difficulty 2/3, about 15 min)
#
# Write `encode_chunk(piece, ranks)`: `piece` is one chunk's UTF-8 bytes and `ranks` maps token bytes
# to ranks (GPT-2's, below); return the list of ids (ints). The check cuts whole texts into GPT-2
# chunks, encodes each with your function and compares the ids with the reference, which a test
# holds equal to tiktoken's on every one of the check's texts.

# %%
gpt2_ranks = real.ranks("gpt2")  # {token bytes: rank}, from GPT-2's files shipped in a package


def encode_chunk(piece: bytes, ranks: dict) -> list:
    # b"tokenisation" with GPT-2's ranks -> [30001, 5612]
    # BEGIN SOLUTION
    parts = [piece[i:i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        best, where = None, -1
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best is None or rank < best):
                best, where = rank, i
        if best is None:
            break
        parts[where:where + 2] = [parts[where] + parts[where + 1]]
    return [ranks[p] for p in parts]
    # END SOLUTION


# %%
from course_utils.checks.tokenisation import check_byte_bpe_encode

check_byte_bpe_encode(encode_chunk)

# %% [markdown]
# Stuck? `hint("byte_bpe_encode")` gives a nudge and `hint("byte_bpe_encode", 2)` a stronger one (after `from course_utils.checks import hint`); neither gives the code.
#
# The course's reference does exactly this, and tiktoken (written in Rust) agrees with it id for id:

# %%
from course_utils.tokenisation.byte_bpe import encode_chunk_with_ranks

for chunk in [b" Shakespeare", b" antidisestablishmentarianism"]:
    ids = encode_chunk_with_ranks(chunk, gpt2_ranks)
    print(chunk, "->", [gpt2.decode([i]) for i in ids], ids, "| tiktoken:", fast["gpt2"].encode_ordinary(chunk.decode()))

# %%
for text in ["tokenisation", "strawberry", " strawberry", "cat", " cat"]:
    for name, tok in tokenizers.items():
        ids = tok.encode(text)
        print(f"{text!r:15} {name:12s} {[tok.decode([i]) for i in ids]} {ids}")
    print()

# %% [markdown]
# * `" cat"` and `"cat"` are different tokens with unrelated ids: the leading space is part of the
#   token.
# * `strawberry` is one chunk (the pre-tokeniser never splits a run of letters), and BPE cuts that
#   chunk into the tokens printed above; with its leading space it is a single token. Either way the
#   model never sees ten letters, which is one reason language models stumble when asked to count its
#   r's.
#
# How much text does a token carry? A common rule of thumb for English is about 0.75 words per
# token. Measured on the course corpus (words = whitespace-separated pieces; fast tiktoken
# encoders, same ids as ours):

# %%
from course_utils.tokenisation.course import words_per_token

slice_ = corpus[:500_000]
for name in real.NAMES:
    assert tokenizers[name].encode_ordinary(slice_) == fast[name].encode_ordinary(slice_)
counts = {name: len(fast[name].encode_ordinary(corpus)) for name in real.NAMES}
counts["course BPE"] = len(course_bpe.encode(corpus))
n_words = len(corpus.split())
for name, n in counts.items():
    print(f"{name:12s} {n:>9,} tokens  {words_per_token(corpus, n):.3f} words per token")
print("every ratio below the rule of thumb 0.75:", all(words_per_token(corpus, n) < 0.75 for n in counts.values()))

# %% [markdown]
# Shakespeare's short lines, old spellings and speaker names cost more tokens than modern prose, so
# the ratio lands below the 0.75 rule of thumb for the GPT vocabularies; the course's own 2,048-id
# vocabulary, though trained on this very text, is far smaller and needs more tokens still.
#
# ## 8 · Try it yourself
#
# Type anything and switch tokenizers: each coloured piece is one token (hover for its id).

# %%
from course_utils.viz.tokenisation import tokenizer_widget

tokenizer_widget(course_bpe)

# %% [markdown]
# ## Summary
#
# * Subword tokenizers balance vocabulary size against sequence length; starting from bytes means
#   no text is ever unknown.
# * BPE merges the most frequent pair, over and over; encoding replays the merges in order.
# * WordPiece ranks pairs by count(ab)/(count(a)·count(b)); Unigram prunes a big vocabulary and
#   encodes with a Viterbi search.
# * Special tokens mark structure; the tokenizer is frozen before the model is trained.
#
# Next, **02 · embeddings & positions**: each id picks a row of $W_E$.
