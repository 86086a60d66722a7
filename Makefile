# Two commands do everything on a fresh machine (Python >= 3.10 with pip and venv):
#   make bench   - create .venv, install, run the benchmark (every stage this machine can run)
#   make test    - create .venv, install, run the test suite (GPU tests skip without a GPU)
# CUDA=cuda13 selects cupy-cuda13x instead of the default cupy-cuda12x (never both in one venv).
PYTHON ?= python3
VENV   ?= .venv
CUDA   ?= cuda12
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(CUDA)
OTHER  := $(filter-out $(STAMP),$(wildcard $(VENV)/.installed-cuda*))

.PHONY: install bench publish overhead test test-gpu verify stress inspect report notebooks figures lab new-stage clean

LAB    := $(VENV)/.installed-lab

$(STAMP): pyproject.toml
	@if [ -n "$(OTHER)" ]; then echo "$(VENV) holds another CuPy ($(OTHER)); run 'make clean' first: two CuPy packages must never share a venv" >&2; exit 1; fi
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[$(CUDA),test]"
	touch $@

$(LAB): $(STAMP)
	$(PY) -m pip install -q -e ".[$(CUDA),test,lab]"
	touch $@

install: $(STAMP)

bench: $(STAMP)          ## all stages this machine runs + cuBLAS + the CPU baseline vs numpy (a run record)
	$(PY) -m stages bench $(ARGS)

publish: $(STAMP)        ## the same benchmark, its record published to results/ (then `make report`)
	$(PY) -m stages bench --publish $(ARGS)

overhead: $(STAMP)       ## host time per gemm() call of every GPU stage against cupy.matmul
	$(PY) -m stages bench --overhead $(ARGS)

test: $(STAMP)           ## the whole suite; GPU tests skip (saying why) where there is no GPU
	$(PY) -m pytest -q $(ARGS)

test-gpu: $(STAMP)       ## only the GPU tests (on a GPU machine)
	$(PY) -m pytest -q -m "gpu or hopper" $(ARGS)

verify: $(STAMP)         ## the full correctness sweep of every stage
	$(PY) -m stages verify $(ARGS)

stress: $(STAMP)         ## random shapes, sanitizers, streams/threads, special values, hostile calls, leaks (GPU; a "stress" record)
	$(PY) -m stages stress $(ARGS)

inspect: $(STAMP)        ## registers, shared/local memory, SASS mix of every stage (no GPU needed)
	$(PY) -m stages inspect $(ARGS)

report: $(STAMP)         ## regenerate the README tables from the published records in results/
	$(PY) -m stages report --write

notebooks: $(STAMP)      ## rewrite notebooks/*.ipynb (no outputs) from notebooks/build.py
	$(PY) notebooks/build.py

figures: $(STAMP)        ## re-run the overview headless: notebooks/figures/*.png from results/
	$(PY) notebooks/build.py --figures

lab: $(LAB)              ## JupyterLab with the project importable (installs JupyterLab once)
	cd notebooks && ../$(PY) -m jupyter lab $(ARGS)

new-stage: $(STAMP)      ## NAME=vN_short_name: copy the last stage's folder under a new name
	@test -n "$(NAME)" || { echo "usage: make new-stage NAME=vN_short_name" >&2; exit 2; }
	$(PY) -m stages new $(NAME)

clean:
	rm -rf $(VENV) .pytest_cache
