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
SERVICES := $(RESULTS)/services

# After `make cluster-up`, the SLURM commands of every target (sbatch, sacct,
# run by submitit) talk to its cluster, unless SLURM_CONF is already set.
ifneq ($(wildcard $(SERVICES)/etc/slurm.conf),)
export SLURM_CONF ?= $(SERVICES)/etc/slurm.conf
endif
# The dataset cache (parsed arrays, hashes, downloads) of joker.data.
JOKER_DATA_HOME ?= $(HOME)/.cache/joker-bench

.PHONY: help install install-falkon install-eigenpro3 gpu-check test smoke reproduce-table4 report ui bench-solver bench-data cluster-up cluster-down clean clean-data distclean

# Optional baselines (not on PyPI). Falkon is built from source against the
# venv's torch, into the venv (its extension's rpath finds torch's libraries
# only from the same site-packages): with CUDA when nvcc is found and torch is
# a CUDA build, CPU-only otherwise. FALKON_SRC may be a local checkout.
FALKON_SRC ?= git+https://github.com/FalkonML/falkon.git
MAX_JOBS ?= 2
# EigenPro3's setup.py fails at its latest commit: a clone on the venv's path instead.
EIGENPRO3_SRC ?= https://github.com/EigenPro/EigenPro3.git
EIGENPRO3_DIR ?= $(abspath ../EigenPro3)

help:
	@echo "make install            virtualenv $(VENV) with the project and its test extras"
	@echo "make install-falkon     build Falkon (LogFalkon) from source into $(VENV) (FALKON_SRC=..., MAX_JOBS=$(MAX_JOBS))"
	@echo "make install-eigenpro3  clone EigenPro3 to $(EIGENPRO3_DIR) and put it on $(VENV)'s path"
	@echo "make gpu-check          torch-based methods at paper scale on one GPU, gpu-2g and gpu-10g (exits 0 without a GPU)"
	@echo "make test               the test suite (includes a smoke sweep on real data)"
	@echo "make smoke              every method on small real subsets (< 5 min on 2 cores)"
	@echo "make reproduce-table4   the paper's Table 4 on local data, then the report"
	@echo "make report             tables and figures of the latest experiment in results/report/<experiment>/ (REPORT_ARGS=...)"
	@echo "make ui                 MLflow UI on http://127.0.0.1:$(UI_PORT)"
	@echo "make bench-solver       Joker against the official implementation (timed here when OFFICIAL_JOKER_ROOT"
	@echo "                        names its checkout, else its anchors) and against SVC (LIBSVM); ARGS=\"--quick\""
	@echo "make bench-data         dataset loading benchmark"
	@echo "make cluster-up         local SLURM cluster + PostgreSQL-backed MLflow server (results/services/)"
	@echo "make cluster-down       stop every daemon of cluster-up"
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

install-falkon: $(STAMP)
	$(PY) -m pip install --quiet setuptools wheel ninja
	@if command -v nvcc >/dev/null 2>&1 && $(PY) -c "import sys, torch; sys.exit(torch.version.cuda is None)"; then \
	  echo "install-falkon: nvcc and a CUDA torch found: building with CUDA"; cpu=0; \
	else echo "install-falkon: no nvcc or a CPU-only torch: CPU-only build (FORCE_ONLY_CPU=1)"; cpu=1; fi; \
	FORCE_ONLY_CPU=$$cpu MAX_JOBS=$(MAX_JOBS) $(PY) -m pip install --no-build-isolation "$(FALKON_SRC)"
	$(PY) -m baselines.install_check falkon

install-eigenpro3: $(STAMP)
	@test -d "$(EIGENPRO3_DIR)/.git" || git clone "$(EIGENPRO3_SRC)" "$(EIGENPRO3_DIR)"
	echo "$(EIGENPRO3_DIR)" > "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/eigenpro3-src.pth"
	$(PY) -m baselines.install_check eigenpro3

# Not part of `make test`: for a machine with one GPU (scripts in joker/bench/gpu_check.py).
gpu-check: $(STAMP)
	$(PY) -m joker.bench.gpu_check $(ARGS)

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

# The runs-table link of each experiment first: MLflow 3 opens an experiment on
# its GenAI overview page, not on its runs.
ui: $(STAMP)
	@mkdir -p $(RESULTS)/mlartifacts
	-@$(PY) -m joker.bench.ui_links --uri sqlite:///$(RESULTS)/mlflow.db --port $(UI_PORT)
	$(PY) -m mlflow ui --host 127.0.0.1 --port $(UI_PORT) \
	  --backend-store-uri sqlite:///$(RESULTS)/mlflow.db \
	  --default-artifact-root $(RESULTS)/mlartifacts

bench-solver: $(STAMP)
	$(PY) -m joker.bench.solver_bench $(ARGS)

bench-data: $(STAMP)
	$(PY) -m joker.data.bench $(ARGS)

# The services of `make cluster-up` (scripts/cluster.py): Debian packages
# installed when missing, every daemon on 127.0.0.1 or a private socket,
# stopped by its recorded PID. cluster-down needs only python3.
cluster-up: $(STAMP)
	$(PY) scripts/cluster.py up

cluster-down:
	$(PYTHON) scripts/cluster.py down

clean: cluster-down
	rm -rf results outputs multirun .pytest_cache
	find . -name __pycache__ -type d -not -path "./$(VENV)/*" -prune -exec rm -rf {} +

clean-data:
	rm -rf "$(JOKER_DATA_HOME)"

distclean: clean
	rm -rf $(VENV)
