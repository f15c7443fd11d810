"""Checks for notebook 01 (tokenisation): classic BPE, WordPiece and Unigram, then byte-level BPE.

The classic checks run the student's function on the worked corpus (low x5, lower x2, newest x6,
widest x3) and on seeded random corpora over a small alphabet, compare with the reference in
``course_utils.tokenisation``, and name the likely mistake. The byte-level checks compare the
training loop's merges with the course trainer's on slices of the corpus, and the encoder's ids
with tiktoken's (through the reference, which a test holds equal to tiktoken on every case).
Inputs, mistakes and alternatives live in ``_tokenisation_banks``, ``_tokenisation_alternatives``
and ``_byte_bpe_banks``.
"""

from __future__ import annotations

import math

from course_utils.checks.core import Alternative, Case, Exercise, Mistake
from course_utils.checks import _byte_bpe_banks as byte_bank
from course_utils.checks import _tokenisation_alternatives as alt
from course_utils.checks import _tokenisation_banks as bank
from course_utils.tokenisation.bpe import EOW, count_pairs, decode_ids, encode_word, merge_pair, split_corpus, train_bpe
from course_utils.tokenisation.byte_bpe import encode_chunk_with_ranks
from course_utils.tokenisation.unigram import viterbi_segment
from course_utils.tokenisation.wordpiece import wordpiece_score

TIE_BREAK = "among pairs with the same count, merge the smallest pair (min over (-count, pair))"
BYTE_TIE_BREAK = "among pairs with the same count, merge the smallest pair of ids (min over (-count, (left, right)))"


# -- 1. pair counting ----------------------------------------------------------------------------
COUNT_PAIRS = Exercise(
    name="bpe_count_pairs",
    reference=count_pairs,
    cases=lambda seed: [Case(label, (split_corpus(wc),)) for label, wc in bank.corpora(seed)],
    mistakes=[
        Mistake(
            "unweighted",
            bank.pairs_unweighted,
            "each word's pairs must be counted as many times as the word occurs: add its count, not 1",
        ),
        Mistake(
            "once per word",
            bank.pairs_once_per_word,
            "a pair that occurs twice in one word (a a a a) counts twice: don't use a set of pairs",
        ),
        Mistake(
            "skips the last pair",
            bank.pairs_skip_last,
            "the last pair of each word (the one ending in '</w>') is missing: "
            "every adjacent pair counts, up to the last two symbols",
        ),
    ],
    alternatives=[
        Alternative("itertools.pairwise into a Counter", alt.pairs_with_pairwise),
        Alternative("index loop into a defaultdict", alt.pairs_by_index),
        Alternative("sum of Counters", alt.pairs_by_summing_counters),
    ],
    hints=[
        "Visit every word with its count, and inside it every pair of neighbouring symbols; each "
        "pair you see adds the word's count (not 1) to that pair's total.",
        "A word of n symbols has n - 1 neighbouring pairs, and the same pair may occur twice in one "
        "word (a a a has two). Zipping the symbols with themselves shifted by one gives all of them.",
    ],
    tolerance="exact",
)


# -- 2. one merge --------------------------------------------------------------------------------
MERGE_PAIR = Exercise(
    name="bpe_merge_pair",
    reference=merge_pair,
    cases=bank.merge_cases,
    mistakes=[
        Mistake(
            "first occurrence only",
            bank.merge_first_only,
            "only the first occurrence in each word was merged: keep scanning after a merge",
        ),
        Mistake(
            "right to left",
            bank.merge_right_to_left,
            "overlapping matches (a a a) must be merged left to right: ('aa', 'a'), not ('a', 'aa')",
        ),
        Mistake(
            "overwrites counts",
            bank.merge_overwrites,
            "two words that become the same symbols must have their counts added, not overwritten",
        ),
    ],
    alternatives=[
        Alternative("regex on space-joined symbols (Sennrich et al.)", alt.merge_with_regex),
        Alternative("a stack of output symbols", alt.merge_with_a_stack),
        Alternative("recursion", alt.merge_recursively),
    ],
    hints=[
        "Build each word again from left to right: wherever the two symbols of the pair stand side "
        "by side, emit their concatenation and skip both; otherwise copy one symbol.",
        "After a join, carry on scanning after the second symbol (a a a gives aa a), and add the "
        "count into the result, because two different words can end up as the same tuple.",
    ],
    tolerance="exact",
)


