"""Mask builders against hand-derivable definitions, and masking to -inf against renormalising."""

import pytest
import torch

from course_utils.masking import (PRESETS, apply_mask, causal_mask, combine_masks, document_mask, fully_masked_rows,
                                  mask_table, padding_mask, prefix_lm_mask, preset_mask, sliding_window_mask,
                                  validate_mask)
from course_utils.softmax import masked_softmax


def _by_rule(n, rule):
    return torch.tensor([[rule(i, j) for j in range(n)] for i in range(n)], dtype=torch.bool)


def test_causal_mask_is_the_lower_triangle():
    assert torch.equal(causal_mask(5), _by_rule(5, lambda i, j: j <= i))
    assert causal_mask(3).dtype == torch.bool


def test_causal_mask_with_cached_keys_matches_torch_sdpa_bottom_right_alignment():
    # queries are the last 2 of 4 positions: query 0 sits at position 2
    assert torch.equal(causal_mask(2, 4), torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.bool))


def test_causal_mask_agrees_with_torch_is_causal():
    q, k, v = torch.randn(3, 1, 6, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    ours = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(6))
    torch.testing.assert_close(ours, torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True))


def test_padding_sliding_prefix_and_document_masks_follow_their_rules():
    assert torch.equal(padding_mask([2, 4], 4), torch.tensor([[[1, 1, 0, 0]], [[1, 1, 1, 1]]], dtype=torch.bool))
    assert torch.equal(sliding_window_mask(6, 3), _by_rule(6, lambda i, j: 0 <= i - j < 3))
    assert torch.equal(prefix_lm_mask(6, 3), _by_rule(6, lambda i, j: j <= i or j < 3))
    docs = [0, 0, 0, 1, 1, 2]
    assert torch.equal(document_mask(docs), _by_rule(6, lambda i, j: j <= i and docs[i] == docs[j]))
    assert torch.equal(document_mask(docs, causal=False), _by_rule(6, lambda i, j: docs[i] == docs[j]))


def test_window_as_long_as_the_sequence_is_plain_causal():
    assert torch.equal(sliding_window_mask(5, 5), causal_mask(5))
    assert torch.equal(prefix_lm_mask(5, 0), causal_mask(5))
    assert prefix_lm_mask(5, 5).all()


def test_combined_masks_broadcast_over_batch():
    mask = combine_masks(causal_mask(4), padding_mask([2, 4], 4))
    assert mask.shape == (2, 4, 4)
    assert torch.equal(mask[1], causal_mask(4))
    assert not mask[0, 3, 2:].any()


def test_masking_to_minus_inf_equals_renormalising_the_allowed_weights():
    # the IS row of the course's worked example: masking the three future words
    before = torch.tensor([0.147, 0.132, 0.262, 0.097, 0.218, 0.145], dtype=torch.float64)
    mask = causal_mask(6)[2]
    after = torch.softmax(apply_mask(before.log(), mask), dim=-1)
    torch.testing.assert_close(after, torch.where(mask, before, 0.0) / before[:3].sum())
    assert [round(x, 3) for x in after.tolist()] == [0.272, 0.244, 0.484, 0.0, 0.0, 0.0]


def test_fully_masked_rows_are_found_and_give_zeros_not_nan():
    mask = padding_mask([2], 4)[0].expand(4, 4) & ~torch.eye(4, dtype=torch.bool)  # (4, 4)
    mask = combine_masks(mask, causal_mask(4))
    assert fully_masked_rows(mask).tolist() == [True, False, False, False]
    out = masked_softmax(torch.randn(4, 4), mask)
    assert not out.isnan().any() and out[0].eq(0).all()


