// safetensors.c: the validating safetensors reader and the atomic writer behind safetensors.h.
#include "models/checkpoint/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { HEADER_LIMIT = 100 * 1000 * 1000 };

static const struct {
    const char *name;
    parity_dtype dtype;
} safetensors_dtypes[] = {
    {"F64", PARITY_F64}, {"F32", PARITY_F32}, {"BF16", PARITY_BF16}, {"F16", PARITY_F16},
    {"I64", PARITY_I64}, {"I32", PARITY_I32}, {"U8", PARITY_U8},
};

const char *parity_safetensors_dtype_name(parity_dtype dtype) {
    for (size_t i = 0; i < sizeof safetensors_dtypes / sizeof safetensors_dtypes[0]; i++)
        if (safetensors_dtypes[i].dtype == dtype) return safetensors_dtypes[i].name;
    return NULL;
}

static int compare_by_begin(const void *a, const void *b) {
    const parity_safetensors_entry *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : 0;
}

static int compare_by_name(const void *a, const void *b) {
    const parity_safetensors_entry *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

static int compare_name_with_entry(const void *name, const void *entry) {
    return strcmp(name, (*(const parity_safetensors_entry *const *)entry)->name);
}

static parity_error *parse_entry(const char *path, const cJSON *item, parity_safetensors_entry *entry) {
    const char *name = item->string;
    if (!cJSON_IsObject(item)) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: tensor '%s': header entry is not an object", path, name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsString(dtype)) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: tensor '%s': missing or non-string dtype", path, name);
    bool known = false;
    for (size_t i = 0; i < sizeof safetensors_dtypes / sizeof safetensors_dtypes[0]; i++)
        if (strcmp(dtype->valuestring, safetensors_dtypes[i].name) == 0) {
            entry->dtype = safetensors_dtypes[i].dtype;
            known = true;
        }
    if (!known)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: tensor '%s': unsupported dtype '%s' (supported: F64 F32 BF16 F16 I64 I32 U8)",
                            path, name, dtype->valuestring);
    if (!cJSON_IsArray(shape)) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: tensor '%s': missing shape", path, name);
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > PARITY_MAX_DIMS) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: tensor '%s': rank %d exceeds %d", path, name, ndim, PARITY_MAX_DIMS);
    entry->ndim = ndim;
    for (int dim = 0; dim < ndim; dim++) {
        const cJSON *size = cJSON_GetArrayItem(shape, dim);
        // The range before the cast: converting a double outside int64's range is undefined.
        if (!cJSON_IsNumber(size) || size->valuedouble < 0 || size->valuedouble > 9e15 ||
            size->valuedouble != (double)(int64_t)size->valuedouble)
            return PARITY_ERROR(PARITY_ERROR_DATA, "%s: tensor '%s': shape[%d] is not a non-negative integer", path, name, dim);
        entry->shape[dim] = (int64_t)size->valuedouble;
    }
    // Elements and bytes as int64 (a tensor's numel and size), every product checked: a byte size
    // that wraps would otherwise match small data_offsets and fail later without the file's name.
    int64_t elements = 1, bytes = 0;
    bool too_large = false;
    for (int dim = 0; dim < ndim && !too_large; dim++) too_large = __builtin_mul_overflow(elements, entry->shape[dim], &elements);
    too_large = too_large || __builtin_mul_overflow(elements, (int64_t)parity_dtype_size(entry->dtype), &bytes);
    if (too_large) {
        char text[160] = "[";
        for (int dim = 0; dim < ndim; dim++)
            snprintf(text + strlen(text), sizeof text - strlen(text), "%s%lld", dim ? ", " : "", (long long)entry->shape[dim]);
        strncat(text, "]", sizeof text - strlen(text) - 1);
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: tensor '%s': shape %s of %s is more than 2^63 - 1 bytes", path, name,
                            text, dtype->valuestring);
    }
    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: tensor '%s': data_offsets must be [begin, end]", path, name);
    double begin = cJSON_GetArrayItem(offsets, 0)->valuedouble, end = cJSON_GetArrayItem(offsets, 1)->valuedouble;
    // As for shapes, the range (end < 2^64, so begin too) before the casts.
    if (!cJSON_IsNumber(cJSON_GetArrayItem(offsets, 0)) || !cJSON_IsNumber(cJSON_GetArrayItem(offsets, 1)) || begin < 0 ||
        end < begin || !(end < 0x1p64) || begin != (double)(uint64_t)begin || end != (double)(uint64_t)end)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: tensor '%s': data_offsets [%.0f, %.0f] are not ordered non-negative integers",
                            path, name, begin, end);
    entry->begin = (size_t)begin;
    entry->end = (size_t)end;
    if (entry->end - entry->begin != (size_t)bytes)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: tensor '%s': data_offsets cover %zu bytes, its %s shape needs %lld", path,
                            name, entry->end - entry->begin, dtype->valuestring, (long long)bytes);
    return NULL;
}

