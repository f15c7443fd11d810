"""Open GPT-2: map Hugging Face GPT-2 weights onto the course's ``GPT``.

Covers ``gpt2_config`` (a Hugging Face ``config.json`` / ``GPT2Config`` -> ``GPTConfig``;
``gpt2_small_config()`` is d_model 768, 12 heads of 64, 12 layers, 50,257 tokens, 1,024 positions),
``convert_gpt2_state_dict`` (HF names and layouts -> ours), ``to_gpt2_state_dict`` (ours -> HF's, its
inverse: how notebook 11's check makes GPT-2-shaped tensors without downloading any), ``read_weights`` (a local
``model.safetensors`` or ``pytorch_model.bin``, with clear errors for a missing or corrupt file),
``load_gpt2`` (a file or a folder holding ``config.json`` + weights) and ``load_gpt2_from_hub``
(downloads; only when the machine is online, never in tests).

GPT-2 stores its projections as ``Conv1D`` weights of shape (in, out), so ``x @ W`` is the layer.
``c_attn`` (d_model, 3·d_model) holds Q, K and V side by side, each with head h in columns
``h·d_head .. (h+1)·d_head``: a reshape gives our (head, d_model, d_head) ``W_Q``/``W_K``/``W_V``;
``c_proj`` (d_model, d_model) reshapes to ``W_O`` (head, d_head, d_model); the MLP's ``c_fc`` and
``c_proj`` are ``W_in`` and ``W_out`` as they are. The unembedding is tied to ``wte``.
Leaves out GPT-2's dropout and its attention-scaling options (the defaults are what we compute).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import Tensor

from course_utils.gpt.model import GPT
from course_utils.gpt.config import GPTConfig, check_state_dict

_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"}
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def gpt2_config(hf_config) -> GPTConfig:
    """``GPTConfig`` for a Hugging Face GPT-2 config (a dict from ``config.json`` or a ``GPT2Config``)."""
    c = hf_config if isinstance(hf_config, dict) else hf_config.to_dict()
    activation = c.get("activation_function", "gelu_new")
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation_function {activation!r} is not one of {sorted(_ACTIVATIONS)}")
    return GPTConfig(
        d_vocab=c["vocab_size"],
        n_ctx=c["n_positions"],
        d_model=c["n_embd"],
        n_heads=c["n_head"],
        n_layers=c["n_layer"],
        d_mlp=c.get("n_inner") or 4 * c["n_embd"],
        tie_embeddings=True,
        bias=True,
        activation=_ACTIVATIONS[activation],
        ln_eps=c.get("layer_norm_epsilon", 1e-5),
    )


def gpt2_small_config() -> GPTConfig:
    """GPT-2 small: ``gpt2_small_config().d_head`` -> 64."""
    return GPTConfig(d_vocab=50257, n_ctx=1024, d_model=768, n_heads=12, n_layers=12)


def convert_gpt2_state_dict(hf: dict[str, Tensor], cfg: GPTConfig) -> dict[str, Tensor]:
    """HF GPT-2 tensors (with or without the ``transformer.`` prefix) -> a state dict for ``GPT(cfg)``."""
    sd = {k.removeprefix("transformer."): v for k, v in hf.items()}
    H, M, Dh = cfg.n_heads, cfg.d_model, cfg.d_head
    need = ["wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"]
    missing = [k for k in need if k not in sd] + [
        f"h.{i}.attn.c_attn.weight" for i in range(cfg.n_layers) if f"h.{i}.attn.c_attn.weight" not in sd
    ]
    if missing:
        raise ValueError(f"not GPT-2 weights for this config: missing {missing[:4]}")
    out = {
        "W_E": sd["wte.weight"],
        "W_pos": sd["wpe.weight"],
        "ln_final.w": sd["ln_f.weight"],
        "ln_final.b": sd["ln_f.bias"],
    }
    for i in range(cfg.n_layers):
        g = lambda name: sd[f"h.{i}.{name}"]  # noqa: E731
        W_qkv, b_qkv = g("attn.c_attn.weight"), g("attn.c_attn.bias")  # (d_model, 3·d_model), (3·d_model,)
        if tuple(W_qkv.shape) != (M, 3 * M):
            raise ValueError(f"h.{i}.attn.c_attn.weight has shape {tuple(W_qkv.shape)}, the config needs {(M, 3 * M)}")
        p = f"blocks.{i}."
        for j, name in enumerate("QKV"):
            W = W_qkv[:, j * M : (j + 1) * M]  # (d_model, head·d_head)
            out[p + f"attn.W_{name}"] = W.reshape(M, H, Dh).permute(1, 0, 2)  # (head, d_model, d_head)
            out[p + f"attn.b_{name}"] = b_qkv[j * M : (j + 1) * M].reshape(H, Dh)  # (head, d_head)
        out[p + "attn.W_O"] = g("attn.c_proj.weight").reshape(H, Dh, M)  # rows are the merged heads
        out[p + "attn.b_O"] = g("attn.c_proj.bias")
        out[p + "ln1.w"], out[p + "ln1.b"] = g("ln_1.weight"), g("ln_1.bias")
        out[p + "ln2.w"], out[p + "ln2.b"] = g("ln_2.weight"), g("ln_2.bias")
        out[p + "mlp.W_in"], out[p + "mlp.b_in"] = g("mlp.c_fc.weight"), g("mlp.c_fc.bias")  # (d_model, d_mlp)
        out[p + "mlp.W_out"], out[p + "mlp.b_out"] = g("mlp.c_proj.weight"), g("mlp.c_proj.bias")  # (d_mlp, d_model)
    return {k: v.contiguous() for k, v in out.items()}


def to_gpt2_state_dict(model: GPT) -> dict[str, Tensor]:
    """A course ``GPT``'s weights under Hugging Face GPT-2's names and layouts (``transformer.h.0.attn.c_attn.weight``
    ... and ``lm_head.weight``, tied to ``wte``): ``convert_gpt2_state_dict`` undoes it exactly."""
    if not isinstance(model, GPT):
        raise TypeError(f"model must be a course_utils.gpt.model.GPT, got {type(model).__name__}")
    cfg = model.cfg
    if not (cfg.tie_embeddings and cfg.bias and cfg.norm == "pre" and cfg.n_heads * cfg.d_head == cfg.d_model):
        raise ValueError("model must be GPT-2 shaped: tied embeddings, biases, pre-norm, n_heads·d_head = d_model")
    sd, M = model.state_dict(), cfg.d_model
    out = {"wte.weight": sd["W_E"], "wpe.weight": sd["W_pos"], "ln_f.weight": sd["ln_final.w"],
           "ln_f.bias": sd["ln_final.b"]}
    for i in range(cfg.n_layers):
        p, h = f"blocks.{i}.", f"h.{i}."
        out[h + "attn.c_attn.weight"] = torch.cat([sd[p + f"attn.W_{n}"].permute(1, 0, 2).reshape(M, M) for n in "QKV"],
                                                  dim=1)  # (d_model, 3·d_model): Q, K, V side by side
        out[h + "attn.c_attn.bias"] = torch.cat([sd[p + f"attn.b_{n}"].reshape(M) for n in "QKV"])
        out[h + "attn.c_proj.weight"] = sd[p + "attn.W_O"].reshape(M, M)  # rows: head 0's d_head, then head 1's...
        out[h + "attn.c_proj.bias"] = sd[p + "attn.b_O"]
        out[h + "ln_1.weight"], out[h + "ln_1.bias"] = sd[p + "ln1.w"], sd[p + "ln1.b"]
        out[h + "ln_2.weight"], out[h + "ln_2.bias"] = sd[p + "ln2.w"], sd[p + "ln2.b"]
        out[h + "mlp.c_fc.weight"], out[h + "mlp.c_fc.bias"] = sd[p + "mlp.W_in"], sd[p + "mlp.b_in"]
        out[h + "mlp.c_proj.weight"], out[h + "mlp.c_proj.bias"] = sd[p + "mlp.W_out"], sd[p + "mlp.b_out"]
    hf = {f"transformer.{k}": v.detach().clone().contiguous() for k, v in out.items()}
    return hf | {"lm_head.weight": hf["transformer.wte.weight"]}


def read_weights(path) -> dict[str, Tensor]:
    """Tensors of a ``.safetensors`` or ``.bin`` file; ValueError if it is missing, of another kind or corrupt."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or Path, got {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"weights file {str(path)!r} does not exist")
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            return load_file(str(path))
        if path.suffix in (".bin", ".pt", ".pth"):
            sd = torch.load(path, map_location="cpu", weights_only=True)
            if not isinstance(sd, dict):
                raise ValueError("not a dict of tensors")
            return sd
    except Exception as exc:  # safetensors, pickle and zip all raise their own kinds
        raise ValueError(
            f"weights file {str(path)!r} is corrupt or not a weights file ({type(exc).__name__}: {exc})"
        ) from None
    raise ValueError(f"weights file {str(path)!r}: expected a .safetensors or .bin file")


