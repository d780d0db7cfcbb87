// golden_hdf5.c: typed HDF5 helpers behind golden_hdf5.h. Every HDF5 handle opened here is closed
// here, on success and on failure alike; every negative HDF5 return becomes a parity_error.
#include "golden/golden_hdf5.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- errors ----

void parity_hdf5_quiet_begin(parity_hdf5_quiet *saved) {
    saved->function = NULL;
    saved->data = NULL;
    H5Eget_auto2(H5E_DEFAULT, &saved->function, &saved->data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void parity_hdf5_quiet_end(const parity_hdf5_quiet *saved) { H5Eset_auto2(H5E_DEFAULT, saved->function, saved->data); }

// Walking upward, entry 0 is the most specific message (where HDF5 first saw the problem).
static herr_t keep_innermost(unsigned depth, const H5E_error2_t *entry, void *data) {
    char *message = data;
    if (depth == 0 && entry->desc) snprintf(message, 512, "%s", entry->desc);
    return 0;
}

parity_error *parity_hdf5_failure(parity_error_kind kind, const char *file, int line, const char *path,
                                  const char *call, const char *object) {
    char message[512] = "";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, keep_innermost, message);
    H5Eclear2(H5E_DEFAULT);
    // HDF5's messages may span lines ("time = ...\n, filename = ..."): keep ours on one line.
    size_t kept = 0;
    for (size_t i = 0; message[i]; i++) {
        char c = message[i] == '\n' || message[i] == '\t' ? ' ' : message[i];
        if (c == ' ' && (kept == 0 || message[kept - 1] == ' ')) continue;
        message[kept++] = c;
    }
    while (kept > 0 && message[kept - 1] == ' ') kept--;
    message[kept] = '\0';
    return parity_error_new(kind, file, line, "%s: %s(%s) failed%s%s", path, call, object, message[0] ? ": " : "", message);
}

const char *parity_hdf5_object_name(hid_t object, char *buffer, size_t size) {
    if (H5Iget_name(object, buffer, size) <= 0) snprintf(buffer, size, "?");
    return buffer;
}

// "/expected/parameter_names" for a link `name` under `location`.
static const char *link_name(hid_t location, const char *name, char *buffer, size_t size) {
    char parent[256];
    parity_hdf5_object_name(location, parent, sizeof parent);
    snprintf(buffer, size, "%s%s%s", parent, strcmp(parent, "/") == 0 ? "" : "/", name);
    return buffer;
}

// "attribute 'loss' of /expected"
static const char *attribute_name(hid_t location, const char *name, char *buffer, size_t size) {
    char parent[256];
    parity_hdf5_object_name(location, parent, sizeof parent);
    snprintf(buffer, size, "attribute '%s' of %s", name, parent);
    return buffer;
}

static void close_type(hid_t id) {
    if (id >= 0) H5Tclose(id);
}
static void close_space(hid_t id) {
    if (id >= 0) H5Sclose(id);
}
static void close_attribute(hid_t id) {
    if (id >= 0) H5Aclose(id);
}
static void close_dataset(hid_t id) {
    if (id >= 0) H5Dclose(id);
}

// A variable-length UTF-8 string type (caller closes it).
static hid_t variable_string_type(void) {
    hid_t type = H5Tcopy(H5T_C_S1);
    if (type < 0) return type;
    if (H5Tset_size(type, H5T_VARIABLE) < 0 || H5Tset_cset(type, H5T_CSET_UTF8) < 0) {
        H5Tclose(type);
        return -1;
    }
    return type;
}

// ---- writing ----

parity_error *parity_hdf5_create_group(hid_t location, const char *path, const char *name, bool track_order, hid_t *out) {
    char object[320];
    link_name(location, name, object, sizeof object);
    // attribute creation order tracked: a checksummed version-2 object header (see the header comment)
    hid_t properties = H5Pcreate(H5P_GROUP_CREATE);
    if (properties < 0 || H5Pset_attr_creation_order(properties, H5P_CRT_ORDER_TRACKED) < 0 ||
        (track_order && H5Pset_link_creation_order(properties, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0)) {
        parity_error *error = PARITY_HDF5_FAILURE(PARITY_ERROR_IO, path, "H5Pset_link_creation_order", object);
        if (properties >= 0) H5Pclose(properties);
        return error;
    }
    *out = H5Gcreate2(location, name, H5P_DEFAULT, properties, H5P_DEFAULT);
    // (take HDF5's message before another call clears its error stack)
    parity_error *error = *out < 0 ? PARITY_HDF5_FAILURE(PARITY_ERROR_IO, path, "H5Gcreate2", object) : NULL;
    H5Pclose(properties);
    return error;
}

// Creates a scalar attribute of `file_type` and writes `value` (in `memory_type`) into it.
static parity_error *write_scalar_attribute(hid_t location, const char *path, const char *name, hid_t file_type,
                                            hid_t memory_type, const void *value) {
    char object[320];
    attribute_name(location, name, object, sizeof object);
    hid_t space = H5Screate(H5S_SCALAR);
    if (space < 0) return PARITY_HDF5_FAILURE(PARITY_ERROR_IO, path, "H5Screate", object);
    hid_t attribute = H5Acreate2(location, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT);
    parity_error *error = NULL;
    if (attribute < 0) error = PARITY_HDF5_FAILURE(PARITY_ERROR_IO, path, "H5Acreate2", object);
    else if (H5Awrite(attribute, memory_type, value) < 0) error = PARITY_HDF5_FAILURE(PARITY_ERROR_IO, path, "H5Awrite", object);
    close_attribute(attribute);
    close_space(space);
    return error;
}

parity_error *parity_hdf5_write_string_attribute(hid_t location, const char *path, const char *name, const char *value) {
    hid_t type = variable_string_type();
    if (type < 0) return PARITY_HDF5_FAILURE(PARITY_ERROR_IO, path, "H5Tcopy", "string type");
    const char *pointer = value ? value : "";
    parity_error *error = write_scalar_attribute(location, path, name, type, type, &pointer);
    close_type(type);
    return error;
}

parity_error *parity_hdf5_write_int_attribute(hid_t location, const char *path, const char *name, int value) {
    return write_scalar_attribute(location, path, name, H5T_STD_I32LE, H5T_NATIVE_INT, &value);
}

parity_error *parity_hdf5_write_uint64_attribute(hid_t location, const char *path, const char *name, uint64_t value) {
    return write_scalar_attribute(location, path, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value);
}

parity_error *parity_hdf5_write_double_attribute(hid_t location, const char *path, const char *name, double value) {
    return write_scalar_attribute(location, path, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

// Dataset creation properties: a checksummed object header (attribute creation order tracked) and,
// for a non-empty array of a fixed-size type, one chunk holding all of it with fletcher32 (HDF5 1.10
// cannot filter variable-length strings, and a scalar or empty dataset cannot be chunked).
static hid_t checked_dataset_creation(hid_t file_type, hid_t space) {
    hid_t properties = H5Pcreate(H5P_DATASET_CREATE);
    if (properties < 0) return -1;
    bool ok = H5Pset_attr_creation_order(properties, H5P_CRT_ORDER_TRACKED) >= 0;
    htri_t variable = H5Tis_variable_str(file_type);
    int rank = H5Sget_simple_extent_ndims(space);
    ok = ok && variable >= 0 && rank >= 0;
    if (ok && !variable && rank > 0 && H5Sget_simple_extent_npoints(space) > 0) {
        hsize_t dims[H5S_MAX_RANK];
        ok = H5Sget_simple_extent_dims(space, dims, NULL) == rank && H5Pset_chunk(properties, rank, dims) >= 0 &&
             H5Pset_fletcher32(properties) >= 0;
    }
    if (!ok) {
        H5Pclose(properties);
        return -1;
    }
    return properties;
}

// Creates dataset `name` of `file_type` over `space` and writes `data` (in `memory_type`).
static parity_error *write_dataset(hid_t location, const char *path, const char *name, hid_t file_type, hid_t memory_type,
                                   hid_t space, const void *data, hid_t *out) {
    char object[320];
    link_name(location, name, object, sizeof object);
    hid_t properties = checked_dataset_creation(file_type, space);
    if (properties < 0) return PARITY_HDF5_FAILURE(PARITY_ERROR_IO, path, "H5Pset_fletcher32", object);
    hid_t dataset = H5Dcreate2(location, name, file_type, space, H5P_DEFAULT, properties, H5P_DEFAULT);
    H5Pclose(properties);
    if (dataset < 0) return PARITY_HDF5_FAILURE(PARITY_ERROR_IO, path, "H5Dcreate2", object);
    if (H5Dwrite(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
        parity_error *error = PARITY_HDF5_FAILURE(PARITY_ERROR_IO, path, "H5Dwrite", object);
        H5Dclose(dataset);
        return error;
    }
    if (out) *out = dataset;
    else H5Dclose(dataset);
    return NULL;
}

parity_error *parity_hdf5_write_string_dataset(hid_t location, const char *path, const char *name, const char *value) {
    hid_t type = variable_string_type();
    if (type < 0) return PARITY_HDF5_FAILURE(PARITY_ERROR_IO, path, "H5Tcopy", "string type");
    hid_t space = H5Screate(H5S_SCALAR);
    const char *pointer = value ? value : "";
    parity_error *error = space < 0 ? PARITY_HDF5_FAILURE(PARITY_ERROR_IO, path, "H5Screate", name)
                                    : write_dataset(location, path, name, type, type, space, &pointer, NULL);
    close_space(space);
    close_type(type);
    return error;
}

parity_error *parity_hdf5_write_string_list(hid_t location, const char *path, const char *name, const char *strings,
                                            size_t stride, size_t count) {
    const char **pointers = malloc((count ? count : 1) * sizeof *pointers);
    if (!pointers) return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: %zu string pointers for %s", path, count, name);
    for (size_t i = 0; i < count; i++) pointers[i] = strings + i * stride;
    hid_t type = variable_string_type();
    hsize_t dims[1] = {count};
    hid_t space = H5Screate_simple(1, dims, NULL);
    parity_error *error = NULL;
    if (type < 0 || space < 0) error = PARITY_HDF5_FAILURE(PARITY_ERROR_IO, path, type < 0 ? "H5Tcopy" : "H5Screate_simple", name);
    else error = write_dataset(location, path, name, type, type, space, pointers, NULL);
    close_space(space);
    close_type(type);
    free(pointers);
    return error;
}

// The file and memory HDF5 types of a parity dtype; false for dtypes the golden cannot hold.
static bool hdf5_types_of(parity_dtype dtype, hid_t *file_type, hid_t *memory_type) {
    switch (dtype) {
    case PARITY_F64: *file_type = H5T_IEEE_F64LE, *memory_type = H5T_NATIVE_DOUBLE; return true;
    case PARITY_F32: *file_type = H5T_IEEE_F32LE, *memory_type = H5T_NATIVE_FLOAT; return true;
    case PARITY_BF16:
    case PARITY_F16: *file_type = H5T_STD_U16LE, *memory_type = H5T_NATIVE_UINT16; return true;
    case PARITY_I64: *file_type = H5T_STD_I64LE, *memory_type = H5T_NATIVE_INT64; return true;
    case PARITY_I32: *file_type = H5T_STD_I32LE, *memory_type = H5T_NATIVE_INT32; return true;
    case PARITY_U8: *file_type = H5T_STD_U8LE, *memory_type = H5T_NATIVE_UINT8; return true;
    default: return false;
    }
}

parity_error *parity_hdf5_write_tensor(hid_t location, const char *path, const char *name, const parity_tensor *tensor) {
    char object[320];
    link_name(location, name, object, sizeof object);
    hid_t file_type, memory_type;
    if (!hdf5_types_of(tensor->dtype, &file_type, &memory_type))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "%s: %s: cannot store dtype %s", path, object, parity_dtype_name(tensor->dtype));
    if (tensor->device.type != PARITY_DEVICE_CPU || !parity_tensor_is_contiguous(tensor) || (tensor->numel > 0 && !tensor->data))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "%s: %s: the tensor must be a contiguous CPU tensor with data", path, object);
    hsize_t dims[PARITY_MAX_DIMS];
    for (int dim = 0; dim < tensor->ndim; dim++) dims[dim] = (hsize_t)tensor->shape[dim];
    hid_t space = tensor->ndim == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(tensor->ndim, dims, NULL);
    if (space < 0) return PARITY_HDF5_FAILURE(PARITY_ERROR_IO, path, "H5Screate_simple", object);
    hid_t dataset = -1;
    parity_error *error = write_dataset(location, path, name, file_type, memory_type, space, tensor->data, &dataset);
    close_space(space);
    if (!error) error = parity_hdf5_write_string_attribute(dataset, path, "dtype", parity_dtype_name(tensor->dtype));
    close_dataset(dataset);
    return error;
}

// ---- reading ----

parity_error *parity_hdf5_has_link(hid_t location, const char *path, const char *name, bool *out) {
    htri_t exists = H5Lexists(location, name, H5P_DEFAULT);
    if (exists < 0) {
        char object[320];
        return PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Lexists", link_name(location, name, object, sizeof object));
    }
    *out = exists > 0;
    return NULL;
}

parity_error *parity_hdf5_has_attribute(hid_t location, const char *path, const char *name, bool *out) {
    htri_t exists = H5Aexists(location, name);
    if (exists < 0) {
        char object[320];
        return PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Aexists", attribute_name(location, name, object, sizeof object));
    }
    *out = exists > 0;
    return NULL;
}

// Whether the link is there and an object of `type`; a missing one is "<kind> /x is missing".
static parity_error *require_object(hid_t location, const char *path, const char *name, H5O_type_t type) {
    char object[320];
    link_name(location, name, object, sizeof object);
    const char *kind = type == H5O_TYPE_GROUP ? "group" : "dataset";
    bool exists = false;
    PARITY_TRY(parity_hdf5_has_link(location, path, name, &exists));
    if (!exists) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s %s is missing", path, kind, object);
    H5O_info_t info;
    if (H5Oget_info_by_name(location, name, &info, H5P_DEFAULT) < 0)
        return PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Oget_info_by_name", object);
    if (info.type != type) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s is not a %s", path, object, kind);
    return NULL;
}

parity_error *parity_hdf5_open_group(hid_t location, const char *path, const char *name, hid_t *out) {
    PARITY_TRY(require_object(location, path, name, H5O_TYPE_GROUP));
    *out = H5Gopen2(location, name, H5P_DEFAULT);
    if (*out < 0) {
        char object[320];
        return PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Gopen2", link_name(location, name, object, sizeof object));
    }
    return NULL;
}

// Opens attribute `name`, checks it holds exactly one element of `type_class`; returns the
// attribute and its file type (the caller closes both).
static parity_error *open_scalar_attribute(hid_t location, const char *path, const char *name, H5T_class_t type_class,
                                           hid_t *attribute, hid_t *type) {
    char object[320];
    attribute_name(location, name, object, sizeof object);
    bool exists = false;
    PARITY_TRY(parity_hdf5_has_attribute(location, path, name, &exists));
    if (!exists) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s is missing", path, object);
    *attribute = H5Aopen(location, name, H5P_DEFAULT);
    if (*attribute < 0) return PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Aopen", object);
    *type = H5Aget_type(*attribute);
    hid_t space = H5Aget_space(*attribute);
    parity_error *error = NULL;
    if (*type < 0 || space < 0) error = PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Aget_type", object);
    else if (H5Tget_class(*type) != type_class) {
        static const char *class_names[] = {[H5T_INTEGER] = "an integer", [H5T_FLOAT] = "a float", [H5T_STRING] = "a string"};
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s must be %s", path, object, class_names[type_class]);
    } else if (H5Sget_simple_extent_npoints(space) != 1)
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s must hold one value, it holds %lld", path, object,
                             (long long)H5Sget_simple_extent_npoints(space));
    close_space(space);
    if (error) {
        close_type(*type);
        close_attribute(*attribute);
        *type = *attribute = -1;
    }
    return error;
}

// Reads one string of file type `type` from `attribute` (an attribute when is_attribute, else a
// dataset) into a malloc'ed string.
static parity_error *read_one_string(hid_t object_id, bool is_attribute, hid_t type, const char *path, const char *object,
                                     char **out) {
    *out = NULL;
    htri_t variable = H5Tis_variable_str(type);
    if (variable < 0) return PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Tis_variable_str", object);
    hid_t memory_type = H5Tcopy(H5T_C_S1);
    if (memory_type < 0) return PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Tcopy", object);
    size_t stored_size = variable ? 0 : H5Tget_size(type);
    herr_t status = variable ? H5Tset_size(memory_type, H5T_VARIABLE) : H5Tset_size(memory_type, stored_size + 1);
    if (status >= 0) status = H5Tset_cset(memory_type, H5Tget_cset(type));
    if (status >= 0 && !variable) status = H5Tset_strpad(memory_type, H5T_STR_NULLTERM);
    if (status < 0) {
        parity_error *error = PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Tset_size", object);
        H5Tclose(memory_type);
        return error;
    }
    const char *call = is_attribute ? "H5Aread" : "H5Dread";
    parity_error *error = NULL;
    if (variable) {
        char *value = NULL;
        status = is_attribute ? H5Aread(object_id, memory_type, &value)
                              : H5Dread(object_id, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value);
        if (status < 0) error = PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, call, object);
        else if (!(*out = strdup(value ? value : ""))) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: copying %s", path, object);
        if (value) H5free_memory(value);
    } else {
        char *value = calloc(stored_size + 1, 1);
        if (!value) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: %zu bytes for %s", path, stored_size + 1, object);
        else {
            status = is_attribute ? H5Aread(object_id, memory_type, value)
                                  : H5Dread(object_id, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, value);
            if (status < 0) {
                error = PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, call, object);
                free(value);
            } else {
                value[stored_size] = '\0';
                *out = value;
            }
        }
    }
    H5Tclose(memory_type);
    return error;
}

