"""A byte-level BPE tokenizer (the GPT-2 / tiktoken kind), readable and exact.

Text is cut into chunks by a split pattern; each chunk's UTF-8 bytes start as single-byte tokens
and the adjacent pair whose concatenation has the lowest rank is merged until no merge applies
(ties: the leftmost pair). With GPT-2's, cl100k_base's or o200k_base's ranks the ids equal
tiktoken's (tests/test_tokenisation_oracle.py). Each distinct chunk is encoded once and cached (up to
``CACHE_SIZE`` chunks: a text with more empties the cache and starts again, so a stream's memory stays bounded).

Covers: train (via ``trainer.py``), encode, decode, special tokens (checked and split by ``specials.py``),
encoding a stream of text (``encode_iterable``, via ``streaming.py``), save/load, loading rank files.
Leaves out: speed tricks beyond the chunk cache, and streaming decoders.
Decoding invalid UTF-8 (e.g. half an emoji) gives U+FFFD, the replacement character;
``decode_bytes`` returns the raw bytes instead.
"""

from __future__ import annotations

import json
from pathlib import Path

from course_utils.tokenisation import rankfiles
from course_utils.tokenisation.pretokenise import GPT2_PATTERN, compiled
from course_utils.tokenisation.specials import check_special_tokens, split_specials

FILE_FORMAT = "course-byte-bpe/1"  # the "format" field of a file written by ByteBPETokenizer.save
CACHE_SIZE = 1 << 17  # distinct chunks kept encoded (the 5 MB corpus has far fewer)


