# gemmlab: the commands of the README, and the helpers behind them.
#   make book   -> .venv with pinned dependencies, then the HTML book in _build/html
#   make check  -> the quick loop while you work (a few minutes): no unused or undefined names, every module imports
#                  cleanly, the library's unit tests and a sample of the kernels, on every core
#   make test   -> the whole test suite, as CI runs it (no GPU needed; GPU tests skip without one)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: book check test unit notebooks build-strict browser refresh ceilings lab lock clean

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	@touch $@

book: $(STAMP)
	$(BIN)/jupyter-book build --quiet .
	@echo "The book is built: open $(CURDIR)/_build/html/index.html"

# The tests run on every core (pytest-xdist): each worker builds the emulated kernels it needs once per run (the
# cases of one kernel instance run in one worker: tests/conftest.py) and the build cache on disk is shared.
# On a GPU every test runs in one worker (timings need the GPU to themselves). A developer's own GEMMLAB_*
# settings would change what is skipped and how fast it runs: not in the tests.
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)
CLEAN  := env -u GEMMLAB_DEVICE -u GEMMLAB_EMULATOR_RACECHECK -u GEMMLAB_EMULATOR_MEMCHECK -u GEMMLAB_EMULATOR_TIMEOUT
PYTEST := $(CLEAN) $(BIN)/python -m pytest -p no:cacheprovider -n $(JOBS) --dist loadgroup

check: $(STAMP)
	$(BIN)/python -m pyflakes lib tests
	$(CLEAN) $(BIN)/python -W error -c "import gemmlab, importlib, pkgutil; [importlib.import_module(m.name) \
	  for m in pkgutil.walk_packages(gemmlab.__path__, 'gemmlab.') if m.name != 'gemmlab.runtime.cuda']"
	$(PYTEST) -q -m "not slow" --ignore=tests/browser

test: $(STAMP)
	$(MAKE) --keep-going unit notebooks build-strict
	$(MAKE) browser

unit: $(STAMP)
	$(PYTEST) --ignore=tests/browser

# Runs every chapter top to bottom on this machine's backend; checks the outputs of cells tagged
# nbval-check-output (the verdicts that are the same on every backend). Then every chapter again as a reader
# of a Colab T4 and of an A100 runs it (GEMMLAB_DEVICE: those GPUs' limits, SMs and __CUDA_ARCH__ on the
# emulator): no cell may fail; what a T4 cannot run says so in one line.
PROFILES_RUN ?= T4 A100
# Several chapters at once (one per core; a chapter's cells stay in one kernel), or one at a time on a GPU.
notebooks: $(STAMP)
	jobs=$$($(CLEAN) $(BIN)/python -c "import gemmlab as gl; print(1 if gl.on_gpu else $(JOBS))") && \
	$(CLEAN) $(BIN)/python -m pytest --nbval-lax --nbval-current-env -p no:cacheprovider -n $$jobs --dist loadfile \
	  chapters && \
	for p in $(PROFILES_RUN); do $(CLEAN) $(BIN)/python -m gemmlab rehearse --profile "$$p" --jobs $$jobs \
	  chapters/*.ipynb || exit 1; done

build-strict: $(STAMP)
	$(BIN)/jupyter-book build -W -n --keep-going --quiet .

# The explorers in the built book, in headless Chromium with the network off (screenshots in
# _build/browser/). Finds a Chromium (tests/browser/chromium.py); with none, installs Debian's as root,
# else Playwright's own; when neither works it stops with one line that says how to get one.
browser: $(STAMP)
	@$(BIN)/python tests/browser/chromium.py --quiet || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's chromium for the browser tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "installing Playwright's own Chromium for the browser tests (python -m playwright install chromium)"; \
	    $(BIN)/python -m playwright install chromium >/dev/null 2>&1 || true; \
	  fi; \
	  $(BIN)/python tests/browser/chromium.py >/dev/null || { $(BIN)/python tests/browser/chromium.py; exit 1; }; }
	$(BIN)/python -m pytest -p no:cacheprovider tests/browser

# Read and run the chapters in JupyterLab: on a copy of them in workbook/ (git-ignored), so running a chapter
# never changes a committed one. A changed chapter replaces an unedited copy; an edited copy is kept unless
# you say so. Works as root (JupyterLab's --allow-root is added).
lab: $(STAMP)
	$(BIN)/python -m gemmlab lab

# On a GPU machine: re-execute the chapters and write their outputs back; record the GPU's ceilings.
refresh: $(STAMP)
	$(BIN)/python -m gemmlab refresh chapters/*.ipynb

ceilings: $(STAMP)
	$(BIN)/python -m gemmlab ceilings --record

# Re-pin: resolve the dev extra afresh and write every version into constraints.txt.
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet -e '.[dev]'
	{ echo '# Exact versions for `make` (pip install -c constraints.txt). Regenerate with `make lock`.'; \
	  .lock-venv/bin/pip freeze --exclude-editable; } > constraints.txt
	rm -rf .lock-venv

clean:
	rm -rf _build
