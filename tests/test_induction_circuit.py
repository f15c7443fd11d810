"""The induction circuit of a two-layer attention-only model trained on the copy task: the pieces against hand-made
cases and oracles, then the claims on five seeds, each with its margin (tests/numerics.py): the top induction
head's ablation raises the repeated half's loss, and its top K-composition partner in layer 0 is the head whose
ablation costs the most, above the random baseline. (That this head is also the top previous-token head held on
9 of 12 seeds, see induction_circuit's docstring: a count, not a claim.)"""

import dataclasses

import pytest
import torch

from course_utils.attention.induction import AttentionOnlyTransformer
from course_utils.interp.induction_circuit import (COPY_TASK, ablated_logits, circuit_reading, composition_score,
                                                   copy_loss, copy_sequences, k_composition_scores,
                                                   random_composition_baseline, train_copy_model,
                                                   trained_copy_model)

SEEDS = range(5)
ABLATION_RISE = 0.05  # nats: zeroing the top induction head costs at least this much on the repeated half
INDUCTION_SCORE = 0.5  # the top induction head puts at least half its attention on the induction stripe


def test_copy_sequences_and_the_loss_on_the_copy_only():
    tokens, halves = copy_sequences(50, COPY_TASK, torch.Generator().manual_seed(0))
    assert tokens.shape == (50, COPY_TASK.n_ctx) and set(halves.tolist()) <= set(range(3, 7))
    for row, k in zip(tokens, halves.tolist()):
        assert torch.equal(row[k:2 * k], row[:k])
    assert len(set(halves.tolist())) == 4  # every half length occurs: the copy's place is not fixed
    perfect = torch.full((50, COPY_TASK.n_ctx, COPY_TASK.d_vocab), -30.0)
    perfect[:, :-1].scatter_(2, tokens[:, 1:, None], 30.0)  # right about every next token
    wrong = perfect.clone()
    for i, k in enumerate(halves.tolist()):
        wrong[i, : k] = 0.0  # uniform before the copy and on the copy's first token: not scored
        wrong[i, 2 * k - 1:] = 0.0  # uniform on the filler: not scored
    assert copy_loss(perfect, tokens, halves) < 1e-6 and copy_loss(wrong, tokens, halves) < 1e-6
    wrong[0, halves[0]] = 0.0  # uniform on one copy token: scored
    assert copy_loss(wrong, tokens, halves) > 1e-3
    with pytest.raises(ValueError, match="cfg"):
        copy_sequences(2, dataclasses.replace(COPY_TASK, max_period=7))


def test_composition_scores_by_hand_and_against_the_transformerlens_form():
    eye = torch.eye(4)
    assert composition_score(eye, eye).item() == pytest.approx(0.5)  # ‖I‖ / ‖I‖² = 1 / sqrt(4)
    assert composition_score(torch.diag(torch.tensor([1.0, 0, 0, 0])), torch.diag(torch.tensor([0, 1.0, 0, 0]))) == 0
    model = AttentionOnlyTransformer(COPY_TASK, generator=torch.Generator().manual_seed(0))
    scores = k_composition_scores(model)
    assert scores.shape == (2, 2)
    l0, l1 = model.layers
    for h1, h2 in [(0, 1), (1, 0)]:
        OV = l0.W_V[h1] @ l0.W_O[h1]
        QK = l1.W_Q[h2] @ l1.W_K[h2].T
        tl = (OV @ QK.T).norm() / (OV.norm() * QK.norm())  # TransformerLens: OV @ QK.T for K-composition
        assert scores[h1, h2].item() == pytest.approx(tl.item(), rel=1e-5)
    with torch.no_grad():  # head 0 of layer 0 writes only where layer 1's keys do not read: no composition
        l1.W_K[:, 16:] = 0.0
        l0.W_O[0, :, :16] = 0.0
    assert k_composition_scores(model)[0].abs().max() < 1e-6
    baseline = random_composition_baseline(32, 8, n_samples=100)
    assert 0.05 < baseline < 0.5 and baseline == random_composition_baseline(32, 8, n_samples=100)
    with pytest.raises(ValueError, match="right"):
        composition_score(torch.eye(3), torch.eye(4))


def test_training_is_seeded_and_deterministic():
    short = dataclasses.replace(COPY_TASK, steps=15)
    (a, losses_a), (b, losses_b) = train_copy_model(short, 3), train_copy_model(short, 3)
    assert losses_a == losses_b and all(torch.equal(a.state_dict()[k], v) for k, v in b.state_dict().items())
    assert train_copy_model(short, 4)[1] != losses_a
    first, _ = trained_copy_model(short, 3)  # remembered: a fresh copy each time, so changing one changes nothing
    with torch.no_grad():
        first.W_U.zero_()
    assert torch.equal(trained_copy_model(short, 3)[0].W_U, a.W_U)


def test_ablated_logits_equal_a_model_whose_head_writes_nothing():
    model = AttentionOnlyTransformer(COPY_TASK, generator=torch.Generator().manual_seed(1)).eval()
    tokens, _ = copy_sequences(8, COPY_TASK, torch.Generator().manual_seed(2))
    silenced = AttentionOnlyTransformer(COPY_TASK)
    silenced.load_state_dict(model.state_dict())
    with torch.no_grad():
        silenced.layers[1].W_O[1] = 0.0  # the head's output matrix zeroed: it writes nothing (b_O is shared)
        expected = silenced(tokens)
    torch.testing.assert_close(ablated_logits(model, tokens, 1, 1), expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="head"):
        ablated_logits(model, tokens, 1, 2)
    with pytest.raises(TypeError, match="model"):
        circuit_reading(torch.nn.Linear(2, 2))


@pytest.mark.parametrize("seed", SEEDS)
def test_the_induction_head_matters_and_composes_with_the_head_that_feeds_it(seed, margins):
    model, losses = trained_copy_model(COPY_TASK, seed)
    assert len(losses) == COPY_TASK.steps and sum(losses[-20:]) / 20 < 0.5 * losses[0]  # it learned to copy
    reading = circuit_reading(model)
    head, partner, feeding = reading["induction_head"], reading["partner"], reading["feeding_head"]
    margins.above(f"induction circuit seed {seed}: top induction score > {INDUCTION_SCORE}",
                  reading["induction"][head], INDUCTION_SCORE)
    margins.above(f"induction circuit seed {seed}: zeroing the induction head raises the loss > {ABLATION_RISE} nats",
                  reading["ablated_loss"][head] - reading["loss"], ABLATION_RISE)
    column = reading["k_composition"][:, head]
    others = torch.cat([column[:feeding], column[feeding + 1:]])
    margins.above(f"induction circuit seed {seed}: the layer-0 head whose ablation costs most is the top K-partner",
                  column[feeding], others.max())
    margins.above(f"induction circuit seed {seed}: its K-composition is over the random baseline",
                  column[feeding], reading["baseline"])
    assert partner == feeding
