# ---
# jupyter:
#   course:
#     exercises:
#       adamw_step:
#         difficulty: 3
#         minutes: 20
#         points: 3
#       clip_grad_norm:
#         difficulty: 2
#         minutes: 10
#         points: 2
#       estimate_loss:
#         difficulty: 2
#         minutes: 15
#         points: 2
#       lr_schedule:
#         difficulty: 1
#         minutes: 10
#         points: 2
#       training_loop:
#         difficulty: 2
#         minutes: 20
#         points: 3
#     grading_cell_timeout_s: 480
#     numbers_allowed:
#       '2020': the year of Xiong et al.'s and Liu et al.'s papers on warm-up, a citation
#     time_target_s: 120
#   jupytext:
#     cell_metadata_filter: all
#     notebook_metadata_filter: course,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---


# %% [markdown]
# # 10 · Train your GPT
#
# Notebook 09 built the model; this one writes the code that trains it on the course's Shakespeare:
# AdamW by hand, a warm-up then a cosine, clipping by the global norm, the training loop and the
# validation loss. Then it trains *your* `SmallGPT`, on *your* loss, with all of that code, and holds
# the run to the course's committed one, step for step. On a CUDA GPU the same notebook also trains a
# bigger model.
#
# You write most of it: **5 exercises, 12 points, about 75 minutes in all.** Each heading gives
# its share.
#
# 1. Your model from notebook 09, and its loss before any training
# 2. Training: AdamW, warm-up and cosine decay, clipping, the training loop, the validation loss, a
#    bigram baseline, and your GPT trained by your own code, then the same notebook on a GPU
#
# ## 1. Your parts from notebook 09
#
# The cell below opens `09_build_gpt.ipynb` in this folder (your copy sits beside this one) and runs
# only its imports, functions and classes: no check, no plot, nothing slow
# (`course_utils.env.sibling`). What it finds, and whose check passes, is what trains in the capstone.
# Where it finds nothing (you have not done notebook 09 yet, or this notebook runs on its own, as the
# grader runs each notebook), the course's parts stand in, and the capstone's summary line says which.

# %%
import math

import torch
import torch.nn.functional as F

from course_utils.env import describe_device, from_sibling, pick_device, seed_everything
from course_utils.gpt import COURSE_MODEL, GPT

seed_everything(0)
device = pick_device()
print("computing on", describe_device(device))  # this machine's device: the tests mask it

built = from_sibling("09_build_gpt.ipynb", ["SmallGPT", "next_token_loss", "init_weights"])
SmallGPT, next_token_loss, init_weights = (built[name] for name in built.names)  # None where it found nothing
print(built.summary())
model = GPT(COURSE_MODEL)  # the course's model at its seeded initial weights, as notebook 09 made it
model.reset_parameters(torch.Generator().manual_seed(0))


# %% [markdown]
# **The loss before any training.** An untrained model spreads its probability almost evenly, so
# its loss should be close to ln(d_vocab), the loss of a uniform guess. Measured on the corpus:

# %%
from course_utils.gpt import corpus_tokens, small_gpt_tokenizer
from course_utils.gpt import sequence_loss, split_tokens

from course_utils.tokenisation.course import COURSE_VOCAB_SIZE

tokenizer = small_gpt_tokenizer()
print(f"notebook 01's course BPE has {COURSE_VOCAB_SIZE:,} ids; the one trained here for the small GPT {tokenizer.n_vocab}")
ids = corpus_tokens(tokenizer)
train_ids, val_ids = split_tokens(ids)
print(f"{len(ids):,} tokens: {len(train_ids):,} to train on, {len(val_ids):,} held out")
window = train_ids[:COURSE_MODEL.n_ctx + 1][None]
with torch.no_grad():
    init_loss = sequence_loss(model(window[:, :-1]), window[:, 1:]).item()
print(f"loss at initialisation {init_loss:.2f}, ln(d_vocab) = ln {COURSE_MODEL.d_vocab} = {math.log(COURSE_MODEL.d_vocab):.2f}")

