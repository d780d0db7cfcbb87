// atomic_file.h: writing a report file so that readers see the old file or the whole new one,
// never a partial one (a temporary file beside it, then rename), and creating report directories.
#ifndef PARITY_REPORTS_ATOMIC_FILE_H
#define PARITY_REPORTS_ATOMIC_FILE_H

#include <stddef.h>

#include "ops/core/error.h"

// Writes `size` bytes to `path` through `path.tmp.XXXXXX` + rename; on failure removes the temporary.
parity_error *parity_write_file_atomic(const char *path, const void *data, size_t size);
// mkdir -p: creates `directory` and its missing parents (mode 0755); an existing directory is fine.
parity_error *parity_make_directories(const char *directory);
// Reads a whole file into a NUL-terminated malloc'd buffer (*size excludes the NUL).
parity_error *parity_read_file(const char *path, char **data, size_t *size);

#endif
