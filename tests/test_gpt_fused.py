"""The fused training path against its references, and the nanoGPT model ``benchmarks/bench_gpt.py`` races.

The benchmark's claim (the course's step at least as fast as nanoGPT's) means something only if both
sides are the same model: same parameter count at nanoGPT's shape, and given the course's weights the
re-implementation computes the course's logits and loss. The fused loss is ``sequence_loss``, value and
gradient; a fused training step (model + loss) has the readable path's loss and gradients.
"""

import pytest
import torch
import torch.nn.functional as F

from benchmarks.nanogpt_ref import NANO, NanoGPT
from course_utils.gpt.model import GPT, GPTConfig
from course_utils.gpt.fused import _qkv_weight, fused_sequence_loss
from course_utils.tolerances import tolerance
from course_utils.gpt.training import sequence_loss

SMALL = GPTConfig(d_vocab=37, n_ctx=16, d_model=24, n_heads=3, n_layers=2, bias=False, activation="gelu")


def _count(model) -> int:
    return sum(p.numel() for p in model.parameters())  # a tied weight counts once


def test_both_models_have_931968_parameters_at_nanogpts_shape():
    with torch.device("meta"):  # sizes only: nothing drawn
        course, nano = GPT(NANO), NanoGPT(NANO)
    assert course.num_params() == _count(nano) == 931_968


def _course_model(cfg: GPTConfig, seed: int = 0) -> GPT:
    model = GPT(cfg)
    model.reset_parameters(torch.Generator().manual_seed(seed))
    with torch.no_grad():  # LayerNorm scales away from 1, so a scale copied to the wrong place shows
        for block in model.blocks:
            block.ln1.w.add_(0.3 * torch.randn(cfg.d_model)), block.ln2.w.add_(0.3 * torch.randn(cfg.d_model))
    return model


@torch.no_grad()
def _nano_with_weights_of(model: GPT) -> NanoGPT:
    """NanoGPT holding ``model``'s weights: Linear stores (out, in), the course (in, out)."""
    nano, d = NanoGPT(model.cfg), model.cfg.d_model
    nano.transformer.wte.weight.copy_(model.W_E)
    nano.transformer.wpe.weight.copy_(model.W_pos)
    nano.transformer.ln_f.weight.copy_(model.ln_final.w)
    for ours, theirs in zip(model.blocks, nano.transformer.h):
        theirs.ln_1.weight.copy_(ours.ln1.w)
        theirs.ln_2.weight.copy_(ours.ln2.w)
        theirs.attn.c_attn.weight.copy_(_qkv_weight(ours.attn)[0].T)
        theirs.attn.c_proj.weight.copy_(ours.attn.W_O.reshape(d, d).T)
        theirs.mlp.c_fc.weight.copy_(ours.mlp.W_in.T)
        theirs.mlp.c_proj.weight.copy_(ours.mlp.W_out.T)
    return nano


@pytest.mark.parametrize("activation", ["gelu", "gelu_tanh"])
def test_nanogpt_with_the_course_weights_computes_the_course_model(activation):
    """Fails if the re-implementation is another model (head split, GELU, tying, loss) or the fused path drifts."""
    model = _course_model(GPTConfig(**{**SMALL.to_dict(), "activation": activation}))
    nano = _nano_with_weights_of(model)
    data = torch.randint(0, SMALL.d_vocab, (3, SMALL.n_ctx + 1), generator=torch.Generator().manual_seed(1))
    x, y = data[:, :-1].contiguous(), data[:, 1:].contiguous()
    logits, loss = nano(x, y)
    rtol, atol = tolerance(torch.float32)
    torch.testing.assert_close(model(x, impl="fused"), logits, rtol=rtol, atol=10 * atol)
    torch.testing.assert_close(fused_sequence_loss(model(x, impl="fused"), y), loss, rtol=rtol, atol=atol)


def test_fused_sequence_loss_gradient_passes_gradcheck():
    """The written-out backward ((softmax - one-hot) / rows, times the upstream gradient) against finite differences."""
    logits = torch.randn(2, 3, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(2), requires_grad=True)
    targets = torch.tensor([[0, 5, 2], [5, 5, 1]])
    assert torch.autograd.gradcheck(lambda t: 3.0 * fused_sequence_loss(t, targets), (logits,))


def test_fused_sequence_loss_is_sequence_loss_value_and_gradient():
    logits = torch.randn(3, 5, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    targets = torch.randint(0, 7, (3, 5), generator=torch.Generator().manual_seed(1))
    grads = []
    for loss_fn in (sequence_loss, fused_sequence_loss):
        leaf = logits.clone().requires_grad_()
        loss = loss_fn(leaf, targets)
        loss.backward()
        grads.append((loss.detach(), leaf.grad))
    torch.testing.assert_close(grads[1], grads[0])
    torch.testing.assert_close(grads[1][0], F.cross_entropy(logits.flatten(0, 1), targets.flatten()))


def test_fused_training_step_has_the_readable_steps_loss_and_gradients():
    """The benchmarked step (fused model + fused loss) against the readable model + ``sequence_loss``, per parameter."""
    model = _course_model(SMALL)
    data = torch.randint(0, SMALL.d_vocab, (4, SMALL.n_ctx + 1), generator=torch.Generator().manual_seed(2))
    results = {}
    for impl, loss_fn in (("reference", sequence_loss), ("fused", fused_sequence_loss)):
        model.zero_grad(set_to_none=True)
        loss = loss_fn(model(data[:, :-1], impl=impl), data[:, 1:])
        loss.backward()
        results[impl] = loss.detach(), {name: p.grad for name, p in model.named_parameters()}
    rtol, atol = tolerance(torch.float32)
    torch.testing.assert_close(results["fused"][0], results["reference"][0], rtol=rtol, atol=atol)
    for name, grad in results["reference"][1].items():
        torch.testing.assert_close(results["fused"][1][name], grad, rtol=rtol, atol=10 * atol, msg=name)
