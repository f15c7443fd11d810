"""A sparse autoencoder on the course GPT's MLP neurons: the activations are the model's own (through W_out they
give the MLP's write), the report's numbers match a hand-built SAE, and a trained one reconstructs held-out
activations with few latents, shrinking them (claims with margins, two SAE seeds)."""

import pytest
import torch

from course_utils.gpt.checkpoint import load_checkpoint
from course_utils.interp.sae_on_mlp import (MLPSparseAutoencoder, held_out_windows, mlp_hidden, sae_report,
                                            top_activating_snippets, train_mlp_sae)
from course_utils.superposition.sparse_autoencoder import SparseAutoencoder

LAYER = 1
VARIANCE_EXPLAINED, MAX_L0 = 0.6, 40  # of 512 latents


@pytest.fixture(scope="module")
def course():
    ckpt = load_checkpoint()
    windows = held_out_windows(ckpt["tokenizer"], ckpt["model"].cfg.n_ctx, 160)
    return ckpt["model"], ckpt["tokenizer"], windows, mlp_hidden(ckpt["model"], windows, LAYER)


def test_the_activations_are_the_models_own(course):
    model, tokenizer, windows, h = course
    assert windows.shape == (160, 64) and h.shape == (160, 64, model.cfg.d_mlp)
    corpus_end = tokenizer.decode(windows[-1].tolist())
    from course_utils.corpus import load_corpus
    assert load_corpus().endswith(corpus_end)  # the last window is the corpus's end: held-out text
    mlp = model.blocks[LAYER].mlp
    write = h[:4] @ mlp.W_out + mlp.b_out
    torch.testing.assert_close(write, model.residual_writes(windows[:4])[f"blocks.{LAYER}.mlp"], rtol=0, atol=1e-5)


def _identity_sae(d: int, threshold: float) -> MLPSparseAutoencoder:
    sae = SparseAutoencoder(d, d, seed=0)
    with torch.no_grad():
        sae.W_enc.copy_(torch.eye(d)), sae.W_dec.copy_(torch.eye(d))
        sae.b_enc.fill_(-threshold), sae.b_dec.zero_()
    return MLPSparseAutoencoder(sae, 2.0, torch.zeros(1))


def test_report_and_snippets_on_a_hand_built_sae():
    h = torch.tensor([[2.0, 0.0, 4.0], [6.0, 2.0, 0.0], [0.0, 4.0, 2.0]])  # raw; the SAE sees h / 2
    exact = sae_report(_identity_sae(3, 0.0), h)  # latent i = relu(h_i / 2): reconstructs h / 2 exactly
    assert exact == pytest.approx({"l0": 2.0, "variance_explained": 1.0, "dead_fraction": 0.0, "norm_ratio": 1.0,
                                   "relative_reconstruction_bias": 1.0})
    shrunk = sae_report(_identity_sae(3, 0.5), h)  # latent i = relu(h_i / 2 - 0.5): every active value less 0.5
    x = h / 2
    x_hat = (x - 0.5).clamp_min(0)
    assert shrunk["norm_ratio"] == pytest.approx(float((x_hat.norm(dim=1) / x.norm(dim=1)).mean()))
    assert shrunk["relative_reconstruction_bias"] == pytest.approx(float(x_hat.square().sum() / (x_hat * x).sum()))
    assert shrunk["relative_reconstruction_bias"] < 1 and shrunk["l0"] == 2.0
    tokens = torch.tensor([[5, 6, 7]])

    class Names:
        def decode(self, ids):
            return "".join(chr(ord("a") + i) for i in ids)

    snippets = top_activating_snippets(_identity_sae(3, 0.0), tokens, h[None], 1, Names(), k=5, context=1)
    assert [(s["position"], s["before"], s["token"]) for s in snippets] == [(2, "g", "h"), (1, "f", "g")]
    assert [s["activation"] for s in snippets] == [2.0, 1.0]  # h / 2 at the two positions where latent 1 fires
    with pytest.raises(ValueError, match="latent"):
        top_activating_snippets(_identity_sae(3, 0.0), tokens, h[None], 3, Names())
    with pytest.raises(TypeError, match="trained"):
        sae_report(SparseAutoencoder(3, 3), h)
    with pytest.raises(ValueError, match="h"):
        train_mlp_sae(torch.zeros(5, 3), 4)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_trained_sae_reconstructs_held_out_activations_sparsely(course, seed, margins):
    model, tokenizer, windows, h = course
    train, held_out = h[:128].flatten(0, 1), h[128:].flatten(0, 1)  # 8192 tokens to train on, 2048 to report on
    trained = train_mlp_sae(train, model.cfg.d_mlp, seed=seed)
    report = sae_report(trained, held_out)
    margins.above(f"SAE on layer {LAYER}'s MLP, seed {seed}: variance explained > {VARIANCE_EXPLAINED}",
                  report["variance_explained"], VARIANCE_EXPLAINED)
    margins.below(f"SAE on layer {LAYER}'s MLP, seed {seed}: L0 < {MAX_L0}", report["l0"], MAX_L0)
    margins.below(f"SAE on layer {LAYER}'s MLP, seed {seed}: shrinkage, relative reconstruction bias < 1",
                  report["relative_reconstruction_bias"], 1.0)
    latent = int(trained.encode(h[128:]).flatten(0, 1).gt(0).sum(0).argmax())  # the most often active latent
    snippets = top_activating_snippets(trained, windows[128:], h[128:], latent, tokenizer, k=3)
    assert len(snippets) == 3 and snippets[0]["activation"] >= snippets[-1]["activation"] > 0