parity_error *parity_hdf5_read_string_attribute(hid_t location, const char *path, const char *name, char *out, size_t size) {
    char object[320];
    attribute_name(location, name, object, sizeof object);
    hid_t attribute = -1, type = -1;
    PARITY_TRY(open_scalar_attribute(location, path, name, H5T_STRING, &attribute, &type));
    char *value = NULL;
    parity_error *error = read_one_string(attribute, true, type, path, object, &value);
    if (!error && strlen(value) >= size)
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s is %zu bytes long, at most %zu fit", path, object, strlen(value), size - 1);
    if (!error) memcpy(out, value, strlen(value) + 1);
    free(value);
    close_type(type);
    close_attribute(attribute);
    return error;
}

// Reads a one-element numeric attribute of `type_class` as `memory_type` into `out`.
static parity_error *read_numeric_attribute(hid_t location, const char *path, const char *name, H5T_class_t type_class,
                                            hid_t memory_type, void *out, bool *is_signed) {
    char object[320];
    attribute_name(location, name, object, sizeof object);
    hid_t attribute = -1, type = -1;
    PARITY_TRY(open_scalar_attribute(location, path, name, type_class, &attribute, &type));
    if (is_signed) *is_signed = H5Tget_sign(type) == H5T_SGN_2;
    parity_error *error = NULL;
    if (H5Aread(attribute, memory_type, out) < 0) error = PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Aread", object);
    close_type(type);
    close_attribute(attribute);
    return error;
}

