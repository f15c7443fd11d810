"""Exercise ``Llama``: the whole Llama-style model, with a KV cache, from the notebook's ``LlamaBlock``.

Required form (stated in the notebook): ``Llama(cfg)`` for a ``course_utils.llama.LlamaConfig`` keeps
``cfg`` as ``self.cfg`` and holds ``W_E`` (d_vocab, d_model), ``blocks`` (an ``nn.ModuleList`` of
``cfg.n_layers`` ``LlamaBlock``), ``norm_final`` (an RMSNorm) and an untied ``W_U`` (d_model, d_vocab),
no position table; ``forward(tokens, cache=None)`` maps (batch, n_new) ids to (batch, n_new, d_vocab)
logits. With a ``course_utils.gpt.cache.KVCache`` the tokens follow the cached positions and the cache
is extended in place: afterwards ``cache.keys[layer]`` and ``cache.values[layer]`` hold every position
so far (an empty ``KVCache()`` starts one).
The check loads a seeded ``course_utils.llama.Llama``'s weights by name and compares the logits, run
whole without a cache and run in chunks (token by token, or a prompt then a few at a time) with one,
and the cache's length after each call, with the course model's.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.todays_block._modules import seeded_state, spans
from course_utils.checks.weights import load_course_state
from course_utils.checks.weights import compare_or_convention, convention_answer
from course_utils.gpt.cache import KVCache
from course_utils.llama.config import LlamaConfig
from course_utils.llama.model import Llama as CourseLlama
from course_utils.llama.model import LlamaBlock as CourseLlamaBlock
from course_utils.llama.norm import RMSNorm


class Llama(CourseLlama):
    """The reference: the course's model (its own checks on the inputs and the cache dropped from the signature)."""

    def forward(self, tokens, cache=None):
        return super().forward(tokens, cache)


def _cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)

    def case(label, cfg, batch, pos, chunks, offset):
        tokens = torch.randint(0, cfg.d_vocab, (batch, pos), generator=gen)
        return Case(label, (cfg, seeded_state(Llama(cfg), seed + offset), tokens, chunks))

    gqa = LlamaConfig(d_vocab=29, n_ctx=12, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2)
    mqa = LlamaConfig(d_vocab=23, n_ctx=12, d_model=24, n_layers=3, n_heads=6, n_kv_heads=1, d_mlp=32,
                      rope_layout="interleaved", eps=0.1)  # fmt: skip
    return [
        case("2 layers, 4 query heads, 2 key/value heads, halves: 2 sequences of 8 tokens, no cache",
             gqa, 2, 8, None, 0),
        case("the same model, token by token with a KVCache", gqa, 2, 6, (1,) * 6, 100),
        case("3 layers, 6 query heads, 1 key/value head, interleaved, eps=0.1: a prompt of 5 tokens, then 2, then 1",
             mqa, 1, 8, (5, 2, 1), 200),
    ]  # fmt: skip


def _run_model(cls, case):
    cfg, state, tokens, chunks = case.args
    model = cls(cfg)
    problem = load_course_state(model, state, "course_utils.llama")
    if problem is not None:
        return convention_answer(problem)
    with torch.no_grad():
        if chunks is None:
            return model(tokens), []
        cache, logits, lengths = KVCache(), [], []
        for span in spans(chunks):
            logits.append(model(tokens[:, span], cache))
            lengths.append(cache.length)
    return torch.cat(logits, dim=1), lengths


class _Block(CourseLlamaBlock):
    def forward(self, x, past_k=None, past_v=None):
        return self.forward_cached(x, past_k, past_v)


