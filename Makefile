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

.PHONY: help docs install install-baselines install-falkon install-eigenpro3 install-eigenpro4 gpu-check test smoke reproduce-table4 tune-settings report ui bench-solver bench-data cluster-up cluster-down clean clean-data distclean

# Baselines that are not on PyPI (Falkon with LogFalkon, EigenPro 3, EigenPro 4):
# `make install` installs them from a local mirror of their upstream releases
# (JOKER_BASELINES_MIRROR; default ../shared/baselines when it exists, "" for
# none), else from upstream, else leaves them out with one line saying why
# (baselines/install.py). The stamp is written only when all of them are in,
# so a later `make` tries the missing ones again.
BASELINES ?= falkon eigenpro3 eigenpro4
JOKER_BASELINES_MIRROR ?= $(if $(wildcard ../shared/baselines/SHA256SUMS),$(abspath ../shared/baselines))
export JOKER_BASELINES_MIRROR
BASELINES_STAMP := $(VENV)/.joker-bench-baselines
BASELINES_REQUIRE ?=
# Falkon from source (a CUDA build on a GPU machine, or another torch than the
# mirror wheel's): into the venv, beside torch (its extension's rpath finds
# torch's libraries only from the same site-packages): with CUDA when nvcc is
# found and torch is a CUDA build, CPU-only otherwise. FALKON_SRC may be a
# local checkout or the mirror's source tarball.
FALKON_SRC ?= $(or $(lastword $(wildcard $(JOKER_BASELINES_MIRROR)/falkon-src-*.tar.gz)),git+https://github.com/FalkonML/falkon.git)
MAX_JOBS ?= 2

help:
	@echo "make install            virtualenv $(VENV): the project, its test extras and the baselines $(BASELINES)"
	@echo "                        (from JOKER_BASELINES_MIRROR=$(JOKER_BASELINES_MIRROR), else upstream)"
	@echo "make install-baselines  only the baselines (BASELINES=\"falkon eigenpro3 eigenpro4\")"
	@echo "make install-falkon     build Falkon (LogFalkon) from source into $(VENV) (FALKON_SRC=$(FALKON_SRC), MAX_JOBS=$(MAX_JOBS))"
	@echo "make gpu-check          torch-based methods at paper scale on one GPU, gpu-2g and gpu-10g (exits 0 without a GPU)"
	@echo "make test               the test suite (includes a smoke sweep on real data)"
	@echo "make docs               the documentation site into results/site (mkdocs build --strict)"
	@echo "make smoke              every method on small real subsets (< 5 min on 2 cores)"
	@echo "make reproduce-table4   the paper's Table 4 on local data, then the report"
	@echo "make tune-settings      conf/tuned/<scale>.yaml from a tune=true sweep (docs/benchmark/tuning.md)"
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

$(BASELINES_STAMP): $(STAMP) baselines/install.py $(wildcard $(JOKER_BASELINES_MIRROR)/SHA256SUMS)
	$(PY) -m baselines.install $(BASELINES) --stamp $@ $(if $(BASELINES_REQUIRE),--require)

install: $(STAMP) $(BASELINES_STAMP)

install-baselines: $(STAMP)
	$(PY) -m baselines.install $(BASELINES) $(if $(BASELINES_REQUIRE),--require)

install-falkon: $(STAMP)
	$(PY) -m baselines.install --falkon-src "$(FALKON_SRC)" --max-jobs $(MAX_JOBS)

# Kept for old notes: the same as `make install-baselines BASELINES=eigenpro3`.
install-eigenpro3 install-eigenpro4: $(STAMP)
	$(PY) -m baselines.install $(@:install-%=%)

# Not part of `make test`: for a machine with one GPU (scripts in benchmarks/gpu_check.py).
gpu-check: install
	$(PY) -m benchmarks.gpu_check $(ARGS)

# pytest exit status 5 ("no tests collected") is a failure here, never a pass.
test: install
	@rc=0; $(PY) -m pytest $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; \
	exit $$rc

# The documentation site (mkdocs.yml, docs/) into results/site; --strict: a
# broken link, a missing page or an undocumented public object fails it.
docs: install
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict -d $(RESULTS)/site

smoke: install
	$(PY) -m joker.bench --config-name smoke $(ARGS)

# The report goes to results/report/table4/. With ARGS="tune=true" the tuned settings of the sweep are
# written into conf/tuned/<scale>.yaml before the report (docs/benchmark/tuning.md); later runs use them by default.
reproduce-table4: install
	$(PY) -m joker.bench --config-name table4 $(ARGS)
	$(if $(filter tune=true,$(ARGS)),$(PY) -m joker.bench.records.settings_writer --scale $(TUNE_SCALE) $(TUNE_URI))
	$(PY) -m reports --experiment table4 $(REPORT_ARGS)

# The tuned-settings table conf/tuned/<scale>.yaml from the tune=true records of experiment table4
# (scale and store from ARGS as for reproduce-table4; SETTINGS_ARGS="--dry-run" shows the rows only).
TUNE_SCALE = $(or $(patsubst scale=%,%,$(filter scale=%,$(ARGS))),local)
TUNE_URI = $(addprefix --uri ,$(patsubst mlflow.tracking_uri=%,%,$(filter mlflow.tracking_uri=%,$(ARGS))))
tune-settings: $(STAMP)
	$(PY) -m joker.bench.records.settings_writer --scale $(TUNE_SCALE) $(TUNE_URI) $(SETTINGS_ARGS)

report: install
	$(PY) -m reports $(REPORT_ARGS)

# The runs-table link of each experiment first: MLflow 3 opens an experiment on
# its GenAI overview page, not on its runs.
ui: $(STAMP)
	@mkdir -p $(RESULTS)/mlartifacts
	-@$(PY) -m joker.bench.records.ui_links --uri sqlite:///$(RESULTS)/mlflow.db --port $(UI_PORT)
	$(PY) -m mlflow ui --host 127.0.0.1 --port $(UI_PORT) \
	  --backend-store-uri sqlite:///$(RESULTS)/mlflow.db \
	  --default-artifact-root $(RESULTS)/mlartifacts

bench-solver: install
	$(PY) -m benchmarks.solver_bench $(ARGS)

bench-data: install
	$(PY) -m benchmarks.data_bench $(ARGS)

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
