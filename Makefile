# parity: build, test and run. `make run` and `make test` are all the set-up a fresh Debian 12
# machine needs: missing Debian packages are installed first (mk/deps.mk).
#
#   make              build the library and the `parity` command
#   make test         build and run every test (GPU tests skip visibly without a GPU)
#   make run          the main job: smoke suite on the best device present
#   make CUDA=0|1|auto  GPU backends off / on / when nvcc is found (default auto)
#   make CUDA_ARCH=sm_90a  target GPU architecture (default sm_90)
#   make SAN=1        AddressSanitizer + UndefinedBehaviorSanitizer build (in build-san/)
#   make fuzz         libFuzzer targets of every parser, FUZZ_SECONDS each (in build-fuzz/: mk/fuzz.mk)
#   make fuzz-replay  every fuzz corpus file run once (what CI runs)

SHELL := /bin/bash
CUDA ?= auto
CUDA_ARCH ?= sm_90
SAN ?= 0
FUZZ ?= 0
BUILD ?= $(if $(filter 1,$(FUZZ)),build-fuzz,$(if $(filter 1,$(SAN)),build-san,build))
NVCC ?= $(shell command -v nvcc 2>/dev/null || (test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc))
CUDA_HOME ?= $(if $(NVCC),$(patsubst %/bin/nvcc,%,$(NVCC)),/usr/local/cuda)

include mk/deps.mk
include mk/detect.mk

ifeq ($(CUDA),auto)
  WITH_CUDA := $(if $(NVCC),1,0)
else
  WITH_CUDA := $(CUDA)
endif

CC := gcc
WARNINGS := -Wall -Wextra -Werror -Wno-unused-parameter
CFLAGS := -std=c11 -O2 -g -D_GNU_SOURCE -fno-fast-math -ffp-contract=off $(WARNINGS) -I. $(HDF5_CFLAGS) -MMD -MP
LDLIBS := $(HDF5_LIBS) -lyaml -lcjson -lsqlite3 -lopenblas $(MPI_LIBS) -lpthread -lm -ldl
NVCCFLAGS := -std=c++17 -O2 -g -lineinfo -I. -Xcompiler -Wall,-Wno-unused-parameter -MMD -MP
NVCC_GENCODE := $(if $(filter sm_90a,$(CUDA_ARCH)),-gencode=arch=compute_90a$(comma)code=sm_90a,-arch=$(CUDA_ARCH))
comma := ,

# SAN=1: a UBSan finding aborts like an ASan one (by default UBSan prints and goes on, so a test
# would still pass).
ifeq ($(SAN),1)
  CFLAGS += -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O1
  LDFLAGS += -fsanitize=address,undefined -fno-sanitize-recover=undefined
endif

include mk/fuzz.mk

# Sources: everything under the layer folders, except the CLI entry point and tests.
C_SOURCES := $(shell find ops models golden harness reports -name '*.c' 2>/dev/null | grep -v '^harness/cli/main.c$$' | sort)
CU_SOURCES := $(shell find ops models golden harness reports -name '*.cu' 2>/dev/null | sort)
# A file named *_without_cuda.c stands in for CUDA code when CUDA is off (e.g. registration of the
# CUDA backends); it is left out of CUDA builds.
ifeq ($(WITH_CUDA),1)
  C_SOURCES := $(filter-out ops/core/cuda_stub.c %_without_cuda.c,$(C_SOURCES))
  NVCCFLAGS += $(NVCC_GENCODE)
  LDLIBS += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lstdc++ # cuBLAS is dlopen'ed on first use
else
  CU_SOURCES :=
endif
# NCCL (ops/core/cuda/comm_nccl.cu, which dlopens libnccl.so.2 on first use) needs nccl.h for its
# types; without it, or without CUDA, ops/core/comm_nccl_stub.c stands in (every call UNAVAILABLE).
NCCL_HEADER := $(firstword $(wildcard $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h))
ifeq ($(WITH_CUDA)$(if $(NCCL_HEADER),1,0),11)
  C_SOURCES := $(filter-out ops/core/comm_nccl_stub.c,$(C_SOURCES))
