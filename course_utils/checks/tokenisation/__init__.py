"""Checks for notebook 01 (tokenisation), one file per exercise, in the notebook's order:

- ``bpe_count_pairs``: ``count_pairs(words)``, neighbouring-pair counts weighted by word count;
- ``bpe_merge_pair``: ``merge_pair(words, pair)``, every left-to-right occurrence joined, counts added;
- ``bpe_train``: ``train_bpe(word_counts, n_merges)``, the classic loop with the stated tie-break;
- ``bpe_encode_word``: ``encode_word(word, merges)``, the learned merges replayed in order;
- ``bpe_decode``: ``decode_ids(ids, vocab)``, pieces glued, ``'</w>'`` becomes a space;
- ``byte_bpe_train``: ``learn_byte_merges(text, n_merges)``, the loop on UTF-8 bytes of GPT-2 chunks;
- ``wordpiece_score``: ``wordpiece_score(words, pair)``, count(ab) / (count(a) x count(b));
- ``unigram_viterbi``: ``viterbi_segment(word, probs)``, the most probable split (ties both pass);
- ``byte_bpe_encode``: ``encode_chunk(piece, ranks)``, merge by rank with GPT-2's ranks (checked
  against tiktoken through the reference).

``_cases`` holds the corpora and the join helper that several exercises share.
"""

from course_utils.checks.tokenisation.bpe_count_pairs import COUNT_PAIRS, check_bpe_count_pairs
from course_utils.checks.tokenisation.bpe_decode import DECODE_IDS, check_bpe_decode
from course_utils.checks.tokenisation.bpe_encode_word import ENCODE_WORD, check_bpe_encode_word
from course_utils.checks.tokenisation.bpe_merge_pair import MERGE_PAIR, check_bpe_merge_pair
from course_utils.checks.tokenisation.bpe_train import TRAIN_BPE, check_bpe_train
from course_utils.checks.tokenisation.byte_bpe_encode import BYTE_ENCODE, check_byte_bpe_encode
from course_utils.checks.tokenisation.byte_bpe_train import BYTE_TRAIN, check_byte_bpe_train
from course_utils.checks.tokenisation.unigram_viterbi import VITERBI, check_unigram_viterbi
from course_utils.checks.tokenisation.wordpiece_score import WORDPIECE_SCORE, check_wordpiece_score

EXERCISES = {
    ex.name: ex
    for ex in (
        COUNT_PAIRS,
        MERGE_PAIR,
        TRAIN_BPE,
        ENCODE_WORD,
        DECODE_IDS,
        BYTE_TRAIN,
        WORDPIECE_SCORE,
        VITERBI,
        BYTE_ENCODE,
    )
}

__all__ = [
    "BYTE_ENCODE",
    "BYTE_TRAIN",
    "COUNT_PAIRS",
    "DECODE_IDS",
    "ENCODE_WORD",
    "EXERCISES",
    "MERGE_PAIR",
    "TRAIN_BPE",
    "VITERBI",
    "WORDPIECE_SCORE",
    "check_bpe_count_pairs",
    "check_bpe_decode",
    "check_bpe_encode_word",
    "check_bpe_merge_pair",
    "check_bpe_train",
    "check_byte_bpe_encode",
    "check_byte_bpe_train",
    "check_unigram_viterbi",
    "check_wordpiece_score",
]
