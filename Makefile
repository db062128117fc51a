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

# prints its table and writes build/demo.png (git-ignored; docs/img/demo.png is a copy of one run)
demo: $(STAMP)
	$(BIN)/python examples/demo.py --out build/demo.png

# Every test file runs even when an earlier run fails; scripts/test_summary.py prints one combined
# result from both runs' JUnit reports and sets the exit status. test_defaults_stochastic.py runs in
# its own process after the rest: inside an xdist worker that had compiled much of the suite, XLA
# crashed while compiling or caching its solves.
#
# A run that hangs ends at a time limit instead (coreutils' timeout, where the machine has it; the
# main run takes 11-13 minutes on 2 cores): it then leaves no report, and the summary fails. A
# test still running after 10 minutes has its threads' stacks printed (pytest's faulthandler).
LIMIT := $(shell command -v timeout >/dev/null 2>&1 && echo timeout -k 30)
test: $(STAMP)
	mkdir -p build && rm -f build/junit-*.xml
	-$(LIMIT) $(if $(LIMIT),2700) $(BIN)/python -m pytest -n 2 --dist worksteal --durations=25 \
		-o faulthandler_timeout=600 --junitxml=build/junit-main.xml tests --ignore=tests/test_defaults_stochastic.py
	-$(LIMIT) $(if $(LIMIT),600) $(BIN)/python -m pytest -p no:xdist -o faulthandler_timeout=300 \
		--junitxml=build/junit-stochastic.xml tests/test_defaults_stochastic.py
	$(BIN)/python scripts/test_summary.py build/junit-main.xml build/junit-stochastic.xml

docs: $(STAMP)
	$(BIN)/python -m pip install -q -e ".[docs]"
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Every standalone script of benchmarks/{papers,perf,peers} (hours; several read the LIBSVM / UCI
# datasets from $JAXPROX_DATA); `make bench GROUP=perf` runs one group. The scripts with sub-commands
# and the A/B tool take their arguments by hand (benchmarks/README.md).
GROUP ?= papers perf peers
BY_HAND := bench_block_fw.py bench_drsvm.py bench_drsvm_large.py bench_warm_ab.py
bench: $(STAMP)
	for g in $(GROUP); do for f in benchmarks/$$g/bench_*.py; do \
	  case " $(BY_HAND) " in *" $$(basename $$f) "*) continue;; esac; \
	  $(BIN)/python $$f || exit 1; done; done

clean:
	rm -rf $(VENV) build *.egg-info