# -- 3. the training loop ------------------------------------------------------------------------
TRAIN_BPE = Exercise(
    name="bpe_train",
    reference=train_bpe,
    cases=lambda seed: [
        Case(f"{label}, {n} merges", (wc, n)) for (label, wc), n in zip(bank.corpora(seed), (5, 3, 6, 8))
    ],
    mistakes=[
        Mistake(
            "unweighted",
            lambda wc, n: bank.train_with(wc, n, bank.smallest_tie, weighted=False),
            "pairs must be counted with each word's frequency (low x5 counts 5 times)",
        ),
        Mistake(
            "no recount",
            lambda wc, n: bank.train_with(wc, n, bank.smallest_tie, recount=False),
            "recount the pairs after every merge: merging changes which pairs exist",
        ),
        Mistake(
            "tie-break",
            lambda wc, n: bank.train_with(wc, n, bank.first_seen_tie),
            f"tie-break rule: {TIE_BREAK}, not the first one seen",
        ),
    ],
    alternatives=[
        Alternative("sort the pairs, take the first", alt.train_sorting_pairs),
        Alternative("top count, then the smallest of the tied", alt.train_top_count_then_smallest),
        Alternative("from scratch, no course helpers", alt.train_from_scratch),
    ],
    hints=[
        "Each round: count the pairs of the current corpus, choose one by the tie-break rule stated "
        "above the exercise, merge it everywhere, and remember it. Stop early when no pair is left.",
        "The choice needs the highest count first and, among equal counts, the smallest pair: one "
        "key that sorts by minus the count, then by the pair itself, does both at once.",
    ],
    tolerance="exact",
)


# -- 4. encoding ---------------------------------------------------------------------------------
ENCODE_WORD = Exercise(
    name="bpe_encode_word",
    reference=encode_word,
    cases=bank.encode_cases,
    mistakes=[
        Mistake(
            "no end marker",
            bank.encode_no_eow,
            "start from the characters plus '</w>': merges like ('est', '</w>') need the end marker",
        ),
        Mistake(
            "reversed order",
            bank.encode_reversed,
            "replay the merges in the order they were learned (first merge first)",
        ),
        Mistake(
            "first occurrence only",
            bank.encode_first_only,
            "each merge must join every occurrence in the word, not only the first",
        ),
    ],
    alternatives=[
        Alternative("lowest rank first, GPT-2 style", alt.encode_lowest_rank_first),
        Alternative("regex on the space-joined symbols", alt.encode_with_regex),
        Alternative("merge_pair on a one-word corpus", alt.encode_with_merge_pair),
    ],
    hints=[
        "Start from the word's characters followed by the end-of-word marker, exactly as in training.",
        "Go through the learned merges in their order; each one joins every left-to-right "
        "occurrence of its pair in the current symbols, the same join as in the merge exercise.",
    ],
    tolerance="exact",
)


# -- 5. decoding ---------------------------------------------------------------------------------
DECODE_IDS = Exercise(
    name="bpe_decode",
    reference=decode_ids,
    cases=bank.decode_cases,
    mistakes=[
        Mistake(
            "drops </w>",
            lambda ids, vocab: "".join(vocab[i] for i in ids).replace(EOW, ""),
            "'</w>' marks the end of a word: turn it into a space, don't delete it",
        ),
        Mistake(
            "spaces between pieces",
            lambda ids, vocab: " ".join(vocab[i] for i in ids).replace(EOW, " "),
            "glue the pieces directly (''.join): spaces come only from '</w>'",
        ),
        Mistake(
            "strips the last space",
            lambda ids, vocab: decode_ids(ids, vocab).rstrip(" "),
            "keep the final space: the last '</w>' decodes to ' ' too ('lowest ')",
        ),
    ],
    alternatives=[
        Alternative("piece by piece", alt.decode_piece_by_piece),
        Alternative("map and join", alt.decode_with_map),
        Alternative("regex substitution", alt.decode_with_regex),
    ],
    hints=[
        "Each id is a position in the vocabulary list: look every id up to get its piece.",
        "Glue the pieces together with nothing in between; the end-of-word marker is what becomes "
        "a space, the last one included.",
    ],
    tolerance="exact",
)