static parity_error *parse_header(parity_safetensors_file *file, const char *header, size_t length) {
    const char *path = file->path;
    const char *parse_end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(header, length, &parse_end, false);
    if (!root) {
        size_t at = parse_end ? (size_t)(parse_end - header) : 0;
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: header is not valid JSON (near byte %zu of %zu)", path, at, length);
    }
    parity_error *error = NULL;
    if (!cJSON_IsObject(root)) error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: header is not a JSON object", path);
    size_t capacity = (size_t)cJSON_GetArraySize(root);
    file->entries = calloc(capacity ? capacity : 1, sizeof *file->entries);
    if (!error && !file->entries) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: header of %zu entries", path, capacity);
    for (const cJSON *item = root->child; item && !error; item = item->next) {
        if (strcmp(item->string, "__metadata__") == 0) {
            if (!cJSON_IsObject(item)) error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: __metadata__ is not an object", path);
            for (const cJSON *field = item->child; field && !error; field = field->next)
                if (!cJSON_IsString(field))
                    error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: __metadata__ field '%s' is not a string", path, field->string);
            continue;
        }
        parity_safetensors_entry *entry = &file->entries[file->entry_count];
        error = parse_entry(path, item, entry);
        if (!error) {
            entry->name = strdup(item->string);
            if (!entry->name) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: copying a tensor name", path);
            else file->entry_count++;
        }
    }
    cJSON_Delete(root);
    if (error) return error;
    // Names sorted once: duplicates sit side by side, and parity_safetensors_find is a binary search
    // (a header of 40k tensors took 5 s when each name was compared with every earlier one).
    file->by_name = malloc((file->entry_count ? file->entry_count : 1) * sizeof *file->by_name);
    if (!file->by_name) return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: sorting %zu names", path, file->entry_count);
    for (size_t i = 0; i < file->entry_count; i++) file->by_name[i] = &file->entries[i];
    qsort(file->by_name, file->entry_count, sizeof *file->by_name, compare_by_name);
    for (size_t i = 1; i < file->entry_count; i++)
        if (strcmp(file->by_name[i]->name, file->by_name[i - 1]->name) == 0)
            return PARITY_ERROR(PARITY_ERROR_DATA, "%s: tensor '%s' appears twice in the header", path, file->by_name[i]->name);
    // The byte buffer must be tiled exactly by the tensors, in offset order.
    parity_safetensors_entry *sorted = malloc((file->entry_count ? file->entry_count : 1) * sizeof *sorted);
    if (!sorted) return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: sorting offsets", path);
    memcpy(sorted, file->entries, file->entry_count * sizeof *sorted);
    qsort(sorted, file->entry_count, sizeof *sorted, compare_by_begin);
    size_t cursor = 0;
    for (size_t i = 0; i < file->entry_count && !error; i++) {
        if (sorted[i].begin != cursor)
            error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: tensor '%s' starts at byte %zu, expected %zu (%s)", path, sorted[i].name,
                                 sorted[i].begin, cursor, sorted[i].begin > cursor ? "a hole in the data" : "overlapping tensors");
        cursor = sorted[i].end;
    }
    if (!error && cursor != file->data_size)
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: tensors cover %zu bytes but the file holds %zu data bytes (%s)", path, cursor,
                             file->data_size, cursor > file->data_size ? "truncated file" : "trailing bytes");
    free(sorted);
    return error;
}

