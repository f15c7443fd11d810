#!/bin/sh
# Runs as the student, before their JupyterLab starts (the hub's Spawner.cmd, the image's singleuser.cmd):
#   first-login.sh jupyterhub-singleuser [ARGS...]
# 1. Their home and everything their session writes are theirs alone: the home is made mode 700 (a bare
#    `useradd -m` on Debian 12 leaves it 755, readable by every classmate), and umask 077 (kept by the server
#    it starts) makes every file and folder they write from here on private, ~/course included.
# 2. Their own copy of the course in ~/course, by the same command as `make lab`, from COURSE_NOTEBOOKS: the
#    student version built once at install (`course-lab release --out /opt/course/student`), so a login only
#    compares hashes and copies. The first time every notebook is written; later, new notebooks are added
#    and theirs are NEVER overwritten.
# 3. ~/handin: a link to their hand-in folder (COURSE_HANDIN/<user>, made by the hub), if the hub has one.
# 4. exec the command it was given (the single-user server), if any: also when the update failed (a broken
#    course release), so the student still gets their server and the copy they have.
set -eu
umask 077
chmod 700 "$HOME" || echo "first-login.sh: could not close $HOME to other users (above)" >&2
course-lab update --source "${COURSE_NOTEBOOKS:-/opt/course/student}" --folder "$HOME/course" ||
    echo "first-login.sh: course-lab update failed (above); starting with the copy you have" >&2
if [ -d "$HOME/course" ]; then
    chmod 700 "$HOME/course"  # a copy made before this script set the umask
fi
if [ -n "${COURSE_HANDIN:-}" ] && [ ! -e "$HOME/handin" ] && [ ! -L "$HOME/handin" ]; then
    ln -s "$COURSE_HANDIN/$JUPYTERHUB_USER" "$HOME/handin"
fi
if [ "$#" -gt 0 ]; then
    exec "$@"
fi