def load_gpt2(path, cfg: GPTConfig | None = None) -> GPT:
    """A course ``GPT`` holding GPT-2 weights from a folder (``config.json`` + weights)
    or a weights file (pass ``cfg``)."""
    path = Path(path) if isinstance(path, (str, Path)) else path
    if isinstance(path, Path) and path.is_dir():
        if cfg is None:
            if not (path / "config.json").is_file():
                raise ValueError(f"folder {str(path)!r} has no config.json; pass cfg")
            cfg = gpt2_config(json.loads((path / "config.json").read_text(encoding="utf-8")))
        found = [path / f for f in WEIGHT_FILES if (path / f).is_file()]
        if not found:
            raise ValueError(f"folder {str(path)!r} holds none of {WEIGHT_FILES}")
        path = found[0]
    cfg = gpt2_small_config() if cfg is None else cfg
    sd = convert_gpt2_state_dict(read_weights(path), cfg)
    with torch.device("meta"):
        model = GPT(cfg)
    check_state_dict(model, sd)
    model.load_state_dict(sd, assign=True)
    return model.eval()


def load_gpt2_from_hub(name: str = "gpt2") -> GPT:  # pragma: no cover - needs the network
    """Download ``name`` from the Hugging Face Hub (online machines only) and load it."""
    from huggingface_hub import snapshot_download

    folder = snapshot_download(name, allow_patterns=["config.json", "model.safetensors"])
    return load_gpt2(folder)