parity_error *parity_safetensors_open(const char *path, parity_safetensors_file *out) {
    memset(out, 0, sizeof *out);
    out->path = strdup(path);
    if (!out->path) return PARITY_ERROR(PARITY_ERROR_MEMORY, "copying a path");
    int descriptor = open(path, O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) {
        parity_error *error = PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot open: %s", path, strerror(errno));
        parity_safetensors_close(out);
        return error;
    }
    struct stat status;
    parity_error *error = NULL;
    if (fstat(descriptor, &status) != 0) error = PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot stat: %s", path, strerror(errno));
    else if (status.st_size < 8)
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %lld bytes is too short for a safetensors file (needs an 8-byte header length)",
                             path, (long long)status.st_size);
    if (!error) {
        out->mapping_size = (size_t)status.st_size;
        out->mapping = mmap(NULL, out->mapping_size, PROT_READ, MAP_PRIVATE, descriptor, 0);
        if (out->mapping == MAP_FAILED) {
            out->mapping = NULL;
            error = PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot map: %s", path, strerror(errno));
        }
    }
    close(descriptor);
    if (!error) {
        const uint8_t *bytes = out->mapping;
        uint64_t header_length = 0;
        for (int i = 7; i >= 0; i--) header_length = header_length << 8 | bytes[i];
        if (header_length > HEADER_LIMIT)
            error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: header length %llu exceeds the format's 100 MB limit", path,
                                 (unsigned long long)header_length);
        else if (header_length > out->mapping_size - 8)
            error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: header length %llu runs past the end of the %zu-byte file (truncated?)",
                                 path, (unsigned long long)header_length, out->mapping_size);
        else {
            out->data = bytes + 8 + header_length;
            out->data_size = out->mapping_size - 8 - (size_t)header_length;
            error = parse_header(out, (const char *)bytes + 8, (size_t)header_length);
        }
    }
    if (error) parity_safetensors_close(out);
    return error;
}

void parity_safetensors_close(parity_safetensors_file *file) {
    if (!file) return;
    if (file->mapping) munmap(file->mapping, file->mapping_size);
    for (size_t i = 0; i < file->entry_count; i++) free(file->entries[i].name);
    free(file->entries);
    free(file->by_name);
    free(file->path);
    memset(file, 0, sizeof *file);
}

const parity_safetensors_entry *parity_safetensors_find(const parity_safetensors_file *file, const char *name) {
    if (!file->entry_count) return NULL;
    parity_safetensors_entry *const *found =
        bsearch(name, file->by_name, file->entry_count, sizeof *file->by_name, compare_name_with_entry);
    return found ? *found : NULL;
}

parity_error *parity_safetensors_view(const parity_safetensors_file *file, const char *name, parity_tensor *out) {
    const parity_safetensors_entry *entry = parity_safetensors_find(file, name);
    if (!entry) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: no tensor named '%s'", file->path, name);
    const uint8_t *pointer = file->data + entry->begin;
    if ((uintptr_t)pointer % parity_dtype_size(entry->dtype) != 0)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: tensor '%s' is not aligned for %s; load a copy instead", file->path, name,
                            parity_dtype_name(entry->dtype));
    *out = parity_tensor_wrap((void *)pointer, entry->dtype, PARITY_CPU, entry->ndim, entry->shape);
    return NULL;
}

parity_error *parity_safetensors_load(const parity_safetensors_file *file, const char *name, parity_dtype dtype,
                                      parity_tensor *out) {
    const parity_safetensors_entry *entry = parity_safetensors_find(file, name);
    if (!entry) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: no tensor named '%s'", file->path, name);
    parity_tensor stored;
    PARITY_TRY(parity_tensor_alloc(&stored, entry->dtype, PARITY_CPU, entry->ndim, entry->shape));
    memcpy(stored.data, file->data + entry->begin, entry->end - entry->begin); // copy: any alignment
    parity_error *error = NULL;
    if (dtype == entry->dtype) {
        *out = stored;
        return NULL;
    }
    if (parity_dtype_is_float(dtype) != parity_dtype_is_float(entry->dtype) && parity_dtype_is_float(entry->dtype))
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: tensor '%s' is %s, expected an integer dtype", file->path, name,
                             parity_safetensors_dtype_name(entry->dtype));
    if (!error) error = parity_tensor_to(out, &stored, PARITY_CPU, dtype);
    parity_tensor_release(&stored);
    return error;
}

