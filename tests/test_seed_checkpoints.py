"""The committed runs of the course recipe (seed 0 in data/small_gpt/, seeds 1-4 in data/small_gpt_seeds/):
each loads with the course tokenizer and its own seed in its config, its log starts as the recipe at that
seed does (the first steps replayed), and each ends at least 0.3 nats below the bigram baseline, as
notebook 09 asserts for the run it trains."""

import pytest
import torch

from course_utils.gpt.checkpoint import (COURSE_CHECKPOINT, COURSE_MODEL, SEEDS, corpus_tokens, load_checkpoint,
                                     replay_first_steps, seed_checkpoint, small_gpt_tokenizer)
from course_utils.gpt.training import TrainConfig, bigram_loss, split_tokens


@pytest.fixture(scope="module")
def split():
    return split_tokens(corpus_tokens())  # trains the course BPE once (about 6 s) and encodes the corpus


def test_seed_folders_and_errors():
    assert seed_checkpoint(0) == COURSE_CHECKPOINT
    assert [seed_checkpoint(s).name for s in SEEDS[1:]] == ["seed_1", "seed_2", "seed_3", "seed_4"]
    with pytest.raises(ValueError, match="seed"):
        seed_checkpoint(5)
    with pytest.raises(ValueError, match="steps"):
        replay_first_steps(1, steps=0)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_each_checkpoint_is_its_seeds_run(seed, split, margins):
    """Same tokenizer, its seed in the config, and the first 5 steps of the recipe at that seed give the
    log's first losses (the model's start and the batches both come from the seed), within 2e-3 nats:
    the five logs' first 5 losses differ pairwise by at least 0.0176 somewhere, so no other seed passes."""
    ckpt = load_checkpoint(seed_checkpoint(seed))
    assert ckpt["model"].cfg == COURSE_MODEL and ckpt["train_config"] == TrainConfig(seed=seed)
    assert ckpt["tokenizer"].ranks == small_gpt_tokenizer().ranks
    log = replay_first_steps(seed, 5, split)
    assert log["lr"] == ckpt["log"]["lr"][:5]
    gap = (torch.tensor(log["train_loss"]) - torch.tensor(ckpt["log"]["train_loss"][:5])).abs().max()
    margins.below("09 committed runs: the first 5 steps replay the log within 2e-3 nats", gap, 2e-3)
    for other in (s for s in SEEDS if s != seed):  # the replay tells the seeds apart by far more than atol
        theirs = torch.tensor(load_checkpoint(seed_checkpoint(other))["log"]["train_loss"][:5])
        assert (theirs - torch.tensor(log["train_loss"])).abs().max() > 1e-2


@pytest.mark.slow
def test_every_seed_ends_well_below_the_bigram_baseline(split):
    bigram = bigram_loss(*split, COURSE_MODEL.d_vocab)
    finals = [load_checkpoint(seed_checkpoint(s))["log"]["val_loss"][-1] for s in SEEDS]
    assert max(finals) < bigram - 0.3, (finals, bigram)


def test_own_checkpoint_is_used_when_whole_else_the_course_one(tmp_path):
    from course_utils.gpt.checkpoint import FILES, load_checkpoint, load_own_or_course, save_checkpoint

    course = load_checkpoint()
    from course_utils.gpt.checkpoint import STUDENT_CHECKPOINT

    if not STUDENT_CHECKPOINT.exists():  # the default folder is named from the course's root, on any machine
        assert load_own_or_course()["source"].endswith("in notebooks/student/my_small_gpt)")
    missing = load_own_or_course(tmp_path / "nothing")
    assert "course" in missing["source"] and torch.equal(missing["model"].W_E, course["model"].W_E)
    own = course["model"]
    with torch.no_grad():
        own.W_E.add_(1.0)  # a model that differs from the course's
    save_checkpoint(tmp_path / "mine", own, course["tokenizer"], course["train_config"], course["log"])
    found = load_own_or_course(tmp_path / "mine")
    assert "your own" in found["source"] and torch.equal(found["model"].W_E, own.W_E)
    (tmp_path / "mine" / FILES[0]).unlink()  # a partial folder: the course's model again
    assert "course" in load_own_or_course(tmp_path / "mine")["source"]
    (tmp_path / "bad").mkdir()
    for name in FILES:
        (tmp_path / "bad" / name).write_text("not a checkpoint")
    with pytest.raises(ValueError, match="corrupt"):
        load_own_or_course(tmp_path / "bad")


def test_a_test_run_ignores_the_students_own_checkpoint(tmp_path, monkeypatch):
    """Notebook 13 reads the run a student saved from notebook 10, but not under COURSE_IGNORE_STUDENT_CHECKPOINT=1,
    which conftest.py sets for every test run (nbval's kernels inherit it) and `make notebooks` for the stored
    outputs: there the default folder counts as empty, the sentence included, as on a fresh checkout."""
    import os
    from pathlib import Path

    from course_utils.gpt import checkpoint
    from course_utils.gpt.checkpoint import (IGNORE_STUDENT_CHECKPOINT, load_checkpoint, load_own_or_course,
                                             save_checkpoint)

    course = load_checkpoint()
    own = load_checkpoint()["model"]
    with torch.no_grad():
        own.W_E.add_(1.0)  # the student's run: a model that differs from the course's
    student = tmp_path / "notebooks" / "student" / "my_small_gpt"
    save_checkpoint(student, own, course["tokenizer"], course["train_config"], course["log"])
    monkeypatch.setattr(checkpoint, "STUDENT_CHECKPOINT", student)
    assert os.environ.get(IGNORE_STUDENT_CHECKPOINT) == "1", "conftest.py sets it for every test run"
    ignored = load_own_or_course()
    assert ignored["source"] == f"the course's model (no checkpoint of yours in {student})"
    assert torch.equal(ignored["model"].W_E, course["model"].W_E)
    assert "your own" in load_own_or_course(student)["source"]  # a folder passed in is still read
    for value in ("0", ""):  # off: the student's model again
        monkeypatch.setenv(IGNORE_STUDENT_CHECKPOINT, value)
        assert "your own" in load_own_or_course()["source"]
    monkeypatch.delenv(IGNORE_STUDENT_CHECKPOINT)
    found = load_own_or_course()
    assert found["source"] == f"your own model, from {student}" and torch.equal(found["model"].W_E, own.W_E)
    recipe = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    assert f"{IGNORE_STUDENT_CHECKPOINT}=1 $(BIN)/jupyter nbconvert" in recipe  # the stored outputs are made so
