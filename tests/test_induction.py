"""The toy attention-only model learns the copy task, and the head scores find a previous-token head
in layer 0 and an induction head in layer 1 (seeded from a local generator; seconds on a CPU)."""

import math

import pytest
import torch

from course_utils.attention.induction import (AttentionOnlyTransformer, InductionConfig, induction_scores, periodic_sequences,
                                    previous_token_scores, repeated_sequences, train_induction_model,
                                    trained_induction_model)


def test_scores_on_hand_built_patterns():
    n = 8
    prev = torch.zeros(1, 1, n, n)
    prev[0, 0, 0, 0] = 1
    prev[0, 0, torch.arange(1, n), torch.arange(n - 1)] = 1
    assert previous_token_scores(prev).item() == 1.0
    assert induction_scores(prev, 4).item() == 0.0
    ind = torch.eye(n)[None, None].clone()
    for q in range(4, n):
        ind[0, 0, q] = 0
        ind[0, 0, q, q - 3] = 1
    assert induction_scores(ind, 4).item() == 1.0
    assert previous_token_scores(torch.eye(n)[None, None]).item() == 0.0
    with pytest.raises(ValueError, match="half_len"):
        induction_scores(ind, 5)


def test_training_data_repeats_with_the_stated_period():
    cfg = InductionConfig()
    tokens, periods = periodic_sequences(16, cfg, torch.Generator().manual_seed(0))
    for row, period in zip(tokens, periods):
        assert cfg.min_period <= period <= cfg.max_period
        assert torch.equal(row[period:], row[:-period])
    rep = repeated_sequences(3, 5, 10, torch.Generator().manual_seed(0))
    assert torch.equal(rep[:, :5], rep[:, 5:])


@pytest.fixture(scope="module")
def trained():
    # the remembered run the notebook's checks use too: one training per test process, not two
    model, losses = trained_induction_model(InductionConfig(), seed=0)
    tokens = repeated_sequences(200, 10, model.cfg.d_vocab, torch.Generator().manual_seed(123))
    return model, losses, model.patterns(tokens)


@pytest.mark.slow  # subprocesses or training: not in the quick loop (make test-fast)
def test_model_learns_to_copy(trained, margins):
    model, losses, _ = trained
    chance = math.log(model.cfg.d_vocab)
    margins.above("05 induction model: first loss over 0.9 x chance (nats / chance)", losses[0] / chance, 0.9)
    margins.below("05 induction model: last 20 losses under 0.25 x chance", sum(losses[-20:]) / 20 / chance, 0.25)


def test_layer0_has_a_previous_token_head_and_layer1_an_induction_head(trained, margins):
    _, _, (layer0, layer1) = trained
    prev0, ind1 = previous_token_scores(layer0), induction_scores(layer1, 10)
    margins.above("05 induction model: a layer-0 previous-token score over 0.5", prev0.max(), 0.5)
    margins.above("05 induction model: a layer-1 induction score over 0.5", ind1.max(), 0.5)
    # and they are different jobs: the induction head is not looking one token back, nor vice versa
    margins.below("05 induction model: the induction head's previous-token score under 0.2",
                  previous_token_scores(layer1)[ind1.argmax()], 0.2)
    margins.below("05 induction model: the previous-token head's induction score under 0.1",
                  induction_scores(layer0, 10)[prev0.argmax()], 0.1)


def test_untrained_model_has_neither_head():
    torch.manual_seed(0)
    model = AttentionOnlyTransformer(InductionConfig())
    layer0, layer1 = model.patterns(repeated_sequences(50, 10, 24, torch.Generator().manual_seed(1)))
    assert previous_token_scores(layer0).max() < 0.3 and induction_scores(layer1, 10).max() < 0.3


def test_rejects_sequences_longer_than_n_ctx():
    model = AttentionOnlyTransformer(InductionConfig())
    with pytest.raises(ValueError, match="n_ctx=20"):
        model(torch.zeros(1, 21, dtype=torch.long))


def test_attention_viewer_switches_layer_head_and_query():
    from course_utils.viz.head_viewer import attention_viewer

    torch.manual_seed(0)
    model = AttentionOnlyTransformer(InductionConfig())
    tokens = repeated_sequences(1, 10, 24, torch.Generator().manual_seed(1))
    patterns = [p[0] for p in model.patterns(tokens)]
    labels = [str(t) for t in tokens[0].tolist()]
    viewer = attention_viewer(patterns, labels, {"induction": [induction_scores(p[None], 10) for p in patterns]})
    layer, head, query = viewer.children[0].children
    readout = viewer.children[1].children[1]
    assert "course-layer" in layer._dom_classes and "course-readout" in readout._dom_classes
    layer.value, head.value, query.value = 1, 1, 2
    lines = readout.value.split("<br>")
    assert lines[0] == "layer 1 head 1"
    assert lines[1] == f"induction: {induction_scores(patterns[1][None], 10)[1].item():.3f}"
    assert lines[3:] == [f"k{j} {labels[j]}: {patterns[1][1, 2, j].item():.3f}" for j in range(3)]


