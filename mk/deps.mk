# deps.mk: installs the Debian packages parity builds against, once, before the first compile.
# Each package is checked with dpkg-query; only missing ones are installed (apt-get, root).
#   libhdf5-dev        golden store (HDF5 C API)
#   libcriterion-dev   test runner
#   libopenblas-dev    CBLAS for the CPU eager linear layers
#   libopenmpi-dev, openmpi-bin   multi-rank runs (CPU collectives through MPI)
#   libyaml-dev        VeOmni YAML and suite files
#   libcjson-dev       config.json, safetensors headers, results.json
#   libsqlite3-dev     the results history (parity history, reports/history/)
#   pkg-config         library discovery
#   python3            tools/mutation_check --check (a test: the mutation table still applies)
# and for the fuzz build only (FUZZ=1: make fuzz, make fuzz-replay; mk/fuzz.mk), so that `make test`
# and `make run` never need them:
#   clang, libclang-rt-dev   libFuzzer and clang's sanitizer runtimes
DEBIAN_PACKAGES := libhdf5-dev libcriterion-dev libopenblas-dev libopenmpi-dev openmpi-bin \
                   libyaml-dev libcjson-dev libsqlite3-dev pkg-config python3 $(if $(filter 1,$(FUZZ)),clang libclang-rt-dev)
DEPS_STAMP := $(BUILD)/.deps-installed

deps: $(DEPS_STAMP)

$(DEPS_STAMP): mk/deps.mk
	@missing=""; for package in $(DEBIAN_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$package 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "parity: installing missing Debian packages:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "parity: need root to install:$$missing (run as root or install them yourself)" >&2; exit 1; fi; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends $$missing >/dev/null || \
	    { echo "parity: apt-get install failed for:$$missing" >&2; exit 1; }; \
	fi
	@mkdir -p $(@D) && touch $@
