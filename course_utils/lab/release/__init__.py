"""What students get: the student version of the notebooks (``release``, ``solutions``, ``leaks``),
their own copy of the course and its updates (``workspace``), where they stand (``standing``), and the
nbgrader / otter-grader exports (``export``)."""
