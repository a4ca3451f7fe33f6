# joker-bench: the Joker solver and the reference benchmark of large-scale
# kernel machines. The two set-up commands (README.md):
#
#   make reproduce-table4   # sweep sweeps/table4.yaml, then the report
#   make test               # the test suite, with a smoke sweep on real data
#
# Every target that needs the virtualenv creates it first (.venv, stamp file).
# Hydra overrides go in ARGS, e.g.  make smoke ARGS="launcher=joblib"

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.joker-bench-installed

# torch is installed before the project, pinned: a plain `torch` requirement
# would pull the multi-GB CUDA build on a CPU-only machine.
#   CPU-only machine (here the pinned version resolves to the local CPU wheel):
#     make install
#   elsewhere, the CPU build from PyTorch's index:
#     make install TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu"
#   GPU machine (CUDA build; pick the index of your CUDA version):
#     make install TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cu126"
TORCH_SPEC ?= torch==2.13.0
TORCH_PIP_ARGS ?=
EXTRAS ?= test

ARGS ?=
REPORT_ARGS ?=
PYTEST_ARGS ?=
UI_PORT ?= 5000
RESULTS := $(CURDIR)/results
# The dataset cache (parsed arrays, hashes, downloads) of joker.data.
JOKER_DATA_HOME ?= $(HOME)/.cache/joker-bench

.PHONY: help install test smoke reproduce-table4 report ui bench-solver bench-data clean clean-data distclean

help:
	@echo "make install            virtualenv $(VENV) with the project and its test extras"
	@echo "make test               the test suite (includes a smoke sweep on real data)"
	@echo "make smoke              every method on small real subsets (< 5 min on 2 cores)"
	@echo "make reproduce-table4   the paper's Table 4 on local data, then the report"
	@echo "make report             tables and figures of the latest experiment in results/report/<experiment>/ (REPORT_ARGS=...)"
	@echo "make ui                 MLflow UI on http://127.0.0.1:$(UI_PORT)"
	@echo "make bench-solver       Joker against the official implementation's anchors and against SVC (LIBSVM)"
	@echo "make bench-data         dataset loading benchmark"
	@echo "make clean              remove results/ (runs, reports), outputs/, multirun/, Python caches"
	@echo "make clean-data         remove the dataset cache $(JOKER_DATA_HOME)"
	@echo "make distclean          clean, and remove $(VENV) (the dataset cache stays)"

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH_PIP_ARGS) "$(TORCH_SPEC)"
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	@touch $@

install: $(STAMP)

# pytest exit status 5 ("no tests collected") is a failure here, never a pass.
test: $(STAMP)
	@rc=0; $(PY) -m pytest $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; \
	exit $$rc

smoke: $(STAMP)
	$(PY) -m joker.bench --config-name smoke $(ARGS)

# The report goes to results/report/table4/.
reproduce-table4: $(STAMP)
	$(PY) -m joker.bench --config-name table4 $(ARGS)
	$(PY) -m reports --experiment table4 $(REPORT_ARGS)

report: $(STAMP)
	$(PY) -m reports $(REPORT_ARGS)

ui: $(STAMP)
	@mkdir -p $(RESULTS)/mlartifacts
	$(PY) -m mlflow ui --host 127.0.0.1 --port $(UI_PORT) \
	  --backend-store-uri sqlite:///$(RESULTS)/mlflow.db \
	  --default-artifact-root $(RESULTS)/mlartifacts

bench-solver: $(STAMP)
	$(PY) -m joker.bench.solver_bench $(ARGS)

bench-data: $(STAMP)
	$(PY) -m joker.data.bench $(ARGS)

clean:
	rm -rf results outputs multirun .pytest_cache
	find . -name __pycache__ -type d -not -path "./$(VENV)/*" -prune -exec rm -rf {} +

clean-data:
	rm -rf "$(JOKER_DATA_HOME)"

distclean: clean
	rm -rf $(VENV)
