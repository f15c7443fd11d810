"""Notebook 08's parameter counter off the browser: its sliders are log-scaled, so each handle starts where its
value sits on a log axis (GPT-2 small's d_model = 768 near the middle of 64..16,384, not at the far left), and
the stops they offer (``log_stops``). The browser side is tests/browser/test_parameter_counting.py."""

import math

import ipywidgets as widgets
import pytest

from course_utils.viz.parameter_counting import SLIDERS, START, counter_widget, log_stops


def test_log_stops_worked_examples():
    assert log_stops(1, 16) == [1, 2, 3, 4, 6, 8, 12, 16]
    assert log_stops(64, 200) == [64, 96, 128, 192]
    assert log_stops(256, 1024, real=[1000]) == [256, 384, 512, 768, 1000]  # 1000 is nearest 1024
    assert log_stops(256, 65536, real=[50257])[-3:] == [32768, 50257, 65536]  # and 50257 nearest 49152


@pytest.mark.parametrize(("args", "word"), [((0, 8), "low"), ((8, 8), "high"), ((1.0, 8), "low"),
                                            ((1, 8, [9]), "real"), ((1, 64, [40, 50]), "share")])
def test_log_stops_bad_input_names_it(args, word):
    with pytest.raises(ValueError, match=word):
        log_stops(*args)


def test_each_handle_starts_where_its_value_sits_on_a_log_axis():
    box = counter_widget()
    sliders = {c.description: c for c in box.children[1].children[0].children + box.children[1].children[1].children}
    assert {field: s.value for field, s in sliders.items()} == START
    for field, slider in sliders.items():
        assert isinstance(slider, widgets.SelectionSlider)
        values = [v for _, v in slider.options]
        place = slider.index / (len(values) - 1)  # where the handle is drawn, 0 = far left
        if field != "experts_per_token":  # 1..8: every value, a linear slider
            log_place = math.log(slider.value / values[0]) / math.log(values[-1] / values[0])
            # within 0.06: integer stops from 1 have one stop (no 1.5) in the first doubling, two in every other
            assert place == pytest.approx(log_place, abs=0.06), field
    assert sliders["d_model"].index / (len(sliders["d_model"].options) - 1) == pytest.approx(0.44, abs=0.01)
    assert sliders["d_vocab"].label == "50,257"  # the readout shows the value, with thousands separated


def test_every_stop_is_in_range_and_increasing():
    for field, (stops, start) in SLIDERS.items():
        assert stops == sorted(set(stops)) and start in stops, field
