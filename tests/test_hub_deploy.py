"""deploy/first-login.sh without a hub (issue #42): what every student login runs before their server starts.

A login copies the student version built once at install (``course-lab release``) instead of building it; the
copy it hands out is the one the solution notebooks would give, so an installed class switches to the
prebuilt source without a single ``.updated`` file. The script leaves the home and ~/course mode 700 even when
``useradd -m`` made the home 755 and an older login the course folder 755, and the server it starts keeps
umask 077, so what the student saves is theirs alone. Real Linux accounts and the hub: tests/browser/test_hub_class.py.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from course_utils.lab.release.release import release
from course_utils.lab.release.workspace import MANIFEST, update_workspace

pytestmark = pytest.mark.slow  # each test starts course-lab (~4 CPU-s)

ROOT = Path(__file__).resolve().parents[1]
FIRST_LOGIN = ROOT / "deploy" / "first-login.sh"
# the welcome notebook and one with several exercises: enough to compare the two sources
SAMPLE = ("00_welcome.ipynb", "04_masking_softmax_temperature.ipynb")


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("course")
    for name in SAMPLE:
        shutil.copy(ROOT / "notebooks" / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def prebuilt(course, tmp_path_factory) -> Path:
    """The student version built once, as an install builds it (``make release``)."""
    out = tmp_path_factory.mktemp("release") / "student"
    release(course, out)
    return out


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_login_from_the_prebuilt_release_hands_out_what_the_solutions_would(course, prebuilt, tmp_path):
    from_solutions, from_release = tmp_path / "a", tmp_path / "b"
    update_workspace(course, from_solutions)
    report = update_workspace(prebuilt, from_release)
    assert sorted(report.added) == sorted(SAMPLE)
    for name in (*SAMPLE, MANIFEST):
        assert (from_release / name).read_bytes() == (from_solutions / name).read_bytes(), name
    # a class whose copies came from the solutions, now served the release: nothing new beside their work
    again = update_workspace(prebuilt, from_solutions)
    assert sorted(again.kept) == sorted(SAMPLE) and not again.added and not again.updated_beside


def test_a_login_from_the_release_is_a_hash_and_a_copy(prebuilt, tmp_path):
    """`course-lab update` from the version built at install neither builds student versions nor imports torch
    (a login was ~4 CPU-s, half of it importing torch for the checks); a release file edited since it was
    written is built again (and checked for leaks) as a solution notebook would be."""
    code = ("import sys; from course_utils.lab.cli import main; code = main(['update', '--source', sys.argv[1], "
            "'--folder', sys.argv[2]]); print('torch imported:', 'torch' in sys.modules); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code, str(prebuilt), str(tmp_path / "a")], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and "torch imported: False" in done.stdout, done.stdout + done.stderr
    edited = tmp_path / "edited"
    shutil.copytree(prebuilt, edited)
    (edited / SAMPLE[0]).write_text((edited / SAMPLE[0]).read_text().replace("Welcome", "Welcome back", 1))
    done = subprocess.run([sys.executable, "-c", code, str(edited), str(tmp_path / "b")], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and "torch imported: True" in done.stdout, done.stdout + done.stderr


def test_first_login_closes_an_open_home_and_course_and_starts_the_server_with_a_private_umask(prebuilt, tmp_path):
    home = tmp_path / "home"
    update_workspace(prebuilt, home / "course")  # a copy an older first-login.sh made (umask 022) ...
    home.chmod(0o755)  # ... in a home a bare `useradd -m` made on Debian 12
    (home / "course").chmod(0o755)
    (home / "course" / SAMPLE[1]).unlink()  # deleted by the student: this login writes it again
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(home),
           "COURSE_NOTEBOOKS": str(prebuilt), "JUPYTERHUB_USER": "alice"}
    done = subprocess.run([str(FIRST_LOGIN), "sh", "-c", "umask; touch saved.ipynb"], cwd=home, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "0077"  # the command it execs (the server) keeps the umask
    assert _mode(home) == 0o700 and _mode(home / "course") == 0o700
    assert _mode(home / "course" / SAMPLE[1]) == 0o600 and _mode(home / "saved.ipynb") == 0o600
    assert os.access(home / "course" / SAMPLE[0], os.R_OK)  # the student's own copy stays theirs to open