# %% [markdown]
# ## 2. Training
#
# The tokenizer is the course's own byte-level BPE from notebook 01, trained on the whole corpus
# with 512 ids: the recipe's run sees fewer than two million tokens (counted under the recipe), too
# few to learn next-token statistics over 2,048 ids, plenty for 512. The recipe (`course_utils.gpt.training`):
#
# * random windows of n_ctx tokens; targets are the same windows shifted by one;
# * **AdamW**: Adam's per-weight step size plus weight decay (which tensors it decays: the AdamW
#   exercise below);
# * the learning rate **warms up** linearly for the first steps, then follows a **cosine** down to a
#   tenth of its peak;
# * the gradient is **clipped** to norm 1, so one unlucky batch cannot throw the weights far.
#
# **Why warm up a pre-norm model?** Notebook 09 said pre-norm does not *need* warm-up, and that is what
# the literature says: Xiong et al. (2020) trained pre-norm Transformers without the long warm-up
# post-norm depends on. A short warm-up is still the usual practice (the GPT-1 and GPT-3 papers state
# one and nanoGPT has one; the GPT-2 paper states no learning-rate schedule at all) because of Adam rather than the architecture: in the first steps Adam divides each
# gradient by a running average of its square built from only a few batches, so its first updates
# are noisy and large (Liu et al. (2020) measured this variance and proposed RAdam to remove it).
# This run warms up over a small share of its steps, printed below; notebook 09's claim is about not
# needing a *long* one.
#
# The baseline to beat: a **bigram** table, next-token counts given only the previous token,
# computed from the same training tokens and scored on the same held-out ones.

# %%
from course_utils.gpt import TrainConfig, bigram_loss, lr_at
from course_utils.viz.small_gpt import plot_schedule

train_cfg = TrainConfig()
print(train_cfg)
print(f"warm-up: {train_cfg.warmup_steps} of {train_cfg.steps} steps ({train_cfg.warmup_steps / train_cfg.steps:.1%})")
tokens_seen = train_cfg.steps * train_cfg.batch_size * COURSE_MODEL.n_ctx
print(f"tokens seen: {train_cfg.steps} steps × {train_cfg.batch_size} windows × {COURSE_MODEL.n_ctx} tokens "
      f"= {tokens_seen:,}, {tokens_seen / len(train_ids):.2f} of a pass over the training tokens")
bigram = bigram_loss(train_ids, val_ids, COURSE_MODEL.d_vocab)
print(f"bigram baseline on the held-out tokens: {bigram:.3f} nats")
fig = plot_schedule([lr_at(step, train_cfg) for step in range(train_cfg.steps)])

# %% [markdown]
# ### Exercise: AdamW's update (3 points, difficulty 3/3, about 20 min)
#
# Until now the optimiser was a black box. AdamW keeps two running averages for every weight: `m`, an
# average of its gradients (which way it has been pushed lately), and `v`, an average of its squared
# gradients (how hard). The step moves the weight against `m`, divided by the square root of `v`, so
# each weight takes steps of roughly the learning rate whatever the scale of its gradient. Both
# averages start at zero, which makes them too small during the first steps; dividing by
# `1 - beta**step` corrects that (the **bias correction**, with `step` counting from 1).
#
# The "W" is **decoupled weight decay**: every step also shrinks the weight itself by a fraction
# `lr * weight_decay`, outside the averages. Adding `weight_decay * p` to the gradient instead is
# ordinary L2 regularisation, and with Adam it behaves differently, because the averages then rescale
# the decay along with the gradient (Loshchilov and Hutter's point). The recipe's rule, the one
# `training.make_optimizer` applies: decay every tensor with two or more dimensions, nothing else. That
# is nanoGPT's rule too, but its meaning differs here: nanoGPT's biases are all one-dimensional, so it
# decays no bias, while the course keeps `b_Q`, `b_K`, `b_V` per head, `(n_heads, d_head)`, so they are
# decayed with the matrices and embeddings. LayerNorm's scale and shift and the other biases
# (`b_O`, `b_in`, `b_out`) are not (the two groups are printed by name after the exercise).
#
# Write `adamw_step(params, grads, m, v, step, lr, betas, eps, weight_decay)`. The first four
# arguments are dicts of tensors keyed by parameter name (as `model.named_parameters()` names them);
# return three new dicts `(params, m, v)` after one update. The check runs several steps in a row,
# feeding your output back in, and compares each step with `torch.optim.AdamW`'s.

