"""Exercise ``convert_gpt2_weights(hf, cfg)``: Hugging Face GPT-2's tensors -> the course's names and layouts.

Required form (stated in the notebook): ``hf`` is a GPT-2 state dict (``transformer.wte.weight``,
``transformer.h.0.attn.c_attn.weight`` ..., ``lm_head.weight``); return a dict holding exactly the
state-dict keys of ``course_utils.gpt.model.GPT(cfg)`` with tied embeddings (no ``W_U``), each tensor in the
course's shape: ``W_Q``/``W_K``/``W_V`` (head, d_model, d_head) cut from ``c_attn``'s columns (Q, then K,
then V, each head's d_head columns in turn), ``W_O`` (head, d_head, d_model) from ``c_proj``'s rows, the
``Conv1D`` weights otherwise used as they are stored (in, out). The cases' tensors come from a seeded
course model written out in GPT-2's layout (``gpt2_weights.to_gpt2_state_dict``), so the right answer gives
back that model's weights; ``tests/test_gpt2_weights.py`` ties that layout to ``transformers``' own model.
"""

from __future__ import annotations

import torch

from course_utils.checks.bank import Bank
from course_utils.checks.compare import describe_mismatch
from course_utils.checks.core import Case, Exercise
from course_utils.checks.shared import tiny_model
from course_utils.gpt.model import GPT
from course_utils.gpt.gpt2_weights import convert_gpt2_state_dict, to_gpt2_state_dict
from course_utils.gpt.config import GPTConfig


def convert_gpt2_weights(hf, cfg):
    """Reference: ``gpt2_weights.convert_gpt2_state_dict``."""
    return convert_gpt2_state_dict(hf, cfg)


def _gpt2_shaped(model: GPT) -> dict:
    return to_gpt2_state_dict(model.double())


def _convert_cases(seed: int) -> list[Case]:
    wider = GPT(GPTConfig(d_vocab=19, n_ctx=10, d_model=24, n_heads=4, n_layers=3, d_mlp=40))
    wider.reset_parameters(torch.Generator().manual_seed(30 + seed))
    with torch.no_grad():  # every tensor moved off its initial value, biases and LayerNorms included
        for p in wider.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=torch.Generator().manual_seed(40 + seed)))
    return [
        Case("2 layers, 2 heads of 8, d_mlp 64", (_gpt2_shaped(tiny_model(seed)), tiny_model(seed).cfg)),
        Case("3 layers, 4 heads of 6, d_mlp 40 (not 4·d_model)", (_gpt2_shaped(wider), wider.cfg)),
    ]


def _compare(expected: dict, got) -> str | None:
    if not isinstance(got, dict):
        return f"expected a dict of tensors by the course's names, got {type(got).__name__}"
    missing, extra = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
    if missing or extra:
        return (f"the keys differ from the course GPT's: missing {missing[:3]}, unexpected {extra[:3]} "
                "(tied embeddings: no W_U)")
    for name, want in expected.items():
        problem = describe_mismatch(want, got[name], where=f" for {name}", tol=(1e-6, 1e-7))
        if problem is not None:
            return problem
    return None


bank = Bank()


def _renamed(sd: dict, cfg, qkv, w_o, conv) -> dict:
    """The mapping every mistake shares, with its own ways of cutting c_attn (``qkv``), c_proj (``w_o``) and
    reading the MLP's Conv1D weights (``conv``)."""
    out = {"W_E": sd["wte.weight"], "W_pos": sd["wpe.weight"], "ln_final.w": sd["ln_f.weight"],
           "ln_final.b": sd["ln_f.bias"]}
    for i in range(cfg.n_layers):
        h, p = f"h.{i}.", f"blocks.{i}."
        for name, (W, b) in zip("QKV", qkv(sd[h + "attn.c_attn.weight"], sd[h + "attn.c_attn.bias"], cfg)):
            out[p + f"attn.W_{name}"], out[p + f"attn.b_{name}"] = W, b
        out[p + "attn.W_O"], out[p + "attn.b_O"] = w_o(sd[h + "attn.c_proj.weight"], cfg), sd[h + "attn.c_proj.bias"]
        out[p + "ln1.w"], out[p + "ln1.b"] = sd[h + "ln_1.weight"], sd[h + "ln_1.bias"]
        out[p + "ln2.w"], out[p + "ln2.b"] = sd[h + "ln_2.weight"], sd[h + "ln_2.bias"]
        out[p + "mlp.W_in"], out[p + "mlp.b_in"] = conv(sd[h + "mlp.c_fc.weight"]), sd[h + "mlp.c_fc.bias"]
        out[p + "mlp.W_out"], out[p + "mlp.b_out"] = conv(sd[h + "mlp.c_proj.weight"]), sd[h + "mlp.c_proj.bias"]
    return out


