# The two commands: `make run` starts SuperDispatch on its embedded defaults, `make test`
# runs the whole suite. Both set up everything on a machine with only python3 and make.
SHELL := /bin/bash
PY := .venv/bin/python
STAMP := .venv/.installed-$(shell sha256sum requirements.txt | cut -c1-12)
ENV_FILE := $(if $(wildcard .env),.env,.env.example)
WITH_ENV := $(PY) -m superdispatch.envfile $(ENV_FILE) --
ADMIN_USER ?= operator
ADMIN_PASSWORD ?= operator-demo

.PHONY: run test lint venv migrate clean

venv: $(STAMP)

$(STAMP): requirements.txt
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	rm -f .venv/.installed-* && touch $@

migrate: venv
	$(WITH_ENV) $(PY) manage.py migrate --no-input -v 0

run: migrate
	@$(WITH_ENV) $(PY) manage.py create_operator --username $(ADMIN_USER) --password $(ADMIN_PASSWORD)
	@echo "admin console: http://127.0.0.1:$${PORT:-8796}/admin/ (login above); API docs: /v1/docs"
	$(WITH_ENV) $(PY) -m honcho -f Procfile start --port $${PORT:-8796}

# The layers (import-linter), the linter and the formatter (ruff) and the type checker (mypy,
# strict on placement and common), before any test runs (docs/testing.md).
lint: venv
	.venv/bin/lint-imports --no-cache
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy

test: lint
	$(PY) -m pytest $(PYTEST_ARGS)

# The demo: the sandbox suite with simulated agents, and SuperDispatch placing their cards,
# on a fresh store under .data/demo each time. Ctrl-C stops everything.
DEMO_PORT := $${PORT:-8796}
DEMO_ENV := $(PY) -m superdispatch.envfile .env.demo --
.PHONY: demo
demo: venv
	rm -rf .data/demo
	$(DEMO_ENV) $(PY) manage.py migrate --no-input -v 0
	@$(DEMO_ENV) $(PY) manage.py create_operator --username $(ADMIN_USER) --password $(ADMIN_PASSWORD)
	@echo "admin console: http://127.0.0.1:$(DEMO_PORT)/admin/ (login above); operator token: demo-operator-token"
	@echo "try: curl -H 'authorization: Bearer demo-operator-token' 'http://127.0.0.1:$(DEMO_PORT)/v1/decisions?limit=5'"
	DEMO_PORT=$(DEMO_PORT) $(DEMO_ENV) $(PY) -m honcho -e /dev/null -f Procfile.demo start --port $(DEMO_PORT)

clean:
	rm -rf .data .pytest_cache
