"""A sparse autoencoder on the course GPT's MLP neurons: the activations are the model's own (through W_out they
give the MLP's write), the report's numbers match a hand-built SAE, and an SAE trained as notebook 13 trains it
reconstructs held-out activations with few latents, shrinking them, on all five course runs (claims with margins;
tests/test_numerics_matrix.py runs this file again on the lowest numerics path)."""

from pathlib import Path

import pytest
import torch

from course_utils.gpt.checkpoint import SEEDS, load_checkpoint, seed_checkpoint
from course_utils.interp.sae_on_mlp import (MLPSparseAutoencoder, held_out_windows, mlp_hidden, sae_report,
                                            top_activating_snippets, train_mlp_sae)
from course_utils.superposition.sparse_autoencoder import SparseAutoencoder

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "src" / "13_inside_the_model.py"
# Notebook 13's section 6: block 1, 160 held-out windows, the first 128 (8192 tokens) to train on, the other 32
# (2048 tokens) to report on, 512 latents, train_mlp_sae's defaults (200 steps, SAE seed 0).
LAYER, WINDOWS, TRAIN_WINDOWS, D_SAE = 1, 160, 128, 512
NOTEBOOK_NORM_RATIO, NOTEBOOK_GAMMA = 0.95, 0.99  # what the notebook asserts: shrinkage by both measures
# Measured on the five runs (Intel Xeon, torch 2.14; native AVX-512, AVX2 and the lowest path agree to 1e-3):
#   run  L0    variance explained  dead  norm ratio  gamma  neurons above 0
#   0    26.3  0.779               0     0.682       0.915  40.6
#   1    21.9  0.797-0.798         0     0.658       0.888-0.889  43.3
#   2    26.9  0.773               0     0.711       0.882  46.7
#   3    24.2  0.780-0.781         0     0.688       0.893  45.6
#   4    26.9  0.787               0     0.706       0.896  47.3
# (another SAE seed, 1, on run 0: L0 26.4, variance explained 0.779, norm ratio 0.675, gamma 0.901)
VARIANCE_EXPLAINED = 0.7  # "at the price of some error": measured 0.773-0.798
MAX_L0 = 40  # of 512 latents, "most of them zero on any one input": measured 21.9-26.9
MAX_DEAD = 0.05  # measured 0 on every run (1.8% on run 0's block 0)
MAX_NORM_RATIO = 0.8  # shrinkage well below 1, not only below the notebook's 0.95: measured 0.658-0.711
MAX_GAMMA = 0.95  # measured 0.882-0.915
MAX_L0_PER_NEURON = 0.8  # "sparser latents": L0 over the neurons above zero per token, measured 0.51-0.65


@pytest.fixture(scope="module")
def course():
    ckpt = load_checkpoint()
    windows = held_out_windows(ckpt["tokenizer"], ckpt["model"].cfg.n_ctx, WINDOWS)
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


def test_the_claims_below_are_about_what_notebook_13_does():
    source = NOTEBOOK.read_text(encoding="utf-8")
    for line in (f"SAE_LAYER = {LAYER}", f"held_out_windows(tokenizer, model.cfg.n_ctx, {WINDOWS})",
                 f"TRAIN_WINDOWS = {TRAIN_WINDOWS}", f"train_mlp_sae(train_rows, d_sae={D_SAE})",
                 f'assert report["norm_ratio"] < {NOTEBOOK_NORM_RATIO} and '
                 f'report["relative_reconstruction_bias"] < {NOTEBOOK_GAMMA}'):
        assert line in source, f"notebook 13 no longer has {line!r}: make the tests here match it"


@pytest.fixture(scope="module", params=SEEDS, ids=lambda seed: f"run{seed}")
def run(request):
    """Notebook 13's SAE trained on block 1 of the course run at ``seed``, and its held-out tokens."""
    ckpt = load_checkpoint(seed_checkpoint(request.param))
    windows = held_out_windows(ckpt["tokenizer"], ckpt["model"].cfg.n_ctx, WINDOWS)
    hidden = mlp_hidden(ckpt["model"], windows, LAYER)
    trained = train_mlp_sae(hidden[:TRAIN_WINDOWS].flatten(0, 1), d_sae=D_SAE)
    return ckpt["tokenizer"], windows[TRAIN_WINDOWS:], hidden[TRAIN_WINDOWS:], trained


def _claims(name, report, held_out, margins):
    margins.below(f"{name}: norm ratio < {NOTEBOOK_NORM_RATIO} (notebook 13 asserts it)",
                  report["norm_ratio"], NOTEBOOK_NORM_RATIO)
    margins.below(f"{name}: relative reconstruction bias < {NOTEBOOK_GAMMA} (notebook 13 asserts it)",
                  report["relative_reconstruction_bias"], NOTEBOOK_GAMMA)
    margins.below(f"{name}: norm ratio < {MAX_NORM_RATIO}", report["norm_ratio"], MAX_NORM_RATIO)
    margins.below(f"{name}: relative reconstruction bias < {MAX_GAMMA}", report["relative_reconstruction_bias"],
                  MAX_GAMMA)
    margins.above(f"{name}: variance explained > {VARIANCE_EXPLAINED}", report["variance_explained"],
                  VARIANCE_EXPLAINED)
    margins.below(f"{name}: L0 < {MAX_L0} of {D_SAE} latents", report["l0"], MAX_L0)
    margins.below(f"{name}: dead latents < {MAX_DEAD:.0%}", report["dead_fraction"], MAX_DEAD)
    neurons = float((held_out > 0).sum(-1).float().mean())  # neurons above zero per token
    margins.below(f"{name}: L0 < {MAX_L0_PER_NEURON} x the neurons above zero per token",
                  report["l0"] / neurons, MAX_L0_PER_NEURON)


def test_every_claim_notebook_13_makes_about_its_sae_holds_on_every_course_run(run, margins):
    tokenizer, windows, hidden, trained = run
    report = sae_report(trained, hidden.flatten(0, 1))
    _claims(f"11 SAE on block {LAYER}'s MLP, every run", report, hidden.flatten(0, 1), margins)
    fires = (trained.encode(hidden) > 0).flatten(0, 1).float().mean(0)  # (d_sae,): how often each fires
    for latent in fires.topk(3).indices.tolist():  # the notebook shows 4 snippets of each of the 3 commonest
        snippets = top_activating_snippets(trained, windows, hidden, latent, tokenizer, k=4)
        assert len(snippets) == 4 and snippets[0]["activation"] >= snippets[-1]["activation"] > 0


def test_another_sae_seed_gives_the_same_picture(course, margins):
    model, tokenizer, windows, h = course
    train, held_out = h[:TRAIN_WINDOWS].flatten(0, 1), h[TRAIN_WINDOWS:].flatten(0, 1)
    trained = train_mlp_sae(train, model.cfg.d_mlp, seed=1)
    _claims(f"11 SAE on block {LAYER}'s MLP, SAE seed 1 on run 0", sae_report(trained, held_out), held_out, margins)
    latent = int(trained.encode(h[TRAIN_WINDOWS:]).flatten(0, 1).gt(0).sum(0).argmax())  # the most often active
    snippets = top_activating_snippets(trained, windows[TRAIN_WINDOWS:], h[TRAIN_WINDOWS:], latent, tokenizer, k=3)
    assert len(snippets) == 3 and snippets[0]["activation"] >= snippets[-1]["activation"] > 0
