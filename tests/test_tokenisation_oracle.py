"""Byte-level BPE against tiktoken: our ids must equal tiktoken's for GPT-2, cl100k_base and
o200k_base on the whole course corpus and on unicode/whitespace/emoji edge cases.

The oracle is built the way tiktoken itself builds these encodings (``tiktoken_ext.openai_public``,
so its split pattern and special tokens are tiktoken's, not ours), with its download step pointed
at the local package files; tiktoken checks the published SHA-256 of each file on the way.
"""

from __future__ import annotations

import gzip
import random

import pytest
import regex
import tiktoken

from course_utils.corpus import corpus_slice, load_corpus
from course_utils.tokenisation import real
from course_utils.tokenisation.byte_bpe import ByteBPETokenizer
from course_utils.tokenisation.pretokenise import pretokenise

EDGE_CASES = [
    "", " ", "  ", "\n", "\n\n\n", "\t\tx", "  leading", "trailing   ", "a  b   c", " \n \n ",
    "a\r\nb\rc", "hello world", "Hello, World!", "I'm can't YOU'LL we'VE he'D", "don't'", "''s",
    "1234567 3.14159 2024-01-01 1e10", "café", "naïve façade", "e\u0301", "😀", "😀😀😀 ok",
    "👩‍👩‍👧‍👦", "🇬🇧🇫🇷", "日本語のテキスト", "Привет, мир!", "مرحبا بالعالم", "Ελληνικά",
    "\u00a0non\u00a0breaking", "zero\u200bwidth", "tab\there", "x" * 500, " " * 100 + "y",
    "<|endoftext|>", "<|endoftext|> in the middle", "def f(x):\n    return x  # code\n",
    "HTTP://EXAMPLE.COM/a/b?c=d", "!!!???...", "ÀÉÎÕÜ àéîõü", "\u0000\u0001\u007f", "ǅungla",
]


def _random_strings(seed: int, n: int = 200) -> list[str]:
    rng = random.Random(seed)
    pools = [" \n\t\r", "abcXYZ'", "0123456789", "é日ПΩ😀\u0301\u200d", ".,;:!?-/"]
    return ["".join(rng.choice(rng.choice(pools)) for _ in range(rng.randint(1, 30))) for _ in range(n)]


@pytest.fixture(scope="module")
def oracles(tmp_path_factory):
    """tiktoken's own constructors, with their downloads replaced by the local package files."""
    import tiktoken.load
    import tiktoken_ext.openai_public as public

    tmp = tmp_path_factory.mktemp("ranks")
    local = {}
    for name in ("cl100k_base", "o200k_base"):
        (gz,) = real.data_files(name)
        local[f"{name}.tiktoken"] = tmp / f"{name}.tiktoken"
        local[f"{name}.tiktoken"].write_bytes(gzip.decompress(gz.read_bytes()))
    encoder_json, vocab_bpe = real.data_files("gpt2")
    local["encoder.json"], local["vocab.bpe"] = encoder_json, vocab_bpe

    def to_local(url: str) -> str:
        return str(local[url.rsplit("/", 1)[-1]])

    mp = pytest.MonkeyPatch()
    mp.setenv("TIKTOKEN_CACHE_DIR", "")  # no cache directory: read the given file directly
    mp.setattr(public, "load_tiktoken_bpe",
               lambda url, expected_hash=None: tiktoken.load.load_tiktoken_bpe(to_local(url), expected_hash))
    mp.setattr(public, "data_gym_to_mergeable_bpe_ranks",
               lambda vocab_bpe_file, encoder_json_file, vocab_bpe_hash=None, encoder_json_hash=None:
               tiktoken.load.data_gym_to_mergeable_bpe_ranks(to_local(vocab_bpe_file), to_local(encoder_json_file),
                                                             vocab_bpe_hash, encoder_json_hash))
    try:
        built = {name: tiktoken.Encoding(**public.ENCODING_CONSTRUCTORS[name]()) for name in real.NAMES}
    finally:
        mp.undo()
    return built


