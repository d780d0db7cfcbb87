// file.h: the file-system pieces every layer that writes files shares (goldens, reports, bench
// reports): atomic writes, so a reader sees the old file or the whole new one and never part of
// one; mkdir -p; and whole-file reads. In ops/core because golden/ and reports/ both need them and
// neither may include the other (reports/ is a leaf the harness writes through; golden/ sits below
// the harness), and ops/core is the one layer below both.
#ifndef PARITY_FILE_H
#define PARITY_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "ops/core/error.h"

// Writes `size` bytes to `path`: into a new temporary file beside it ("<path>.tmp.XXXXXX", mode
// 0644), synced to disk, then renamed onto `path`. With `replace` false an existing `path` is never
// replaced, not even one that appeared meanwhile (renameat2 RENAME_NOREPLACE; where the file system
// lacks it, check then rename): a USAGE error. On any failure the temporary file is removed and an
// old `path` stays as it was; errors name the file and the step ("cannot create", "write failed").
// The parent directory must exist (parity_make_parent_directories). The temporary file is tracked
// (ops/core/temporaries.h) from its creation to its rename: a signal handler that ends the process
// removes it.
parity_error *parity_write_file_atomic(const char *path, const void *data, size_t size, bool replace);
// mkdir -p: creates `directory` and its missing parents (mode 0777 less the umask); an existing
// directory is fine, a file in the way is an IO error naming it.
parity_error *parity_make_directories(const char *directory);
// mkdir -p of the directory part of `path` (nothing when `path` has none).
parity_error *parity_make_parent_directories(const char *path);
// Reads a whole file into a NUL-terminated malloc'ed buffer (*size excludes the NUL).
parity_error *parity_read_file(const char *path, char **data, size_t *size);

#endif