# -- 6. WordPiece score --------------------------------------------------------------------------
WORDPIECE_SCORE = Exercise(
    name="wordpiece_score",
    reference=wordpiece_score,
    cases=bank.score_cases,
    mistakes=[
        Mistake(
            "raw count", bank.score_raw_count, "that is BPE's criterion: divide the pair count by count(a) x count(b)"
        ),
        Mistake("sum", bank.score_sum, "divide by the product count(a) x count(b), not the sum"),
        Mistake(
            "unweighted",
            bank.score_unweighted,
            "count symbols and pairs with each word's frequency (newest x6 contributes 6)",
        ),
    ],
    alternatives=[
        Alternative("two Counters", alt.score_with_counters),
        Alternative("an exact Fraction", alt.score_as_fraction),
        Alternative("through logarithms", alt.score_in_logs),
    ],
    hints=[
        "You need three weighted counts: how often the pair occurs, and how often each of its two "
        "symbols occurs on its own anywhere in the corpus.",
        "Count single symbols the way the pairs are counted, each occurrence adding its word's "
        "count; then divide the pair's count by the product of the two symbol counts (0 if the "
        "pair never occurs).",
    ],
    tolerance="float32",
)


# -- 7. Viterbi for Unigram ----------------------------------------------------------------------
def _run_viterbi(fn, case: Case):
    """The student's split, or the reference's when the two are equally probable (ties such as
    bb.bbb and bbb.bb are both right), so only a less probable or invalid split fails."""
    word, probs = case.args
    pieces = list(fn(word, probs))
    best = viterbi_segment(word, probs)
    valid = "".join(map(str, pieces)) == word and all(p in probs for p in pieces)
    if valid and math.isclose(
        sum(math.log(probs[p]) for p in pieces), sum(math.log(probs[p]) for p in best), rel_tol=1e-9
    ):
        return best
    return pieces


VITERBI = Exercise(
    name="unigram_viterbi",
    reference=viterbi_segment,
    cases=bank.viterbi_cases,
    run=_run_viterbi,
    mistakes=[
        Mistake(
            "greedy",
            bank.greedy_longest,
            "taking the longest piece first is greedy: compare every split point with dynamic programming",
        ),
        Mistake(
            "sum",
            bank.max_sum,
            "a split's probability is the product of its pieces' probabilities (add log-probabilities), not their sum",
        ),
        Mistake(
            "weakest piece",
            bank.max_single_piece,
            "score the whole split (sum of log-probabilities), not only its least likely piece",
        ),
    ],
    alternatives=[
        Alternative("products instead of logs, whole splits stored", alt.viterbi_with_products),
        Alternative("memoised recursion over suffixes", alt.viterbi_top_down),
        Alternative("backwards, with costs", alt.viterbi_backwards),
    ],
    hints=[
        "Solve every prefix of the word once: the best split of the first i letters is some best "
        "split of a shorter prefix plus one vocabulary piece that ends at letter i.",
        "Keep two arrays: the best log-probability of each prefix (0 for the empty one, minus "
        "infinity elsewhere) and where its last piece starts; fill them left to right, then walk "
        "back from the end to read off the pieces.",
    ],
    tolerance="exact",
)


# -- 8. the byte-level training loop -------------------------------------------------------------
BYTE_TRAIN = Exercise(
    name="byte_bpe_train",
    reference=byte_bank.learn_byte_merges,
    cases=byte_bank.train_cases,
    mistakes=[
        Mistake(
            "no pre-tokenisation",
            byte_bank.train_no_pretokenisation,
            "cut the text into GPT-2 chunks first (chunk_counts): merges never cross a chunk boundary",
        ),
        Mistake(
            "unweighted",
            byte_bank.train_unweighted,
            "weight each distinct chunk by how often it occurs (chunk_counts gives the counts)",
        ),
        Mistake(
            "tie-break", byte_bank.train_first_seen_tie, f"tie-break rule: {BYTE_TIE_BREAK}, not the first pair seen"
        ),
        Mistake(
            "first occurrence only",
            byte_bank.train_first_occurrence_only,
            "each merge must replace every occurrence of the pair in every chunk, not only the first",
        ),
        Mistake(
            "characters, not bytes",
            byte_bank.train_on_code_points,
            "start from the UTF-8 bytes of each chunk (chunk.encode('utf-8')), not from its characters' code points",
        ),
    ],
    alternatives=[
        Alternative("every chunk occurrence, weight 1", byte_bank.train_every_occurrence),
        Alternative("bytes pieces with a bytes -> id table", byte_bank.train_on_bytes_objects),
        Alternative("max over (count, -left, -right)", byte_bank.train_sorted_max),
    ],
    hints=[
        "It is the classic training loop again, with three changes: the words are the text's GPT-2 "
        "chunks with their counts, the symbols are the ids of their UTF-8 bytes, and the k-th merge "
        "gets the new id 256 + k.",
        "Store each distinct chunk once as a tuple of ids with its count; each round count the "
        "weighted pairs, choose by the stated tie-break rule on id pairs, record the pair and "
        "replace it with the new id in every chunk.",
    ],
    tolerance="exact",
)

