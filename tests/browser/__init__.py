"""Helpers of tests/test_browser.py that need no browser: readout parsers and oracles."""
