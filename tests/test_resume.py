"""A run that resumes (gpt/resume.py, train's resume_from / save_state_to): training 2N steps equals
training N, saving, loading in a fresh Python process and training N more, bit for bit on the CPU
(weights, AdamW's state, the losses, every generator); bad state files raise ValueError naming the file."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest
import torch

from course_utils.env.threads import torch_threads
from course_utils.gpt import GPT, GPTConfig, TrainConfig, load_training_state, save_checkpoint, train
from course_utils.tokenisation.byte_bpe import ByteBPETokenizer

N = 6  # steps before and after the stop; the schedule's warm-up ends inside the first half
MODEL = dict(d_vocab=40, n_ctx=12, d_model=16, n_heads=2, n_layers=2)
TRAIN = dict(steps=2 * N, batch_size=4, warmup_steps=3, eval_every=4, eval_windows=4, seed=3)

# Run in a fresh interpreter: nothing of the first half's process (its generators, caches, threads) survives.
SECOND_HALF = textwrap.dedent("""
    import sys
    import torch
    from course_utils.env.threads import torch_threads
    from course_utils.gpt import GPT, GPTConfig, TrainConfig, train
    model_cfg, train_cfg, state, out = eval(sys.argv[1]), eval(sys.argv[2]), sys.argv[3], sys.argv[4]
    train_ids, val_ids = torch.load(sys.argv[5])
    model = GPT(GPTConfig(**model_cfg))  # fresh random weights: resuming must replace them
    with torch_threads(1):
        train(model, train_ids, val_ids, TrainConfig(**train_cfg), progress=False, resume_from=state, save_state_to=out)