else
  CU_SOURCES := $(filter-out ops/core/cuda/comm_nccl.cu,$(CU_SOURCES))
endif
# wgmma exists only on the architecture-specific sm_90a target (no sm_90 or PTX form), so the files
# that issue it (fused_quack's grouped GEMMs) are built for sm_90a alone, whatever CUDA_ARCH says;
# their backends claim compute capability 9.0 and check it before launching.
SM90A_CU_SOURCES := ops/moe_experts/grouped/sm90_gemm.cu
ifeq ($(WITH_CUDA),1)
$(SM90A_CU_SOURCES:%.cu=$(BUILD)/%.cu.o): NVCCFLAGS := $(filter-out $(NVCC_GENCODE),$(NVCCFLAGS)) -gencode=arch=compute_90a,code=sm_90a
endif
# Every backend built in: the registration lines of this build's sources (ops/builtin_backends.h),
# listed in a generated table that is rewritten only when the list changes.
BACKEND_TABLE := $(BUILD)/generated/backend_table.c
OBJECTS := $(C_SOURCES:%.c=$(BUILD)/%.o) $(CU_SOURCES:%.cu=$(BUILD)/%.cu.o) $(BACKEND_TABLE:.c=.o)
LIBRARY := $(BUILD)/libparity.a
PROGRAM := $(BUILD)/parity
TEST_SOURCES := $(sort $(wildcard suites/tests/*.c))
TEST_OBJECTS := $(TEST_SOURCES:%.c=$(BUILD)/%.o)
TEST_PROGRAM := $(BUILD)/parity-tests
# `parity bench --markdown` reads its targets from harness/bench/targets.tsv under the working
# directory, else from this copy beside the binary, so a copied build directory carries them.
BENCH_TARGETS := $(BUILD)/bench_targets.tsv

.PHONY: all deps test run nightly install clean check-format mutation-check print-config FORCE
.DEFAULT_GOAL := all

all: print-config $(PROGRAM) $(BENCH_TARGETS)
	@echo "parity: built $(PROGRAM)"

# only the MPI transport includes mpi.h
$(BUILD)/ops/core/comm_mpi.o: CFLAGS += $(MPI_CFLAGS)

$(BUILD)/%.o: %.c | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/%.cu.o: %.cu | deps
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(BACKEND_TABLE): mk/backend_table.sh FORCE
	@mkdir -p $(@D)
	@mk/backend_table.sh $(filter ops/%,$(C_SOURCES) $(CU_SOURCES)) > $@.new
	@if cmp -s $@.new $@; then rm -f $@.new; else mv $@.new $@; fi

$(BACKEND_TABLE:.c=.o): $(BACKEND_TABLE) | deps
	$(CC) $(CFLAGS) -c $< -o $@

$(LIBRARY): $(OBJECTS)
	@rm -f $@
	ar rcs $@ $^

# -rdynamic: the executable exports its symbols, so a backend plugin (ops/plugin_api.h) resolves its
# calls into parity (parity_registry_add, PARITY_ERROR, ...) against the running binary.
$(PROGRAM): $(BUILD)/harness/cli/main.o $(LIBRARY)
	$(CC) $(LDFLAGS) -rdynamic -o $@ $^ $(LDLIBS)

$(BENCH_TARGETS): harness/bench/targets.tsv
	@mkdir -p $(@D)
	cp $< $@

$(TEST_PROGRAM): $(TEST_OBJECTS) $(LIBRARY)
	$(CC) $(LDFLAGS) -rdynamic -o $@ $^ $(LDLIBS) -lcriterion

# The test plugins (suites/plugins/test_plugin.c, one shared library per variant; test_plugins.c).
TEST_PLUGIN_VARIANTS := good bad_version no_register duplicate unknown_op unresolved fails out_of_bounds nan nondeterministic
TEST_PLUGINS := $(TEST_PLUGIN_VARIANTS:%=$(BUILD)/plugins/test_%.so)
$(BUILD)/plugins/test_%.so: suites/plugins/test_plugin.c | deps
	@mkdir -p $(@D)
	$(CC) $(filter-out -MMD -MP,$(CFLAGS)) -fPIC -shared $(if $(filter good,$*),,-DPLUGIN_$(shell echo $* | tr a-z A-Z)) $(LDFLAGS) -o $@ $<

# Tests run from the repository root; --jobs 2 matches the CI machine.
test: print-config $(TEST_PROGRAM) $(PROGRAM) $(BENCH_TARGETS) $(TEST_PLUGINS)
	@echo "parity: running tests ($(if $(filter 1,$(WITH_CUDA)),CUDA build,CPU-only build))"
	$(if $(filter 1,$(SAN)),LSAN_OPTIONS=suppressions=$(CURDIR)/mk/lsan.supp )$(TEST_PROGRAM) --jobs=2 $(TEST_ARGS)

# The smoke goldens are committed (golden/smoke/); `golden generate` writes only missing ones.
run: $(PROGRAM)
	@$(PROGRAM) golden generate --suite smoke
	@$(PROGRAM) run --suite smoke --device best

# The nightly CI job (tools/nightly): gpu-nightly on the best device, compared with the history's
# baseline, recorded in it, the dashboard rewritten; non-zero on a failure or a regression.
# NIGHTLY_ARGS passes options through, e.g. make nightly NIGHTLY_ARGS="--suite smoke --db /tmp/h.sqlite".
nightly: $(PROGRAM)
	@tools/nightly --parity $(PROGRAM) $(NIGHTLY_ARGS)

# tools/mutation_check: every deliberate bug of tools/mutations.json, one at a time in a scratch copy,
# and the table of which test or run caught it (minutes: each row rebuilds and runs its detectors).
mutation-check:
	@tools/mutation_check $(MUTATION_ARGS)

# make install PREFIX=DIR: the parity command, its bench targets, and what a backend plugin builds
# against (every header of ops/, as ops/..., under include/parity; ops/plugin_api.h says how) with a
# pkg-config file: cc $$(pkg-config --cflags parity) -fPIC -shared -o my_backend.so my_backend.c
# (PKG_CONFIG_PATH=DIR/lib/pkgconfig). A plugin links nothing: it resolves parity's functions from
# the running `parity`.
PREFIX ?= /usr/local
PLUGIN_HEADERS := $(shell find ops -name '*.h' -o -name '*.cuh' 2>/dev/null | sort)
install: $(PROGRAM) $(BENCH_TARGETS)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include/parity
	install -m 755 $(PROGRAM) $(DESTDIR)$(PREFIX)/bin/parity
	install -m 644 $(BENCH_TARGETS) $(DESTDIR)$(PREFIX)/bin/bench_targets.tsv
	for header in $(PLUGIN_HEADERS); do install -D -m 644 $$header $(DESTDIR)$(PREFIX)/include/parity/$$header; done
	printf '%s\n' 'prefix=$(PREFIX)' 'includedir=$${prefix}/include/parity' '' 'Name: parity' \
	  'Description: backend plugin API of parity (ops/plugin_api.h): plugins link nothing, parity exports its symbols' \
	  "Version: $$(sed -n 's/^#define PARITY_VERSION \"\(.*\)\"/\1/p' harness/cli/version.h)" \
	  'Cflags: -I$${includedir}' 'Libs:' > $(DESTDIR)$(PREFIX)/lib/pkgconfig/parity.pc
	@echo "parity: installed under $(DESTDIR)$(PREFIX)"

clean:
	rm -rf build build-san build-fuzz

-include $(OBJECTS:.o=.d) $(TEST_OBJECTS:.o=.d) $(BUILD)/harness/cli/main.d