parity_error *parity_hdf5_read_int_attribute(hid_t location, const char *path, const char *name, int *out) {
    int64_t value = 0;
    PARITY_TRY(read_numeric_attribute(location, path, name, H5T_INTEGER, H5T_NATIVE_INT64, &value, NULL));
    if (value < INT32_MIN || value > INT32_MAX) {
        char object[320];
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s = %lld is out of range", path,
                            attribute_name(location, name, object, sizeof object), (long long)value);
    }
    *out = (int)value;
    return NULL;
}

parity_error *parity_hdf5_read_uint64_attribute(hid_t location, const char *path, const char *name, uint64_t *out) {
    // Read through int64 when the file type is signed, so that a negative value is seen, not clamped.
    bool is_signed = false;
    uint64_t value = 0;
    PARITY_TRY(read_numeric_attribute(location, path, name, H5T_INTEGER, H5T_NATIVE_UINT64, &value, &is_signed));
    if (is_signed) {
        int64_t signed_value = 0;
        PARITY_TRY(read_numeric_attribute(location, path, name, H5T_INTEGER, H5T_NATIVE_INT64, &signed_value, NULL));
        if (signed_value < 0) {
            char object[320];
            return PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s = %lld must not be negative", path,
                                attribute_name(location, name, object, sizeof object), (long long)signed_value);
        }
        value = (uint64_t)signed_value;
    }
    *out = value;
    return NULL;
}