def encode_chunk_with_ranks(piece: bytes, ranks: dict[bytes, int]) -> list[int]:
    """Ids of one chunk by merge-by-rank: start from single bytes, repeatedly join the adjacent pair
    whose concatenation has the lowest rank (the leftmost on a tie), until no pair is a token.
    With GPT-2's ranks ``b"tokenisation"`` -> ``[30001, 5612]`` (``token`` + ``isation``)."""
    if piece in ranks:
        return [ranks[piece]]
    parts = [piece[i : i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        best, where = None, -1
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best is None or rank < best):
                best, where = rank, i
        if best is None:
            break
        parts[where : where + 2] = [parts[where] + parts[where + 1]]
    return [ranks[p] for p in parts]


class ByteBPETokenizer:
    """``tok = ByteBPETokenizer(ranks, GPT2_PATTERN)``; ``tok.decode(tok.encode("hi")) == "hi"``."""

    def __init__(
        self,
        ranks: dict[bytes, int],
        pattern: str = GPT2_PATTERN,
        special_tokens: dict[str, int] | None = None,
        name: str = "byte-bpe",
    ):
        if not isinstance(ranks, dict):
            raise TypeError(f"ranks must be a dict of bytes -> int, got {type(ranks).__name__}")
        missing = [b for b in range(256) if bytes([b]) not in ranks]
        if missing:
            raise ValueError(f"ranks must contain all 256 single bytes; missing {len(missing)}, e.g. byte {missing[0]}")
        self.ranks = dict(ranks)
        self.pattern = pattern
        self.name = name
        self.special_tokens = dict(special_tokens or {})
        check_special_tokens(list(self.special_tokens), "special_tokens' keys")
        bad = [(s, i) for s, i in self.special_tokens.items() if not isinstance(i, int) or isinstance(i, bool) or i < 0]
        if bad or len(set(self.special_tokens.values())) != len(self.special_tokens):
            raise ValueError("special_tokens must map each token to its own non-negative int id, "
                             f"got {bad or special_tokens}")
        self.decoder = {rank: tok for tok, rank in self.ranks.items()}
        if len(self.decoder) != len(self.ranks):
            raise ValueError("ranks: two tokens share one rank")
        clash = set(self.special_tokens.values()) & set(self.decoder)
        if clash:
            raise ValueError(f"special_tokens: ids {sorted(clash)[:5]} are already ordinary tokens")
        self.special_decoder = {i: s.encode("utf-8") for s, i in self.special_tokens.items()}
        self._split = compiled(pattern)
        self._cache: dict[bytes, tuple[int, ...]] = {}

    # -- sizes ----------------------------------------------------------------------------------
    @property
    def n_vocab(self) -> int:
        """One more than the largest id (ordinary or special): GPT-2 -> 50257."""
        return max([*self.decoder, *self.special_decoder]) + 1

    # -- encoding -------------------------------------------------------------------------------
    def encode_chunk(self, piece: bytes) -> tuple[int, ...]:
        """Ids of one pre-tokenised chunk: with GPT-2's ranks ``b"tokenisation"`` -> ``(30001, 5612)``."""
        ids = self._cache.get(piece)
        if ids is None:
            if len(self._cache) >= CACHE_SIZE:
                self._cache.clear()
            ids = self._cache[piece] = self._merge(piece)
        return ids

    def _merge(self, piece: bytes) -> tuple[int, ...]:
        return tuple(encode_chunk_with_ranks(piece, self.ranks))

    def encode_ordinary(self, text: str) -> list[int]:
        """Ids of ``text``, treating special-token strings as plain text."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        out: list[int] = []
        for chunk in self._split.findall(text):
            out.extend(self.encode_chunk(chunk.encode("utf-8")))
        return out

    def encode(self, text: str, allowed_special="none") -> list[int]:
        """Ids of ``text``; special-token strings listed in ``allowed_special`` ("all", "none" or a
        set) become their single id: ``encode("hi<|endoftext|>", "all")`` ends with the EOT id."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if allowed_special == "none":
            return self.encode_ordinary(text)
        if isinstance(allowed_special, str) and allowed_special != "all":
            raise ValueError(
                f"allowed_special must be 'all', 'none' or a set of special tokens, got {allowed_special!r}"
            )
        allowed = set(self.special_tokens) if allowed_special == "all" else set(allowed_special)
        unknown = allowed - set(self.special_tokens)
        if unknown:
            raise ValueError(f"allowed_special: {sorted(unknown)} are not special tokens of {self.name}")
        if not allowed:
            return self.encode_ordinary(text)
        out: list[int] = []
        for part, special in split_specials(text, list(allowed)):
            out.extend([self.special_tokens[part]] if special else self.encode_ordinary(part))
        return out

    def encode_iterable(self, lines, allowed_special="none"):
        """Ids of the text ``lines`` yields, yielded as it streams in: equal to
        ``encode("".join(lines), allowed_special)``, holding only the text since the last place it could
        cut (``streaming.encode_iterable``): ``list(tok.encode_iterable(open(path)))``."""
        from course_utils.tokenisation.streaming import encode_iterable

        return encode_iterable(self, lines, allowed_special)

    # -- decoding -------------------------------------------------------------------------------
    def decode_bytes(self, ids) -> bytes:
        """The raw bytes of ``ids``: ``decode_bytes(encode("😀")[:1])`` is the emoji's first byte(s)."""
        if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
            raise TypeError(f"ids must be a sequence of ints, got {type(ids).__name__}")
        out = []
        for pos, i in enumerate(ids):
            if not isinstance(i, int) or isinstance(i, bool):
                if hasattr(i, "__index__"):
                    i = i.__index__()
                else:
                    raise TypeError(f"ids[{pos}] must be an int, got {type(i).__name__}")
            piece = self.decoder.get(i)
            if piece is None:
                piece = self.special_decoder.get(i)
            if piece is None:
                raise ValueError(
                    f"ids[{pos}] = {i} is outside the vocabulary of {self.name} "
                    f"(valid ids: 0..{self.n_vocab - 1}, with gaps for unused ids)"
                )
            out.append(piece)
        return b"".join(out)

    def decode(self, ids) -> str:
        """Text of ``ids``; bytes that are not valid UTF-8 become U+FFFD (the replacement character)."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    def pieces(self, ids) -> list[bytes]:
        """Each id's bytes, in order: ``pieces(encode(" lowest"))`` -> ``[b' low', b'est']``."""
        return [self.decode_bytes([i]) for i in ids]

    # -- training, saving, loading --------------------------------------------------------------
    @classmethod
    def train(
        cls,
        text: str,
        vocab_size: int,
        pattern: str = GPT2_PATTERN,
        special_tokens: list[str] | None = None,
        progress: bool = False,
    ) -> "ByteBPETokenizer":
        """Learn up to ``vocab_size - 256 - len(special_tokens)`` merges on ``text`` (see ``trainer.py``).

        Each special token is cut out of ``text`` before pre-tokenisation, so no merge contains its bytes
        or reaches across it, and takes one of the last ids: the k-th is ``vocab_size - len(special_tokens) + k``
        (so ``n_vocab == vocab_size``; ids left unused when the text runs out of pairs sit before them).
        """
        from course_utils.tokenisation.trainer import train_byte_bpe

        special_tokens = check_special_tokens([] if special_tokens is None else special_tokens)
        if not isinstance(vocab_size, int) or isinstance(vocab_size, bool):
            raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__}")
        if vocab_size < 256 + len(special_tokens):
            raise ValueError(f"vocab_size must be at least 256 bytes + {len(special_tokens)} special tokens "
                             f"= {256 + len(special_tokens)}, got {vocab_size}")
        first_special = vocab_size - len(special_tokens)
        merges = train_byte_bpe(text, first_special, pattern, progress, special_tokens=special_tokens)
        ranks = {bytes([b]): b for b in range(256)}
        for token, _ in merges:
            ranks[token] = len(ranks)
        return cls(ranks, pattern, {s: first_special + k for k, s in enumerate(special_tokens)}, name="course BPE")

    def save(self, path) -> None:
        """Write a JSON file: pattern, special tokens and the ranks in tiktoken's text format."""
        payload = {
            "format": FILE_FORMAT,
            "name": self.name,
            "pattern": self.pattern,
            "special_tokens": self.special_tokens,
            "ranks": rankfiles.dump_tiktoken(self.ranks),
        }
        Path(path).write_text(json.dumps(payload, indent=1), encoding="utf-8")

    @classmethod
    def load(cls, path) -> "ByteBPETokenizer":
        """Read a file written by ``save``."""
        if not isinstance(path, (str, Path)):
            raise TypeError(f"path must be a str or Path, got {type(path).__name__}")
        if not Path(path).is_file():
            raise ValueError(f"path: tokenizer file {str(path)!r} does not exist")
        not_ours = f"path: {str(path)!r} is not a file written by ByteBPETokenizer.save"
        try:
            payload = json.loads(Path(path).read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{not_ours}: it is not UTF-8 JSON ({exc})") from None
        if not isinstance(payload, dict):
            raise ValueError(f"{not_ours}: it holds a JSON {type(payload).__name__}, not an object")
        if payload.get("format") != FILE_FORMAT:
            raise ValueError(f"{not_ours}: its format field is {payload.get('format')!r}, expected {FILE_FORMAT!r}")
        missing = [key for key in ("ranks", "pattern", "special_tokens") if key not in payload]
        if missing:
            raise ValueError(f"{not_ours}: it lacks the fields {missing}")
        ranks = rankfiles.parse_tiktoken(payload["ranks"], what=f"path {str(path)!r}")
        return cls(ranks, payload["pattern"], payload["special_tokens"], payload.get("name", "byte-bpe"))

    @classmethod
    def from_tiktoken_file(
        cls, path, pattern: str, special_tokens: dict[str, int] | None = None, name: str = "byte-bpe"
    ) -> "ByteBPETokenizer":
        """Load a ``.tiktoken`` rank file (e.g. cl100k_base) with its split pattern."""
        return cls(rankfiles.load_tiktoken_file(path), pattern, special_tokens, name)

    @classmethod
    def from_gpt2_files(cls, encoder_json, vocab_bpe, name: str = "gpt2") -> "ByteBPETokenizer":
        """Load GPT-2's ``encoder.json`` + ``vocab.bpe`` (GPT-2's pattern, ``<|endoftext|>`` = 50256)."""
        ranks = rankfiles.load_gpt2_files(encoder_json, vocab_bpe)
        return cls(ranks, GPT2_PATTERN, {"<|endoftext|>": 50256}, name)
