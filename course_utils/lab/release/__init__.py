"""What students get: the student version of the notebooks (``release``, ``solutions``, ``leaks``),
their own copy of the course and its updates (``workspace``), and the nbgrader / otter-grader exports
(``export``). Nothing here imports the grader (``grading/``, where ``course-lab progress`` lives)."""
