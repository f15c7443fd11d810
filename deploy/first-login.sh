#!/bin/sh
# Runs as the student, before their JupyterLab starts (the hub's Spawner.cmd, the image's singleuser.cmd):
#   first-login.sh jupyterhub-singleuser [ARGS...]
# 1. Their own copy of the course in ~/course, made by the same command as `make lab`: the first time every
#    notebook in its student version; later, new notebooks are added and theirs are NEVER overwritten.
# 2. ~/handin: a link to their hand-in folder (COURSE_HANDIN/<user>, made by the hub), if the hub has one.
# 3. exec the command it was given (the single-user server), if any: also when the update failed (a broken
#    course release), so the student still gets their server and the copy they have.
set -eu
course-lab update --source "${COURSE_NOTEBOOKS:-/opt/course/notebooks}" --folder "$HOME/course" ||
    echo "first-login.sh: course-lab update failed (above); starting with the copy you have" >&2
if [ -n "${COURSE_HANDIN:-}" ] && [ ! -e "$HOME/handin" ] && [ ! -L "$HOME/handin" ]; then
    ln -s "$COURSE_HANDIN/$JUPYTERHUB_USER" "$HOME/handin"
fi
if [ "$#" -gt 0 ]; then
    exec "$@"
fi