# %%
def adamw_step(params: dict, grads: dict, m: dict, v: dict, step: int, lr: float,
               betas: tuple, eps: float, weight_decay: float) -> tuple[dict, dict, dict]:
    # BEGIN SOLUTION
    beta1, beta2 = betas
    new_params, new_m, new_v = {}, {}, {}
    for name, p in params.items():
        g = grads[name]
        new_m[name] = beta1 * m[name] + (1 - beta1) * g
        new_v[name] = beta2 * v[name] + (1 - beta2) * g**2
        m_hat = new_m[name] / (1 - beta1**step)
        v_hat = new_v[name] / (1 - beta2**step)
        if p.ndim >= 2:
            p = p * (1 - lr * weight_decay)
        new_params[name] = p - lr * m_hat / (v_hat.sqrt() + eps)
    return new_params, new_m, new_v
    # END SOLUTION


# %%
from course_utils.checks.train_gpt import check_adamw_step

check_adamw_step(adamw_step)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("adamw_step")` for a nudge and `hint("adamw_step", 2)` for a stronger one.
#
# The groups `training.make_optimizer` builds for the course model, each tensor by its last name:

# %%
from course_utils.gpt import make_optimizer

leaf_names = {id(p): name.rsplit(".", 1)[-1] for name, p in model.named_parameters()}
for group in make_optimizer(model, train_cfg).param_groups:
    print(f"weight decay {group['weight_decay']}: {sorted({leaf_names[id(p)] for p in group['params']})}")

# %% [markdown]
# **The first step is a sign.** At step 1 the corrected averages are exactly `g` and `g²`, so the
# update is `lr * g / |g|`: every weight moves by the full learning rate, whichever way its gradient
# points, however small the gradient. That is the noisy start the warm-up below protects against.
# The course's own `adamw_step` (`course_utils.gpt.optim`), on three gradients of very different sizes:

# %%
from course_utils.gpt import optim

gradients = [5.0, -0.001, 0.2]
zeros = {"w": torch.zeros(3)}
moved, _, _ = optim.adamw_step({"w": torch.zeros(3)}, {"w": torch.tensor(gradients)}, zeros, zeros, step=1, lr=0.01,
                               betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
print("gradients:", gradients)
print("first update:", [round(x, 6) for x in moved["w"].tolist()])

# %% [markdown]
# ### Exercise: Warm-up, then a cosine (2 points, difficulty 1/3, about 10 min)
#
# The learning rate changes every step. For the first `warmup_steps` steps it climbs in a straight
# line, reaching `max_lr` at the last warm-up step (step `warmup_steps - 1`; steps count from 0, so
# step 0 already gets `max_lr / warmup_steps`). After that it follows half a cosine, from `max_lr` at
# the end of the warm-up down to `min_lr` at step `total_steps`: slow at first, fastest in the middle,
# flat again at the end.
#
# Write `lr_schedule(step, max_lr, min_lr, warmup_steps, total_steps)`, returning the rate for one
# step as a number. The check compares it with the course's `training.lr_at` at every step of a short
# schedule and around the turning points of the course's own run.

# %%
def lr_schedule(step: int, max_lr: float, min_lr: float, warmup_steps: int, total_steps: int) -> float:
    # BEGIN SOLUTION
    if step < warmup_steps:
        return max_lr * (step + 1) / warmup_steps
    progress = (step - warmup_steps) / (total_steps - warmup_steps)
    cosine = 0.5 * (1 + math.cos(math.pi * progress))
    return min_lr + (max_lr - min_lr) * cosine
    # END SOLUTION


# %%
from course_utils.checks.train_gpt import check_lr_schedule

check_lr_schedule(lr_schedule)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("lr_schedule")` for a nudge and `hint("lr_schedule", 2)` for a stronger one.

# %% [markdown]
# ### Exercise: Clipping the gradient by its global norm (2 points, difficulty 2/3, about 10 min)
#
# One unlucky batch can produce a gradient far larger than usual. Clipping caps the size of the
# whole update: treat every parameter's gradient as one long vector, measure its length (the square
# root of the sum of every entry's square, over all the tensors), and if that length is above
# `max_norm`, multiply **every** gradient by the same factor `max_norm / (norm + 1e-6)`. Scaling them
# all alike keeps the direction of the step and only shortens it; below the threshold nothing
# changes. (`torch.nn.utils.clip_grad_norm_` does this to a model's `.grad` in place.)
#
# Write `clip_grad_norm(grads, max_norm)`: `grads` is a list of tensors of any shapes; return the
# list of clipped gradients.