""")


def _data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(11)
    return torch.randint(0, MODEL["d_vocab"], (400,), generator=g), torch.randint(0, MODEL["d_vocab"], (80,),
                                                                                 generator=g)


def _run(path, stop_after=None, resume_from=None):
    """Seed every global generator the same way, build the model, train; the state file is written at the end."""
    torch.manual_seed(5)
    random.seed(5)
    np.random.seed(5)
    model = GPT(GPTConfig(**MODEL))
    model.reset_parameters(torch.Generator().manual_seed(0))
    train_ids, val_ids = _data()
    with torch_threads(1):  # one thread in both processes: the sums' order cannot differ
        return train(model, train_ids, val_ids, TrainConfig(**TRAIN), progress=False, stop_after=stop_after,
                     resume_from=resume_from, save_state_to=path)


def _assert_same_tree(a, b, where="state"):
    assert type(a) is type(b), f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), f"{where} differs"
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), f"{where}: keys differ"
        for k in a:
            _assert_same_tree(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same_tree(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def test_training_2n_steps_equals_n_then_n_more_in_a_fresh_process(tmp_path):
    whole = _run(tmp_path / "whole.pt")
    half = _run(tmp_path / "half.pt", stop_after=N)
    assert load_training_state(tmp_path / "half.pt")["step"] == N and len(half["train_loss"]) == N
    torch.save(_data(), tmp_path / "data.pt")
    done = subprocess.run(
        [sys.executable, "-c", SECOND_HALF, repr(MODEL), repr(TRAIN), str(tmp_path / "half.pt"),
         str(tmp_path / "resumed.pt"), str(tmp_path / "data.pt")],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    expected, resumed = load_training_state(tmp_path / "whole.pt"), load_training_state(tmp_path / "resumed.pt")
    assert resumed["step"] == expected["step"] == 2 * N
    assert resumed["log"]["train_loss"][:N] == half["train_loss"]
    assert resumed["log"] == whole  # every loss, learning rate and validation loss, exactly
    for part in ("model", "optimizer", "rng", "train_config"):  # weights, AdamW's moments, all five generators
        _assert_same_tree(resumed[part], expected[part], part)


def test_resuming_in_process_goes_on_from_the_saved_step_with_its_schedule(tmp_path):
    whole = _run(tmp_path / "whole.pt")
    _run(tmp_path / "half.pt", stop_after=N)
    log = _run(tmp_path / "resumed.pt", resume_from=tmp_path / "half.pt")
    assert log == whole
    assert log["lr"][N] == whole["lr"][N] != whole["lr"][0]  # the schedule goes on from step N, not from 0
    _run(tmp_path / "a.pt", stop_after=2)  # a run in three calls: 2 steps, to N + 1, to the end
    _run(tmp_path / "b.pt", stop_after=N + 1, resume_from=tmp_path / "a.pt")
    assert load_training_state(tmp_path / "b.pt")["step"] == N + 1
    assert _run(tmp_path / "c.pt", resume_from=tmp_path / "b.pt") == whole


def test_resuming_with_another_config_is_refused(tmp_path):
    _run(tmp_path / "half.pt", stop_after=N)
    model = GPT(GPTConfig(**MODEL))
    with pytest.raises(ValueError, match=r"half.pt' was saved with another training config: \['max_lr'\] differ"):
        train(model, *_data(), TrainConfig(**{**TRAIN, "max_lr": 1e-2}), progress=False,
              resume_from=tmp_path / "half.pt")
    with pytest.raises(ValueError, match="W_E: checkpoint has shape"):
        train(GPT(GPTConfig(**{**MODEL, "d_model": 32})), *_data(), TrainConfig(**TRAIN), progress=False,
              resume_from=tmp_path / "half.pt")


def _rewrite(path, **changes):
    payload = torch.load(path, weights_only=True)
    for key, value in changes.items():
        if value is None:
            del payload[key]
        else:
            payload[key] = value
    torch.save(payload, path)


@pytest.mark.parametrize("damage, message", [
    ("garbage", "is not a readable torch file"),
    ("truncated", "is not a readable torch file, or was cut short"),
    ("missing optimizer", r"lacks \['optimizer'\]"),
    ("missing rng part", r"lacks \['rng.numpy'\]"),
    ("bad step", "has step -1"),
    ("course checkpoint", "was not written by save_training_state"),
    ("pickled object", "is not a readable torch file"),
    ("no file", "does not exist"),
])
def test_bad_state_files_name_the_file(tmp_path, damage, message):
    path = tmp_path / "state.pt"
    _run(path, stop_after=2)
    if damage == "garbage":
        path.write_bytes(b"\x00\x01 not a torch file at all" * 40)
    elif damage == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        with pytest.raises(zipfile.BadZipFile):  # the cut really breaks the archive
            zipfile.ZipFile(path)
    elif damage == "missing optimizer":
        _rewrite(path, optimizer=None)
    elif damage == "missing rng part":
        rng = torch.load(path, weights_only=True)["rng"]
        del rng["numpy"]
        _rewrite(path, rng=rng)
    elif damage == "bad step":
        _rewrite(path, step=-1)
    elif damage == "course checkpoint":  # checkpoint.save_checkpoint's weights file: a state dict, no format
        save_checkpoint(tmp_path / "ckpt", GPT(GPTConfig(**MODEL)), ByteBPETokenizer.train("ab ab ab", 258),
                        TrainConfig(**TRAIN), {})
        path = tmp_path / "ckpt" / "model.pt"
    elif damage == "pickled object":  # weights_only refuses arbitrary objects; so do we, as a ValueError
        torch.save({"format": "course-training-state/1", "x": zipfile.ZipInfo("a")}, path)
    else:
        path = tmp_path / "nowhere.pt"
    with pytest.raises(ValueError, match=message) as err:
        load_training_state(path)
    assert str(path) in str(err.value)
    with pytest.raises(ValueError, match=message):  # and so does the training loop asked to resume from it
        train(GPT(GPTConfig(**MODEL)), *_data(), TrainConfig(**TRAIN), progress=False, resume_from=path)


def test_a_corrupt_generator_state_is_named(tmp_path):
    path = tmp_path / "state.pt"
    _run(path, stop_after=2)
    rng = torch.load(path, weights_only=True)["rng"]
    rng["batches"] = torch.zeros(3, dtype=torch.uint8)
    _rewrite(path, rng=rng)
    with pytest.raises(ValueError, match="a random generator's state is corrupt"):
        train(GPT(GPTConfig(**MODEL)), *_data(), TrainConfig(**TRAIN), progress=False, resume_from=path)


def test_the_default_call_is_unchanged_and_writes_nothing(tmp_path, monkeypatch):
    """Without the new arguments, train computes what it did: the same log as a run that saves its state."""
    monkeypatch.chdir(tmp_path)
    plain = _run(None)
    assert list(tmp_path.iterdir()) == []
    assert plain == _run(tmp_path / "s.pt")


def test_cuda_generators_are_saved_and_put_back_only_to_as_many_gpus(monkeypatch):
    """The CUDA branch without a GPU: the states are captured per device and restored only where the count fits."""
    from course_utils.gpt import resume

    states, restored = [torch.arange(4, dtype=torch.uint8), torch.arange(4, 8, dtype=torch.uint8)], []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_rng_state_all", lambda: list(states))
    monkeypatch.setattr(torch.cuda, "set_rng_state_all", restored.append)
    rng = resume.capture_rng(torch.Generator())
    assert [s.tolist() for s in rng["cuda"]] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    resume.restore_rng(rng, torch.Generator())
    assert len(restored) == 1 and torch.equal(restored[0][1], states[1])
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)  # saved on two GPUs, resumed on one: left alone
    resume.restore_rng(rng, torch.Generator())
    assert len(restored) == 1


@pytest.mark.gpu
def test_a_run_on_the_gpu_resumes(tmp_path):
    """On CUDA the moments come back on the GPU and the resumed run follows the uninterrupted one."""
    train_ids, val_ids = _data()
    logs = []
    for stop, resume_from, path in ((None, None, "whole.pt"), (N, None, "half.pt"), (None, "half.pt", "resumed.pt")):
        model = GPT(GPTConfig(**MODEL))
        model.reset_parameters(torch.Generator().manual_seed(0))
        model = model.cuda()
        logs.append(train(model, train_ids, val_ids, TrainConfig(**TRAIN), progress=False, stop_after=stop,
                          resume_from=None if resume_from is None else tmp_path / resume_from,
                          save_state_to=tmp_path / path))
    whole, _, resumed = logs
    assert resumed["lr"] == whole["lr"] and len(resumed["train_loss"]) == 2 * N
    torch.testing.assert_close(torch.tensor(resumed["train_loss"]), torch.tensor(whole["train_loss"]),
                               rtol=1e-5, atol=1e-5)
    assert load_training_state(tmp_path / "resumed.pt")["rng"]["cuda"]  # the GPU's generator was saved
