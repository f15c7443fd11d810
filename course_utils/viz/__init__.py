"""Plots and widgets, kept apart from the maths they draw.

One module per topic; each builds matplotlib figures or ipywidgets containers from library
functions, and widget callbacks only call library functions (no arithmetic in callbacks).
Nothing here runs at import time.
"""