class _Layout(nn.Module):
    """The course's parameters under the course's names; the mistakes and alternatives write ``forward``."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.W_E = nn.Parameter(torch.zeros(cfg.d_vocab, cfg.d_model))
        self.blocks = nn.ModuleList(_Block(cfg) for _ in range(cfg.n_layers))
        self.norm_final = RMSNorm(cfg.d_model, cfg.eps)
        self.W_U = nn.Parameter(torch.zeros(cfg.d_model, cfg.d_vocab))

    def stream(self, tokens, cache, store):
        """The blocks on the tokens' vectors, each with its layer's cache; ``store(cache, layer, k, v)``."""
        x = self.W_E[tokens]
        filled = cache is not None and cache.length > 0
        for layer, block in enumerate(self.blocks):
            past = (cache.keys[layer], cache.values[layer]) if filled else (None, None)
            x, k, v = block(x, *past)
            if cache is not None:
                store(cache, layer, k, v)
        return x


def _store(cache, layer, k, v):
    if len(cache.keys) > layer:
        cache.keys[layer], cache.values[layer] = k, v
    else:
        cache.keys.append(k), cache.values.append(v)


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("no final RMSNorm", "normalise the stream with norm_final before the unembedding")
class _NoFinalNorm(_Layout):
    def forward(self, tokens, cache=None):
        return self.stream(tokens, cache, _store) @ self.W_U


@bank.mistake(
    "tied unembedding",
    "this model's unembedding is its own matrix W_U (d_model, d_vocab), not W_E transposed: Llama unties them",
)
class _Tied(_Layout):
    def forward(self, tokens, cache=None):
        return self.norm_final(self.stream(tokens, cache, _store)) @ self.W_E.T


@bank.mistake(
    "cache not extended",
    "write every layer's keys and values back into the cache (in its lists keys and values, one entry per layer; "
    "appended when the cache is empty), so that the next call finds them",
)
class _CacheNotExtended(_Layout):
    def forward(self, tokens, cache=None):
        return self.norm_final(self.stream(tokens, cache, lambda *_: None)) @ self.W_U


@bank.mistake(
    "cache appended twice",
    "a block returns the keys and values of ALL positions so far, the cached ones included: store them as they "
    "are instead of appending them to what the cache held",
)
class _AppendedTwice(_Layout):
    def forward(self, tokens, cache=None):
        def store(cache, layer, k, v):
            if len(cache.keys) > layer:
                cache.keys[layer] = torch.cat([cache.keys[layer], k], dim=2)
                cache.values[layer] = torch.cat([cache.values[layer], v], dim=2)
            else:
                cache.keys.append(k), cache.values.append(v)

        return self.norm_final(self.stream(tokens, cache, store)) @ self.W_U


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("F.embedding, F.rms_norm, the new cache written back at the end, einsum unembedding")
class _Functional(_Layout):
    def forward(self, tokens, cache=None):
        x = F.embedding(tokens, self.W_E)
        keys, values = [], []
        for layer, block in enumerate(self.blocks):
            use = cache is not None and len(cache.keys) == len(self.blocks)
            x, k, v = block(x, cache.keys[layer] if use else None, cache.values[layer] if use else None)
            keys.append(k), values.append(v)
        if cache is not None:
            cache.keys[:], cache.values[:] = keys, values
        x = F.rms_norm(x, (x.shape[-1],), self.norm_final.w, self.norm_final.eps)
        return torch.einsum("bpm,mv->bpv", x, self.W_U)


@bank.alternative("a fresh KVCache's lists filled layer by layer, the course's fused attention kernel")
class _Fused(_Layout):
    def forward(self, tokens, cache=None):
        x, start = self.W_E[tokens], 0 if cache is None else cache.length
        for layer, block in enumerate(self.blocks):
            if start:
                x, cache.keys[layer], cache.values[layer] = block.forward_cached(
                    x, cache.keys[layer], cache.values[layer], impl="fused"
                )
            else:
                x, k, v = block.forward_cached(x, impl="fused")
                if cache is not None:
                    cache.keys.append(k), cache.values.append(v)
        return self.norm_final(x) @ self.W_U


@bank.alternative("float32 logits from a float32 copy of the model")
class _Float32(_Layout):
    def forward(self, tokens, cache=None):
        single = _Layout(self.cfg)
        single.load_state_dict({name: t.float() for name, t in self.state_dict().items()})
        inner = None if cache is None else KVCache([k.float() for k in cache.keys], [v.float() for v in cache.values])
        logits = single.norm_final(single.stream(tokens, inner, _store)) @ single.W_U
        if cache is not None:
            cache.keys[:], cache.values[:] = inner.keys, inner.values
        return logits


LLAMA_MODEL = Exercise(
    name="llama_model",
    reference=Llama,
    cases=_cases,
    run=_run_model,
    compare=compare_or_convention("loose"),
    wants_class=True,
    function_name="Llama",
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Notebook 09's GPT with two parts fewer (no position table: RoPE places the tokens inside attention; no "
        "tied unembedding) and one more: a cache to read from and write to, one entry per layer.",
        "An empty cache (length 0) means no past: run every block without one and append the keys and values it "
        "returns to the cache's two lists; otherwise give each block its own layer's entries and put what it "
        "returns back in their place. Then norm_final, then W_U.",
    ],
)
EXERCISES = {LLAMA_MODEL.name: LLAMA_MODEL}


def check_llama_model(cls):
    """Check a student's ``Llama`` class (built with a ``LlamaConfig``, ``forward(tokens, cache=None)``)."""
    return LLAMA_MODEL.check(cls)
