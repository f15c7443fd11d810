"""Tokenisation, notebook 01: classic BPE, byte-level BPE, WordPiece, Unigram, and offline loaders for
GPT-2, cl100k_base and o200k_base. Nothing runs at import.

Modules:

- ``bpe``: classic BPE, by hand
- ``byte_bpe``: the byte-level BPE tokenizer
- ``trainer``: training byte-level BPE
- ``pretokenise``: the split patterns before BPE
- ``specials``: special tokens, kept whole
- ``streaming``: encoding an iterable of text lazily
- ``course``: the course's own tokenizer
- ``real``: GPT-2, cl100k_base and o200k_base offline
- ``rankfiles``: reading and writing rank files
- ``wordpiece``: WordPiece
- ``unigram``: Unigram

Their public names are importable from the package itself (``from course_utils.tokenisation import ...``),
loaded when first used (lazy_loader), so importing the package costs nothing.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "bpe": [
            "EOW", "WORKED_CORPUS", "Words", "split_word", "split_corpus", "count_pairs", "merge_pair", "join_pair",
            "best_pair", "train_bpe", "training_steps", "encode_word", "build_vocab", "decode_ids",
        ],
        "byte_bpe": ["FILE_FORMAT", "CACHE_SIZE", "encode_chunk_with_ranks", "ByteBPETokenizer"],
        "trainer": ["chunk_counts", "learn_merges_naive", "learn_merges", "train_byte_bpe"],
        "pretokenise": ["GPT2_PATTERN", "CL100K_PATTERN", "O200K_PATTERN", "compiled", "byte_to_printable", "visible"],
        "specials": ["check_special_tokens", "special_pattern", "split_specials"],
        "streaming": ["STREAMABLE_PATTERNS", "BLOCK", "last_cut", "encode_iterable"],
        "course": [
            "COURSE_VOCAB_SIZE", "SPECIAL_TOKENS", "CHOICES", "course_tokenizer", "show_bytes", "split_for_display",
            "words_per_token",
        ],
        "real": [
            "FIM", "SPECS", "NAMES", "LLAMA3_VOCAB_SIZE", "LLAMA3_SPECIAL_TOKENS", "data_files", "ranks",
            "special_tokens", "tiktoken_encoding",
        ],
        "rankfiles": ["parse_tiktoken", "load_tiktoken_file", "load_gpt2_files", "dump_tiktoken"],
        "wordpiece": ["count_symbols", "wordpiece_score", "wordpiece_scores", "train_wordpiece", "wordpiece_tokenize"],
        "unigram": [
            "split_probability", "all_splits", "viterbi_segment", "best_split", "candidate_pieces", "MAX_WORD_LENGTH",
            "UNUSED_LOG_PROB", "PruneRound", "segment", "usage", "segmentation_log_likelihood", "fit", "removal_loss",
            "prune",
        ],
    },
)
