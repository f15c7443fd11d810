"""The widget frame every course widget is built on (``course_utils.viz.scaffold``): the output areas
carry the classes the browser tests look for, and ``live_widget`` draws once, redraws on every
control's change (and only on its ``value``), always inside the shared redraw lock."""

import threading

import ipywidgets as widgets

from course_utils.viz.drawing import redraw_lock
from course_utils.viz.scaffold import figure_area, live_widget, readout_area


def _lock_is_held_by_this_thread() -> bool:
    """True when another thread cannot take the redraw lock right now."""
    taken = []

    def try_lock():
        got = redraw_lock().acquire(blocking=False)
        taken.append(got)
        if got:
            redraw_lock().release()

    other = threading.Thread(target=try_lock)
    other.start()
    other.join()
    return not taken[0]


def test_output_areas_are_empty_and_carry_the_contract_classes():
    readout, figure = readout_area(), figure_area()
    assert isinstance(readout, widgets.HTML) and readout.value == "" and "course-readout" in readout._dom_classes
    assert isinstance(figure, widgets.Output) and not figure.outputs and "course-figure" in figure._dom_classes


def test_live_widget_draws_once_then_on_every_value_change_inside_the_lock():
    slider, box_text = widgets.IntSlider(value=1), widgets.Text(value="a")
    readout = readout_area()
    calls = []

    def redraw():
        calls.append((slider.value, box_text.value, _lock_is_held_by_this_thread()))
        readout.value = f"{slider.value} {box_text.value}"

    box = live_widget([slider, widgets.HBox([box_text]), readout], "course-test", [slider, box_text], redraw)
    assert isinstance(box, widgets.VBox) and box._dom_classes == ("course-test",)
    assert box.children[0] is slider and box.children[2] is readout
    assert calls == [(1, "a", True)] and readout.value == "1 a"
    slider.value = 5
    box_text.value = "b"
    assert calls == [(1, "a", True), (5, "a", True), (5, "b", True)] and readout.value == "5 b"
    slider.description = "not a value"  # only a control's value redraws
    assert len(calls) == 3
    assert not _lock_is_held_by_this_thread()  # released after every redraw


def test_a_preset_callback_can_hold_the_lock_and_redraw_itself():
    """The mask editor's preset sets many toggles under the lock, then redraws once (re-entrant lock)."""
    toggles = [widgets.ToggleButton(value=False) for _ in range(3)]
    busy, calls = {"on": False}, []

    def redraw():
        if not busy["on"]:
            calls.append([t.value for t in toggles])

    live_widget(toggles, "course-test", toggles, redraw)
    with redraw_lock():
        busy["on"] = True
        for t in toggles:
            t.value = True
        busy["on"] = False
        redraw()
    assert calls == [[False, False, False], [True, True, True]]


def test_human_count_labels_read_at_a_glance():
    from course_utils.viz.drawing import human_count

    assert [human_count(v) for v in (0, 512, 1_000, 56_669_184, 2.5e8, 1.75e11, 3e12, -2e6)] == [
        "0", "512", "1K", "56.7M", "250M", "175B", "3T", "-2M"
    ]
