# The two user-facing commands: `make demo` and `make test`. Both set up a virtualenv first:
# `make demo` installs only what the demo needs (munet and its core dependencies, torch from
# constraints.txt); `make test` adds the extras the test suite exercises.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Fast suite by default: the product's tests, without those marked slow nor the lab's
# (experiments/tests, marked experiments). CI passes TEST_ARGS= to run every test.
TEST_ARGS ?= -m "not slow and not experiments"
# Everything the test suite exercises: Ray, S3 (moto), Hugging Face, TensorBoard, W&B, and
# bench-jax (jax, flax, optax: ~20 s to install) for the seed's JAX step in benchmarks/.
TEST_EXTRAS ?= dev,hf,ray,s3,bench-jax,tensorboard,wandb

.PHONY: setup setup-demo demo test lint bench clean browser wheel

# The demo's install: the core package only (no Ray, JAX, S3, W&B, TensorBoard, transformers).
$(VENV)/.munet-core: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch is pinned through the constraints file (a CPU wheel); the package accepts a range.
	$(BIN)/pip install --quiet -c constraints.txt -e .
	touch $@

# The test suite's: the core, then every extra it exercises, then timm without its
# dependencies. The hybrid-checkpoint tests build real timm models; timm requires torchvision,
# whose PyPI wheels are built for CUDA torch and fail to import beside constraints.txt's CPU
# torch ("operator torchvision::nms does not exist"), so timm is in no extra: the tests stub
# the few torchvision names timm imports (tests/models/timm_stub.py, found with this timm
# version, hence the pin), and timm's other requirements (pyyaml, huggingface_hub,
# safetensors) come with the dev extra and the core.
$(VENV)/.munet-test: $(VENV)/.munet-core
	$(BIN)/pip install --quiet -c constraints.txt -e ".[$(TEST_EXTRAS)]"
	$(BIN)/pip install --quiet -c constraints.txt --no-deps timm==1.0.31
	touch $@

setup-demo: $(VENV)/.munet-core

setup: $(VENV)/.munet-test

demo: setup-demo
	$(BIN)/munet demo

# The slow suite opens the HTML report in headless Chromium: install it when it is missing and
# apt-get can run (as root, or through passwordless sudo); otherwise that test skips, saying why.
CHROMIUM_FOUND = command -v chromium || command -v chromium-browser || command -v google-chrome
browser:
	@($(CHROMIUM_FOUND)) >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; \
	  else echo "no Chromium, and apt-get needs root: the browser test will skip"; exit 0; fi; \
	  command -v apt-get >/dev/null || { echo "no Chromium and no apt-get: the browser test will skip"; exit 0; }; \
	  $$SUDO apt-get install -y -q chromium >/dev/null 2>&1 || \
	  { $$SUDO apt-get update -q >/dev/null 2>&1 && $$SUDO apt-get install -y -q chromium >/dev/null 2>&1; } || \
	  echo "could not install Chromium: the browser test will skip"; }

# With the slow tests selected (CI: TEST_ARGS=), make sure Chromium is there first.
test: setup $(if $(findstring not slow,$(TEST_ARGS)),,browser)
	$(BIN)/python -m pytest $(TEST_ARGS)

# The wheel that docs/cluster.md installs on every node (distribution munet-evolve, import name
# and command munet), beside the torch pin the nodes install it with. build/ goes first:
# setuptools copies sources there and would otherwise also pack files since deleted from
# munet/; older munet wheels go so that dist/ holds one.
wheel: setup-demo
	rm -rf build dist/munet_evolve-*.whl
	$(BIN)/pip wheel --quiet --no-deps --wheel-dir dist .
	cp constraints.txt dist/
	@ls dist/munet_evolve-*.whl

lint: setup
	$(BIN)/ruff check munet tests benchmarks experiments tools

clean:
	rm -rf $(VENV) .pytest_cache
