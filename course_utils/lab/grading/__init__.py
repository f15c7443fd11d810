"""Grading a folder of submissions: finding and reading them (``submissions``, ``bounded``), the
sandboxed kernels (``sandbox``, ``bwrap``, ``cgroups``, ``boot``, ``kernel``, ``cells``), the calls into
them (``probe``, ``kernel_code``), the judging (``plan``, ``grade``, ``hidden``, ``uses_reference``),
the worker processes (``pool``, ``worker``, ``folder``, ``journal``), what comes out (``feedback``,
``gradebook``, ``student_text``, ``totals``, ``class_report``), and a student's own public checks (``standing``,
``verdict_cache``: ``course-lab progress``)."""
