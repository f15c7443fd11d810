"""The capstone (``course_utils.gpt.capstone``): the course loop replays ``training.train`` step for step,
``estimate_loss`` is ``training.evaluate`` for any model (the mode restored), and ``assemble`` trains and
evaluates with the student's parts where their checks pass and the course's where not, saying which in one
line: every part from notebooks 09's and 10's solutions (SmallGPT, next_token_loss, init_weights included) -> "all parts
yours", the same run as the course's; a wrong loss, AdamW or evaluation -> the course's for that part only, and
the student's loss is the one the loop optimises (a wrong one let through trains to other losses)."""

import pytest
import torch

from course_utils.gpt.capstone import PARTS, FusedGPT, assemble, estimate_loss, on_targets, training_loop
from course_utils.checks.train_gpt.adamw_step import adamw_l2, check_adamw_step
from course_utils.checks.train_gpt.clip_grad_norm import check_clip_grad_norm
from course_utils.checks.train_gpt.estimate_loss import check_estimate_loss, estimate_left_in_eval
from course_utils.checks.build_gpt.gpt_forward import check_gpt_forward
from course_utils.checks.train_gpt.lr_schedule import check_lr_schedule
from course_utils.checks.build_gpt.next_token_loss import check_next_token_loss, loss_no_shift
from course_utils.checks.train_gpt.training_loop import check_training_loop
from course_utils.gpt.model import GPT, GPTConfig
from course_utils.gpt.optim import clip_grad_norm, lr_schedule
from course_utils.gpt.training import TrainConfig, evaluate, make_optimizer, sequence_loss, train

TINY = GPTConfig(d_vocab=30, n_ctx=8, d_model=16, n_heads=2, n_layers=2)
CFG = TrainConfig(steps=30, batch_size=4, warmup_steps=3, max_lr=1e-2, min_lr=1e-3, grad_clip=0.5, seed=3)
IDS = torch.randint(0, 30, (500,), generator=torch.Generator().manual_seed(0))

CHECKS = {"next_token_loss": check_next_token_loss,
          "adamw_step": check_adamw_step, "lr_schedule": check_lr_schedule, "clip_grad_norm": check_clip_grad_norm,
          "training_loop": check_training_loop, "estimate_loss": check_estimate_loss}


@pytest.fixture(scope="module")
def student():
    """Notebooks 09's and 10's solutions, every top-level definition of their sources run as the mutation tool
    runs them (``tools.mutation.sources.namespace``), and their verdicts: every check passes."""
    from tools.mutation.sources import namespace

    notebook = namespace("build_gpt") | namespace("train_gpt")
    parts = {name: notebook[name] for name in CHECKS} | {"model": notebook["SmallGPT"]}
    verdicts = {name: check(parts[name]) for name, check in CHECKS.items()}
    return parts, verdicts | {"model": check_gpt_forward(parts["model"])}


def _course_run(steps=4, loss_fn=None):
    model = GPT(TINY)
    model.reset_parameters(torch.Generator().manual_seed(CFG.seed))
    return model, train(model, IDS, IDS, CFG, progress=False, stop_after=steps, loss_fn=loss_fn)["train_loss"]


def test_the_course_loop_replays_train():
    """Same seed, batches, schedule, clipping and AdamW: training.train's losses and weights, to the bit
    (with the readable loss the loop calls; train's default fused loss differs by rounding, tested below)."""
    reference, losses = _course_run(loss_fn=sequence_loss)
    model = GPT(TINY)
    model.reset_parameters(torch.Generator().manual_seed(CFG.seed))
    fused = FusedGPT(model)  # train() runs the fused kernels
    assert training_loop(fused, make_optimizer(fused, CFG), IDS, CFG, 4, lr_schedule, clip_grad_norm) == losses
    for a, b in zip(model.parameters(), reference.parameters()):
        assert torch.equal(a, b)


def test_every_part_yours_trains_like_the_course(student):
    parts, verdicts = student
    assert all(v.passed for v in verdicts.values()), verdicts
    capstone = assemble(parts, verdicts, TINY, CFG)
    assert capstone.summary() == "all parts yours: model, loss, AdamW, schedule, clipping, loop, evaluation"
    assert isinstance(capstone.model, parts["model"]) and capstone.loop is parts["training_loop"]
    assert capstone.estimate_loss is parts["estimate_loss"]
    losses = capstone.train(IDS, 4)
    # the student's SmallGPT runs a readable (not fused) forward: float32 rounding apart, the course's run
    reference, course_losses = _course_run()
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(course_losses), rtol=1e-5, atol=0)
    val = capstone.validation_loss(IDS)  # the student's estimate_loss on the student's model, recipe's windows
    assert val == pytest.approx(evaluate(reference, IDS, CFG.eval_windows), rel=1e-5)