# -- 9. the encoder's merge-by-rank loop ---------------------------------------------------------
BYTE_ENCODE = Exercise(
    name="byte_bpe_encode",
    reference=encode_chunk_with_ranks,
    function_name="encode_chunk",
    cases=byte_bank.encode_cases,
    run=byte_bank.encode_with,
    mistakes=[
        Mistake(
            "longest match",
            byte_bank.encode_greedy_longest,
            "byte-level BPE does not take the longest known prefix: "
            "repeat 'join the lowest-rank pair' until none is left",
        ),
        Mistake(
            "leftmost pair",
            byte_bank.encode_leftmost_known_pair,
            "join the pair with the lowest rank anywhere in the chunk, "
            "not the first pair (from the left) that is a token",
        ),
        Mistake(
            "highest rank",
            byte_bank.encode_highest_rank_first,
            "a lower rank means an earlier merge: join the pair with the smallest rank first",
        ),
        Mistake(
            "byte values as ids",
            byte_bank.encode_byte_values,
            "every id is a rank, single bytes included: GPT-2's id of a lone byte is ranks[bytes([b])], not b",
        ),
    ],
    alternatives=[
        Alternative("join every occurrence of the best pair", byte_bank.encode_merge_all_occurrences),
        Alternative("recursion", byte_bank.encode_recursive),
        Alternative("ids with a decoder", byte_bank.encode_on_ids),
    ],
    hints=[
        "Start from the chunk's single bytes. A pair of neighbours can be joined when their "
        "concatenated bytes are a key of ranks; its rank says how early that merge was learned.",
        "Repeat: among all neighbouring pairs that are tokens, join the one with the smallest rank "
        "(the leftmost if two are equal); stop when no pair is a token, then look up every part's rank.",
    ],
    tolerance="exact",
)

EXERCISES = {
    ex.name: ex
    for ex in (
        COUNT_PAIRS,
        MERGE_PAIR,
        TRAIN_BPE,
        ENCODE_WORD,
        DECODE_IDS,
        WORDPIECE_SCORE,
        VITERBI,
        BYTE_TRAIN,
        BYTE_ENCODE,
    )
}


def check_bpe_count_pairs(fn):
    """Check ``count_pairs(words)``."""
    return COUNT_PAIRS.check(fn)


def check_bpe_merge_pair(fn):
    """Check ``merge_pair(words, pair)``."""
    return MERGE_PAIR.check(fn)


def check_bpe_train(fn):
    """Check ``train_bpe(word_counts, n_merges)``."""
    return TRAIN_BPE.check(fn)


def check_bpe_encode_word(fn):
    """Check ``encode_word(word, merges)``."""
    return ENCODE_WORD.check(fn)


def check_bpe_decode(fn):
    """Check ``decode_ids(ids, vocab)``."""
    return DECODE_IDS.check(fn)


def check_wordpiece_score(fn):
    """Check ``wordpiece_score(words, pair)``."""
    return WORDPIECE_SCORE.check(fn)


def check_unigram_viterbi(fn):
    """Check ``viterbi_segment(word, probs)``."""
    return VITERBI.check(fn)


def check_byte_bpe_train(fn):
    """Check ``learn_byte_merges(text, n_merges)``."""
    return BYTE_TRAIN.check(fn)


def check_byte_bpe_encode(fn):
    """Check ``encode_chunk(piece, ranks)``."""
    return BYTE_ENCODE.check(fn)
