# make demo / make test are all a newcomer needs; both set up .venv through `make install`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# e2e tests mostly sleep through politeness delays, so more workers than cores pays off
TEST_WORKERS ?= 12
# xdist deals whole files (loadfile) in the collection's order, longest first (tests/costs.py);
# its default reorder by test count would deal the few-test, slow e2e files last
TEST_DIST := --dist loadfile --no-loadscope-reorder

.PHONY: install demo test lint fmt bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: install
	$(BIN)/python -m synapsecrawl.cli.demo

lint: install
	$(BIN)/ruff check synapsecrawl spiders middlewares pipelines tests bench tools
	$(BIN)/ruff format --check synapsecrawl spiders middlewares pipelines tests bench tools
	$(BIN)/mypy
	$(BIN)/lint-imports

# Compiled bytecode is kept (in .venv, not beside the sources) even where PYTHONDONTWRITEBYTECODE is
# set: without it each of the test workers compiled the project and rewrote the asserts of every test
# file again (docs/benchmarks.md, "Figures behind the code's choices").
TEST_ENV := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX="$(CURDIR)/$(VENV)/pycache"

test: install lint
	$(TEST_ENV) PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -q -n $(TEST_WORKERS) $(TEST_DIST) --durations=15

fmt: install
	$(BIN)/ruff check --fix synapsecrawl spiders middlewares pipelines tests bench tools
	$(BIN)/ruff format synapsecrawl spiders middlewares pipelines tests bench tools

clean:
	rm -rf $(VENV) .synapsecrawl build *.egg-info
