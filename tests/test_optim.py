"""AdamW's update, the schedule's spelled-out form and clipping by global norm (``course_utils.gpt.optim``),
each against PyTorch's own: ``torch.optim.AdamW`` set up as ``training.make_optimizer`` does it,
``training.lr_at``, ``torch.nn.utils.clip_grad_norm_``; and ``StepOptimizer`` driving a model as
``make_optimizer`` does."""

import pytest
import torch

from course_utils.gpt.model import GPT, GPTConfig
from course_utils.gpt.optim import StepOptimizer, adamw_step, clip_grad_norm, decays, lr_schedule
from course_utils.gpt.training import TrainConfig, lr_at, make_optimizer

TINY = GPTConfig(d_vocab=20, n_ctx=6, d_model=8, n_heads=2, n_layers=1)


def _model(seed=0):
    model = GPT(TINY)
    model.reset_parameters(torch.Generator().manual_seed(seed))
    return model


def _fill_grads(model, step):
    gen = torch.Generator().manual_seed(step)
    for p in model.parameters():
        p.grad = torch.randn(p.shape, generator=gen)


def test_adamw_step_matches_torch_adamw_with_the_course_groups():
    """Five steps with changing rates: the same parameters as torch.optim.AdamW over make_optimizer's two
    groups (decay on 2-d and up, none on 1-d), to float32 rounding."""
    cfg = TrainConfig(weight_decay=0.3)
    theirs, mine = _model(), _model()
    optimizer = make_optimizer(theirs, cfg)
    params = {k: p.detach().clone() for k, p in mine.named_parameters()}
    m = {k: torch.zeros_like(p) for k, p in params.items()}
    v = {k: torch.zeros_like(p) for k, p in params.items()}
    for step, lr in enumerate([0.1, 0.05, 0.02, 0.02, 0.01], start=1):
        _fill_grads(theirs, step)
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.step()
        grads = {k: p.grad for k, p in theirs.named_parameters()}
        params, m, v = adamw_step(params, grads, m, v, step, lr, cfg.betas, 1e-8, cfg.weight_decay)
    for k, p in theirs.named_parameters():
        torch.testing.assert_close(params[k], p.detach(), rtol=1e-5, atol=1e-6, msg=k)
    assert {k for k, p in theirs.named_parameters() if decays(p)} == {
        k for k, p in theirs.named_parameters() if p.ndim >= 2}


def test_adamw_first_step_is_minus_lr_times_the_sign():
    """At step 1, m̂ = g and v̂ = g², so without decay the update is -lr·g/(|g| + eps) = -lr·sign(g)."""
    p, g = {"b": torch.zeros(3, dtype=torch.float64)}, {"b": torch.tensor([2.0, -0.5, 4.0], dtype=torch.float64)}
    zeros = {"b": torch.zeros(3, dtype=torch.float64)}
    new, m, v = adamw_step(p, g, zeros, zeros, 1, 0.1, (0.9, 0.95), 1e-8, 0.1)
    torch.testing.assert_close(new["b"], torch.tensor([-0.1, 0.1, -0.1], dtype=torch.float64))
    torch.testing.assert_close(m["b"], 0.1 * g["b"])
    torch.testing.assert_close(v["b"], 0.05 * g["b"] ** 2)


def test_step_optimizer_trains_like_make_optimizer():
    cfg = TrainConfig()
    theirs, mine = _model(1), _model(1)
    torch_opt = make_optimizer(theirs, cfg)
    step_opt = StepOptimizer(mine, adamw_step, lr=cfg.max_lr, betas=cfg.betas, weight_decay=cfg.weight_decay)
    for step in range(3):
        for model, opt in ((theirs, torch_opt), (mine, step_opt)):
            opt.zero_grad()
            _fill_grads(model, 10 + step)
            for group in opt.param_groups:
                group["lr"] = lr_at(step, cfg)
            opt.step()
    for (k, a), b in zip(theirs.named_parameters(), mine.parameters()):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6, msg=k)


def test_lr_schedule_is_lr_at_at_every_step():
    cfg = TrainConfig()
    assert [lr_schedule(s, cfg.max_lr, cfg.min_lr, cfg.warmup_steps, cfg.steps) for s in range(cfg.steps)] == [
        lr_at(s, cfg) for s in range(cfg.steps)]


@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(max_norm):
    """Above the threshold every gradient shrinks by one factor; below it nothing changes (as clip_grad_norm_)."""
    model = _model(2)
    _fill_grads(model, 3)
    grads = [p.grad.clone() for p in model.parameters()]
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    for mine, theirs in zip(clip_grad_norm(grads, max_norm), (p.grad for p in model.parameters())):
        torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-7)
    if max_norm > 50:
        assert all(torch.equal(a, b.grad) for a, b in zip(grads, model.parameters()))


def test_clip_worked_example_and_bad_arguments():
    clipped = clip_grad_norm([torch.tensor([3.0, 0.0]), torch.tensor([4.0])], 1.0)  # global norm 5
    torch.testing.assert_close(torch.cat(clipped), torch.tensor([0.6, 0.0, 0.8]))
    assert clip_grad_norm([], 1.0) == []
    with pytest.raises(ValueError, match="max_norm"):
        clip_grad_norm([torch.ones(2)], 0.0)
    with pytest.raises(ValueError, match="step"):
        adamw_step({}, {}, {}, {}, 0, 0.1)
    with pytest.raises(TypeError, match="model"):
        StepOptimizer("not a model", adamw_step)


def test_make_optimizer_decays_what_notebook_09_says():
    """09 states the rule once: every tensor of 2 or more dims, so the per-head b_Q/b_K/b_V are decayed
    (nanoGPT's rule, whose biases are all 1-d) and b_O, b_in, b_out and LayerNorm's w and b are not."""
    model = _model()
    leaf = {id(p): name.rsplit(".", 1)[-1] for name, p in model.named_parameters()}
    optimizer = make_optimizer(model, TrainConfig())
    groups = {g["weight_decay"]: {leaf[id(p)] for p in g["params"]} for g in optimizer.param_groups}
    assert groups[TrainConfig().weight_decay] >= {"b_Q", "b_K", "b_V", "W_Q", "W_E", "W_pos", "W_O", "W_in", "W_out"}
    assert groups[0.0] == {"b_O", "b_in", "b_out", "w", "b"}
