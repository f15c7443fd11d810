"""Tokenisation for the course (notebook 01): classic BPE, byte-level BPE, WordPiece, Unigram,
and offline loaders for GPT-2, cl100k_base and o200k_base. Nothing runs at import."""
