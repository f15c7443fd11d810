"""Sampling a batch of prompts of different lengths, left-padded: notebook 04's padding in notebook 11's loop.

Covers ``PaddedGPT`` (the course ``GPT`` whose forward also takes notebook 04's ``mask`` (batch, pos, pos) and
``positions`` (batch, pos), as ``masking.left_padded_batch`` makes them: each prompt's position embeddings count
from its first real token and no query sees a padding key, so a padded prompt's logits at its real positions are
its logits alone, tested) and ``sample_padded`` (prompts as lists of ids; each step the sequences so far, the
last n_ctx tokens of each, are left-padded again, the model runs on the batch and one token per row is drawn from
the last column, where every prompt ends; the result is left-padded, (batch, longest + n_new)).
``sample_padded(model, [[5, 6, 7], [8]], 4, 0.0, pad_id=0)`` -> two greedy continuations in one batch.
Leaves out a KV cache for padded batches and padding on the right (which training, not generation, uses).
"""

from __future__ import annotations

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from course_utils.gpt.config import check_tokens
from course_utils.gpt.model import GPT
from course_utils.masking import causal_mask, left_padded_batch
from course_utils.sampling import sample_next_token
from course_utils.validate import positive_int


class PaddedGPT(GPT):
    """The course GPT whose ``forward(tokens, mask, positions)`` follows a left-padded batch (pre-norm only)."""

    def forward(self, tokens: Int[Tensor, "batch pos"], mask: Bool[Tensor, "batch pos pos"] | None = None,
                positions: Int[Tensor, "batch pos"] | None = None,
                impl: str = "reference") -> Float[Tensor, "batch pos d_vocab"]:
        """Without ``mask`` and ``positions``, ``GPT.forward``; a missing one is the causal mask, or 0, 1, 2, ..."""
        if mask is None and positions is None:
            return super().forward(tokens, impl=impl)
        tokens = check_tokens(tokens, self.cfg)
        batch, pos = tokens.shape
        if mask is None:
            mask = causal_mask(pos, device=tokens.device)
        if not isinstance(mask, Tensor) or mask.dtype != torch.bool or mask.shape[-2:] != (pos, pos):
            raise ValueError(f"mask must be a bool tensor of shape (batch, {pos}, {pos}), got {mask!r:.80}")
        if positions is None:
            positions = torch.arange(pos, device=tokens.device).expand(batch, pos)
        if not isinstance(positions, Tensor) or tuple(positions.shape) != (batch, pos) or positions.is_floating_point():
            raise ValueError(f"positions must be integer ids of shape ({batch}, {pos}), got {positions!r:.80}")
        x = self.W_E[tokens] + self.W_pos[positions]  # (batch, pos, d_model)
        for block in self.blocks:
            x = x + block.attn(block.ln1(x), mask=mask)  # a padding query sees nothing: its row is zeros
            x = x + block.mlp(block.ln2(x))
        return self.unembed(x)


@torch.no_grad()
def sample_padded(model: PaddedGPT, prompts: list[list[int]], n_new: int, temperature: float,
                  generator: torch.Generator | None = None, pad_id: int = 0) -> Int[Tensor, "batch total"]:
    """Every prompt followed by ``n_new`` tokens, sampled in one left-padded batch (see the module's docstring)."""
    positive_int("n_new", n_new)
    seqs = [list(p) for p in prompts]
    n_ctx = model.cfg.n_ctx
    for _ in range(n_new):
        ids, mask, positions = left_padded_batch([s[-n_ctx:] for s in seqs], pad_id)  # (batch, pos) ...
        logits = model(ids, mask, positions)[:, -1]  # (batch, d_vocab): every prompt ends in the last column
        for seq, token in zip(seqs, sample_next_token(logits, temperature, generator=generator).tolist()):
            seq.append(token)
    return left_padded_batch(seqs, pad_id)[0]
