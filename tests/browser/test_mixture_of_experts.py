"""Notebook 07's usage widget in a real browser (JupyterLab + headless Chromium, the fixtures of
tests/test_browser.py): choosing E, k, alpha and typing a capacity factor updates the readout, whose
per-expert loads and drops must equal an oracle computed here (the same seeded run retrained in
this process, routed by the library, and the capacity from its formula), and the figure is redrawn."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import pytest

from browser.session import (
    open_widget,
    assert_figures_not_blank,
    choose_option,
    figure_png,
    screenshot,
    type_slider_value,
    wait_for_new_figure,
    wait_for_readout,
)

pytestmark = pytest.mark.timeout(600)

NOTEBOOK = "07_mixture_of_experts.ipynb"
PROBE_TOKENS = 512  # the notebook's probe batch


def parse_usage(text: str) -> dict:
    """The numbers in the readout: the choice, the capacity, and (load, dropped) per expert."""
    head = re.search(r"E = (\d+), k = (\d+), alpha = ([\d.]+), capacity factor = ([\d.]+)", text)
    capacity = re.search(r"capacity: (\d+) assignments per expert", text)
    experts = re.findall(r"expert (\d+): load (\d+), dropped (\d+)", text)
    total = re.search(r"dropped: (\d+) of (\d+) assignments", text)
    assert head and capacity and experts and total, f"unexpected readout:\n{text}"
    assert "nan" not in text.lower(), text
    return {"E": int(head[1]), "k": int(head[2]), "alpha": float(head[3]), "cf": float(head[4]),
            "capacity": int(capacity[1]), "load": [int(load) for _, load, _ in experts],
            "dropped": [int(d) for _, _, d in experts], "total_dropped": int(total[1]), "assignments": int(total[2])}


def oracle(E: int, k: int, alpha: float, cf: float) -> dict:
    """The same run as the notebook's grid entry, retrained here, then routed under the capacity factor."""
    from course_utils.moe import experiment as moe_experiment

    cfg = replace(moe_experiment.ExperimentConfig(), steps=60, batch=128, n_experts=E, k=k, alpha=alpha)
    run = moe_experiment.train_moe(cfg, "aux" if alpha > 0 else "none", seed=0)
    x, _ = moe_experiment.probe_batch(cfg, PROBE_TOKENS, seed=0)
    report = moe_experiment.capacity_report(run.model, x, cf)
    return {"load": report["load"].tolist(), "dropped": report["dropped"].tolist()}


def check_against_oracle(state: dict) -> None:
    E, k, cf = state["E"], state["k"], state["cf"]
    assert state["capacity"] == math.ceil(cf * PROBE_TOKENS * k / E), state
    assert len(state["load"]) == E and sum(state["load"]) == state["assignments"] == PROBE_TOKENS * k, state
    assert state["dropped"] == [max(load - state["capacity"], 0) for load in state["load"]], state
    assert sum(state["dropped"]) == state["total_dropped"], state
    expected = oracle(E, k, state["alpha"], cf)
    assert (state["load"], state["dropped"]) == (expected["load"], expected["dropped"]), (state, expected)


@pytest.mark.browser
def test_usage_widget_follows_e_k_alpha_and_capacity(browser):
    page, root, readout = open_widget(browser, NOTEBOOK, ".course-moe-usage")
    assert_figures_not_blank(page, root, "moe-initial")
    first = parse_usage(wait_for_readout(readout, lambda t: "capacity factor" in t, "the initial readout"))
    check_against_oracle(first)
    before = figure_png(root)

    choose_option(root.locator(".course-moe-experts select"), r"^4$")
    wait_for_readout(readout, lambda t: "E = 4," in t, "E = 4 after choosing it")
    choose_option(root.locator(".course-moe-k select"), r"^1$")
    state = parse_usage(wait_for_readout(readout, lambda t: "E = 4, k = 1," in t, "E = 4, k = 1"))
    check_against_oracle(state)
    before = wait_for_new_figure(root, before, "choosing E = 4 and k = 1")

    type_slider_value(page, root.locator(".course-moe-capacity"), "0.5")
    state = parse_usage(wait_for_readout(readout, lambda t: "capacity factor = 0.50" in t, "capacity factor 0.50"))
    check_against_oracle(state)
    assert state["total_dropped"] > 0, f"at capacity factor 0.5 some assignments must overflow: {state}"
    before = wait_for_new_figure(root, before, "typing capacity factor 0.5")

    choose_option(root.locator(".course-moe-alpha select"), r"^0\.1$")
    state = parse_usage(wait_for_readout(readout, lambda t: "alpha = 0.1," in t, "alpha = 0.1"))
    check_against_oracle(state)
    wait_for_new_figure(root, before, "choosing alpha = 0.1")
    screenshot(page, "moe-usage")
    assert_figures_not_blank(page, root, "moe-after")
    browser.assert_offline()