def _strip(hf: dict) -> dict:
    return {k.removeprefix("transformer."): v for k, v in hf.items()}


def _qkv_right(W, b, cfg):
    M, H, Dh = cfg.d_model, cfg.n_heads, cfg.d_head
    return [(W[:, j * M:(j + 1) * M].reshape(M, H, Dh).permute(1, 0, 2), b[j * M:(j + 1) * M].reshape(H, Dh))
            for j in range(3)]


def _w_o_right(W, cfg):
    return W.reshape(cfg.n_heads, cfg.d_head, cfg.d_model)


# -- mistakes ------------------------------------------------------------------------------------
@bank.mistake(
    "heads cut without moving the head axis",
    "in each (d_model, d_model) block of c_attn, head h owns columns h·d_head to (h+1)·d_head: split the columns "
    "into (head, d_head), then move the head axis to the front; a plain reshape to (head, d_model, d_head) mixes "
    "rows and heads",
)
def convert_no_permute(hf, cfg):
    M, H, Dh = cfg.d_model, cfg.n_heads, cfg.d_head

    def qkv(W, b, cfg):
        return [(W[:, j * M:(j + 1) * M].reshape(H, M, Dh), b[j * M:(j + 1) * M].reshape(H, Dh)) for j in range(3)]

    return _renamed(_strip(hf), cfg, qkv, _w_o_right, lambda W: W)


@bank.mistake(
    "Conv1D weights transposed",
    "GPT-2's Conv1D stores its weight as (in, out), the layout of our x @ W: use c_fc's and c_proj's weights as "
    "they are stored (nn.Linear's (out, in) would need the transpose; Conv1D does not)",
)
def convert_transposed(hf, cfg):
    return _renamed(_strip(hf), cfg, _qkv_right,
                    lambda W, cfg: W.T.reshape(cfg.n_heads, cfg.d_head, cfg.d_model), lambda W: W.T)


@bank.mistake(
    "Q, K and V interleaved per head",
    "c_attn holds all of Q, then all of K, then all of V (d_model columns each): cut those three blocks first, "
    "then split each into heads",
)
def convert_interleaved(hf, cfg):
    M, H, Dh = cfg.d_model, cfg.n_heads, cfg.d_head

    def qkv(W, b, cfg):
        W3, b3 = W.reshape(M, H, 3, Dh), b.reshape(H, 3, Dh)  # (d_model, head, qkv, d_head): head-major
        return [(W3[:, :, j].permute(1, 0, 2), b3[:, j]) for j in range(3)]

    return _renamed(_strip(hf), cfg, qkv, _w_o_right, lambda W: W)


# -- accepted alternatives -----------------------------------------------------------------------
@bank.alternative("split into three, view and transpose, a table of the plain renames")
def _convert_split(hf, cfg):
    sd = {k.removeprefix("transformer."): v for k, v in hf.items()}
    H, M, Dh = cfg.n_heads, cfg.d_model, cfg.d_head
    out = {"W_E": sd["wte.weight"], "W_pos": sd["wpe.weight"], "ln_final.w": sd["ln_f.weight"],
           "ln_final.b": sd["ln_f.bias"]}
    renames = {"ln1.w": "ln_1.weight", "ln1.b": "ln_1.bias", "ln2.w": "ln_2.weight", "ln2.b": "ln_2.bias",
               "attn.b_O": "attn.c_proj.bias", "mlp.W_in": "mlp.c_fc.weight", "mlp.b_in": "mlp.c_fc.bias",
               "mlp.W_out": "mlp.c_proj.weight", "mlp.b_out": "mlp.c_proj.bias"}
    for i in range(cfg.n_layers):
        for ours, theirs in renames.items():
            out[f"blocks.{i}.{ours}"] = sd[f"h.{i}.{theirs}"]
        Ws = sd[f"h.{i}.attn.c_attn.weight"].split(M, dim=1)
        bs = sd[f"h.{i}.attn.c_attn.bias"].split(M)
        for name, W, b in zip("QKV", Ws, bs):
            out[f"blocks.{i}.attn.W_{name}"] = W.view(M, H, Dh).transpose(0, 1)
            out[f"blocks.{i}.attn.b_{name}"] = b.view(H, Dh)
        out[f"blocks.{i}.attn.W_O"] = sd[f"h.{i}.attn.c_proj.weight"].view(H, Dh, M)
    return out


