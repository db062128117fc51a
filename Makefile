# Two commands: `make demo` and `make test`. Both create .venv on first use (idempotent).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench docs clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[test,bench]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

# test_defaults_stochastic.py runs in its own process after the rest: inside an xdist worker that had
# compiled much of the suite, XLA crashed three times this session while compiling or caching its solves.
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist worksteal --durations=25 tests --ignore=tests/test_defaults_stochastic.py
	$(BIN)/python -m pytest -p no:xdist tests/test_defaults_stochastic.py

docs: $(STAMP)
	$(BIN)/python -m pip install -q -e ".[docs]"
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: $(STAMP)
	for f in benchmarks/bench_*.py; do $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info
