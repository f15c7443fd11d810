"""Exercise ``sae_forward(h, W_enc, b_enc, W_dec, b_dec)``: a sparse autoencoder's forward pass.

Required form (stated in the notebook): h (batch, d_in), W_enc (d_in, d_sae), b_enc (d_sae,),
W_dec (d_sae, d_in), b_dec (d_in,); return the pair (acts, h_hat) with
acts = ReLU((h − b_dec) W_enc + b_enc) of shape (batch, d_sae) and h_hat = acts · W_dec_unit + b_dec
of shape (batch, d_in), where W_dec_unit is W_dec with each row divided by its length (the course's
``SparseAutoencoder``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils.superposition import sparse_autoencoder
from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.checks.mlp_superposition._sae import sae_weights, sparse_activations


def sae_forward(h, W_enc, b_enc, W_dec, b_dec):
    """Reference: the course's ``SparseAutoencoder`` forward on these weights: (acts, h_hat)."""
    return sparse_autoencoder.sae_forward(h, W_enc, b_enc, W_dec, b_dec)


def _forward_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for batch, d_in, d_sae in ((16, 5, 40), (8, 3, 12), (24, 2, 7)):
        h = sparse_activations(gen, batch, d_in, 2 * d_in)
        cases.append(Case(f"{batch} inputs of width {d_in}, {d_sae} latents", (h, *sae_weights(gen, d_in, d_sae))))
    return cases


def _decode(acts, W_dec, b_dec):
    return acts @ (W_dec / W_dec.norm(dim=-1, keepdim=True)) + b_dec


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "decoder bias not subtracted",
    "the encoder reads h − b_dec: subtract the decoder bias from h before multiplying by W_enc",
)
def _no_centring(h, W_enc, b_enc, W_dec, b_dec):
    acts = torch.relu(h @ W_enc + b_enc)
    return acts, _decode(acts, W_dec, b_dec)


@bank.mistake(
    "decoder rows not normalised",
    "divide each row of W_dec by its length before decoding: the dictionary directions are unit vectors",
)
def _raw_decoder(h, W_enc, b_enc, W_dec, b_dec):
    acts = torch.relu((h - b_dec) @ W_enc + b_enc)
    return acts, acts @ W_dec + b_dec


@bank.mistake(
    "decoder columns normalised",
    "normalise each ROW of W_dec (one row per latent: dim=-1), not each column",
)
def _columns_normalised(h, W_enc, b_enc, W_dec, b_dec):
    acts = torch.relu((h - b_dec) @ W_enc + b_enc)
    return acts, acts @ (W_dec / W_dec.norm(dim=0, keepdim=True)) + b_dec


@bank.mistake("no ReLU", "the latents go through a ReLU: they are non-negative amounts of each direction")
def _no_relu(h, W_enc, b_enc, W_dec, b_dec):
    acts = (h - b_dec) @ W_enc + b_enc
    return acts, _decode(acts, W_dec, b_dec)


@bank.mistake("decoder bias not added back", "add b_dec back to the reconstruction, after the decoder's product")
def _no_decoder_bias(h, W_enc, b_enc, W_dec, b_dec):
    acts = torch.relu((h - b_dec) @ W_enc + b_enc)
    return acts, acts @ (W_dec / W_dec.norm(dim=-1, keepdim=True))


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("F.normalize, F.relu and F.linear")
def _alt_functional(h, W_enc, b_enc, W_dec, b_dec):
    acts = F.relu(F.linear(h - b_dec, W_enc.T, b_enc))
    return acts, F.linear(acts, F.normalize(W_dec, dim=-1).T, b_dec)


@bank.alternative("einsum and clamp")
def _alt_einsum(h, W_enc, b_enc, W_dec, b_dec):
    acts = (torch.einsum("bi,is->bs", h - b_dec, W_enc) + b_enc).clamp(min=0)
    unit = W_dec / torch.linalg.vector_norm(W_dec, dim=1, keepdim=True)  # (d_sae, d_in)
    return acts, torch.einsum("bs,si->bi", acts, unit) + b_dec


@bank.alternative("float32, scaling the latents instead of the rows")
def _alt_float32_scaled_latents(h, W_enc, b_enc, W_dec, b_dec):
    h, W_enc, b_enc, W_dec, b_dec = (t.float() for t in (h, W_enc, b_enc, W_dec, b_dec))
    acts = torch.maximum((h - b_dec) @ W_enc + b_enc, torch.zeros(()))
    return acts, (acts / W_dec.norm(dim=-1)) @ W_dec + b_dec  # acts · diag(1/‖row‖) · W_dec


SAE_FORWARD = Exercise(
    name="sae_forward",
    reference=sae_forward,
    cases=_forward_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Two lines of algebra: encode (centre h on the decoder bias, multiply, add the encoder bias, ReLU), "
        "then decode with unit-length dictionary rows and add the decoder bias back.",
        "W_dec has one row per latent: divide every row by its length (a norm over the last dimension, kept "
        "as a column so that it broadcasts) before the latents multiply it. Return the tuple (acts, h_hat).",
    ],
)
EXERCISES = {SAE_FORWARD.name: SAE_FORWARD}


def check_sae_forward(fn):
    """Check a student's ``sae_forward(h, W_enc, b_enc, W_dec, b_dec)``."""
    return SAE_FORWARD.check(fn)
