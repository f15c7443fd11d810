"""Notebook 06's sparsity explorer in a real browser (JupyterLab + headless Chromium).

Reuses the shared server and browser fixtures of tests/test_browser.py. The oracle is the library:
the same seeded sweep of 5-features-in-2-dimensions toy models, trained here, read with
``toy_models.feature_norms`` and ``feature_dimensionality``.
"""

from __future__ import annotations

import re

import pytest
import torch

from course_utils.superposition import toy_models
from browser.session import (
    open_widget,
    assert_figures_not_blank,
    assert_output_images_not_blank,
    figure_png,
    screenshot,
    wait_for_new_figure,
    wait_for_readout,
    wait_kernel_idle,
)

pytestmark = pytest.mark.timeout(600)

NOTEBOOK = "06_mlp_superposition.ipynb"
FIVE_SPARSITY = (1 - torch.logspace(0, -2, 12)).tolist()  # as in the notebook's cell


@pytest.fixture(scope="module")
def oracle():
    model, _ = toy_models.train_sweep(5, 2, FIVE_SPARSITY, steps=2_000, batch_size=1_024, seed=0)  # the notebook's
    W = model.W.detach()
    return toy_models.feature_norms(W), toy_models.feature_dimensionality(W)


def _parse(text: str) -> tuple[float, int, list[float]]:
    sparsity = float(re.search(r"sparsity S = ([\d.]+)", text).group(1))
    kept = int(re.search(r"> 0\.5: (\d+) of 5", text).group(1))
    dims = [float(v) for v in re.search(r"D_i: ([\d., ]+)", text).group(1).split(",")]
    return sparsity, kept, dims


def _assert_matches(text: str, index: int, oracle) -> None:
    norms, dims = oracle
    sparsity, kept, shown = _parse(text)
    assert sparsity == pytest.approx(FIVE_SPARSITY[index], abs=5e-4), text
    assert kept == int((norms[index] > 0.5).sum()), text
    assert shown == pytest.approx(dims[index].tolist(), abs=0.011), text


@pytest.mark.browser
def test_sparsity_explorer_redraws_from_the_trained_instances(browser, oracle):
    page, root, readout = open_widget(browser, NOTEBOOK, ".course-sparsity")
    assert_figures_not_blank(page, root, "sparsity-initial")
    text = wait_for_readout(readout, lambda t: "sparsity S = 0.990" in t, "the sparsest instance at start")
    _assert_matches(text, len(FIVE_SPARSITY) - 1, oracle)
    before = figure_png(root)

    handle = root.locator(".course-sparsity-slider .noUi-handle")
    handle.focus()
    handle.press("Home")
    text = wait_for_readout(readout, lambda t: "sparsity S = 0.000" in t, "the dense instance after Home")
    _assert_matches(text, 0, oracle)
    before = wait_for_new_figure(root, before, "moving to the dense instance")
    for _ in range(4):
        handle.press("ArrowRight")
    wanted = f"sparsity S = {FIVE_SPARSITY[4]:.3f}"
    text = wait_for_readout(readout, lambda t: wanted in t, f"'{wanted}' after four ArrowRight presses")
    wait_kernel_idle(page)
    _assert_matches(text, 4, oracle)
    wait_for_new_figure(root, before, "four steps to the right")
    screenshot(page, "sparsity-explorer")
    assert_figures_not_blank(page, root, "sparsity-after")
    assert_output_images_not_blank(page, "notebook 06")
    browser.assert_offline()