def test_the_students_loss_is_the_one_the_loop_optimises(student):
    """Through ``on_targets`` the notebook's next_token_loss scores get_batch's shifted targets as sequence_loss
    does (same value, same gradient); a wrong loss falls back to the course's, named in the summary, and one let
    through anyway (its verdict forced) is what the loop optimises: the run's losses change."""
    parts, verdicts = student
    logits = torch.randn(3, 8, 30, generator=torch.Generator().manual_seed(5), requires_grad=True)
    targets = torch.randint(0, 30, (3, 8), generator=torch.Generator().manual_seed(6))
    ours, theirs = on_targets(parts["next_token_loss"])(logits, targets), sequence_loss(logits, targets)
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=0)
    (grad_ours,), (grad_theirs,) = (torch.autograd.grad(loss, logits) for loss in (ours, theirs))
    torch.testing.assert_close(grad_ours, grad_theirs, rtol=1e-5, atol=1e-9)
    capstone = assemble(parts, verdicts, TINY, CFG)
    assert capstone.summary().startswith("all parts yours") and capstone.loss_fn is not sequence_loss
    yours = capstone.train(IDS, 3)

    verdict = check_next_token_loss(loss_no_shift)
    assert not verdict.passed and "scores each token against itself" in str(verdict)
    wrong = assemble(parts | {"next_token_loss": loss_no_shift}, verdicts | {"next_token_loss": verdict}, TINY, CFG)
    assert wrong.summary() == ("yours: model, AdamW, schedule, clipping, loop, evaluation; the course's: loss "
                               "(its check has not passed)")
    assert wrong.loss_fn is sequence_loss
    torch.testing.assert_close(torch.tensor(wrong.train(IDS, 3)), torch.tensor(yours), rtol=1e-5, atol=0)
    let_through = assemble(parts | {"next_token_loss": loss_no_shift}, verdicts | {"next_token_loss": True}, TINY, CFG)
    assert (torch.tensor(let_through.train(IDS, 3)) - torch.tensor(yours)).abs().max() > 0.1
    with pytest.raises(TypeError, match="next_token_loss"):
        on_targets("cross-entropy")


def test_a_wrong_adamw_falls_back_for_that_part_only(student):
    parts, verdicts = student
    verdict = check_adamw_step(adamw_l2)
    assert not verdict.passed
    parts, verdicts = parts | {"adamw_step": adamw_l2}, verdicts | {"adamw_step": verdict}
    capstone = assemble(parts, verdicts, TINY, CFG)
    assert capstone.summary() == (
        "yours: model, loss, schedule, clipping, loop, evaluation; the course's: AdamW (its check has not passed)")
    assert {p for p in PARTS if capstone.yours[p]} == set(PARTS) - {"adamw_step"}
    assert isinstance(capstone.optimizer, torch.optim.AdamW)
    assert capstone.lr_schedule is parts["lr_schedule"] and capstone.loop is parts["training_loop"]
    torch.testing.assert_close(torch.tensor(capstone.train(IDS, 3)), torch.tensor(_course_run(3)[1]), rtol=1e-5,
                               atol=0)


def test_nothing_passed_is_the_course_and_a_model_that_cannot_load_falls_back():
    class Broken(torch.nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.w = torch.nn.Linear(2, 2)

    capstone = assemble({"model": Broken}, {"model": True}, TINY, CFG)
    assert capstone.summary() == ("yours: none yet; the course's: model (it did not take the course's weights: "
                                  "RuntimeError); loss, AdamW, schedule, clipping, loop, evaluation (their checks "
                                  "have not passed)")
    assert isinstance(capstone.model, FusedGPT) and capstone.estimate_loss is estimate_loss
    with pytest.raises(TypeError, match="model_cfg"):
        assemble({}, {}, "tiny", CFG)
    with pytest.raises(TypeError, match="train_cfg"):
        assemble({}, {}, TINY, {"steps": 3})


@pytest.mark.gpu
def test_every_part_yours_trains_on_cuda(student):
    """The same parts on CUDA (the student's loop never moves a batch: ``Capstone.train`` moves the ids):
    the CPU run's losses and validation loss, to the GPU's float32 tolerance over a few steps."""
    parts, verdicts = student
    capstone = assemble(parts, verdicts, TINY, CFG, device="cuda")
    assert capstone.summary().startswith("all parts yours")
    losses = capstone.train(IDS, 3)
    reference, course_losses = _course_run(3)
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(course_losses), rtol=1e-3, atol=0)
    # the student's estimate_loss on the GPU (its window starts are CPU indices into the CUDA ids)
    assert capstone.validation_loss(IDS) == pytest.approx(evaluate(reference, IDS, CFG.eval_windows), rel=1e-3)



