"""Carrying a student's definitions from one notebook into the next (``course_utils.env.sibling``): only
definitions run, failures are reported not raised, and, end to end, a wrong part in the student's notebook 09
is what notebook 10's capstone and notebook 11's sampler name (issue #40)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
import torch

from course_utils.checks.build_gpt import check_gpt_forward, check_kv_cache_step, check_next_token_loss
from course_utils.checks.generate_gpt import check_sample_with_cache
from course_utils.checks.train_gpt import (check_adamw_step, check_clip_grad_norm, check_estimate_loss,
                                           check_lr_schedule, check_training_loop)
from course_utils.env.sibling import from_sibling, run_definitions
from course_utils.gpt.capstone import assemble
from course_utils.gpt.config import GPTConfig
from course_utils.gpt.model import GPT
from course_utils.gpt.own_sampler import assemble_sampler
from tools.mutation.sources import namespace

BUILD = Path(__file__).resolve().parents[1] / "notebooks" / "09_build_gpt.ipynb"
TRAIN = {"adamw_step": check_adamw_step, "lr_schedule": check_lr_schedule, "clip_grad_norm": check_clip_grad_norm,
         "training_loop": check_training_loop, "estimate_loss": check_estimate_loss}
TINY = GPTConfig(d_vocab=30, n_ctx=16, d_model=16, n_heads=2, n_layers=2)


def _notebook(folder, *sources, name="09_build_gpt.ipynb"):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# a notebook")] + [nbformat.v4.new_code_cell(s) for s in sources]
    nbformat.write(nb, str(folder / name))


def test_only_definitions_run_and_they_share_one_namespace(tmp_path):
    _notebook(tmp_path, "import math\nSCALE = 2.0\nprint(undefined_name)",
              "def double(x):\n    return SCALE * helper(x)",
              "%timeit double(1)\nraise RuntimeError('a cell computation: never run')",
              "def helper(x):\n    return math.floor(x)",
              "def broken(:\n    pass")
    got = from_sibling("09_build_gpt.ipynb", ["double", "absent"], folder=tmp_path)
    assert got["double"](2.7) == 4.0  # its globals are the sibling's namespace: SCALE and helper found there
    assert got["absent"] is None and got.found == ["double"]
    assert got.failed == ["cell 5: SyntaxError: invalid syntax"]
    assert got.summary() == ("from your 09_build_gpt.ipynb: double; not found there (the course's stand in): "
                             "absent; 1 statement(s) there raised and were skipped (first: cell 5: SyntaxError: "
                             "invalid syntax)")


def test_a_failing_definition_is_reported_and_skipped():
    names: dict = {}
    failed = run_definitions("import no_such_module_here\nX = [1, 2]\nY = len(X)\ndef f():\n    return X", names, "<t>")
    assert failed == ["<t>, line 1: ModuleNotFoundError: No module named 'no_such_module_here'"]
    assert names["f"]() == [1, 2] and "Y" not in names  # a computed assignment is not a definition


def test_a_missing_notebook_finds_nothing_and_says_so(tmp_path):
    got = from_sibling("09_build_gpt.ipynb", ["SmallGPT"], folder=tmp_path)
    assert got.path is None and got["SmallGPT"] is None and got.found == []
    assert got.summary() == ("09_build_gpt.ipynb is not in this folder, so the course's parts stand in for yours: "
                             "SmallGPT")
    (tmp_path / "09_build_gpt.ipynb").write_text("not a notebook")
    assert from_sibling("09_build_gpt.ipynb", ["SmallGPT"], folder=tmp_path).path is None


@pytest.mark.parametrize("notebook, names, error", [
    ("../09_build_gpt.ipynb", ["x"], ValueError), ("09_build_gpt.py", ["x"], ValueError),
    ("09_build_gpt.ipynb", "SmallGPT", TypeError), ("09_build_gpt.ipynb", ["not a name"], TypeError)])
def test_bad_arguments_are_named(notebook, names, error):
    with pytest.raises(error, match="notebook must|names must"):
        from_sibling(notebook, names)


def _students_09(folder, wrong: str, right: str):
    """The solution notebook 09 with one part changed, saved in ``folder`` as the student's copy."""
    nb = nbformat.read(str(BUILD), as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and right in c.source]
    assert len(cells) == 1, right
    cells[0].source = cells[0].source.replace(right, wrong)
    nbformat.write(nb, str(folder / BUILD.name))


def test_a_wrong_cache_step_in_the_students_09_is_what_notebook_11s_sampler_names(tmp_path):
    right = 'scores.masked_fill(~mask, float("-inf"))'
    _students_09(tmp_path, "scores", right)  # attends to the future
    parts = from_sibling(BUILD.name, ["SmallGPT", "kv_cache_step"], folder=tmp_path)
    trained = GPT(TINY)
    trained.reset_parameters(torch.Generator().manual_seed(0))
    own = {"kv_cache_step": parts["kv_cache_step"], "model": parts["SmallGPT"],
           "sample_with_cache": namespace("generate_gpt")["sample_with_cache"]}
    checks = {"kv_cache_step": check_kv_cache_step, "model": check_gpt_forward,
              "sample_with_cache": check_sample_with_cache}
    sampler = assemble_sampler(own, {p: check(own[p]) for p, check in checks.items()}, trained)
    assert sampler.summary() == ("yours: sampler; the course's: cache step (its check has not passed); model (it "
                                 "attends through your kv_cache_step, whose check has not passed)")
    _students_09(tmp_path, right, right)  # the same notebook, right: every part the student's
    parts = from_sibling(BUILD.name, ["SmallGPT", "kv_cache_step"], folder=tmp_path)
    own |= {"kv_cache_step": parts["kv_cache_step"], "model": parts["SmallGPT"]}
    sampler = assemble_sampler(own, {p: check(own[p]) for p, check in checks.items()}, trained)
    assert sampler.summary() == "all parts yours: cache step, model, sampler"
    assert isinstance(sampler.model, parts["SmallGPT"])


def test_a_wrong_loss_in_the_students_09_is_what_notebook_10s_capstone_names(tmp_path):
    right = "logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1)"
    _students_09(tmp_path, "logits.reshape(-1, logits.shape[-1]), tokens.reshape(-1)", right)  # no shift
    parts = from_sibling(BUILD.name, ["SmallGPT", "next_token_loss"], folder=tmp_path)
    assert parts.found == ["SmallGPT", "next_token_loss"] and not parts.failed
    train = namespace("train_gpt")  # notebook 10's own parts, all right
    given = {"model": parts["SmallGPT"], "next_token_loss": parts["next_token_loss"]} | {p: train[p] for p in TRAIN}
    checks = {"model": check_gpt_forward, "next_token_loss": check_next_token_loss} | TRAIN
    capstone = assemble(given, {p: check(given[p]) for p, check in checks.items()}, TINY)
    assert capstone.summary() == ("yours: model, AdamW, schedule, clipping, loop, evaluation; "
                                  "the course's: loss (its check has not passed)")
