"""Mutation testing of the exercise checks (issue #24 point 7): a developer tool, never shipped to students.

``sources`` finds each exercise's solution in ``notebooks/src``, ``operators`` makes mutants of its
solution region, ``run`` checks a mutant as a student's answer, ``generate`` writes the committed
lists ``tests/mutants/<notebook>.json`` (``make mutants``), which ``tests/test_mutants.py`` replays.
"""