def test_a_wrong_evaluation_falls_back_for_that_part_only(student):
    parts, verdicts = student
    verdict = check_estimate_loss(estimate_left_in_eval)
    assert not verdict.passed
    capstone = assemble(parts | {"estimate_loss": estimate_left_in_eval}, verdicts | {"estimate_loss": verdict},
                        TINY, CFG)
    assert capstone.summary() == ("yours: model, loss, AdamW, schedule, clipping, loop; the course's: evaluation "
                                  "(its check has not passed)")
    assert capstone.estimate_loss is estimate_loss


def test_estimate_loss_is_the_recipes_evaluation_for_any_model():
    """The oracle is ``training.evaluate`` (the committed log's numbers) on the course model; the mode a model was
    in comes back, and bad input names its argument."""
    model, _ = _course_run(0)
    for training in (True, False):
        model.train(training)
        assert estimate_loss(model, IDS, 7) == pytest.approx(evaluate(model, IDS, 7, impl="reference"), rel=1e-6)
        assert model.training is training
    assert estimate_loss(FusedGPT(model), IDS, 20) == pytest.approx(evaluate(model, IDS, 20), rel=1e-6)
    with pytest.raises(ValueError, match="ids"):
        estimate_loss(model, IDS[:8], 3)
    with pytest.raises(ValueError, match="n_windows"):
        estimate_loss(model, IDS, 0)
    with pytest.raises(TypeError, match="ids"):
        estimate_loss(model, IDS.float(), 3)


def _no_residual_scaling(model, generator):
    """A wrong initialisation: W_O and W_out drawn like every other matrix (no 1/sqrt(2 n_layers))."""
    for name, p in model.named_parameters():
        leaf = name.split(".")[-1]
        if leaf == "w":
            p.fill_(1.0)
        elif leaf.startswith("b"):
            p.zero_()
        else:
            p.normal_(0.0, model.cfg.init_std, generator=generator)


def _w_o(capstone):
    return capstone.model.state_dict()["blocks.0.attn.W_O"]


def test_the_whole_recipe_starts_from_the_students_initialisation(student):
    """Issue #40: given ``init_weights`` (notebook 10's whole recipe from scratch), the model starts from what the
    student's rule draws from the recipe's seed and the summary names it; a wrong rule is named and not used."""
    from tools.mutation.sources import namespace
    from course_utils.checks.build_gpt.init_weights import check_init_weights

    parts, verdicts = student
    init = namespace("build_gpt")["init_weights"]
    right = assemble(parts | {"init_weights": init}, verdicts | {"init_weights": check_init_weights(init)}, TINY, CFG)
    assert right.summary() == ("all parts yours: model, loss, AdamW, schedule, clipping, loop, evaluation, "
                               "initialisation")
    drawn = GPT(TINY)
    init(drawn, torch.Generator().manual_seed(CFG.seed))
    expected = drawn.state_dict()
    for name, a in right.model.state_dict().items():  # the student's SmallGPT, under the course's names
        assert torch.equal(a, expected[name]), name
    wrong = {"init_weights": _no_residual_scaling}
    fallen = assemble(parts | wrong, verdicts | {"init_weights": check_init_weights(_no_residual_scaling)}, TINY, CFG)
    assert fallen.summary() == ("yours: model, loss, AdamW, schedule, clipping, loop, evaluation; "
                                "the course's: initialisation (its check has not passed)")
    course = GPT(TINY)
    course.reset_parameters(torch.Generator().manual_seed(CFG.seed))
    assert torch.equal(_w_o(fallen), course.state_dict()["blocks.0.attn.W_O"])
    forced = assemble(parts | wrong, verdicts | {"init_weights": True}, TINY, CFG)  # a wrong rule let through
    assert _w_o(forced).std() > 1.5 * _w_o(fallen).std()  # is the one the run starts from: W_O at full size


def test_an_initialisation_that_raises_falls_back_and_says_why(student):
    parts, verdicts = student

    def broken(model, generator):
        raise KeyError("W_Q")

    capstone = assemble(parts | {"init_weights": broken}, verdicts | {"init_weights": True}, TINY, CFG)
    assert capstone.summary().endswith("the course's: initialisation (it raised KeyError)")
