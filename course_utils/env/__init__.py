"""The machine, not the maths: device, environment report, threads, progress bars, the notebook runner.

Modules:

- ``device``: choosing a device, seeding
- ``check``: the welcome notebook's environment report
- ``threads``: torch's CPU threads
- ``progress``: progress bars that read right when stored
- ``notebook_run``: running a notebook headless
- ``sibling``: the definitions a student wrote in another notebook, carried into this one

Their public names are importable from the package itself (``from course_utils.env import ...``),
loaded when first used (lazy_loader), so importing the package costs nothing.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "device": ["ENV_VAR", "pick_device", "seed_everything", "describe_device"],
        "check": [
            "MIN_PYTHON", "DATA_PACKAGES", "Check", "check_python", "check_torch", "check_widgets", "check_data",
            "environment_report", "format_report",
        ],
        "threads": ["torch_threads", "threads_for_load"],
        "progress": ["WIDGET_VIEW", "stored_text", "progress_bar"],
        "sibling": ["Sibling", "from_sibling", "run_definitions"],
        "notebook_run": [
            "POLL_SLICE_S", "SlicedChannel", "SlicedKernelClient", "SlicedKernelManager", "CourseNotebookClient",
        ],
    },
)
