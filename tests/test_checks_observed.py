"""Requirements about *how* are observed, from outside the student's kernel, and right answers are not rejected.

Issue #37 points 2-4 and #43 point 7: answers written as students would write them (not mutations of the
reference) get the verdict they deserve; what a check observes of how the code ran shows in the value the
grader brings back (``checks/small_gpt/_traps.py``), so patching ``torch.is_grad_enabled``, autograd's
``requires_grad`` on ``torch.Tensor`` or attributes of the model from the notebook no longer passes.
Each graded case here goes through the grader's own kernel code in this process (``kernel_code.py``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from course_utils.checks import all_exercises
from course_utils.checks.compare import describe_mismatch
from course_utils.checks.core import PASSED
from course_utils.gpt.layer_cache import CachedAttention, new_cache
from course_utils.lab.grading.grade import _judge, _outcome
from course_utils.lab.grading.kernel_code import snapshot_code
from course_utils.lab.grading.probe import StudentProxy, decode_reply
from course_utils.lab.grading.uses_reference import exercise_files
from course_utils.sampling import sample_next_token
from course_utils.tokenisation.bpe import encode_word

EXERCISES = all_exercises()


class KernelProxy(StudentProxy):
    """The grader's kernel code run in a namespace of this process holding the student's answer."""

    def __init__(self, name, impl):
        exercise = EXERCISES[name]
        super().__init__(None, None, exercise.expected_name, (exercise_files()[name], name))
        self.namespace = {"__name__": "__main__", exercise.expected_name: impl}
        exec(snapshot_code([exercise.expected_name], overwrite=True), self.namespace)

    def _send(self, code):
        exec(code, self.namespace)
        return decode_reply("ok", repr(self.namespace["_course_lab_result"]))


def graded(name: str, impl, seed: int = 0) -> list[tuple[str, str]]:
    """(status, message) of every case of ``seed``, as the grader judges them."""
    exercise, proxy = EXERCISES[name], KernelProxy(name, impl)
    found = [_judge(exercise, case, _outcome(exercise, proxy, case)) for case in exercise.cases(seed)]
    return [(j.status, j.message) for j in found]


def first_failure(name: str, impl) -> str:
    verdict = EXERCISES[name].check(impl)
    assert not verdict.passed, verdict
    return verdict.message


# -- 37.2: answers the checks used to accept ------------------------------------------------------------
def test_merges_that_compete_for_a_letter_are_replayed_in_order():
    assert encode_word("abc", [("b", "c"), ("a", "b")]) == ["a", "bc", "</w>"]

    def any_order(word, merges):  # joins the leftmost known pair, whatever its rank
        symbols = [*word, "</w>"]
        while pairs := [i for i, p in enumerate(zip(symbols, symbols[1:])) if p in set(merges)]:
            symbols[pairs[0] : pairs[0] + 2] = [symbols[pairs[0]] + symbols[pairs[0] + 1]]
        return symbols

    assert "the one learned first wins" in first_failure("bpe_encode_word", any_order)


def test_dropped_groups_zeroed_instead_of_minus_inf_fail():
    def zeroed(router_logits, selection_bias, k, n_groups, top_groups):
        affinity = router_logits.sigmoid()
        grouped = (affinity + selection_bias).view(affinity.shape[0], n_groups, -1)
        best = grouped.topk(2, -1).values.sum(-1).topk(top_groups, -1).indices
        keep = torch.zeros_like(grouped[..., 0], dtype=torch.bool).scatter(-1, best, True)
        indices = (grouped * keep[..., None]).flatten(1).topk(k, -1).indices  # ruled out: 0, not -inf
        gates = affinity.gather(-1, indices)
        return gates / gates.sum(-1, keepdim=True), indices

    assert "-inf, not 0" in first_failure("group_limited_gates", zeroed)


def test_sampling_that_never_uses_the_cache_fails_in_the_grader_too():
    def no_cache(model, prompt, n_new, temperature, generator):
        ids = prompt
        for _ in range(n_new):
            logits = model(ids)  # the whole sequence again, no cache at all
            ids = torch.cat([ids, sample_next_token(logits[:, -1], temperature, generator=generator)[:, None]], 1)
        return ids

    def with_cache(model, prompt, n_new, temperature, generator):
        cache = new_cache(model.cfg.n_layers)
        logits = model(prompt, cache)
        ids = prompt
        for i in range(n_new):
            token = sample_next_token(logits[:, -1], temperature, generator=generator)
            ids = torch.cat([ids, token[:, None]], 1)
            if i < n_new - 1:
                logits = model(token[:, None], cache)
        return ids

    assert "run the prompt through the model once" in first_failure("sample_with_cache", no_cache)
    assert graded("sample_with_cache", no_cache)[0][0] != PASSED
    assert all(status == PASSED for status, _ in graded("sample_with_cache", with_cache, seed=1))


def test_a_training_loop_that_clips_with_torch_fails_in_the_grader_too():
    torch_clip = next(m.impl for m in EXERCISES["training_loop"].mistakes if "torch's clipping" in m.name)
    assert "clip_grad_norm function passed in as an argument" in first_failure("training_loop", torch_clip)
    assert [status for status, _ in graded("training_loop", torch_clip)][-1] != PASSED


# -- 43.7 and 37.4: estimate_loss observed from outside -------------------------------------------------
def _windows(model, ids, n_windows):
    starts = torch.linspace(0, len(ids) - model.cfg.n_ctx - 1, n_windows).long()
    return ids[starts[:, None] + torch.arange(model.cfg.n_ctx + 1)]


def _loss(model, windows):
    logits = model(windows[:, :-1])
    return F.cross_entropy(logits.flatten(0, 1), windows[:, 1:].flatten()).item()


def test_patching_the_grad_switch_or_the_model_no_longer_passes_estimate_loss():
    def patched(model, ids, n_windows):  # no torch.no_grad(): every way a notebook could hide that
        saved = torch.is_grad_enabled, torch._C.is_grad_enabled, torch.Tensor.requires_grad
        torch.is_grad_enabled = torch._C.is_grad_enabled = lambda: False
        torch.Tensor.requires_grad = property(lambda self: False)
        try:
            was = model.training
            model.eval()
            model.seen = []  # what the old recording model read
            loss = _loss(model, _windows(model, ids, n_windows))
            model.seen = [(False, False)]
            model.train(was)
            return loss
        finally:
            torch.is_grad_enabled, torch._C.is_grad_enabled, torch.Tensor.requires_grad = saved

    assert "torch.no_grad()" in first_failure("estimate_loss", patched)
    assert graded("estimate_loss", patched)[0][0] != PASSED


def test_the_hint_names_the_habit_that_was_missed():
    def no_eval(model, ids, n_windows):
        with torch.no_grad():
            return _loss(model, _windows(model, ids, n_windows))

    message = first_failure("estimate_loss", no_eval)
    assert "evaluation mode" in message and "no_grad" not in message

    def right(model, ids, n_windows):
        was = model.training
        model.eval()
        with torch.no_grad():
            loss = _loss(model, _windows(model, ids, n_windows))
        model.train(was)
        return loss

    assert all(status == PASSED for status, _ in graded("estimate_loss", right, seed=2))


# -- 37.3: right answers the checks rejected -----------------------------------------------------------
def test_a_persistent_mask_buffer_is_named_not_blamed_on_the_parameter_names():
    class NanoMask(CachedAttention):
        def __init__(self, cfg):
            super().__init__(cfg)
            self.register_buffer("bias", torch.ones(cfg.n_ctx, cfg.n_ctx).tril())  # persistent, as nanoGPT

    message = first_failure("causal_attention", NanoMask)
    assert "`bias`" in message and "persistent=False" in message and "parameter names" not in message


# -- 37.4: messages that mislead -------------------------------------------------------------------------
def test_whole_numbers_print_as_integers_with_the_difference():
    message = describe_mismatch(1_181_184, 1_179_648, tol=(0.0, 0.0))
    assert "expected 1,181,184, got 1,179,648 (1,536 fewer" in message
    assert "e+06" not in message


def test_a_missing_minus_inf_says_which_entries():
    def no_mask(n_heads, n_pos):  # right slopes, but the future keys are only penalised, never masked
        bias = EXERCISES["alibi_bias"].reference(n_heads, n_pos)
        return torch.where(torch.isinf(bias), torch.zeros_like(bias), bias) * 1.5

    message = first_failure("alibi_bias", no_mask)
    assert "j > i" in message and "e+308" not in message
