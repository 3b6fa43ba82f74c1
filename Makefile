# tileops: the two commands of the README, and the C core's own targets.
#   make demo     set up .venv, install tileops (builds the C core), run the main job on the CPU
#   make test     same set-up, then the C tests, the manifest validator and the whole pytest suite
#   make check-c  the C core and its C tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   make check-fuzz  the binding (tileops._C) built with both sanitizers, fuzzed by tests/test_c_fuzz.py
#   make check-dist  sdist -> wheel built from it -> manylinux tag -> installed in a fresh venv with no
#                    compiler -> the README example (tests/packaging/check_dist.sh)
#   make check-clang the C tests and the extension built by clang (on PATH, else zig's from PyPI)

PYTHON_BOOT ?= python3
VENV        := .venv
PY          := $(VENV)/bin/python
TORCH_PIN   ?= torch==2.13.0
# The optional extra the test suite exercises (tileops.patch on transformers models); the
# version the patcher is tested against. Where it cannot be installed, those tests skip.
TRANSFORMERS_PIN ?= transformers==5.17.0
CC          ?= cc

# Each op's C code lives in csrc/ops/<family>/, next to its CUDA C (shipped as data).
CORE_SRC  := $(wildcard csrc/core/*.c csrc/cpu/*.c csrc/runtime/*.c csrc/ops/*/*.c)
CORE_HDR  := $(wildcard csrc/include/tileops/*.h csrc/core/*.h csrc/cpu/*.h csrc/runtime/*.h csrc/ops/*/*.h)
CUDA_SRC  := $(wildcard csrc/ops/*/*.cu csrc/ops/*/*.cuh)
CTEST_SRC := $(wildcard tests/c/test_*.c)
# Where the C test binaries go: `make test-c BUILD=build-mine` keeps two people's apart.
BUILD     ?= build
CFLAGS_COMMON := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Icsrc/include -Icsrc -pthread
LDLIBS    := -ldl -lpthread -lm

.PHONY: all demo test test-c check-c check-fuzz check-dist check-clang venv install clean validate

all: install

# ---- set-up (idempotent: an existing .venv with torch is reused) --------------------
$(VENV)/.stamp-deps:
	@test -x $(PY) || $(PYTHON_BOOT) -m venv $(VENV)
	@if $(PY) -c "import torch" 2>/dev/null; then \
	    echo "✓ torch $$($(PY) -c 'import torch; print(torch.__version__)') already in $(VENV)"; \
	elif $(PYTHON_BOOT) -c "import torch" 2>/dev/null; then \
	    echo "✓ using the environment's torch: pip install torch==$$($(PYTHON_BOOT) -c 'import torch; print(torch.__version__.split(\"+\")[0])')"; \
	    $(PY) -m pip install -q "torch==$$($(PYTHON_BOOT) -c 'import torch; print(torch.__version__.split(\"+\")[0])')"; \
	else \
	    echo "… installing $(TORCH_PIN) into $(VENV)"; \
	    $(PY) -m pip install -q "$(TORCH_PIN)"; \
	fi
	@$(PY) -m pip install -q "setuptools>=77" wheel pyyaml pytest numpy mypy
	@touch $@

venv: $(VENV)/.stamp-deps

