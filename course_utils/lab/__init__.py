"""Instructor tools behind the ``course-lab`` command (``cli``): ``release/`` (the student version,
workspace, standing, exports) and ``grading/`` (the sandboxed grader and its gradebook); shared by
both: ``limits`` (every bound and its default), ``status`` (the statuses) and ``results``."""
