"""Temperature, greedy, top-k, top-p and sampling against Hugging Face's logits warpers and
hand-derived values, plus the bad-input contract (never a silent NaN)."""

import math

import pytest
import torch

from course_utils import sampling
from course_utils.entropy import entropy
from course_utils.sampling import (apply_temperature, greedy, greedy_distribution, next_token_distribution,
                                   sample_counts, sample_next_token, sample_shares, top_k_filter, top_p_filter)

WORKED = torch.tensor([6.2, 4.9, 2.1, 1.0], dtype=torch.float64)  # CAT, DOG, IS, LOVELY


def _hf_distribution(logits, temperature=1.0, top_k=None, top_p=None):
    from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    scores = TemperatureLogitsWarper(temperature)(None, logits.clone())
    if top_k is not None:
        scores = TopKLogitsWarper(top_k)(None, scores)
    if top_p is not None:
        scores = TopPLogitsWarper(top_p)(None, scores)
    return torch.softmax(scores, dim=-1)


def test_worked_example_from_the_course():
    probs = next_token_distribution(WORKED)
    assert [round(p, 3) for p in probs.tolist()] == [0.772, 0.211, 0.013, 0.004]
    exps = WORKED.exp()
    torch.testing.assert_close(probs, exps / exps.sum())


def test_two_point_gap_is_e_squared_times_more_likely():
    probs = next_token_distribution(torch.tensor([3.0, 1.0], dtype=torch.float64))
    assert math.isclose(probs[0] / probs[1], math.e**2, rel_tol=1e-12)


@pytest.mark.parametrize("temperature", [0.05, 0.5, 1.0, 2.0, 10.0])
@pytest.mark.parametrize("top_k,top_p", [(None, None), (5, None), (None, 0.8), (7, 0.6), (None, 0.1)])
def test_pipeline_matches_hugging_face_warpers(temperature, top_k, top_p):
    logits = 3 * torch.randn(4, 20, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    ours = next_token_distribution(logits, temperature, top_k, top_p)
    torch.testing.assert_close(ours, _hf_distribution(logits, temperature, top_k, top_p))


def test_temperature_sharpens_and_flattens():
    entropies = [entropy(next_token_distribution(WORKED, t)).item() for t in (0.25, 0.5, 1.0, 2.0, 4.0)]
    assert entropies == sorted(entropies)
    assert next_token_distribution(WORKED, 1e6).sub(0.25).abs().max() < 1e-5  # very hot: uniform


@pytest.mark.parametrize("temperature", [0.2, 0.01, 1e-3, 1e-30])
def test_tiny_temperatures_do_not_overflow(temperature):
    for dtype in (torch.float32, torch.float16):
        probs = next_token_distribution(WORKED.to(dtype) * 1000, temperature)
        assert torch.isfinite(probs).all()
        assert probs[0].item() == pytest.approx(1.0, abs=1e-3)


def test_temperature_zero_is_the_explicit_greedy_branch():
    assert torch.equal(next_token_distribution(WORKED, 0), torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64))
    assert greedy(WORKED).item() == 0
    assert greedy(torch.tensor([1.0, 3.0, 3.0])).item() == 1  # first of a tie
    torch.testing.assert_close(next_token_distribution(WORKED, 1e-4), greedy_distribution(WORKED))


def test_logits_of_plus_minus_ten_thousand_give_no_nan():
    logits = torch.tensor([10_000.0, 9_998.0, -10_000.0])
    probs = next_token_distribution(logits, 0.5)
    assert torch.isfinite(probs).all()
    assert probs[0] / probs[1] == pytest.approx(math.e**4, rel=1e-4)


def test_top_k_and_top_p_hand_examples():
    probs = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    torch.testing.assert_close(top_k_filter(probs, 2), torch.tensor([0.625, 0.375, 0.0], dtype=torch.float64))
    torch.testing.assert_close(top_p_filter(probs, 0.5), torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64))
    torch.testing.assert_close(top_p_filter(probs, 0.6), torch.tensor([0.625, 0.375, 0.0], dtype=torch.float64))
    torch.testing.assert_close(top_p_filter(probs, 1.0), probs)
    torch.testing.assert_close(top_p_filter(probs, 1e-9), torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64))
    assert torch.equal(top_k_filter(torch.tensor([0.4, 0.4, 0.2]), 1), torch.tensor([1.0, 0.0, 0.0]))


def test_sampling_is_reproducible_with_a_generator_and_follows_the_distribution():
    a = sample_next_token(WORKED.expand(50, 4), generator=torch.Generator().manual_seed(3))
    b = sample_next_token(WORKED.expand(50, 4), generator=torch.Generator().manual_seed(3))
    assert a.shape == (50,) and torch.equal(a, b)
    counts = sample_counts(next_token_distribution(WORKED), 20_000, torch.Generator().manual_seed(0))
    assert counts.sum() == 20_000
    torch.testing.assert_close(counts / 20_000, next_token_distribution(WORKED).float(), atol=0.015, rtol=0)
    assert sample_next_token(torch.tensor([0.0, 9.0]), temperature=0).item() == 1
    assert set(sample_next_token(WORKED.expand(200, 4), top_k=2, generator=torch.Generator().manual_seed(1)).tolist()) <= {0, 1}


