# pybmq: every day-to-day command. `make install` once, then `make demo` or `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PYTEST_ARGS ?=
# make test runs the suite on this many pytest-xdist workers (most tests wait on sockets and
# timers, so more workers than cores pays); the Spark tests share one of them (--dist loadgroup),
# and the few that need the machine to themselves run after, alone (ALONE in tests/conftest.py).
TEST_WORKERS ?= 4

.PHONY: install generate check-generated schema-check lint test cli-reference api-reference drawings bench demo \
	clean docs docs-serve dist pythons pythons-ci cluster-soak tls-round-trips \
	it-upstream-deps it-upstream it-upstream-baseline it-upstream-compare it-upstream-single \
	it-upstream-cluster it-upstream-ci

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

install: $(PY)
	$(PY) -m pip install --quiet -e '.[dev,spark,codegen,otel,faststream,docs]'

# Formatted output is cached by content hash in build/codegen-cache/: unchanged code is not reformatted.
generate:
	$(PY) -m pybmq.codegen

check-generated:
	$(PY) -m pybmq.codegen --check

# CI gate: schema/ vs schema/baseline/; wire-breaking changes need an entry in schema/allowed-changes.yaml
schema-check:
	$(VENV)/bin/pybmq schema-check --schema-dir schema

lint:
	$(PY) -m black --check --quiet runtime codegen tests bench upstream_it noxfile.py
	$(PY) -m ruff check runtime codegen tests bench upstream_it noxfile.py
	bash .ci/typecheck-tree.sh
	$(PY) -m mypy

# generated/ is checked once, first (a stale tree fails fast with a diff); the env var tells the
# suite's own freshness test that it has already run.
test: check-generated
	PYBMQ_GENERATED_CHECKED=1 $(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS); \
	  parallel=$$?; PYBMQ_GENERATED_CHECKED=1 $(PY) -m pytest --alone $(PYTEST_ARGS) && exit $$parallel

# The cluster soak: failover under load with every producer/consumer placement on both
# consistency levels, three primary kills each (a real broker build: BMQ_BROKER_BIN). `make test`
# runs a two-run subset of it.
cluster-soak:
	@test -n "$$BMQ_BROKER_BIN" || { echo "cluster-soak: set BMQ_BROKER_BIN to a broker build" >&2; exit 2; }
	PYBMQ_CLUSTER_SOAK=1 $(PY) -m pytest tests/cluster/test_failover.py -s $(PYTEST_ARGS)

# Every TLS test, each surface (client, compat, post/consume/admin/tap, Spark) moving 1,000
# messages over TLS; against a TLS-capable broker build too when BMQ_BROKER_TLS_BIN names one.
# `make test` runs them with 1,000 messages through the asyncio client and fewer elsewhere.
tls-round-trips:
	PYBMQ_TLS_ROUND_TRIPS=1 $(PY) -m pytest -m tls $(PYTEST_ARGS)

# Upstream BlazingMQ's own integration suite, with `pybmq tool` as its client (the suite is not in
# this repository: IT_SUITE is a checkout of its src/python and src/integration-tests, by default
# the one beside the clone; IT_BROKER a broker build; IT_BMQTOOL upstream's bmqtool, the baseline).
# Results (JUnit, JSON, Markdown per test and topology) go to IT_OUT. See docs/guide/cli.md.
IT_SUITE   ?= ../shared/upstream/blazingmq/integration-tests
IT_BROKER  ?= $(or $(BMQ_BROKER_BIN),../shared/broker/bmqbrkr)
IT_BMQTOOL ?= ../shared/broker/bmqtool
IT_SELECT  ?= legacy_mode and single
IT_KEYWORD ?=
IT_JOBS    ?= 2
IT_OUT     ?= build/it-upstream
IT_RUN = $(PY) -m upstream_it run --suite "$(IT_SUITE)" --broker "$(IT_BROKER)" \
	--jobs $(IT_JOBS) --out $(IT_OUT)
# CI's subset: single node, eventual consistency, the client's paths (priority, fan-out and
# broadcast delivery, redelivery, list and confirm, compression, subscriptions and the expressions
# the SDKs refuse, app subscriptions, a close while disconnected, a broker restart, authentication):
# 19 tests, about a minute and a half on 2 cores.
IT_CI_KEYWORD ?= (eventual_consistency or not consistency) and (test_verify_priority \
	or test_verify_fanout or test_verify_broadcast or test_wrong_domain or test_list_messages \
	or test_compression_restart or test_close_queue or test_incorrect_expressions \
	or test_empty_expression or test_complex_expressions or test_create_authorize_open_post \
	or test_app_subscription_fanout or test_basic)

# The suite's own Python requirements, into this venv (the `it-upstream` extra).
it-upstream-deps:
	$(PY) -m pip install --quiet -e '.[it-upstream]'

# IT_SELECT (pytest -m) and IT_KEYWORD (-k) with pybmq tool as the client.
it-upstream: it-upstream-deps
	$(IT_RUN) --client pybmq --select "$(IT_SELECT)" --keyword "$(IT_KEYWORD)" --label pybmq \
		--report-only

