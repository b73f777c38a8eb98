# Mnemo: the single entry point. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

LOCAL := $(CURDIR)/.local
UV_VERSION := 0.13.8
UV := $(LOCAL)/tools/bin/uv
export UV_CACHE_DIR := $(LOCAL)/uv-cache
export UV_PYTHON_DOWNLOADS := never
RUN := $(UV) run --frozen

export MNEMO_PG_PORT ?= 25432
export MNEMO_KAFKA_PORT ?= 29092
export MNEMO_KAFKA_CONTROLLER_PORT ?= 29093
# The legacy shared application role: tests and benchmarks only, no service connects as it (each
# service has its own role below).
export MNEMO_DATABASE_URL ?= postgresql://mnemo_app:mnemo_app@127.0.0.1:$(MNEMO_PG_PORT)/mnemo
export MNEMO_OWNER_DATABASE_URL ?= postgresql://mnemo_owner:mnemo_owner@127.0.0.1:$(MNEMO_PG_PORT)/mnemo
export MNEMO_RELAY_DATABASE_URL ?= postgresql://mnemo_relay:mnemo_relay@127.0.0.1:$(MNEMO_PG_PORT)/mnemo
export MNEMO_INGEST_DATABASE_URL ?= postgresql://mnemo_ingest:mnemo_ingest@127.0.0.1:$(MNEMO_PG_PORT)/mnemo
export MNEMO_CLASSIFIER_DATABASE_URL ?= postgresql://mnemo_classifier:mnemo_classifier@127.0.0.1:$(MNEMO_PG_PORT)/mnemo
export MNEMO_NAVIGATOR_DATABASE_URL ?= postgresql://mnemo_navigator:mnemo_navigator@127.0.0.1:$(MNEMO_PG_PORT)/mnemo
export MNEMO_AUDIT_DATABASE_URL ?= postgresql://mnemo_audit:mnemo_audit@127.0.0.1:$(MNEMO_PG_PORT)/mnemo
# Tests only: the local cluster's superuser over its socket (in the data directory `make up`
# records), to create and drop a database of a test's own (a tenant imported into another one).
export MNEMO_SUPERUSER_DATABASE_URL ?= postgresql://postgres@/postgres?host=$(shell cat $(LOCAL)/run/postgres.datadir 2>/dev/null)&port=$(MNEMO_PG_PORT)
export MNEMO_KAFKA_BOOTSTRAP ?= 127.0.0.1:$(MNEMO_KAFKA_PORT)
# Local development mode: token-verifying services without a key use the public development key
# (anywhere else they refuse to start; see libs/service).
export MNEMO_DEVELOPMENT ?= 1

PYTEST := $(RUN) pytest -p no:cacheprovider

.PHONY: help install up down status migrate lint typecheck test check run bench

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

$(UV):
	@echo "install: bootstrapping uv $(UV_VERSION) into .local/tools"
	@python3 -m venv $(LOCAL)/tools
	@$(LOCAL)/tools/bin/pip install -q "uv==$(UV_VERSION)"

install: $(UV) ## install the Python workspace (uv, one lock file) into .venv
	@$(UV) sync --frozen --all-packages --quiet
	@echo "install: workspace ready in .venv"

up: install ## start PostgreSQL, Kafka and the four services locally (idempotent), apply the migrations
	@bash deploy/local/stack.sh up
	@$(MAKE) --no-print-directory migrate
	@bash deploy/local/services.sh up

migrate: install ## apply the database migrations (Alembic, as the owner role); a failure is one line, exit 1
	@out=$$(PGCONNECT_TIMEOUT=$${MNEMO_CONNECT_TIMEOUT:-10} $(RUN) alembic -c migrations/alembic.ini upgrade heads 2>&1); \
	if [ $$? -ne 0 ]; then \
	  why=$$(printf '%s\n' "$$out" | grep -E '^[A-Za-z_.]*(Error|Exception)(: |$$)' | tail -n 1 | sed -E 's/^[^:]*: //; s/^\([A-Za-z_.]*\) //'); \
	  [ -n "$$why" ] || why=$$(printf '%s\n' "$$out" | grep -v '^[[:space:]]*$$' | tail -n 1); \
	  echo "migrate: failed: $$why" >&2; exit 1; \
	fi; \
	printf '%s\n' "$$out" | sed -n 's/^INFO  \[alembic.runtime.migration\] Running /migrate: running /p'
	@echo "migrate: at revision $$($(RUN) alembic -c migrations/alembic.ini current 2>/dev/null | sed 's/ (head)//' | paste -sd, - | sed 's/,/, /g')"