@pytest.mark.parametrize("name", real.NAMES)
def test_our_files_and_settings_match_tiktokens(oracles, name):
    oracle = oracles[name]
    assert real.ranks(name) == oracle._mergeable_ranks
    assert real.special_tokens(name) == oracle._special_tokens
    assert real.load(name).n_vocab == oracle.n_vocab
    # tiktoken has rewritten its patterns over versions (possessive quantifiers): compare behaviour.
    theirs = regex.compile(oracle._pat_str)
    for text in EDGE_CASES + [load_corpus()[:200_000]]:
        assert pretokenise(text, real.load(name).pattern) == theirs.findall(text), repr(text[:40])


@pytest.mark.slow
@pytest.mark.parametrize("name", real.NAMES)
def test_whole_corpus_equals_tiktoken(oracles, name):
    text = load_corpus()
    assert real.load(name).encode_ordinary(text) == oracles[name].encode_ordinary(text)


@pytest.mark.parametrize("name", real.NAMES)
def test_edge_cases_equal_tiktoken(oracles, name):
    ours, oracle = real.load(name), oracles[name]
    for text in EDGE_CASES + _random_strings(seed=hash(name) % 1000):
        ids = ours.encode_ordinary(text)
        assert ids == oracle.encode_ordinary(text), repr(text)
        assert ours.decode(ids) == text, repr(text)


@pytest.mark.parametrize("name", real.NAMES)
def test_special_tokens_equal_tiktoken(oracles, name):
    text = "first document<|endoftext|>second <|endoftext|>"
    assert real.load(name).encode(text, allowed_special="all") == oracles[name].encode(text, allowed_special="all")


def test_course_tiktoken_encoding_is_built_locally(oracles):
    for name in real.NAMES:
        enc = real.tiktoken_encoding(name)
        assert enc.encode_ordinary(EDGE_CASES[-5]) == oracles[name].encode_ordinary(EDGE_CASES[-5])


def test_known_gpt2_ids(oracles):
    gpt2 = real.load("gpt2")
    # " cat" and "cat" are different tokens; GPT-2's end-of-text id is 50256 (its vocab has 50,257).
    assert gpt2.encode(" cat") != gpt2.encode("cat")
    assert gpt2.n_vocab == 50257
    assert gpt2.encode("<|endoftext|>", allowed_special="all") == [50256]


def test_trained_tokenizer_equals_tiktoken_with_the_same_ranks():
    text = corpus_slice(load_corpus(), 150_000)
    ours = ByteBPETokenizer.train(text, vocab_size=600, special_tokens=["<|endoftext|>"])
    oracle = tiktoken.Encoding(name="course-trained", pat_str=ours.pattern, mergeable_ranks=ours.ranks,
                               special_tokens=ours.special_tokens)
    sample = load_corpus()[2_000_000:2_100_000]
    for chunk in [text, sample, *EDGE_CASES]:
        assert ours.encode_ordinary(chunk) == oracle.encode_ordinary(chunk)
    assert ours.decode(ours.encode(sample)) == sample


# -- the two byte-level exercises of notebook 01 are checked against these oracles ----------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_encode_exercise_reference_equals_tiktoken_on_every_check_case(oracles, seed):
    from course_utils.checks.tokenisation.byte_bpe_encode import encode_cases, encode_with
    from course_utils.tokenisation.byte_bpe import encode_chunk_with_ranks

    for case in encode_cases(seed):
        assert encode_with(encode_chunk_with_ranks, case) == oracles["gpt2"].encode_ordinary(case.args[0]), case.label


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_train_exercise_reference_equals_the_plain_trainer_on_every_check_case(seed):
    from course_utils.checks.tokenisation.byte_bpe_train import learn_byte_merges, train_cases
    from course_utils.tokenisation.trainer import chunk_counts, learn_merges_naive

    for case in train_cases(seed):
        text, n_merges = case.args
        plain = learn_merges_naive(chunk_counts(text), n_merges)
        assert [new for _, new in plain] == list(range(256, 256 + len(plain)))  # no merge re-creates a token
        assert learn_byte_merges(text, n_merges) == [pair for pair, _ in plain], case.label


def test_read_only_ranks_copy_for_free_and_refuse_writes():
    import copy

    from course_utils.checks.tokenisation.byte_bpe_encode import ReadOnlyRanks

    ranks = ReadOnlyRanks(real.ranks("gpt2"))
    assert copy.deepcopy(ranks) is ranks and ranks[b"!"] == 0 and b"zzzzzz" not in ranks
    with pytest.raises(TypeError):
        ranks[b"new"] = 1
