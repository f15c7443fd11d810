"""Helper package for the *Inside the Transformer* course.

Each module holds the reference code for one concept the notebooks teach; ``checks`` holds the
graded checks, ``viz`` the plots and widgets, ``lab`` the instructor tools (release, grade).
Importing this package does nothing else: no seeding, no device choice, no global settings.
"""

__version__ = "0.1.0"