# %%
def clip_grad_norm(grads: list, max_norm: float) -> list:
    # BEGIN SOLUTION
    squares = 0.0
    for g in grads:
        squares = squares + (g**2).sum()
    norm = math.sqrt(float(squares))
    scale = min(1.0, max_norm / (norm + 1e-6))
    return [g * scale for g in grads]
    # END SOLUTION


# %%
from course_utils.checks.train_gpt import check_clip_grad_norm

check_clip_grad_norm(clip_grad_norm)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("clip_grad_norm")` for a nudge and `hint("clip_grad_norm", 2)` for a stronger one.

# %% [markdown]
# ### Exercise: The training loop (3 points, difficulty 2/3, about 20 min)
#
# Now the pieces go together. One step of the recipe: set this step's learning rate in every
# parameter group of the optimiser (`group["lr"] = ...` for `group in optimizer.param_groups`), draw a
# batch of random windows, compute the next-token loss, clear the previous step's gradients, run
# `backward`, clip the gradients, and let the optimiser update the weights. Batches come from
# `get_batch(train_ids, cfg.batch_size, model.cfg.n_ctx, generator)` with **one** generator, seeded once
# with `cfg.seed` before the loop: that is what makes the run reproducible, batch for batch.
#
# `get_batch` returns `(inputs, targets)`, each `(batch, n_ctx)`, and the targets are **already
# shifted**: `targets[:, i]` is the token after `inputs[:, i]` (both come from one window of n_ctx + 1
# tokens). So the loss of a batch is `loss_fn(model(inputs), targets)`, with no second shift: the
# function passed in scores row i of the logits against `targets[:, i]`, as the course's
# `sequence_loss` does. The capstone passes in your `next_token_loss`, which shifts by itself, by
# giving it the window it expects (`course_utils.gpt.capstone.on_targets`).
#
# Write `training_loop(model, optimizer, train_ids, cfg, n_steps, lr_schedule, clip_grad_norm, loss_fn)`:
# train `model` in place for `n_steps` steps and return the list of the steps' losses (Python floats).
# `cfg` is a `TrainConfig` (`cfg.max_lr`, `cfg.min_lr`, `cfg.warmup_steps`, `cfg.steps`,
# `cfg.batch_size`, `cfg.grad_clip`, `cfg.seed`); the schedule, the clipping and the loss are passed in,
# the first two shaped like your functions above: call `lr_schedule(step, cfg.max_lr, cfg.min_lr,
# cfg.warmup_steps, cfg.steps)`, put what `clip_grad_norm(grads, cfg.grad_clip)` returns back into each
# parameter's `.grad`, and score each batch with `loss_fn(logits, targets)`. The check trains a tiny GPT
# for a few steps with the course's AdamW and compares your losses with the course loop's, which repeats
# `training.train` step for step.

# %%
from course_utils.gpt import get_batch


def training_loop(model, optimizer, train_ids: torch.Tensor, cfg, n_steps: int, lr_schedule, clip_grad_norm,
                  loss_fn) -> list:
    # BEGIN SOLUTION
    generator = torch.Generator().manual_seed(cfg.seed)
    losses = []
    for step in range(n_steps):
        lr = lr_schedule(step, cfg.max_lr, cfg.min_lr, cfg.warmup_steps, cfg.steps)
        for group in optimizer.param_groups:
            group["lr"] = lr
        x, y = get_batch(train_ids, cfg.batch_size, model.cfg.n_ctx, generator)
        loss = loss_fn(model(x), y)  # y is shifted already: row i of the logits against y[:, i]
        optimizer.zero_grad()
        loss.backward()
        params = [p for p in model.parameters() if p.grad is not None]
        clipped = clip_grad_norm([p.grad for p in params], cfg.grad_clip)
        for p, g in zip(params, clipped):
            p.grad = g
        optimizer.step()
        losses.append(loss.item())
    return losses
    # END SOLUTION


# %%
from course_utils.checks.train_gpt import check_training_loop

check_training_loop(training_loop)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("training_loop")` for a nudge and `hint("training_loop", 2)` for a stronger one.

# %% [markdown]
# ### Exercise: The validation loss (2 points, difficulty 2/3, about 15 min)
#
# A step's training loss is measured on the batch the model is about to learn from, a different batch
# every step: it is noisy, and it says nothing about text the model never trains on. The recipe judges
# the model on the held-out tokens instead, and always on the *same* windows, so that two evaluations
# differ only because the model did: `n_windows` windows of `n_ctx + 1` tokens, window k starting at
# `torch.linspace(0, len(ids) - n_ctx - 1, n_windows).long()[k]`, spread evenly from the first token to
# the last start that fits. Two habits belong to every evaluation: put the model in eval mode
# (`model.eval()`; layers such as dropout behave differently at test time, and although this model has
# none, an evaluation should not depend on that) and turn autograd off (`torch.no_grad()`: no graph is
# kept, far less memory); and afterwards leave the model in the mode it was in (`model.training` says
# which), since the caller may be in the middle of training.
#
# Write `estimate_loss(model, ids, n_windows)`: the mean next-token cross-entropy over every position of
# those windows (a window's first `n_ctx` tokens are the input, its last `n_ctx` the targets), as a
# Python float. `ids` is a 1-d tensor of token ids on the model's device. The check runs a model that
# records the mode and the gradient setting of every forward call; the capstone below measures your
# trained model with your function.

# %%
def estimate_loss(model, ids: torch.Tensor, n_windows: int) -> float:
    # BEGIN SOLUTION
    n_ctx = model.cfg.n_ctx
    starts = torch.linspace(0, len(ids) - n_ctx - 1, n_windows).long()
    windows = ids[starts[:, None] + torch.arange(n_ctx + 1)]  # (n_windows, n_ctx + 1)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        logits = model(windows[:, :-1])  # (n_windows, n_ctx, d_vocab)
    model.train(was_training)
    return F.cross_entropy(logits.flatten(0, 1), windows[:, 1:].flatten()).item()
    # END SOLUTION


# %%
from course_utils.checks.train_gpt import check_estimate_loss

check_estimate_loss(estimate_loss)

# %% [markdown]
# Stuck? `from course_utils.checks import hint`, then `hint("estimate_loss")` for a nudge and `hint("estimate_loss", 2)` for a stronger one.

# %% [markdown]
# ### The capstone: your GPT, trained by your code
#
# The cell below assembles the run from your parts: your `SmallGPT`, `next_token_loss` (the loss your
# loop optimises), `adamw_step`, `lr_schedule`, `clip_grad_norm`, `training_loop` and `estimate_loss`
# wherever their checks pass, the course's where they do not (the course's model runs PyTorch's fused
# kernels, its loss is `sequence_loss`), and says in one line which is which
# (`course_utils.gpt.capstone.assemble`). Your model starts from the course model's seeded initial
# weights (your class takes its `state_dict`, as in the check) and your loop draws the recipe's
# batches from the recipe's seed, so the run repeats the committed one step for step, up to floating
# point. The whole recipe takes a few minutes on a CPU; the run here is its first 100 steps, through
# the warm-up and into the cosine, compared with the committed run's log at the same steps: the
# training losses, and the validation loss after the last step, measured by your `estimate_loss`.

# %%
from course_utils.gpt import assemble
from course_utils.checks.build_gpt import check_gpt_forward, check_next_token_loss
from course_utils.checks.train_gpt import (check_adamw_step, check_clip_grad_norm, check_estimate_loss,
                                           check_lr_schedule, check_training_loop)

parts = {"model": SmallGPT, "next_token_loss": next_token_loss, "adamw_step": adamw_step, "lr_schedule": lr_schedule,
         "clip_grad_norm": clip_grad_norm, "training_loop": training_loop, "estimate_loss": estimate_loss}
checks = {"model": check_gpt_forward, "next_token_loss": check_next_token_loss, "adamw_step": check_adamw_step,
          "lr_schedule": check_lr_schedule, "clip_grad_norm": check_clip_grad_norm,
          "training_loop": check_training_loop, "estimate_loss": check_estimate_loss}
capstone = assemble(parts, {part: check(parts[part]) for part, check in checks.items()}, COURSE_MODEL, train_cfg,
                    device=device)
print(capstone.summary())

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: this run's losses (their last digits vary by machine) and its time.
import time

from course_utils.env import threads_for_load

CAPSTONE_STEPS = 100  # the recipe's first steps: same seed, same batches
torch.set_num_threads(threads_for_load())  # on a crowded machine fewer threads are faster
started = time.perf_counter()
losses = capstone.train(train_ids, n_steps=CAPSTONE_STEPS)
run_seconds = time.perf_counter() - started
val_loss = capstone.validation_loss(val_ids)
print(f"{CAPSTONE_STEPS} steps in {run_seconds:.0f} s on {describe_device(device)}: "
      f"loss {losses[0]:.3f} at step 0, {losses[-1]:.3f} at step {CAPSTONE_STEPS - 1}; validation loss {val_loss:.3f}")

# %% [markdown]
# Floating-point sums come out a little differently with another thread count, another machine or
# another (equally correct) order of operations in your code, so your run and the committed one agree
# closely but not to the last bit, and the gap grows slowly with the steps. The cell below holds them
# to stated tolerances on whatever machine runs it (the tests compare its verdicts). From here on the
# notebook uses the **committed** checkpoint, so its outputs are the same everywhere
# (`load_checkpoint()` takes a second).

# %%
from course_utils.gpt import load_checkpoint
from course_utils.viz.small_gpt import plot_loss_curve

ckpt = load_checkpoint(device=device)
trained, committed_log = ckpt["model"], ckpt["log"]
theirs = committed_log["train_loss"][:CAPSTONE_STEPS]
last = slice(CAPSTONE_STEPS - 25, CAPSTONE_STEPS)
print(f"step 0: the same loss as the committed run's ({theirs[0]:.3f}) to within 0.001:", abs(losses[0] - theirs[0]) < 1e-3)
print(f"steps {last.start}-{last.stop - 1}: mean loss within 0.05 nats of the committed run's "
      f"({sum(theirs[last]) / 25:.3f}):", abs(sum(losses[last]) - sum(theirs[last])) / 25 < 0.05)
their_val = committed_log["val_loss"][committed_log["eval_step"].index(CAPSTONE_STEPS)]
print(f"validation loss after {CAPSTONE_STEPS} steps within 0.05 nats of the committed run's ({their_val:.3f}):",
      abs(val_loss - their_val) < 0.05)
print(f"the committed run after all {train_cfg.steps} steps: validation loss {committed_log['val_loss'][-1]:.3f}, "
      f"bigram {bigram:.3f}, {bigram - committed_log['val_loss'][-1]:.2f} nats better")
print("validation loss at least 0.3 nats below the bigram baseline:", committed_log["val_loss"][-1] < bigram - 0.3)
fig = plot_loss_curve(committed_log, bigram)

# %% [markdown]
# **The whole recipe.** To train all the steps with your parts (a few minutes on a CPU, less on a GPU),
# set the flag below to True and run the cell. It assembles a fresh run from scratch, so this time your
# `init_weights` from notebook 09 draws the initial weights (where its check passes), from the recipe's
# seed: the run is yours from its first step, and it no longer follows the committed one draw for draw
# (the summary line names the initialisation too). `python -m course_utils.gpt.checkpoint` is the
# course's own run of the same recipe, the one that made the committed checkpoint. The cell saves your
# trained model in `notebooks/student/my_small_gpt/`, where notebook 13 looks inside it.

# %%
from course_utils.gpt import STUDENT_CHECKPOINT, save_checkpoint

RUN_FULL_RECIPE = False
if RUN_FULL_RECIPE:
    from course_utils.checks.build_gpt import check_init_weights

    full_parts, full_checks = parts | {"init_weights": init_weights}, checks | {"init_weights": check_init_weights}
    full_run = assemble(full_parts, {part: check(full_parts[part]) for part, check in full_checks.items()},
                        COURSE_MODEL, train_cfg, device=device)
    print(full_run.summary())
    full_losses = full_run.train(train_ids)
    print(f"mean loss over the last 50 steps: yours {sum(full_losses[-50:]) / 50:.3f}, "
          f"the committed run's {sum(committed_log['train_loss'][-50:]) / 50:.3f}")
    yours = GPT(COURSE_MODEL)
    yours.load_state_dict(full_run.model.state_dict())  # your model's weights, in the course's class
    save_checkpoint(STUDENT_CHECKPOINT, yours, tokenizer, train_cfg,
                    {"train_loss": full_losses, "val_loss": [full_run.validation_loss(val_ids)]})
    print("saved in", STUDENT_CHECKPOINT)

# %% [markdown]
# ### On a GPU: a bigger model from the same notebook
#
# The recipe above is sized for a laptop's processor. A CUDA GPU runs the same step many times faster,
# so on one the notebook offers a **GPU profile**: a deeper and wider model that reads a longer context,
# trained for more steps on bigger batches. One change to *how* it trains makes the card's time count:
# **bfloat16 autocast** runs the matrix products in bfloat16, the format a GPU's tensor cores multiply
# fastest, while the weights, the optimiser's moments and the loss stay float32 (autocast picks per
# operation; nothing you wrote changes). Both profiles update the weights with PyTorch's fused AdamW,
# one kernel per tensor instead of several. The first cell prints both profiles and the GPU profile's
# target: a validation loss at least 0.3 nats below the CPU run's, in at most 90 s of training.
#
# `PROFILE` picks the profile. `"auto"` takes the GPU profile when the course's device is CUDA and the
# CPU profile otherwise; `"cpu"` or `"gpu"` forces one (`"gpu"` needs a CUDA device). The CPU profile
# trains nothing more here: the capstone above is its run and the committed checkpoint its result. The
# validation losses are not quite like for like. The GPU model reads windows four times as long, and a
# longer context alone lowers the loss a little; and it trains on many times the tokens, several
# passes over the training text where the CPU run sees less than one (both printed below). So its lead
# is part context, part data and part model, not the bigger model alone.

# %%
from course_utils.gpt import CPU_PROFILE, GPU_PROFILE, choose_profile

PROFILE = "auto"  # "auto", "cpu" or "gpu"
cpu_val = committed_log["val_loss"][-1]
seen = {}
for p in (CPU_PROFILE, GPU_PROFILE):
    seen[p.name] = p.train.steps * p.train.batch_size * p.model.n_ctx  # tokens read in training
    print(p.describe())
    print(f"     {seen[p.name]:,} tokens seen, {seen[p.name] / len(train_ids):.2f} passes over the training tokens")
print(f"the GPU profile sees {seen['gpu'] / seen['cpu']:.0f}x the CPU profile's tokens")
print(f"GPU profile's target: validation loss at most {cpu_val - 0.3:.3f} (the CPU run's {cpu_val:.3f} minus 0.3) "
      f"in at most 90 s of training; the GPU model's context is {GPU_PROFILE.model.n_ctx // CPU_PROFILE.model.n_ctx} "
      f"times as long")

# %% tags=["nbval-ignore-output"]
# Output not compared by the tests: which profile runs depends on the machine, and a GPU run's losses, time and samples on its card.
from course_utils.gpt import profile_samples, train_profile

profile = choose_profile(PROFILE, device)
print(f"profile: {profile.name}, on {describe_device(device)}")
if profile is GPU_PROFILE:
    gpu_run = train_profile(profile, train_ids, val_ids, device)
    print(f"{profile.train.steps:,} steps in {gpu_run['seconds']:.0f} s ({gpu_run['tokens_per_s']:,.0f} tokens/s): "
          f"validation loss {gpu_run['val_loss']:.3f}, {cpu_val - gpu_run['val_loss']:.2f} nats below the CPU run's")
    print("target met:", gpu_run["val_loss"] <= cpu_val - 0.3 and gpu_run["seconds"] <= 90)
    for text in profile_samples(gpu_run["model"], tokenizer, n_new=200):
        print(f"---\n{text}")
else:
    print("the CPU profile: the capstone above is its run, the committed checkpoint its result")

# %% [markdown]
# ## What to remember
#
# * AdamW gives every weight its own step size, from running averages of its gradient and of the
#   gradient's square (bias-corrected at the start), and decays the weights themselves, outside those
#   averages.
# * A short warm-up covers Adam's noisy first steps; a cosine then brings the rate down to a tenth of
#   its peak. Clipping by the global norm shortens an outsized step without turning it.
# * Judge a model on held-out text, on the same windows every time, in eval mode without gradients,
#   and leave the mode as you found it.
# * A few minutes of this recipe take the model from about ln(d_vocab) to well below what a bigram
#   table can do; a GPU buys a bigger model, a longer context and many more tokens in the same time.
#
# **Next: notebook 11** samples from the trained model with your sampling loops and your KV cache,
# looks inside it, and loads GPT-2's tensors into your class. With `RUN_FULL_RECIPE` set, the model you
# train here is saved for notebook 13, which opens it up.
