"""JupyterHub for a class on one server (The Littlest JupyterHub's layout), serving this course.

Run as root from the hub's state folder:  cd /srv/jupyterhub && jupyterhub -f /opt/course/deploy/jupyterhub_config.py
(/opt/course: this repository, owned by root; its environment and the student version /opt/course/student made
as docs/jupyterhub.md says). Per student:
- a home of their own, mode 700 (a Linux account: PAM logs them in, LocalProcessSpawner runs their server as them);
- on every login, before their server starts, deploy/first-login.sh runs AS THEM: it closes their home to
  others, and `course-lab update` (the command `make lab` runs) copies the student version built at install
  into ~/course the first time, and later only adds new notebooks beside theirs, never overwriting one;
- the course itself (package, notebooks, data/) is read-only to them: root owns /opt/course and the env;
- a server idle for an hour is stopped (jupyterhub-idle-culler), its home kept; each kernel has a memory ceiling;
- a hand-in folder COURSE_HANDIN/<user> (theirs, mode 700, shown as ~/handin) that the instructor grades
  with `course-lab grade /srv/handin --out grades.csv` (docs/jupyterhub.md).
tests/browser/test_jupyterhub.py loads this file and overrides only the authenticator, the spawner and ports
(tests/browser/test_hub_cull.py also sets COURSE_CULL_TIMEOUT).
"""

import os
import pwd
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (JupyterHub's config loader defines get_config)

COURSE = Path(__file__).resolve().parents[1]  # the repository this file is in
HANDIN = Path(os.environ.get("COURSE_HANDIN", "/srv/handin"))
# The student version, built once at install (`make release` writes COURSE/student); a login then only hashes
# and copies. Without it every login builds the student version of every notebook itself.
STUDENT = COURSE / "student" if (COURSE / "student").is_dir() else COURSE / "notebooks"
if STUDENT.name != "student":
    print(f"jupyterhub_config.py: no {COURSE / 'student'} (make release): each first login builds the student "
          "version itself", file=sys.stderr)

# Each student's server: JupyterLab in their home, opening their copy of the welcome notebook.
c.Spawner.cmd = [str(COURSE / "deploy" / "first-login.sh"), "jupyterhub-singleuser"]
c.Spawner.notebook_dir = "~"
c.Spawner.default_url = "/lab/tree/course/00_welcome.ipynb"
c.Spawner.environment = {
    "COURSE_NOTEBOOKS": str(STUDENT),
    "COURSE_HANDIN": str(HANDIN),
    # 100 kernels on one server must not each start a thread per core (torch's default); outputs do not change.
    "OMP_NUM_THREADS": "2",
}
# Memory. Measured (docs/jupyterhub.md): 453 MiB resident per student after the welcome notebook (329 MiB their
# own), 685 MiB for the small GPT's training kernel (then 09, now 10) at its peak. mem_guarantee/mem_limit are
# read only by spawners that can enforce them (systemdspawner, as TLJH uses, and KubeSpawner); LocalProcessSpawner
# ignores them. So every kernel is also started by deploy/jupyter/kernels/python3 (first on JUPYTER_PATH), which
# caps its address space at COURSE_KERNEL_MEMORY_MB: a cell that asks for more gets an error and a note on the
# limit, the kernel lives on.
c.Spawner.mem_guarantee = "512M"
c.Spawner.mem_limit = "2G"
KERNEL_MEMORY_MB = "3072"  # address space, not resident: a kernel with torch imported maps ~1.4 GiB
c.Spawner.environment["JUPYTER_PATH"] = str(COURSE / "deploy" / "jupyter")
c.Spawner.environment["COURSE_KERNEL_MEMORY_MB"] = os.environ.get("COURSE_KERNEL_MEMORY_MB", KERNEL_MEMORY_MB)
# How long the hub waits for a student's server: start_timeout for the spawner to start the process, then
# http_timeout for it to answer (first-login.sh runs inside that). Measured (docs/jupyterhub.md): a first login
# took 27-28 s on this 2-CPU test machine at load ~9 and 35-41 s with both cores also held by busy loops, so
# JupyterHub's default http_timeout of 30 s refused it; 120 s is three times the slowest.
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120


def make_handin_folder(spawner) -> None:
    """COURSE_HANDIN/<user>, owned by the student and closed to the other students (runs in the hub)."""
    folder = HANDIN / spawner.user.name
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        account = pwd.getpwnam(spawner.user.name)
    except KeyError:  # no such Linux account: the test's spawner runs every student as the hub's own user
        return
    os.chown(folder, account.pw_uid, account.pw_gid)


c.Spawner.pre_spawn_hook = make_handin_folder

# configurable-http-proxy where docs/jupyterhub.md installs it (npm --prefix COURSE/.hub, not npm's global prefix).
PROXY = COURSE / ".hub" / "node_modules" / ".bin" / "configurable-http-proxy"
if PROXY.exists():
    c.ConfigurableHTTPProxy.command = [str(PROXY)]

# Who may log in: members of these Linux groups (PAM, the default authenticator). A university usually
# swaps in its single sign-on (oauthenticator) or LTI (ltiauthenticator); nothing else here changes.
c.PAMAuthenticator.allowed_groups = {"course-students"}
c.PAMAuthenticator.admin_groups = {"course-staff"}

# Idle servers are stopped (jupyterhub-idle-culler, run by the hub as a service): an idle student's kernel keeps
# its memory. A server without activity for COURSE_CULL_TIMEOUT seconds (default 3600, as zero-to-jupyterhub's
# cull.timeout) is stopped; the check runs every sixth of that (600 s, as cull.every). Only the server stops: the
# home and every notebook saved stay, and the next login starts a fresh server on them.
CULL_TIMEOUT = int(os.environ.get("COURSE_CULL_TIMEOUT", "3600"))
c.JupyterHub.services.append({
    "name": "idle-culler",
    "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={CULL_TIMEOUT}",
                f"--cull-every={max(5, CULL_TIMEOUT // 6)}"],
})
c.JupyterHub.load_roles.append({
    "name": "idle-culler",
    "services": ["idle-culler"],
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
})
