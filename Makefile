# The two user-facing commands: `make demo` and `make test`. Both set up a virtualenv first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Fast suite by default; CI passes TEST_ARGS= to also run the tests marked slow.
TEST_ARGS ?= -m "not slow"

.PHONY: setup demo test lint bench clean

$(BIN)/munet: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch is pinned through the constraints file (a CPU wheel); the package accepts a range.
	$(BIN)/pip install --quiet -c constraints.txt -e ".[dev,hf,ray,s3]"
	touch $(BIN)/munet

setup: $(BIN)/munet

demo: setup
	$(BIN)/munet demo

test: setup
	$(BIN)/python -m pytest $(TEST_ARGS)

lint: setup
	$(BIN)/ruff check munet tests benchmarks

clean:
	rm -rf $(VENV) .pytest_cache