@bank.alternative("one head at a time, column slices stacked")
def _convert_stacked(hf, cfg):
    H, M, Dh = cfg.n_heads, cfg.d_model, cfg.d_head
    g = {k[len("transformer."):]: v for k, v in hf.items() if k.startswith("transformer.")}
    out = {"W_E": g["wte.weight"], "W_pos": g["wpe.weight"]}
    out["ln_final.w"], out["ln_final.b"] = g["ln_f.weight"], g["ln_f.bias"]
    for i in range(cfg.n_layers):
        W, b = g[f"h.{i}.attn.c_attn.weight"], g[f"h.{i}.attn.c_attn.bias"]
        for j, name in enumerate("QKV"):
            cols = [slice(j * M + h * Dh, j * M + (h + 1) * Dh) for h in range(H)]
            out[f"blocks.{i}.attn.W_{name}"] = torch.stack([W[:, c] for c in cols])
            out[f"blocks.{i}.attn.b_{name}"] = torch.stack([b[c] for c in cols])
        proj = g[f"h.{i}.attn.c_proj.weight"]
        out[f"blocks.{i}.attn.W_O"] = torch.stack([proj[h * Dh:(h + 1) * Dh] for h in range(H)])
        out[f"blocks.{i}.attn.b_O"] = g[f"h.{i}.attn.c_proj.bias"]
        for ours, theirs in (("ln1", "ln_1"), ("ln2", "ln_2")):
            out[f"blocks.{i}.{ours}.w"] = g[f"h.{i}.{theirs}.weight"]
            out[f"blocks.{i}.{ours}.b"] = g[f"h.{i}.{theirs}.bias"]
        for ours, theirs in (("in", "c_fc"), ("out", "c_proj")):
            out[f"blocks.{i}.mlp.W_{ours}"] = g[f"h.{i}.mlp.{theirs}.weight"]
            out[f"blocks.{i}.mlp.b_{ours}"] = g[f"h.{i}.mlp.{theirs}.bias"]
    return out


@bank.alternative("unflatten and movedim, copies in float32")
def _convert_unflatten(hf, cfg):
    sd = {k.removeprefix("transformer."): v.float().clone() for k, v in hf.items() if k != "lm_head.weight"}
    H, Dh = cfg.n_heads, cfg.d_head
    out = {"W_E": sd.pop("wte.weight"), "W_pos": sd.pop("wpe.weight"), "ln_final.w": sd.pop("ln_f.weight"),
           "ln_final.b": sd.pop("ln_f.bias")}
    for i in range(cfg.n_layers):
        q, k, v = sd[f"h.{i}.attn.c_attn.weight"].unflatten(1, (3, H, Dh)).movedim(0, 2).unbind(0)  # each (H, M, Dh)
        bq, bk, bv = sd[f"h.{i}.attn.c_attn.bias"].unflatten(0, (3, H, Dh)).unbind(0)
        p = f"blocks.{i}."
        out.update({p + "attn.W_Q": q, p + "attn.W_K": k, p + "attn.W_V": v, p + "attn.b_Q": bq, p + "attn.b_K": bk,
                    p + "attn.b_V": bv, p + "attn.W_O": sd[f"h.{i}.attn.c_proj.weight"].unflatten(0, (H, Dh)),
                    p + "attn.b_O": sd[f"h.{i}.attn.c_proj.bias"], p + "ln1.w": sd[f"h.{i}.ln_1.weight"],
                    p + "ln1.b": sd[f"h.{i}.ln_1.bias"], p + "ln2.w": sd[f"h.{i}.ln_2.weight"],
                    p + "ln2.b": sd[f"h.{i}.ln_2.bias"], p + "mlp.W_in": sd[f"h.{i}.mlp.c_fc.weight"],
                    p + "mlp.b_in": sd[f"h.{i}.mlp.c_fc.bias"], p + "mlp.W_out": sd[f"h.{i}.mlp.c_proj.weight"],
                    p + "mlp.b_out": sd[f"h.{i}.mlp.c_proj.bias"]})
    return out


CONVERT_GPT2_WEIGHTS = Exercise(
    name="convert_gpt2_weights",
    reference=convert_gpt2_weights,
    cases=_convert_cases,
    compare=_compare,
    mistakes=bank.mistakes,
    alternatives=bank.alternatives,
    hints=[
        "Most tensors only change their name (ln_1.weight is ln1.w, mlp.c_fc.weight is mlp.W_in). The work is in "
        "attention: c_attn packs three projections for every head into one matrix, and c_proj is W_O with its "
        "heads merged.",
        "c_attn's weight is (d_model, 3·d_model): Q's columns, then K's, then V's; within each, head 0's d_head "
        "columns, then head 1's. Reshape a block of d_model columns to (d_model, head, d_head) and put the head "
        "axis first; c_proj's rows reshape to (head, d_head, d_model) directly.",
    ],
)
EXERCISES = {CONVERT_GPT2_WEIGHTS.name: CONVERT_GPT2_WEIGHTS}


def check_convert_gpt2_weights(fn):
    """Check a student's ``convert_gpt2_weights(hf, cfg)``."""
    return CONVERT_GPT2_WEIGHTS.check(fn)