ops: ## start Jaeger (OTLP 4317/4318, query API 16686) and Prometheus (29090) for the local services
	@bash deploy/local/ops.sh up

ops-test: ops ## live checks of Jaeger and Prometheus (tests marked ops)
	$(PYTEST) -m ops -q

down: ## stop exactly the processes `make up` started
	@bash deploy/local/services.sh down
	@bash deploy/local/stack.sh down

status: install ## say which local services are up, on which ports
	@$(RUN) mnemo dev status

lint: install ## ruff check, ruff format --check, import-linter contracts, declared dependencies (deptry)
	$(RUN) ruff check .
	$(RUN) ruff format --check .
	$(RUN) lint-imports
	@for project in $(wildcard libs/*/pyproject.toml services/*/pyproject.toml cli/pyproject.toml); do \
	  member=$$(dirname $$project); \
	  out=$$($(RUN) deptry $$member/src --config $$project --no-ansi 2>&1) || { \
	    printf '%s\n' "$$out" | grep -E 'DEP[0-9]'; \
	    echo "lint: $$member's pyproject.toml must declare every package its src imports, and nothing else" >&2; exit 1; }; \
	done; echo "deptry: every workspace member declares exactly what it imports"

# bench/ is a folder of scripts, not a package: MYPYPATH=bench lets them import one another.
typecheck: install ## mypy --strict over every package, the tests and the bench scripts
	MYPYPATH=bench $(RUN) mypy libs/*/src services/*/src cli/src tests bench

test: up ops tools ## start what the tests need (stack, services, Jaeger, Prometheus, helm, promtool), then every tier (unit, integration, e2e, ops)
	$(PYTEST) -m unit -q
	$(PYTEST) -m integration -q
	$(PYTEST) -m e2e -q
	$(PYTEST) -m ops -q

tools: ## build helm (from its Go module), install promtool (Debian's prometheus) and chromium (the console's browser test) once
	@bash deploy/local/tools.sh all

helm-check: install ## helm lint, render (default + every helm/mnemo/ci values file), validate offline, schema refusals, promtool rule tests
	@bash deploy/local/helm-check.sh

kafka-secure: up ## a second, private Kafka broker (127.0.0.1:29192): SASL_SSL, SCRAM users per service with ACLs; stop it with `bash deploy/local/kafka-secure.sh down`
	@bash deploy/local/kafka-secure.sh up

test-chaos: up ## fault injection (tests marked chaos): kills, SIGTERM, poison, Kafka and Postgres restarts on a private stack; run alone, after the other tiers
	$(PYTEST) -m chaos -q

check: helm-check lint typecheck test test-chaos compose-test ## lint + typecheck + test + test-chaos + compose-test (what CI runs)

run: up ## bring up the stack and show what it can do so far
	@bash deploy/local/demo.sh

bench: up ## run the benchmarks under bench/ (prints tables, writes bench/results/*.json)
	@for b in bench/*_bench.py; do echo "== $$b"; $(RUN) python $$b || exit 1; done

image: ## build the Mnemo image with podman on a Debian base made here (deploy/container/engine.sh; cached in .local/container)
	@bash deploy/container/engine.sh image

compose-test: install ## docker-compose.yml up under podman on host networking (ports 35432, 39092, 38080-38083, 36686, 39090), end-to-end checks, torn down; needs `make up` once (Kafka's jars)
	@bash deploy/container/compose-test.sh

.PHONY: ops ops-test tools helm-check kafka-secure test-chaos image compose-test