def test_training_restores_the_thread_count():
    threads = torch.get_num_threads()
    train_induction_model(InductionConfig(steps=2), seed=0)
    assert torch.get_num_threads() == threads


def test_training_leaves_the_global_random_state_alone_and_is_reproducible():
    torch.manual_seed(7)
    state = torch.get_rng_state()
    cfg = InductionConfig(steps=3)
    first, losses = train_induction_model(cfg, seed=5)
    assert torch.equal(torch.get_rng_state(), state)
    torch.manual_seed(99)  # a different global state must not change the run
    second, again = train_induction_model(cfg, seed=5)
    assert losses == again
    for (name, a), (_, b) in zip(first.named_parameters(), second.named_parameters()):
        assert torch.equal(a, b), name


def test_the_model_uses_the_interpretability_layout():
    model = AttentionOnlyTransformer(InductionConfig(), generator=torch.Generator().manual_seed(0))
    cfg = model.cfg
    assert model.W_E.shape == (cfg.d_vocab, cfg.d_model) and model.W_U.shape == (cfg.d_model, cfg.d_vocab)
    assert model.layers[0].W_Q.shape == (cfg.n_heads, cfg.d_model, cfg.d_model // cfg.n_heads)


def test_bad_arguments_are_rejected():
    with pytest.raises(TypeError, match="seed"):
        train_induction_model(InductionConfig(steps=1), seed="0")
    with pytest.raises(ValueError, match="tokens"):
        AttentionOnlyTransformer(InductionConfig())([1, 2, 3])
    with pytest.raises(ValueError, match="cpu_threads must be a positive int, got 0"):
        train_induction_model(InductionConfig(steps=1), cpu_threads=0)
    with pytest.raises(ValueError, match="n_seqs must be a positive int, got 0"):
        repeated_sequences(0, 3, 5)
    with pytest.raises(ValueError, match="n_seqs must be a positive int, got 0"):
        periodic_sequences(0, InductionConfig())
    with pytest.raises(TypeError, match="half_len must be an int, got float"):
        induction_scores(torch.eye(8)[None, None], 2.0)


@pytest.mark.gpu
def test_the_claims_hold_when_trained_on_cuda(margins):
    """Notebook 05's claims about its trained model, for the run trained on the GPU."""
    model, losses = trained_induction_model(InductionConfig(), seed=0, device="cuda")
    chance = math.log(model.cfg.d_vocab)
    margins.below("05 induction model on the GPU: last 20 losses under 0.25 x chance", sum(losses[-20:]) / 20 / chance,
                  0.25)
    tokens = repeated_sequences(200, 10, model.cfg.d_vocab, torch.Generator().manual_seed(123))
    layer0, layer1 = (p.cpu() for p in model.patterns(tokens.cuda()))
    margins.above("05 induction model on the GPU: a layer-0 previous-token score over 0.5",
                  previous_token_scores(layer0).max(), 0.5)
    margins.above("05 induction model on the GPU: a layer-1 induction score over 0.5",
                  induction_scores(layer1, 10).max(), 0.5)


@pytest.mark.gpu
def test_trains_on_cuda_from_the_same_start_as_on_the_cpu():
    cfg = InductionConfig(steps=5)
    cpu_model, cpu_losses = train_induction_model(cfg, seed=0)
    gpu_model, gpu_losses = train_induction_model(cfg, seed=0, device="cuda")
    assert gpu_model.W_E.device.type == "cuda"
    assert abs(cpu_losses[0] - gpu_losses[0]) < 1e-4  # same initial weights and first batch
    tokens = repeated_sequences(4, 10, cfg.d_vocab, torch.Generator().manual_seed(1))
    cpu_patterns = cpu_model.patterns(tokens)
    gpu_patterns = gpu_model.patterns(tokens.cuda())
    for c, g in zip(cpu_patterns, gpu_patterns):
        torch.testing.assert_close(g.cpu(), c, atol=1e-3, rtol=1e-3)
    data, periods = periodic_sequences(4, cfg, torch.Generator().manual_seed(0))
    from course_utils.attention.induction import repeat_loss
    loss = repeat_loss(gpu_model(data.cuda()), data.cuda(), periods.cuda())
    assert loss.device.type == "cuda"


def test_trained_induction_model_trains_once_and_hands_out_copies():
    from course_utils.attention.induction import trained_induction_model

    cfg = InductionConfig(steps=2)
    first, losses = trained_induction_model(cfg, seed=3)
    with torch.no_grad():
        first.W_E.zero_()  # a caller changing its copy...
    second, again = trained_induction_model(cfg, seed=3)
    assert again == losses and torch.count_nonzero(second.W_E) > 0  # ...does not change the next one
    fresh, fresh_losses = train_induction_model(cfg, seed=3)
    assert fresh_losses == losses and torch.equal(fresh.W_E, second.W_E)