$(VENV)/.stamp-install: $(VENV)/.stamp-deps pyproject.toml setup.py $(CORE_SRC) $(CORE_HDR) $(wildcard csrc/python/*.c) $(CUDA_SRC)
	@# the distribution was called tileops before it became tileops-c (the name tileops on
	@# PyPI is the upstream TileOPs project): an old editable install of it goes first
	@if $(PY) -m pip show -q tileops >/dev/null 2>&1; then $(PY) -m pip uninstall -y -q tileops; fi
	TILEOPS_WERROR=1 $(PY) -m pip install -q --no-build-isolation --no-deps -e .
	@touch $@

install: $(VENV)/.stamp-install

demo: install
	$(PY) -m tileops demo

validate: install
	$(PY) -m tileops.manifest validate

# The test plugin is a real distribution, discovered through its entry points.
$(VENV)/.stamp-testplugin: $(VENV)/.stamp-deps $(wildcard tests/plugins/tileops-testplugin/*.toml tests/plugins/tileops-testplugin/tileops_testplugin/*.py)
	$(PY) -m pip install -q --no-build-isolation --no-deps ./tests/plugins/tileops-testplugin
	@touch $@

# transformers for tests/nn/test_hf_patch.py: optional, so a failed install only says so
$(VENV)/.stamp-testdeps: $(VENV)/.stamp-deps
	@$(PY) -c "import transformers" 2>/dev/null || $(PY) -m pip install -q "$(TRANSFORMERS_PIN)" \
	    || echo "!! $(TRANSFORMERS_PIN) could not be installed: the Hugging Face patcher's tests will skip"
	@touch $@

test: install $(VENV)/.stamp-testplugin $(VENV)/.stamp-testdeps test-c validate
	$(PY) -m pytest -q tests

# ---- the C core on its own -----------------------------------------------------------
# Each core file is compiled once per flavour (release, asan) and linked into every C test.
ASAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
CORE_OBJ_RELEASE := $(patsubst csrc/%.c,$(BUILD)/release/obj/%.o,$(CORE_SRC))
CORE_OBJ_ASAN    := $(patsubst csrc/%.c,$(BUILD)/asan/obj/%.o,$(CORE_SRC))
# kept between runs (pattern-built objects are otherwise deleted as intermediates)
.SECONDARY: $(CORE_OBJ_RELEASE) $(CORE_OBJ_ASAN)

$(BUILD)/release/obj/%.o: csrc/%.c $(CORE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -O2 -c -o $@ $<

$(BUILD)/asan/obj/%.o: csrc/%.c $(CORE_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(ASAN_FLAGS) -c -o $@ $<

$(BUILD)/release/%: tests/c/%.c $(CORE_OBJ_RELEASE) $(CORE_HDR) tests/c/check.h tests/c/elems.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -O2 -o $@ $< $(CORE_OBJ_RELEASE) $(LDLIBS)

$(BUILD)/asan/%: tests/c/%.c $(CORE_OBJ_ASAN) $(CORE_HDR) tests/c/check.h tests/c/elems.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(ASAN_FLAGS) -o $@ $< $(CORE_OBJ_ASAN) $(LDLIBS)

CTESTS := $(patsubst tests/c/%.c,%,$(CTEST_SRC))

test-c: $(addprefix $(BUILD)/release/,$(CTESTS))
	@set -e; for t in $^; do echo "== $$t"; $$t; done

check-c: $(addprefix $(BUILD)/asan/,$(CTESTS))
	@set -e; for t in $^; do echo "== $$t (asan+ubsan)"; \
	    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 $$t; done

# ---- the binding under the sanitizers ------------------------------------------------
# The same sources as setup.py's extension (binding + core + ops), built with
# AddressSanitizer + UndefinedBehaviorSanitizer into $(BUILD)/asan-ext/ (the installed
# package is untouched). tests/test_c_fuzz.py loads that file (TILEOPS_C_EXT_PATH) in
# workers that import neither tileops nor torch; libasan is preloaded since the python
# binary is not instrumented, and PYTHONMALLOC=malloc puts Python's objects in ASan's heap
# too (a str freed under a kernel call is then a report, not reused arena memory). Leak
# detection is off: the interpreter keeps its objects.
EXT_SRC := $(wildcard csrc/python/*.c) $(CORE_SRC)

$(BUILD)/asan-ext/_C.so: $(EXT_SRC) $(CORE_HDR) $(VENV)/.stamp-deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	    -fno-sanitize-recover=all -fPIC -shared -fvisibility=hidden \
	    -I"$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" \
	    -o $@ $(EXT_SRC) $(LDLIBS)

check-fuzz: $(BUILD)/asan-ext/_C.so
	TILEOPS_C_EXT_PATH=$(abspath $<) LD_PRELOAD="$$($(CC) -print-file-name=libasan.so)" PYTHONMALLOC=malloc \
	    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    $(PY) -m pytest -q tests/test_c_fuzz.py

# ---- packaging: what a user installs, and another compiler --------------------------------
check-dist: install
	PY=$(PY) PYTHON_BOOT=$(PYTHON_BOOT) OUT=$(BUILD)/dist bash tests/packaging/check_dist.sh

check-clang: install
	PY=$(PY) OUT=$(BUILD)/clang bash tests/packaging/check_clang.sh

clean:
	rm -rf build $(BUILD) src/tileops/_C*.so src/*.egg-info $(VENV)/.stamp-install
