"""Instructor tools behind the ``course-lab`` command: release (student version), grade, export."""