parity_error *parity_hdf5_read_double_attribute(hid_t location, const char *path, const char *name, double *out) {
    return read_numeric_attribute(location, path, name, H5T_FLOAT, H5T_NATIVE_DOUBLE, out, NULL);
}

// Opens dataset `name` and returns it with its file type and space (the caller closes all three).
static parity_error *open_dataset(hid_t location, const char *path, const char *name, hid_t *dataset, hid_t *type, hid_t *space) {
    char object[320];
    link_name(location, name, object, sizeof object);
    *dataset = *type = *space = -1;
    PARITY_TRY(require_object(location, path, name, H5O_TYPE_DATASET));
    *dataset = H5Dopen2(location, name, H5P_DEFAULT);
    if (*dataset < 0) return PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Dopen2", object);
    *type = H5Dget_type(*dataset);
    *space = H5Dget_space(*dataset);
    if (*type >= 0 && *space >= 0) return NULL;
    parity_error *error = PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, *type < 0 ? "H5Dget_type" : "H5Dget_space", object);
    close_space(*space);
    close_type(*type);
    close_dataset(*dataset);
    *dataset = *type = *space = -1;
    return error;
}

parity_error *parity_hdf5_read_string_dataset(hid_t location, const char *path, const char *name, char **out) {
    char object[320];
    link_name(location, name, object, sizeof object);
    hid_t dataset, type, space;
    PARITY_TRY(open_dataset(location, path, name, &dataset, &type, &space));
    parity_error *error = NULL;
    if (H5Tget_class(type) != H5T_STRING) error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s must be a string", path, object);
    else if (H5Sget_simple_extent_npoints(space) != 1)
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s must hold one string", path, object);
    else error = read_one_string(dataset, false, type, path, object, out);
    close_space(space);
    close_type(type);
    close_dataset(dataset);
    return error;
}