static int compare_item_names(const void *a, const void *b) {
    const parity_safetensors_item *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

// USAGE error naming a name given twice (sorted, n log n).
static parity_error *check_unique_names(const char *path, const parity_safetensors_item *items, size_t count) {
    const parity_safetensors_item **sorted = malloc((count ? count : 1) * sizeof *sorted);
    if (!sorted) return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: sorting %zu tensor names", path, count);
    for (size_t i = 0; i < count; i++) sorted[i] = &items[i];
    qsort(sorted, count, sizeof *sorted, compare_item_names);
    parity_error *error = NULL;
    for (size_t i = 1; i < count && !error; i++)
        if (strcmp(sorted[i]->name, sorted[i - 1]->name) == 0)
            error = PARITY_ERROR(PARITY_ERROR_USAGE, "%s: tensor name '%s' given twice", path, sorted[i]->name);
    free(sorted);
    return error;
}

parity_error *parity_safetensors_write(const char *path, const parity_safetensors_item *items, size_t count) {
    PARITY_TRY(check_unique_names(path, items, count));
    cJSON *header = cJSON_CreateObject();
    if (!header) return PARITY_ERROR(PARITY_ERROR_MEMORY, "building a safetensors header");
    size_t offset = 0;
    parity_error *error = NULL;
    for (size_t i = 0; i < count && !error; i++) {
        const parity_tensor *tensor = items[i].tensor;
        const char *dtype = parity_safetensors_dtype_name(tensor->dtype);
        if (!dtype) error = PARITY_ERROR(PARITY_ERROR_USAGE, "%s: safetensors cannot store %s", path, parity_dtype_name(tensor->dtype));
        else if (tensor->device.type != PARITY_DEVICE_CPU || !parity_tensor_is_contiguous(tensor))
            error = PARITY_ERROR(PARITY_ERROR_USAGE, "%s: tensor '%s' must be a contiguous CPU tensor", path, items[i].name);
        if (error) break;
        cJSON *entry = cJSON_AddObjectToObject(header, items[i].name);
        cJSON_AddStringToObject(entry, "dtype", dtype);
        cJSON *shape = cJSON_AddArrayToObject(entry, "shape");
        for (int dim = 0; dim < tensor->ndim; dim++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)tensor->shape[dim]));
        cJSON *offsets = cJSON_AddArrayToObject(entry, "data_offsets");
        cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)offset));
        offset += parity_tensor_nbytes(tensor);
        cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)offset));
    }
    char *text = error ? NULL : cJSON_PrintUnformatted(header);
    cJSON_Delete(header);
    if (error) return error;
    if (!text) return PARITY_ERROR(PARITY_ERROR_MEMORY, "printing a safetensors header");
    size_t text_length = strlen(text), padded = (text_length + 7) / 8 * 8; // pad with spaces to 8-byte alignment
    char temporary[4096];
    snprintf(temporary, sizeof temporary, "%s.tmp.%ld", path, (long)getpid());
    FILE *stream = fopen(temporary, "wb");
    if (!stream) {
        free(text);
        return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot create: %s", temporary, strerror(errno));
    }
    uint8_t length_bytes[8];
    for (int i = 0; i < 8; i++) length_bytes[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    bool ok = fwrite(length_bytes, 1, 8, stream) == 8 && fwrite(text, 1, text_length, stream) == text_length;
    for (size_t i = text_length; ok && i < padded; i++) ok = fputc(' ', stream) != EOF;
    for (size_t i = 0; ok && i < count; i++)
        ok = fwrite(items[i].tensor->data, 1, parity_tensor_nbytes(items[i].tensor), stream) == parity_tensor_nbytes(items[i].tensor);
    ok = (fclose(stream) == 0) && ok;
    free(text);
    if (!ok || rename(temporary, path) != 0) {
        int saved_errno = errno;
        unlink(temporary);
        return PARITY_ERROR(PARITY_ERROR_IO, "%s: writing failed: %s", path, strerror(saved_errno));
    }
    return NULL;
}
