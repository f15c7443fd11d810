"""Instructor tools behind the ``course-lab`` command (``cli``): ``release/`` (the student version,
workspace, exports) and ``grading/`` (the sandboxed grader, its gradebook, and ``course-lab progress``,
which runs the grader on a student's own notebooks); shared by both: ``limits`` (every bound and its
default), ``status`` (the statuses) and ``results`` (what grading produces, as data). ``grading/`` may
import ``release/``, never the other way round (``tests/test_layout.py``)."""
