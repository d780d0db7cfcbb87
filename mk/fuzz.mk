# fuzz.mk: a libFuzzer target for every parser (suites/fuzz/fuzz_<parser>.c, seeds in
# suites/fuzz/corpus/<parser>/; suites/fuzz/README.md lists them). The library is compiled again
# with clang -fsanitize=fuzzer-no-link,address,undefined in build-fuzz/ (CUDA off: the parsers are
# host code) and each target is linked with -fsanitize=fuzzer.
#   make fuzz                    build, then fuzz each target for FUZZ_SECONDS (default 20) seconds
#   make fuzz FUZZ_SECONDS=600 FUZZ_TARGETS="suite golden"   longer, on some targets only
#   make fuzz FUZZ_SECONDS=600 FUZZ_JOBS=2   two targets at a time (one core each)
#   make fuzz FUZZ_SECONDS=200 FUZZ_JOBS=5 FUZZ_FORK=3   five targets at a time, three processes each
#                                (600 CPU-s a target in 200 s: a many-core machine)
#   make fuzz-replay             build, then run every corpus file once, no mutation (the test mode
#                                CI runs: a crash reproducer committed to a corpus fails it)
# Both print each target's executions and fail on any crash, sanitizer report, leak or timeout
# (suites/fuzz/run.sh). clang and libclang-rt-dev are installed for these targets only (mk/deps.mk).
# Included before the Makefile picks its sources, so that FUZZ=1 turns CUDA off for them.
FUZZ_SECONDS ?= 20
FUZZ_JOBS ?= 1
FUZZ_FORK ?= 0
FUZZ_BUILD := build-fuzz
FUZZ_TARGETS ?= $(sort $(patsubst suites/fuzz/fuzz_%.c,%,$(filter-out suites/fuzz/fuzz_common.c,$(wildcard suites/fuzz/fuzz_*.c))))

.PHONY: fuzz fuzz-replay fuzz-build

ifeq ($(FUZZ),1)
  WITH_CUDA := 0
  CC := clang
  FUZZ_SANITIZERS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
  CFLAGS += -fsanitize=fuzzer-no-link $(FUZZ_SANITIZERS) -O1
  FUZZ_PROGRAMS := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)

fuzz-build: $(FUZZ_PROGRAMS)
# Kept between builds (make would delete them as intermediates of the pattern rule below).
.SECONDARY: $(FUZZ_TARGETS:%=$(BUILD)/suites/fuzz/fuzz_%.o) $(BUILD)/suites/fuzz/fuzz_common.o

$(BUILD)/fuzz/fuzz_%: $(BUILD)/suites/fuzz/fuzz_%.o $(BUILD)/suites/fuzz/fuzz_common.o $(BUILD)/libparity.a
	@mkdir -p $(@D)
	$(CC) -fsanitize=fuzzer $(FUZZ_SANITIZERS) -o $@ $^ $(LDLIBS)

-include $(FUZZ_TARGETS:%=$(BUILD)/suites/fuzz/fuzz_%.d) $(BUILD)/suites/fuzz/fuzz_common.d
endif

# From a plain `make fuzz`, the build itself runs in a FUZZ=1 make (its own BUILD, CC and flags).
fuzz fuzz-replay:
	@$(MAKE) --no-print-directory FUZZ=1 BUILD=$(FUZZ_BUILD) FUZZ_TARGETS="$(FUZZ_TARGETS)" fuzz-build
	@FUZZ_FORK=$(FUZZ_FORK) suites/fuzz/run.sh $(if $(filter fuzz,$@),fuzz,replay) $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_JOBS) $(FUZZ_TARGETS)