parity_error *parity_hdf5_read_string_list(hid_t location, const char *path, const char *name, size_t width, char **out,
                                           size_t *count) {
    char object[320];
    link_name(location, name, object, sizeof object);
    *out = NULL;
    *count = 0;
    hid_t dataset, type, space;
    PARITY_TRY(open_dataset(location, path, name, &dataset, &type, &space));
    parity_error *error = NULL;
    hid_t memory_type = -1;
    char **pointers = NULL; // variable-length strings
    char *fixed = NULL;     // fixed-length strings, stored_size + 1 bytes each
    size_t length = 0, stored_size = 0;
    htri_t variable = -1;
    if (H5Tget_class(type) != H5T_STRING) error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s must hold strings", path, object);
    else if (H5Sget_simple_extent_ndims(space) != 1)
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s must be 1-D, it has rank %d", path, object, H5Sget_simple_extent_ndims(space));
    else if ((variable = H5Tis_variable_str(type)) < 0) error = PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Tis_variable_str", object);
    if (!error) {
        length = (size_t)H5Sget_simple_extent_npoints(space);
        stored_size = variable ? 0 : H5Tget_size(type);
        memory_type = H5Tcopy(H5T_C_S1);
        herr_t status = memory_type < 0 ? -1 : H5Tset_size(memory_type, variable ? H5T_VARIABLE : stored_size + 1);
        if (status >= 0) status = H5Tset_cset(memory_type, H5Tget_cset(type));
        if (status >= 0 && !variable) status = H5Tset_strpad(memory_type, H5T_STR_NULLTERM);
        if (status < 0) error = PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Tset_size", object);
    }
    if (!error) {
        *out = calloc(length ? length : 1, width);
        if (variable) pointers = calloc(length ? length : 1, sizeof *pointers);
        else fixed = calloc(length ? length : 1, stored_size + 1);
        if (!*out || (variable ? !pointers : !fixed))
            error = PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: %zu strings of %s", path, length, object);
    }
    if (!error && H5Dread(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, variable ? (void *)pointers : (void *)fixed) < 0)
        error = PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Dread", object);
    else if (!error) {
        for (size_t i = 0; i < length && !error; i++) {
            const char *value = variable ? (pointers[i] ? pointers[i] : "") : fixed + i * (stored_size + 1);
            size_t value_length = variable ? strlen(value) : strnlen(value, stored_size);
            if (value_length >= width)
                error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s[%zu] is %zu bytes long, at most %zu fit", path, object, i,
                                     value_length, width - 1);
            else memcpy(*out + i * width, value, value_length);
        }
        if (variable) {
#if H5_VERSION_GE(1, 12, 0)
            H5Treclaim(memory_type, space, H5P_DEFAULT, pointers);
#else
            H5Dvlen_reclaim(memory_type, space, H5P_DEFAULT, pointers);
#endif
        }
    }
    free(pointers);
    free(fixed);
    close_type(memory_type);
    close_space(space);
    close_type(type);
    close_dataset(dataset);
    if (error) {
        free(*out);
        *out = NULL;
    } else *count = length;
    return error;
}

