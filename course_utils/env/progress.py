"""Progress bars that read right in a stored notebook.

``progress_bar`` is ``tqdm.auto.tqdm`` (a widget in Jupyter, text in a terminal) with one change in
Jupyter: the text a notebook stores beside the widget, which is all that an HTML export, nbviewer,
GitHub or a not-yet-run JupyterLab cell can show, names the work ("toy models: 1,000 steps") instead
of tqdm's first frame ("0%|          | 0/1000"), which made a finished run look as if it never
started. The bar stays on screen when done (``leave=True``), so JupyterLab shows it full.
"""

from __future__ import annotations

from collections.abc import Iterable

from tqdm.auto import tqdm

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _size(iterable, total) -> int | None:
    if total is not None:
        return int(total)
    try:
        return len(iterable)
    except TypeError:
        return None


def stored_text(desc: str, size: int | None, unit: str) -> str:
    """What a notebook shows for the bar without a kernel: ``stored_text("training", 800, "step")``
    -> ``"training: 800 steps (a progress bar while the cell runs)"``."""
    amount = f"{size:,} {unit}{'' if size == 1 else 's'}" if size is not None else f"{unit}s"
    return f"{desc}: {amount} (a progress bar while the cell runs)"


def progress_bar(
    iterable: Iterable | None = None,
    *,
    desc: str,
    total: int | None = None,
    unit: str = "step",
    disable: bool = False,
    **tqdm_kwargs,
):
    """A tqdm bar over ``iterable`` (or ``total`` steps updated by hand); see the module docstring."""
    if not isinstance(desc, str) or not desc:
        raise TypeError(f"desc must be a non-empty str naming the work, got {desc!r}")
    if total is not None and (isinstance(total, bool) or not isinstance(total, int) or total < 0):
        raise ValueError(f"total must be a non-negative int, got {total!r}")
    kwargs = dict(desc=desc, total=total, unit=unit, disable=disable, leave=True, **tqdm_kwargs)
    from tqdm.notebook import tqdm as notebook_tqdm

    if disable or not issubclass(tqdm, notebook_tqdm):
        return tqdm(iterable, **kwargs)
    bar = tqdm(iterable, display=False, **kwargs)
    from IPython.display import display

    view = {"version_major": 2, "version_minor": 0, "model_id": bar.container.model_id}
    display({WIDGET_VIEW: view, "text/plain": stored_text(desc, _size(iterable, total), unit)}, raw=True)
    bar.displayed = True
    return bar
