"""Developer tools of the course (not shipped to students): ``tools.mutation`` tests the checks."""
