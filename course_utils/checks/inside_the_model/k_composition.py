"""Exercise ``k_composition_score(W_Q, W_K, W_V, W_O)``: how much a later head's keys read an earlier head's write.

Required form (stated in the notebook): ``W_Q``, ``W_K`` (d_model, d_head) are the later head's query and key
projections, ``W_V`` (d_model, d_head) and ``W_O`` (d_head, d_model) the earlier head's value and output
projections, all for row vectors (``x @ W``). With ``W_QK = W_Q W_Kᵀ`` and ``W_OV = W_V W_O`` the score is
``‖W_QK W_OVᵀ‖_F / (‖W_QK‖_F ‖W_OV‖_F)`` (Elhage et al. 2021), a number (a 0-d tensor or a float). Checked
against ``course_utils.interp.composition_score``.
"""

from __future__ import annotations

import numpy as np
import torch

from course_utils.checks.bank import Bank
from course_utils.checks.core import Case, Exercise
from course_utils.interp.induction_circuit import composition_score

F64 = torch.float64


def k_composition_score(W_Q, W_K, W_V, W_O):
    """Reference: ``composition_score(W_Q W_Kᵀ, (W_V W_O)ᵀ)``."""
    return composition_score(W_Q @ W_K.T, (W_V @ W_O).T)


def _k_cases(seed: int) -> list[Case]:
    gen = torch.Generator().manual_seed(500 + seed)
    found = []
    for d_model, d_head in ((8, 4), (16, 8), (12, 3)):
        W_Q, W_K, W_V = (torch.randn(d_model, d_head, generator=gen, dtype=F64) for _ in range(3))
        W_O = torch.randn(d_head, d_model, generator=gen, dtype=F64)
        found.append(Case(f"random heads, d_model {d_model}, d_head {d_head}", (W_Q, W_K, W_V, W_O)))
    W_Q, W_K = (torch.randn(10, 5, generator=gen, dtype=F64) for _ in range(2))
    W_V = torch.randn(10, 5, generator=gen, dtype=F64)
    W_O = W_K.T.clone() + 0.1 * torch.randn(5, 10, generator=gen, dtype=F64)  # writes into what the keys read
    found.append(Case("a head that writes into what the later head's keys read, d_model 10", (W_Q, W_K, W_V, W_O)))
    return found


bank = Bank()


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake("Q-composition", "that reads the earlier head's write on the QUERY side (W_OV W_QK): for K-composition "
              "the write enters the keys, so multiply W_QK by the transpose of W_OV")
def _q_composition(W_Q, W_K, W_V, W_O):
    return composition_score(W_V @ W_O, W_Q @ W_K.T)


@bank.mistake("W_OV not transposed", "the keys read x_src W_OV, and the score is x_q W_QK (x_src W_OV)ᵀ: the "
              "product is W_QK times W_OV TRANSPOSED")
def _no_transpose(W_Q, W_K, W_V, W_O):
    return composition_score(W_Q @ W_K.T, W_V @ W_O)


@bank.mistake("not normalised", "divide by the product of the two matrices' Frobenius norms, so the score is at "
              "most 1 and heads of different sizes compare")
def _raw(W_Q, W_K, W_V, W_O):
    return torch.linalg.matrix_norm(W_Q @ W_K.T @ (W_V @ W_O).T)


@bank.mistake("the four factors' norms", "normalise by the norms of W_QK and W_OV, the two products, not of the four "
              "factors W_Q, W_K, W_V, W_O")
def _factor_norms(W_Q, W_K, W_V, W_O):
    return (W_Q @ W_K.T @ (W_V @ W_O).T).norm() / (W_Q.norm() * W_K.norm() * W_V.norm() * W_O.norm())


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("the transpose of the product, W_OV W_QKᵀ (the same norm)")
def _transposed(W_Q, W_K, W_V, W_O):
    W_QK, W_OV = W_Q @ W_K.T, W_V @ W_O
    return torch.linalg.matrix_norm(W_OV @ W_QK.T) / (torch.linalg.matrix_norm(W_QK) * torch.linalg.matrix_norm(W_OV))


@bank.alternative("the trace form sqrt(tr(M Mᵀ)), in float32")
def _trace(W_Q, W_K, W_V, W_O):
    W_Q, W_K, W_V, W_O = (m.float() for m in (W_Q, W_K, W_V, W_O))
    W_QK, W_OV = W_Q @ W_K.T, W_V @ W_O
    M = W_QK @ W_OV.T

    def frob(m):
        return torch.trace(m @ m.T).sqrt()

    return frob(M) / (frob(W_QK) * frob(W_OV))


@bank.alternative("einsum, as a Python float")
def _einsum(W_Q, W_K, W_V, W_O):
    M = torch.einsum("ah,bh,ck,kb->ac", W_Q, W_K, W_V, W_O)  # W_Q W_Kᵀ (W_V W_O)ᵀ
    W_QK, W_OV = torch.einsum("ah,bh->ab", W_Q, W_K), torch.einsum("ak,kb->ab", W_V, W_O)
    return float(M.square().sum().sqrt() / (W_QK.square().sum().sqrt() * W_OV.square().sum().sqrt()))


@bank.alternative("NumPy")
def _numpy(W_Q, W_K, W_V, W_O):
    q, k, v, o = (m.numpy() for m in (W_Q, W_K, W_V, W_O))
    W_QK, W_OV = q @ k.T, v @ o
    return float(np.linalg.norm(W_QK @ W_OV.T) / (np.linalg.norm(W_QK) * np.linalg.norm(W_OV)))


K_COMPOSITION = Exercise(
    name="k_composition",
    reference=k_composition_score,
    cases=_k_cases,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    function_name="k_composition_score",
    hints=[
        "Build the two d_model × d_model maps first: the later head's W_QK (query side on the left) and the "
        "earlier head's W_OV. Then ask what the later head's attention score becomes when its key vector is the "
        "earlier head's write.",
        "The score for a query x_q and an earlier write x_src W_OV is x_q W_QK (x_src W_OV)ᵀ, so the map that matters "
        "is W_QK W_OVᵀ. Its Frobenius norm, divided by the product of the two maps' norms, is the score.",
    ],
)
EXERCISES = {K_COMPOSITION.name: K_COMPOSITION}


def check_k_composition(fn):
    """Check a student's ``k_composition_score(W_Q, W_K, W_V, W_O)``."""
    return K_COMPOSITION.check(fn)