def test_banned_tokens_at_minus_inf_are_fine():
    logits = torch.tensor([2.0, float("-inf"), 1.0])
    for t in (0.0, 0.01, 1.0, 10.0):
        probs = next_token_distribution(logits, t)
        assert torch.isfinite(probs).all() and probs[1] == 0.0


def test_entropy_values():
    assert entropy(torch.tensor([0.5, 0.5], dtype=torch.float64)).item() == pytest.approx(math.log(2))
    assert entropy(torch.tensor([1.0, 0.0])).item() == 0.0


def test_sample_shares_are_counts_over_their_total():
    assert sample_shares(torch.tensor([1, 3])).tolist() == [0.25, 0.75]
    assert sample_shares(torch.tensor([[0, 2], [5, 5]])).tolist() == [[0.0, 1.0], [0.5, 0.5]]
    assert sample_shares(torch.tensor([1, 3])).dtype == torch.float64
    assert sample_shares(torch.tensor([1, 3]), dtype=torch.float32).dtype == torch.float32
    counts = sample_counts(torch.tensor([0.2, 0.8]), 1000, torch.Generator().manual_seed(0))
    torch.testing.assert_close(sample_shares(counts), counts.double() / 1000)
    with pytest.raises(TypeError, match="counts must have an integer dtype"):
        sample_shares(torch.tensor([0.5, 0.5]))
    with pytest.raises(ValueError, match="positive total"):
        sample_shares(torch.tensor([[1, 1], [0, 0]]))
    with pytest.raises(ValueError, match="positive total"):
        sample_shares(torch.tensor([3, -1]))


def test_the_temperature_widget_takes_its_sample_shares_from_sampling():
    from course_utils.viz.temperature import temperature_state

    state = temperature_state(WORKED, 1.0, n_samples=500, seed=2)
    counts = sample_counts(state["probs"], 500, torch.Generator().manual_seed(2))
    assert torch.equal(state["sample_share"], sample_shares(counts))


def test_the_pipeline_checks_its_logits_once(monkeypatch):
    """Validation happens where a value enters: one check of the logits per call, none on the way
    through temperature, top-k and top-p (each check is a host sync on a GPU)."""
    checked = []
    real = sampling.vocab_rows
    monkeypatch.setattr(sampling, "vocab_rows", lambda name, x, **kw: checked.append(name) or real(name, x, **kw))
    next_token_distribution(WORKED, 0.7, top_k=3, top_p=0.9)
    assert checked == ["logits"]
    checked.clear()
    sample_next_token(WORKED, 0.0, top_k=2, top_p=0.5, generator=torch.Generator().manual_seed(0))
    assert checked == ["logits"]
    checked.clear()
    top_k_filter(torch.tensor([0.5, 0.3, 0.2]), 2)
    assert checked == ["probs"]


def test_unchecked_steps_equal_the_public_ones():
    probs = next_token_distribution(WORKED, 0.7)
    torch.testing.assert_close(sampling._top_k_unchecked(probs, 2), top_k_filter(probs, 2))
    torch.testing.assert_close(sampling._top_p_unchecked(probs, 0.9), top_p_filter(probs, 0.9))
    torch.testing.assert_close(greedy_distribution(WORKED), torch.nn.functional.one_hot(greedy(WORKED), 4).double())