# The same selection with upstream's bmqtool, then both side by side.
it-upstream-baseline: it-upstream-deps
	$(IT_RUN) --client bmqtool --tool "$(IT_BMQTOOL)" --select "$(IT_SELECT)" \
		--keyword "$(IT_KEYWORD)" --label bmqtool --report-only

it-upstream-compare:
	$(PY) -m upstream_it compare $(IT_OUT)/pybmq.json $(IT_OUT)/bmqtool.json

# The full single-node and cluster presets with both clients (IT_KEYWORD narrows them); the
# side-by-side counts go to the docs' interop page. Long on 2 cores: about half an hour per client
# for the single node, hours per client for the cluster.
it-upstream-single: it-upstream-deps
	$(IT_RUN) --client pybmq --select "legacy_mode and single" --keyword "$(IT_KEYWORD)" \
		--label pybmq-single --report-only
	$(IT_RUN) --client bmqtool --tool "$(IT_BMQTOOL)" --select "legacy_mode and single" \
		--keyword "$(IT_KEYWORD)" \
		--label bmqtool-single --report-only
	$(PY) -m upstream_it compare $(IT_OUT)/pybmq-single.json $(IT_OUT)/bmqtool-single.json \
		--page docs/interop.md --block it-upstream-single

it-upstream-cluster: it-upstream-deps
	$(IT_RUN) --client pybmq --select "legacy_mode and multi" --keyword "$(IT_KEYWORD)" \
		--label pybmq-cluster --report-only
	$(IT_RUN) --client bmqtool --tool "$(IT_BMQTOOL)" --select "legacy_mode and multi" \
		--keyword "$(IT_KEYWORD)" \
		--label bmqtool-cluster --report-only
	$(PY) -m upstream_it compare $(IT_OUT)/pybmq-cluster.json $(IT_OUT)/bmqtool-cluster.json \
		--page docs/interop.md --block it-upstream-cluster

# What CI runs when a broker build sits beside the clone: the subset, every test must pass.
it-upstream-ci: it-upstream-deps
	$(IT_RUN) --client pybmq --select "legacy_mode and single" --keyword "$(IT_CI_KEYWORD)" \
		--label pybmq-ci

cli-reference:
	$(PY) -m pybmq.cli.reference docs/reference/cli.md

# The API reference (docs/reference/api.md and modules.md), from every module's __all__; a test
# fails when it is not current.
api-reference:
	$(PY) -m pybmq.cli.apidocs

# The state diagrams (docs/states.md) and the engine's parts (docs/architecture.md), drawn from
# the code; a test fails when they are not current.
drawings:
	$(PY) -m pybmq.cli.drawings

# Also writes build/bench/results.json and renders the docs' Performance page from it.
bench:
	$(PY) -m bench --json build/bench/results.json
	$(PY) -m bench.results build/bench/results.json docs/guide/performance.md

# The site, into build/site; strict: any warning (a broken link, a name without a page) fails.
# mkdocstrings reads the package from the import tree the type check lays out.
docs:
	bash .ci/typecheck-tree.sh
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

docs-serve:
	bash .ci/typecheck-tree.sh
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs serve

# The sdist and wheel, into $(DIST), checked as the package index would. Quiet: the build's own
# log goes to build/dist.log and is shown only when the build fails.
DIST ?= dist
dist:
	@echo "make dist: the sdist and wheel into $(DIST)/ (the build's log: build/dist.log)"
	@rm -rf $(DIST) && mkdir -p build
	@$(PY) -m build --outdir $(DIST) . > build/dist.log 2>&1 || { cat build/dist.log; exit 1; }
	@$(PY) -m twine check --strict $(DIST)/*

# The suite on every CPython 3.10-3.13 on PATH (pyenv shims); see noxfile.py.
pythons:
	TEST_WORKERS=$(TEST_WORKERS) $(PY) -m nox --no-error-on-missing-interpreters

# What CI runs on the oldest and the newest other CPython: the protocol core (wire codecs, code
# generation, the client and simulator engines, their state machines and fuzzing) and the asyncio
# client and compat over sockets, where a Python version's asyncio or threads can differ.
PYTHONS_CI_TESTS ?= tests/wire tests/codegen tests/fuzz tests/test_architecture.py \
	tests/test_architecture_paths.py tests/test_boundaries.py tests/test_statemachine.py \
	tests/test_printable.py tests/test_loopthread.py tests/test_layout_source.py \
	tests/client/test_client_engine.py tests/client/test_client_engine_reconnect.py \
	tests/client/test_dedup_engine.py tests/client/test_client_e2e.py \
	tests/sim/test_sim_engine.py tests/compat/test_compat.py
pythons-ci:
	PYBMQ_PYTHONS="3.10 3.13" TEST_WORKERS=$(TEST_WORKERS) $(PY) -m nox \
		--no-error-on-missing-interpreters -- $(PYTHONS_CI_TESTS)

demo:
	$(PY) -m pybmq.demo

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis build dist .nox *.egg-info