// The parity dtype of a stored dataset: its HDF5 type, refined by its "dtype" attribute (which
// must agree with the type when present, and must be there for uint16 data).
static parity_error *stored_dtype(hid_t dataset, hid_t type, const char *path, const char *object, parity_dtype *out) {
    bool has_attribute = false;
    PARITY_TRY(parity_hdf5_has_attribute(dataset, path, "dtype", &has_attribute));
    char named[32] = "";
    if (has_attribute) PARITY_TRY(parity_hdf5_read_string_attribute(dataset, path, "dtype", named, sizeof named));
    H5T_class_t type_class = H5Tget_class(type);
    size_t size = H5Tget_size(type);
    bool is_signed = type_class == H5T_INTEGER && H5Tget_sign(type) == H5T_SGN_2;
    bool found = true;
    if (type_class == H5T_FLOAT && size == 8) *out = PARITY_F64;
    else if (type_class == H5T_FLOAT && size == 4) *out = PARITY_F32;
    else if (type_class == H5T_INTEGER && is_signed && size == 8) *out = PARITY_I64;
    else if (type_class == H5T_INTEGER && is_signed && size == 4) *out = PARITY_I32;
    else if (type_class == H5T_INTEGER && !is_signed && size == 1) *out = PARITY_U8;
    else if (type_class == H5T_INTEGER && !is_signed && size == 2) {
        if (strcmp(named, "bf16") == 0) *out = PARITY_BF16;
        else if (strcmp(named, "fp16") == 0) *out = PARITY_F16;
        else
            return PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s holds uint16 data but its dtype attribute is %s%s%s (expected \"bf16\" or \"fp16\")",
                                path, object, has_attribute ? "\"" : "missing", named, has_attribute ? "\"" : "");
    } else found = false;
    if (!found)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s has an unsupported HDF5 type (class %d, %zu bytes)", path, object,
                            (int)type_class, size);
    if (has_attribute && strcmp(named, parity_dtype_name(*out)) != 0)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s says dtype \"%s\" but holds %s data", path, object, named,
                            parity_dtype_name(*out));
    return NULL;
}