@pytest.mark.parametrize("call,error,match", [
    (lambda: apply_temperature(WORKED, 0), ValueError, "greedy"),
    (lambda: apply_temperature(WORKED, -1.0), ValueError, "temperature must be a finite number >= 0"),
    (lambda: next_token_distribution(WORKED, -0.5), ValueError, "temperature"),
    (lambda: next_token_distribution(WORKED, float("nan")), ValueError, "temperature"),
    (lambda: next_token_distribution(WORKED, float("inf")), ValueError, "temperature"),
    (lambda: next_token_distribution(WORKED, "hot"), TypeError, "temperature must be a number"),
    (lambda: next_token_distribution(WORKED, top_p=0.0), ValueError, r"top_p must be in \(0, 1\]"),
    (lambda: next_token_distribution(WORKED, top_p=1.5), ValueError, r"top_p must be in \(0, 1\]"),
    (lambda: next_token_distribution(WORKED, top_k=0), ValueError, "top_k must be between 1 and d_vocab=4"),
    (lambda: next_token_distribution(WORKED, top_k=5), ValueError, "top_k must be between 1 and d_vocab=4"),
    (lambda: next_token_distribution(WORKED, top_k=2.0), TypeError, "top_k must be an int"),
    (lambda: next_token_distribution(torch.tensor([1, 2])), TypeError, "logits must be a floating-point"),
    (lambda: next_token_distribution(torch.tensor([1.0, float("nan")])), ValueError, "NaN"),
    (lambda: top_k_filter(torch.tensor([-0.5, 1.5]), 1), ValueError, "non-negative"),
    (lambda: top_p_filter(torch.zeros(2, 3), 0.5), ValueError, "a row of zeros"),
    (lambda: next_token_distribution(torch.tensor([1.0, float("inf")])), ValueError, r"\+inf"),
    (lambda: next_token_distribution(torch.full((2, 3), float("-inf"))), ValueError, "no token left"),
    (lambda: sample_counts(torch.tensor([0.5, 0.5]), 0), ValueError, "n_samples"),
    (lambda: sample_counts(torch.tensor([0.5, 0.5]), True), TypeError, "n_samples must be a positive int"),
    (lambda: next_token_distribution(WORKED, top_k=True), TypeError, "top_k must be an int, got bool"),
    (lambda: next_token_distribution(WORKED, top_p=True), TypeError, "top_p must be a number, got bool"),
    (lambda: next_token_distribution(WORKED, True), TypeError, "temperature must be a number, got bool"),
])
def test_bad_input_is_rejected_with_a_clear_message(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_temperature_widget_readout_follows_the_contract():
    from course_utils.viz.temperature import temperature_widget

    box = temperature_widget()
    find = lambda cls: next(w for w in box.children + box.children[0].children + box.children[1].children if cls in w._dom_classes)
    readout = find("course-readout")
    assert readout.value.split("<br>") == ["CAT: 0.772", "DOG: 0.211", "IS: 0.013", "LOVELY: 0.004",
                                           f"entropy: {entropy(next_token_distribution(WORKED)).item():.3f} nats", "T = 1.000"]
    slider = find("course-temperature-slider")
    assert (slider.min, slider.max) == (-2, 1) and slider.base == 10  # 10**-2 .. 10**1
    slider.value = 0.01
    assert readout.value.startswith("CAT: 1.000") and "nan" not in readout.value
    find("course-temperature-greedy").value = True
    assert "T = 0.000 (greedy)" in readout.value and "entropy: 0.000 nats" in readout.value
    find("course-temperature-greedy").value = False
    slider.value = 10.0
    find("course-topk").value = 2
    assert readout.value.split("<br>")[2:4] == ["IS: 0.000", "LOVELY: 0.000"]


@pytest.mark.gpu
def test_same_distribution_and_reproducible_draws_on_cuda():
    cpu = next_token_distribution(WORKED, 0.5, top_k=3, top_p=0.9)
    torch.testing.assert_close(next_token_distribution(WORKED.cuda(), 0.5, top_k=3, top_p=0.9).cpu(), cpu)
    draws = [sample_next_token(WORKED.cuda().expand(100, 4), generator=torch.Generator(device="cuda").manual_seed(0))
             for _ in range(2)]
    assert draws[0].device.type == "cuda" and torch.equal(draws[0], draws[1])


def test_cross_entropy_matches_torch_and_the_worked_example():
    from course_utils.entropy import cross_entropy

    worked = cross_entropy(WORKED[None], torch.tensor([0]))
    assert worked.item() == pytest.approx(-math.log(next_token_distribution(WORKED)[0].item()))
    gen = torch.Generator().manual_seed(0)
    logits = 50 * torch.randn(8, 30, generator=gen, dtype=torch.float64)  # large enough to overflow a naive exp
    logits[0, 3] = 1000.0
    targets = torch.randint(0, 30, (8,), generator=gen)
    torch.testing.assert_close(cross_entropy(logits, targets), torch.nn.functional.cross_entropy(logits, targets))
    with pytest.raises(ValueError, match="targets"):
        cross_entropy(logits, targets.float())
    with pytest.raises(ValueError, match="token ids"):
        cross_entropy(logits, targets + 30)


def _bigram_logits(table):
    return lambda ids: table[ids[-1]]


def test_generate_appends_each_pick_and_feeds_the_whole_sequence_back():
    from course_utils.sampling import generate

    seen = []

    def model(ids):
        seen.append(ids.tolist())
        return torch.nn.functional.one_hot((ids[-1] + 1) % 5, 5).double() * 10  # "next is previous + 1"

    assert generate(model, [3], 4, temperature=0) == [3, 4, 0, 1, 2]
    assert seen == [[3], [3, 4], [3, 4, 0], [3, 4, 0, 1]]
    assert generate(model, [3], 10, temperature=0, eos_id=1) == [3, 4, 0, 1]
    assert generate(model, torch.tensor([2, 2]), 0) == [2, 2]


def test_generate_samples_as_sample_next_token_does_with_the_same_generator():
    from course_utils.sampling import generate

    table = torch.randn(6, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    out = generate(_bigram_logits(table), [0], 8, temperature=1.5, top_k=4, generator=torch.Generator().manual_seed(7))
    gen, manual = torch.Generator().manual_seed(7), [0]
    for _ in range(8):
        manual.append(int(sample_next_token(table[manual[-1]], 1.5, 4, None, gen)))
    assert out == manual
    model_like = lambda ids: table[ids]  # (pos, d_vocab): the last row is used
    assert generate(model_like, [0], 8, temperature=1.5, top_k=4, generator=torch.Generator().manual_seed(7)) == manual
    with pytest.raises(ValueError, match="max_new_tokens"):
        generate(model_like, [0], -1)
    with pytest.raises(ValueError, match="prompt"):
        generate(model_like, [], 1)
