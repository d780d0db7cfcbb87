// fuzz_common.h: what every fuzz target (suites/fuzz/fuzz_<parser>.c) shares. A target hands the
// fuzzer's bytes to one parser through the parser's public entry point: as NUL-terminated text for
// the parsers that take text, or as a scratch file for the readers that take a path (the bytes are
// written to the same file every run, so the reader's own open/stat/mmap/read paths are fuzzed too).
// The scratch directory is on tmpfs (/dev/shm) where there is one, so the atomic writes of the
// report writers (which fsync) stay fast; it is removed at exit. A rejected input is the expected
// outcome: its error is dropped. Anything a sanitizer reports, or a crash, is a finding.
#ifndef PARITY_FUZZ_COMMON_H
#define PARITY_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "ops/core/error.h"

// A malloc'ed copy of `data` with a NUL after it (the fuzzer's bytes are not terminated).
char *parity_fuzz_text(const uint8_t *data, size_t size);
// The path of the scratch file `name` (in the scratch directory, created on first use), after
// writing `data` to it. Aborts when the file cannot be written: that is the machine, not an input.
const char *parity_fuzz_file(const char *name, const uint8_t *data, size_t size);
// A directory in the scratch directory (created on first use) for readers' outputs.
const char *parity_fuzz_directory(const char *name);
// Frees `error` (NULL is fine): the parser rejected the input, which is what it should do.
void parity_fuzz_drop(parity_error *error);

#endif
