# pybmq: every day-to-day command. `make install` once, then `make demo` or `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: install generate check-generated schema-check lint test cli-reference bench demo clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip

install: $(PY)
	$(PY) -m pip install -e '.[dev,spark,codegen,otel]'

# Formatted output is cached by content hash in build/codegen-cache/: unchanged code is not reformatted.
generate:
	$(PY) -m pybmq.codegen

check-generated:
	$(PY) -m pybmq.codegen --check

# CI gate: schema/ vs schema/baseline/; wire-breaking changes need an entry in schema/allowed-changes.yaml
schema-check:
	$(VENV)/bin/pybmq schema-check --schema-dir schema

lint:
	$(PY) -m black --check --quiet runtime codegen tests bench
	$(PY) -m ruff check runtime codegen tests bench
	bash .ci/typecheck-tree.sh
	$(PY) -m mypy

# generated/ is checked once, first (a stale tree fails fast with a diff); the env var tells the
# suite's own freshness test that it has already run.
test: check-generated
	PYBMQ_GENERATED_CHECKED=1 $(PY) -m pytest $(PYTEST_ARGS)

cli-reference:
	$(PY) -m pybmq.cli.reference README.md

bench:
	$(PY) -m bench

demo:
	$(PY) -m pybmq.demo

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis build *.egg-info