parity_error *parity_hdf5_read_tensor(hid_t location, const char *path, const char *name, int rank, parity_tensor *out) {
    char object[320];
    link_name(location, name, object, sizeof object);
    memset(out, 0, sizeof *out);
    hid_t dataset, type, space;
    PARITY_TRY(open_dataset(location, path, name, &dataset, &type, &space));
    parity_dtype dtype = PARITY_F64;
    int ndim = H5Sget_simple_extent_ndims(space);
    hsize_t dims[PARITY_MAX_DIMS];
    int64_t shape[PARITY_MAX_DIMS];
    hid_t file_type, memory_type;
    parity_error *error = NULL;
    if (ndim < 0) error = PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Sget_simple_extent_ndims", object);
    else if (rank >= 0 && ndim != rank)
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s must have rank %d, it has rank %d", path, object, rank, ndim);
    else if (ndim > PARITY_MAX_DIMS)
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s has rank %d, at most %d is supported", path, object, ndim, PARITY_MAX_DIMS);
    else if (H5Sget_simple_extent_dims(space, dims, NULL) < 0)
        error = PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Sget_simple_extent_dims", object);
    else error = stored_dtype(dataset, type, path, object, &dtype);
    if (!error) {
        for (int dim = 0; dim < ndim; dim++) shape[dim] = (int64_t)dims[dim];
        hdf5_types_of(dtype, &file_type, &memory_type);
        error = parity_tensor_alloc(out, dtype, PARITY_CPU, ndim, shape);
        if (error) error = parity_error_wrap(error, __FILE__, __LINE__, "%s: reading %s", path, object);
    }
    if (!error && out->numel > 0 && H5Dread(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out->data) < 0) {
        error = PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Dread", object);
        parity_tensor_release(out);
    }
    close_space(space);
    close_type(type);
    close_dataset(dataset);
    return error;
}
