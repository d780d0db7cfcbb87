// safetensors.h: reading and writing the safetensors format (huggingface/safetensors): an 8-byte
// little-endian header length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__":
// {str: str}}, then the byte buffer. The reader maps the file and validates everything the format
// specifies before handing out a tensor: header length within the file and under 100 MB, valid
// JSON object, known dtypes, non-negative shapes whose element count and byte size fit int64,
// offsets that lie inside the buffer, match the shape's byte size and tile the buffer exactly (no
// holes, no overlaps), no duplicate names. Names are sorted once, so checking and finding them
// costs n log n for n tensors.
// Every error names the file and the tensor or field.
#ifndef PARITY_SAFETENSORS_H
#define PARITY_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "ops/core/tensor.h"

typedef struct parity_safetensors_entry {
    char *name;
    parity_dtype dtype;
    int ndim;
    int64_t shape[PARITY_MAX_DIMS];
    size_t begin, end;             // byte offsets into the data buffer
} parity_safetensors_entry;

typedef struct parity_safetensors_file {
    char *path;
    void *mapping;                 // the whole file
    size_t mapping_size;
    const uint8_t *data;           // start of the byte buffer
    size_t data_size;
    parity_safetensors_entry *entries; // in header order
    size_t entry_count;
    parity_safetensors_entry **by_name; // the same entries sorted by name (duplicates, lookups)
} parity_safetensors_file;

parity_error *parity_safetensors_open(const char *path, parity_safetensors_file *out);
void parity_safetensors_close(parity_safetensors_file *file);

const parity_safetensors_entry *parity_safetensors_find(const parity_safetensors_file *file, const char *name);
// A non-owning CPU view of the entry's bytes (valid while the file is open). Safetensors data is
// little-endian and not necessarily aligned: views are aligned for their dtype or an error is returned.
parity_error *parity_safetensors_view(const parity_safetensors_file *file, const char *name, parity_tensor *out);
// An owning CPU copy converted to `dtype` (exact rounding), whatever the stored dtype.
parity_error *parity_safetensors_load(const parity_safetensors_file *file, const char *name, parity_dtype dtype,
                                      parity_tensor *out);

// Writes tensors (CPU) to `path` atomically (temporary file + rename). Names must be unique.
typedef struct parity_safetensors_item {
    const char *name;
    const parity_tensor *tensor;
} parity_safetensors_item;
parity_error *parity_safetensors_write(const char *path, const parity_safetensors_item *items, size_t count);

// "F64", "F32", "BF16", "F16", "I64", "I32", "U8"; NULL for dtypes the format cannot name.
const char *parity_safetensors_dtype_name(parity_dtype dtype);

#endif
