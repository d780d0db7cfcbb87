// golden_hdf5.h: small typed helpers over the HDF5 C API, used by the golden store (golden.c) and
// its tests. They exist so that the golden reader and writer read as a list of fields: every helper
// checks the HDF5 return code, and a failure comes back as a parity_error naming the file, the HDF5
// call, the object (dataset or attribute path inside the file) and HDF5's own innermost message.
// HDF5's automatic error-stack printing is switched off around our calls (parity_hdf5_quiet_*), so
// nothing but our error reaches the terminal.
//
// Tensor datasets carry a "dtype" attribute (parity_dtype_name: "fp64", "fp32", "bf16", "int64", ...).
// bf16 (and fp16) data has no native HDF5 type in 1.10, so it is stored as uint16 bit patterns and the
// attribute dtype = "bf16" (or "fp16") is what says how to read them; a uint16 dataset without it is
// rejected rather than guessed.
//
// Written objects let libhdf5 check them too: every group and dataset tracks attribute creation
// order, which makes its object header (where attributes such as loss live) a version-2 header with
// a checksum, and every non-empty numeric or fixed-length dataset is one chunk with fletcher32.
// (Variable-length strings live in HDF5's global heap, which has no checksum; the golden's seal
// covers them, golden_seal.h.)
#ifndef PARITY_GOLDEN_HDF5_H
#define PARITY_GOLDEN_HDF5_H

#include <hdf5.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/core/error.h"
#include "ops/core/tensor.h"

// The caller's HDF5 automatic error printer, saved while ours are silenced.
typedef struct parity_hdf5_quiet {
    H5E_auto2_t function;
    void *data;
} parity_hdf5_quiet;

// Silences HDF5's error-stack printing (H5Eset_auto2(H5E_DEFAULT, NULL, NULL)) until _end restores it.
void parity_hdf5_quiet_begin(parity_hdf5_quiet *saved);
void parity_hdf5_quiet_end(const parity_hdf5_quiet *saved);

// An error of `kind` "<path>: <call>(<object>) failed: <HDF5's innermost message>", and clears the
// HDF5 error stack. Use after an HDF5 call returned a negative value.
parity_error *parity_hdf5_failure(parity_error_kind kind, const char *file, int line, const char *path,
                                  const char *call, const char *object);
#define PARITY_HDF5_FAILURE(kind, path, call, object) parity_hdf5_failure((kind), __FILE__, __LINE__, (path), (call), (object))

// The absolute name of an open object inside its file ("/expected"), for messages.
const char *parity_hdf5_object_name(hid_t object, char *buffer, size_t size);

// ---- writing (errors are IO errors naming `path`, the file being written) ----

// Creates group `name` under `location`. With `track_order` the group remembers link creation order.
parity_error *parity_hdf5_create_group(hid_t location, const char *path, const char *name, bool track_order, hid_t *out);
// Scalar attributes. Strings are stored as variable-length UTF-8 (what h5py writes and reads as str).
parity_error *parity_hdf5_write_string_attribute(hid_t location, const char *path, const char *name, const char *value);
parity_error *parity_hdf5_write_int_attribute(hid_t location, const char *path, const char *name, int value);
parity_error *parity_hdf5_write_uint64_attribute(hid_t location, const char *path, const char *name, uint64_t value);
parity_error *parity_hdf5_write_double_attribute(hid_t location, const char *path, const char *name, double value);
// A scalar variable-length UTF-8 string dataset.
parity_error *parity_hdf5_write_string_dataset(hid_t location, const char *path, const char *name, const char *value);
// A 1-D dataset of `count` variable-length strings, the i-th at strings + i * stride.
parity_error *parity_hdf5_write_string_list(hid_t location, const char *path, const char *name, const char *strings,
                                            size_t stride, size_t count);
// A dataset with the tensor's shape and a "dtype" attribute. The tensor must be a contiguous CPU
// tensor. fp64/fp32/int64/int32/uint8 keep their own HDF5 type; bf16 and fp16 are stored as uint16.
parity_error *parity_hdf5_write_tensor(hid_t location, const char *path, const char *name, const parity_tensor *tensor);

// ---- reading (errors are DATA errors naming `path` and the missing or mismatched item) ----

// Whether `name` (a link, relative to `location`) exists; an HDF5 failure is an error.
parity_error *parity_hdf5_has_link(hid_t location, const char *path, const char *name, bool *out);
parity_error *parity_hdf5_has_attribute(hid_t location, const char *path, const char *name, bool *out);
// Opens group `name`; a missing one is a DATA error "group /x is missing".
parity_error *parity_hdf5_open_group(hid_t location, const char *path, const char *name, hid_t *out);
// Scalar (or one-element) attributes of the stated class. Strings may be variable- or fixed-length;
// a string longer than size - 1 is an error, not a truncation.
parity_error *parity_hdf5_read_string_attribute(hid_t location, const char *path, const char *name, char *out, size_t size);
parity_error *parity_hdf5_read_int_attribute(hid_t location, const char *path, const char *name, int *out);
parity_error *parity_hdf5_read_uint64_attribute(hid_t location, const char *path, const char *name, uint64_t *out);
parity_error *parity_hdf5_read_double_attribute(hid_t location, const char *path, const char *name, double *out);
// A scalar string dataset (variable- or fixed-length) into a malloc'ed, NUL-terminated string.
parity_error *parity_hdf5_read_string_dataset(hid_t location, const char *path, const char *name, char **out);
// A 1-D dataset of strings (variable- or fixed-length) into a malloc'ed array of `count` slots of
// `width` bytes each (NUL-terminated); a string that does not fit is an error.
parity_error *parity_hdf5_read_string_list(hid_t location, const char *path, const char *name, size_t width, char **out,
                                           size_t *count);
// A tensor dataset into a new contiguous CPU tensor of its stored dtype (see the "dtype" attribute
// rules above). `rank` is the required rank, or -1 for any.
parity_error *parity_hdf5_read_tensor(hid_t location, const char *path, const char *name, int rank, parity_tensor *out);

#endif