@pytest.mark.parametrize("call,error,match", [
    (lambda: causal_mask(0), ValueError, "n_q must be a positive int, got 0"),
    (lambda: causal_mask(2.5), TypeError, "n_q must be a positive int, got 2.5"),
    (lambda: causal_mask(True), TypeError, "n_q must be a positive int, got True"),
    (lambda: causal_mask(4, 2), ValueError, "n_k must be >= n_q"),
    (lambda: padding_mask([0, 3], 3), ValueError, "every length"),
    (lambda: padding_mask([1.5], 3), TypeError, "lengths must be"),
    (lambda: sliding_window_mask(4, 0), ValueError, "window must be a positive int"),
    (lambda: prefix_lm_mask(4, 5), ValueError, "prefix_len must be between 0 and n_ctx=4, got 5"),
    (lambda: prefix_lm_mask(4, -1), ValueError, "prefix_len must be between 0 and n_ctx=4"),
    (lambda: fully_masked_rows(torch.ones(3, dtype=torch.bool)), ValueError, "at least 2 dims"),
    (lambda: fully_masked_rows(torch.ones(3, 3)), TypeError, "torch.bool"),
    (lambda: preset_mask("causal", 0), ValueError, "n_ctx must be a positive int"),
    (lambda: document_mask([]), TypeError, "doc_ids"),
    (lambda: combine_masks(causal_mask(2), torch.ones(2, 2)), TypeError, "torch.bool"),
    (lambda: validate_mask(torch.ones(3, 3), (3, 3)), TypeError, "torch.bool"),
    (lambda: validate_mask(causal_mask(2), (3, 3)), ValueError, r"shape \(2, 2\)"),
    (lambda: apply_mask(torch.zeros(3, 3), causal_mask(4)), ValueError, r"shape \(4, 4\) does not broadcast"),
    (lambda: mask_table(causal_mask(3), ["a", "b"]), ValueError, "must have shape"),
])
def test_bad_input_is_rejected_with_a_clear_message(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_mask_table_marks_allowed_and_blocked_cells():
    lines = mask_table(causal_mask(3), ["A", "B", "C"]).splitlines()
    assert lines[1].split() == ["A", "✓", "0", "0"] and lines[3].split() == ["C", "✓", "✓", "✓"]


def test_presets_live_in_masking_and_the_editor_uses_them():
    from course_utils.viz import mask_editor as editor_module

    assert PRESETS[0] == "causal" and PRESETS[-1] == "all"
    assert editor_module.preset_mask is preset_mask and editor_module.PRESETS is PRESETS
    assert torch.equal(preset_mask("causal", 4), causal_mask(4))
    real_keys = torch.tensor([True, True, False, False])  # the last 2 positions are padding
    assert torch.equal(preset_mask("padding", 4), causal_mask(4) & real_keys)
    assert torch.equal(preset_mask("sliding window", 5), sliding_window_mask(5, 3))
    assert torch.equal(preset_mask("prefix-LM", 6), prefix_lm_mask(6, 3))
    assert preset_mask("all", 3).all()


def test_mask_editor_presets_readout_and_empty_row_warning():
    from course_utils.viz.mask_editor import mask_editor

    tokens = "YOUR CAT IS A LOVELY CAT".split()
    for name in PRESETS:
        assert preset_mask(name, 6).shape == (6, 6)
    assert torch.equal(preset_mask("block-diagonal documents", 6), document_mask([0, 0, 0, 1, 1, 1]))
    editor = mask_editor(tokens, torch.zeros(6, 6))
    assert "course-mask-editor" in editor._dom_classes
    readout = next(w for w in editor.children if "course-readout" in w._dom_classes)
    assert readout.value.split("<br>")[2] == "q2 IS: 0.333 0.333 0.333 0.000 0.000 0.000"
    cells = [w for w in editor.children[1].children[0].children if "course-mask-cell" in w._dom_classes]
    assert len(cells) == 36 and cells[7].tooltip == "q1 k1"
    cells[0].value = False  # YOUR may now attend to nothing
    assert "WARNING: fully masked row q0 (YOUR)" in readout.value and "nan" not in readout.value.lower()
    editor.children[0].value = "all"
    assert readout.value.split("<br>")[0] == "q0 YOUR: " + " ".join(["0.167"] * 6)
    with pytest.raises(ValueError, match="preset must be one of"):
        preset_mask("diagonal", 3)


@pytest.mark.gpu
def test_masks_follow_the_requested_device():
    mask = combine_masks(causal_mask(4, device="cuda"), padding_mask([3], 4, device="cuda"))
    assert mask.device.type == "cuda"
    assert torch.equal(mask.cpu(), combine_masks(causal_mask(4), padding_mask([3], 4)))
    assert document_mask([0, 0, 1], device="cuda").device.type == "cuda"


def test_left_padded_batch_gives_each_prompt_what_it_gets_alone():
    from course_utils.masking import left_padded_batch
    from course_utils.attention.multihead import MultiHeadAttention, to_torch_mha

    prompts = [[5, 6, 7, 1], [8, 2], [3]]
    ids, mask, positions = left_padded_batch(prompts, pad_id=0)
    assert ids.tolist() == [[5, 6, 7, 1], [0, 0, 8, 2], [0, 0, 0, 3]]
    assert positions.tolist() == [[0, 1, 2, 3], [0, 0, 0, 1], [0, 0, 0, 0]]
    real = ids != 0
    # Hugging Face's convention for the same batch: position_ids = attention_mask.cumsum(-1) - 1 at real tokens
    torch.testing.assert_close(positions[real], (real.long().cumsum(-1) - 1)[real])
    torch.manual_seed(0)
    embed, pos_embed, layer = torch.randn(9, 8), torch.randn(4, 8), MultiHeadAttention(8, 2)
    batch_out = layer(embed[ids] + pos_embed[positions], mask)
    for b, prompt in enumerate(prompts):  # each prompt alone, causal: the same outputs at its real positions
        alone = torch.tensor(prompt)
        solo = layer((embed[alone] + pos_embed[: len(prompt)])[None], causal_mask(len(prompt)))
        torch.testing.assert_close(batch_out[b, real[b]], solo[0])
    # nn.MultiheadAttention's conventions: key_padding_mask True = padding, attn_mask True = blocked
    x = embed[ids] + pos_embed[positions]
    theirs, _ = to_torch_mha(layer)(x, x, x, key_padding_mask=~real, attn_mask=~causal_mask(4), need_weights=False)
    torch.testing.assert_close(batch_out[real], theirs[real])
    with pytest.raises(ValueError, match="prompts"):
        left_padded_batch([[1], []], 0)
    with pytest.raises(TypeError, match="pad_id"):
        left_padded_batch([[1]], 0.0)
