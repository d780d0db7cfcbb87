// golden.c: reads and writes the eager fp64 golden (golden.h) as a sealed HDF5 file. The layout,
// schema version 3 (docs/golden-format.md says the same with examples):
//
//   bytes [0, 512)          the seal (golden_seal.h): signature, format, payload length, SHA-256 of
//                           the bytes after it. HDF5 sees it as the file's user block.
//   /                       attributes
//       schema_version      int32, = PARITY_GOLDEN_SCHEMA_VERSION
//       git_sha, created, host, device, compiler, libraries, command      provenance, strings
//       migrated            string, only in a golden converted from an older schema
//       suite, model, case, model_type                                    what was run, strings
//       weight_source, weight_sha256, batch_source, batch_sha256          inputs, strings (sha256: 64 hex)
//       weight_seed         uint64
//   /model/config_json      scalar string dataset: the model's config.json text
//   /batch/input_ids        int64 (B, T)
//   /batch/labels           int64 (B, T)
//   /batch/position_ids     int64 (B, T); absent when the batch has none (plain, unpacked rows)
//   /expected               group: eager in fp64. Attributes loss, aux_loss (absent without an
//                           aux loss), grad_norm, logits_sum (float64; logits_sum may be NaN = not
//                           computed), loss_input_grad_norm (absent when the model exposes no loss
//                           input). Datasets parameter_names (1-D strings, HF names),
//                           parameter_grad_norms (float64, same length), parameter_grad_sketches
//                           (float64 (P, PARITY_SKETCH_K): each gradient's sketch, ops/core/sketch.h),
//                           loss_input_grad_sketch (float64 (PARITY_SKETCH_K), with
//                           loss_input_grad_norm), optional logits_sample.
//   /eager/<dtype>          one group per lower precision ("fp32", "bf16"), in creation order,
//                           with the layout of /expected holding eager's own values in that dtype.
//
// Strings are written as variable-length UTF-8 and read in either variable- or fixed-length form.
// Every tensor dataset carries a "dtype" attribute; bf16 tensors are uint16 bit patterns with
// dtype = "bf16" (golden_hdf5.h). Numeric datasets are chunked with fletcher32 and every object
// header is checksummed (golden_hdf5.h), so libhdf5 checks them too, for any reader.
//
// The file is built in memory and sealed before it is written (to a temporary file beside it,
// renamed into place: parity_write_file_atomic, ops/core/file.h). Reading takes the whole file,
// checks the seal, and only then hands the checked bytes (never the path) to libhdf5; it checks
// all of it and names the file and the first item that is missing or wrong. Older schemas (1: no
// seal; 2: no sketches) are refused with "regenerate" (golden_migrate.h).
#include "golden/golden.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "golden/golden_hdf5.h"
#include "golden/golden_seal.h"
#include "golden/sha256.h"
#include "ops/core/file.h"

#define NAME_WIDTH PARITY_STEP_NAME_SIZE
#define COUNT_OF(array) (sizeof(array) / sizeof((array)[0]))

// The root's string attributes and where they live in the struct (every one must be non-empty).
typedef struct string_field {
    const char *name;
    size_t offset, size;
} string_field;

#define STRING_FIELD(attribute, member) {attribute, offsetof(parity_golden, member), sizeof(((parity_golden *)0)->member)}
static const string_field string_fields[] = {
    STRING_FIELD("git_sha", git_sha),
    STRING_FIELD("created", created),
    STRING_FIELD("host", host),
    STRING_FIELD("device", device),
    STRING_FIELD("compiler", compiler),
    STRING_FIELD("libraries", libraries),
    STRING_FIELD("command", command),
    STRING_FIELD("suite", suite),
    STRING_FIELD("model", model),
    STRING_FIELD("case", case_name),
    STRING_FIELD("model_type", model_type),
    STRING_FIELD("weight_source", weight_source),
    STRING_FIELD("weight_sha256", weight_sha256),
    STRING_FIELD("batch_source", batch_source),
    STRING_FIELD("batch_sha256", batch_sha256),
};

static bool tensor_present(const parity_tensor *tensor) { return tensor->ndim > 0 && tensor->numel > 0; }

void parity_golden_release(parity_golden *golden) {
    if (!golden) return;
    free(golden->model_config_json);
    parity_tensor_release(&golden->input_ids);
    parity_tensor_release(&golden->labels);
    parity_tensor_release(&golden->position_ids);
    parity_step_result_release(&golden->expected);
    for (size_t i = 0; i < COUNT_OF(golden->precisions); i++) parity_step_result_release(&golden->precisions[i].eager);
    memset(golden, 0, sizeof *golden);
}

const parity_step_result *parity_golden_eager(const parity_golden *golden, const char *dtype) {
    for (size_t i = 0; i < golden->precision_count && i < COUNT_OF(golden->precisions); i++)
        if (strcmp(golden->precisions[i].dtype, dtype) == 0) return &golden->precisions[i].eager;
    return NULL;
}

// ---- checks shared by writing (kind USAGE: the caller's golden is wrong) and reading (DATA) ----

// `where` is "/expected" or "/eager/bf16"; `reference` is /expected's values when checking a precision.
static parity_error *check_values(parity_error_kind kind, const char *path, const char *where, const parity_step_result *values,
                                  const parity_step_result *reference) {
    if (values->parameter_count == 0 || !values->parameter_names || !values->parameter_grad_norms)
        return PARITY_ERROR(kind, "%s: %s: no parameter gradient norms", path, where);
    if (!values->parameter_grad_sketches) return PARITY_ERROR(kind, "%s: %s: no parameter gradient sketches", path, where);
    if (!isfinite(values->loss)) return PARITY_ERROR(kind, "%s: %s: loss is %g, must be finite", path, where, values->loss);
    if (!isfinite(values->grad_norm))
        return PARITY_ERROR(kind, "%s: %s: grad_norm is %g, must be finite", path, where, values->grad_norm);
    if (values->has_aux_loss && !isfinite(values->aux_loss))
        return PARITY_ERROR(kind, "%s: %s: aux_loss is %g, must be finite", path, where, values->aux_loss);
    if (isinf(values->logits_sum)) return PARITY_ERROR(kind, "%s: %s: logits_sum is infinite (NaN means not computed)", path, where);
    for (size_t i = 0; i < values->parameter_count; i++) {
        const char *name = values->parameter_names[i];
        if (!memchr(name, '\0', NAME_WIDTH) || name[0] == '\0')
            return PARITY_ERROR(kind, "%s: %s: parameter_names[%zu] is empty or not terminated", path, where, i);
        double norm = values->parameter_grad_norms[i];
        if (!isfinite(norm) || norm < 0)
            return PARITY_ERROR(kind, "%s: %s: parameter_grad_norms[%zu] (%s) is %g, must be finite and >= 0", path, where, i, name, norm);
        for (int j = 0; j < PARITY_SKETCH_K; j++)
            if (!isfinite(values->parameter_grad_sketches[i * PARITY_SKETCH_K + j]))
                return PARITY_ERROR(kind, "%s: %s: parameter_grad_sketches[%zu][%d] (%s) is %g, must be finite", path, where, i, j,
                                    name, values->parameter_grad_sketches[i * PARITY_SKETCH_K + j]);
    }
    if (values->has_loss_input) {
        if (!isfinite(values->loss_input_grad_norm) || values->loss_input_grad_norm < 0)
            return PARITY_ERROR(kind, "%s: %s: loss_input_grad_norm is %g, must be finite and >= 0", path, where,
                                values->loss_input_grad_norm);
        for (int j = 0; j < PARITY_SKETCH_K; j++)
            if (!isfinite(values->loss_input_grad_sketch[j]))
                return PARITY_ERROR(kind, "%s: %s: loss_input_grad_sketch[%d] is %g, must be finite", path, where, j,
                                    values->loss_input_grad_sketch[j]);
    }
    if (tensor_present(&values->logits) && !parity_dtype_is_float(values->logits.dtype))
        return PARITY_ERROR(kind, "%s: %s: logits_sample is %s, must be a float dtype", path, where,
                            parity_dtype_name(values->logits.dtype));
    if (!reference) return NULL;
    if (values->has_aux_loss != reference->has_aux_loss)
        return PARITY_ERROR(kind, "%s: %s: aux_loss is %s but /expected %s one", path, where,
                            values->has_aux_loss ? "present" : "absent", reference->has_aux_loss ? "has" : "has no");
    if (values->has_loss_input != reference->has_loss_input)
        return PARITY_ERROR(kind, "%s: %s: the loss input's gradient is %s but /expected %s one", path, where,
                            values->has_loss_input ? "present" : "absent", reference->has_loss_input ? "has" : "has no");
    if (values->parameter_count != reference->parameter_count)
        return PARITY_ERROR(kind, "%s: %s: %zu parameter norms, /expected has %zu", path, where, values->parameter_count,
                            reference->parameter_count);
    for (size_t i = 0; i < values->parameter_count; i++)
        if (strcmp(values->parameter_names[i], reference->parameter_names[i]) != 0)
            return PARITY_ERROR(kind, "%s: %s: parameter_names[%zu] is '%s', /expected has '%s'", path, where, i,
                                values->parameter_names[i], reference->parameter_names[i]);
    return NULL;
}

static parity_error *check_golden(parity_error_kind kind, const char *path, const parity_golden *golden) {
    for (size_t i = 0; i < COUNT_OF(string_fields); i++) {
        const string_field *field = &string_fields[i];
        const char *value = (const char *)golden + field->offset;
        if (!memchr(value, '\0', field->size)) return PARITY_ERROR(kind, "%s: %s is not NUL-terminated", path, field->name);
        if (value[0] == '\0') return PARITY_ERROR(kind, "%s: %s is empty", path, field->name);
    }
    if (!memchr(golden->migrated, '\0', sizeof golden->migrated)) return PARITY_ERROR(kind, "%s: migrated is not NUL-terminated", path);
    if (!parity_sha256_is_hex(golden->weight_sha256))
        return PARITY_ERROR(kind, "%s: weight_sha256 '%.64s' is not 64 lowercase hex digits", path, golden->weight_sha256);
    if (!parity_sha256_is_hex(golden->batch_sha256))
        return PARITY_ERROR(kind, "%s: batch_sha256 '%.64s' is not 64 lowercase hex digits", path, golden->batch_sha256);
    if (!golden->model_config_json) return PARITY_ERROR(kind, "%s: the model config (config_json) is missing", path);
    cJSON *config = cJSON_Parse(golden->model_config_json);
    bool config_ok = cJSON_IsObject(config);
    cJSON_Delete(config);
    if (!config_ok) return PARITY_ERROR(kind, "%s: /model/config_json is not a JSON object", path);

    const parity_tensor *input_ids = &golden->input_ids;
    char shape[64], other[64];
    if (input_ids->ndim != 2 || input_ids->numel == 0 || parity_dtype_is_float(input_ids->dtype))
        return PARITY_ERROR(kind, "%s: /batch/input_ids must be a non-empty 2-D integer tensor (B, T), it is %s", path,
                            parity_tensor_describe(input_ids, shape, sizeof shape));
    const parity_tensor *others[] = {&golden->labels, &golden->position_ids};
    const char *other_names[] = {"labels", "position_ids"};
    for (int i = 0; i < 2; i++) {
        if (i == 1 && !tensor_present(others[i])) continue;
        if (!parity_tensor_same_shape(others[i], input_ids) || parity_dtype_is_float(others[i]->dtype))
            return PARITY_ERROR(kind, "%s: /batch/%s is %s, must be integers shaped like input_ids %s", path, other_names[i],
                                parity_tensor_describe(others[i], other, sizeof other),
                                parity_tensor_shape_string(input_ids, shape, sizeof shape));
    }

    PARITY_TRY(check_values(kind, path, "/expected", &golden->expected, NULL));
    if (golden->precision_count > COUNT_OF(golden->precisions))
        return PARITY_ERROR(kind, "%s: %zu eager precisions, at most %zu", path, golden->precision_count, COUNT_OF(golden->precisions));
    for (size_t i = 0; i < golden->precision_count; i++) {
        const parity_golden_precision *precision = &golden->precisions[i];
        parity_dtype dtype;
        if (!memchr(precision->dtype, '\0', sizeof precision->dtype) || !parity_dtype_parse(precision->dtype, &dtype) ||
            !parity_dtype_is_float(dtype) || dtype == PARITY_F64 || strcmp(parity_dtype_name(dtype), precision->dtype) != 0)
            return PARITY_ERROR(kind, "%s: eager precision %zu is '%.15s'; expected a lower float precision named like \"fp32\" or \"bf16\"",
                                path, i, precision->dtype);
        for (size_t j = 0; j < i; j++)
            if (strcmp(golden->precisions[j].dtype, precision->dtype) == 0)
                return PARITY_ERROR(kind, "%s: eager precision '%s' given twice", path, precision->dtype);
        char where[48];
        snprintf(where, sizeof where, "/eager/%s", precision->dtype);
        PARITY_TRY(check_values(kind, path, where, &precision->eager, &golden->expected));
    }
    return NULL;
}

// ---- writing ----

static parity_error *write_values(hid_t parent, const char *path, const char *name, const parity_step_result *values) {
    hid_t group = -1;
    PARITY_TRY(parity_hdf5_create_group(parent, path, name, false, &group));
    parity_error *error = parity_hdf5_write_double_attribute(group, path, "loss", values->loss);
    if (!error && values->has_aux_loss) error = parity_hdf5_write_double_attribute(group, path, "aux_loss", values->aux_loss);
    if (!error) error = parity_hdf5_write_double_attribute(group, path, "grad_norm", values->grad_norm);
    if (!error) error = parity_hdf5_write_double_attribute(group, path, "logits_sum", values->logits_sum);
    if (!error)
        error = parity_hdf5_write_string_list(group, path, "parameter_names", values->parameter_names[0], NAME_WIDTH,
                                              values->parameter_count);
    if (!error) {
        parity_tensor norms = parity_tensor_wrap(values->parameter_grad_norms, PARITY_F64, PARITY_CPU,
                                                 PARITY_SHAPE((int64_t)values->parameter_count));
        error = parity_hdf5_write_tensor(group, path, "parameter_grad_norms", &norms);
    }
    if (!error) {
        parity_tensor sketches = parity_tensor_wrap(values->parameter_grad_sketches, PARITY_F64, PARITY_CPU,
                                                    PARITY_SHAPE((int64_t)values->parameter_count, PARITY_SKETCH_K));
        error = parity_hdf5_write_tensor(group, path, "parameter_grad_sketches", &sketches);
    }
    if (!error && values->has_loss_input)
        error = parity_hdf5_write_double_attribute(group, path, "loss_input_grad_norm", values->loss_input_grad_norm);
    if (!error && values->has_loss_input) {
        parity_tensor sketch = parity_tensor_wrap((void *)values->loss_input_grad_sketch, PARITY_F64, PARITY_CPU,
                                                  PARITY_SHAPE(PARITY_SKETCH_K));
        error = parity_hdf5_write_tensor(group, path, "loss_input_grad_sketch", &sketch);
    }
    if (!error && tensor_present(&values->logits)) {
        parity_tensor sample = {0};
        error = parity_tensor_to(&sample, &values->logits, PARITY_CPU, values->logits.dtype);
        if (error) error = parity_error_wrap(error, __FILE__, __LINE__, "%s: %s/logits_sample", path, name);
        else error = parity_hdf5_write_tensor(group, path, "logits_sample", &sample);
        parity_tensor_release(&sample);
    }
    H5Gclose(group);
    return error;
}

// Writes a batch tensor as int64 (converting other integer dtypes, strides or devices).
static parity_error *write_batch_tensor(hid_t group, const char *path, const char *name, const parity_tensor *tensor) {
    parity_tensor int64 = {0};
    PARITY_TRY_CONTEXT(parity_tensor_to(&int64, tensor, PARITY_CPU, PARITY_I64), "%s: /batch/%s", path, name);
    parity_error *error = parity_hdf5_write_tensor(group, path, name, &int64);
    parity_tensor_release(&int64);
    return error;
}

// Everything below the root of the open file `file`; `path` names the file in errors.
static parity_error *write_contents(hid_t file, const char *path, const parity_golden *golden) {
    PARITY_TRY(parity_hdf5_write_int_attribute(file, path, "schema_version", PARITY_GOLDEN_SCHEMA_VERSION));
    for (size_t i = 0; i < COUNT_OF(string_fields); i++)
        PARITY_TRY(parity_hdf5_write_string_attribute(file, path, string_fields[i].name, (const char *)golden + string_fields[i].offset));
    if (golden->migrated[0]) PARITY_TRY(parity_hdf5_write_string_attribute(file, path, "migrated", golden->migrated));
    PARITY_TRY(parity_hdf5_write_uint64_attribute(file, path, "weight_seed", golden->weight_seed));

    hid_t group = -1;
    PARITY_TRY(parity_hdf5_create_group(file, path, "model", false, &group));
    parity_error *error = parity_hdf5_write_string_dataset(group, path, "config_json", golden->model_config_json);
    H5Gclose(group);
    PARITY_TRY(error);

    PARITY_TRY(parity_hdf5_create_group(file, path, "batch", false, &group));
    error = write_batch_tensor(group, path, "input_ids", &golden->input_ids);
    if (!error) error = write_batch_tensor(group, path, "labels", &golden->labels);
    if (!error && tensor_present(&golden->position_ids)) error = write_batch_tensor(group, path, "position_ids", &golden->position_ids);
    H5Gclose(group);
    PARITY_TRY(error);

    PARITY_TRY(write_values(file, path, "expected", &golden->expected));
    PARITY_TRY(parity_hdf5_create_group(file, path, "eager", true, &group));
    for (size_t i = 0; i < golden->precision_count && !error; i++)
        error = write_values(group, path, golden->precisions[i].dtype, &golden->precisions[i].eager);
    H5Gclose(group);
    return error;
}

static parity_error *refuse_overwrite(const char *path) {
    return PARITY_ERROR(PARITY_ERROR_USAGE, "%s: a golden already exists; refusing to overwrite it (use --force)", path);
}

// File access properties: close every object with the file, so H5Fclose really closes it.
static hid_t strong_close_access(void) {
    hid_t access = H5Pcreate(H5P_FILE_ACCESS);
    if (access >= 0 && H5Pset_fclose_degree(access, H5F_CLOSE_STRONG) < 0) {
        H5Pclose(access);
        return -1;
    }
    return access;
}

// File creation properties: the user block that will hold the seal; attribute creation order
// tracked on the root group, which makes its object header (holding the provenance attributes) a
// version-2 header, checksummed by libhdf5 (golden_hdf5.h does the same for every group and
// dataset); and chunk B-tree nodes of K = 1 (every dataset is one chunk: the default K = 32 node
// would add 1.5 kB to each). The superblock stays version 1 (what K != 32 needs), not 2 or 3:
// H5Fget_file_image of HDF5 1.10 clears the status flags of a version-2 superblock without
// updating its checksum.
static hid_t sealed_file_creation(void) {
    hid_t creation = H5Pcreate(H5P_FILE_CREATE);
    if (creation >= 0 && (H5Pset_userblock(creation, PARITY_GOLDEN_SEAL_BYTES) < 0 ||
                          H5Pset_attr_creation_order(creation, H5P_CRT_ORDER_TRACKED) < 0 ||
                          H5Pset_istore_k(creation, 1) < 0)) {
        H5Pclose(creation);
        return -1;
    }
    return creation;
}

// Builds the whole HDF5 file in memory (the core driver, no backing store) and returns the file it
// makes (malloc'ed): PARITY_GOLDEN_SEAL_BYTES for the seal (left zero), then HDF5's image (which
// H5Fget_file_image of HDF5 1.10 returns without the user block; one with it is taken as the whole
// file). Building in memory keeps every disk failure
// out of HDF5: a file HDF5 fails to flush stays open inside the library, so the disk write is ours
// (parity_write_file_atomic), with plain errno errors.
// `label` names the in-memory file inside HDF5 (never created on disk); `path` names it in errors.
static parity_error *build_image(const char *label, const char *path, const parity_golden *golden, uint8_t **image, size_t *size) {
    *image = NULL;
    *size = 0;
    hid_t access = strong_close_access();
    hid_t creation = sealed_file_creation();
    if (access < 0 || creation < 0 || H5Pset_fapl_core(access, 1 << 20, false) < 0) {
        parity_error *error = PARITY_HDF5_FAILURE(PARITY_ERROR_IO, path, creation < 0 ? "H5Pset_userblock" : "H5Pset_fapl_core", "/");
        if (access >= 0) H5Pclose(access);
        if (creation >= 0) H5Pclose(creation);
        return error;
    }
    hid_t file = H5Fcreate(label, H5F_ACC_TRUNC, creation, access);
    // (a successful HDF5 call clears the error stack: take HDF5's message before closing anything)
    parity_error *error = file < 0 ? PARITY_HDF5_FAILURE(PARITY_ERROR_IO, path, "H5Fcreate", "/") : NULL;
    H5Pclose(access);
    H5Pclose(creation);
    if (error) return error;
    error = write_contents(file, path, golden);
    // H5Fget_file_image does not flush in HDF5 1.10: without this the image lacks the root group.
    if (!error && H5Fflush(file, H5F_SCOPE_GLOBAL) < 0) error = PARITY_HDF5_FAILURE(PARITY_ERROR_IO, path, "H5Fflush", "/");
    ssize_t length = error ? 0 : H5Fget_file_image(file, NULL, 0);
    if (!error && length <= 0) error = PARITY_HDF5_FAILURE(PARITY_ERROR_IO, path, "H5Fget_file_image", "/");
    size_t total = error ? 0 : PARITY_GOLDEN_SEAL_BYTES + (size_t)length;
    if (!error && total > PARITY_GOLDEN_MAX_BYTES)
        error = PARITY_ERROR(PARITY_ERROR_USAGE, "%s: the golden would be %zu bytes, more than the %zu MiB a golden may hold", path,
                             total, PARITY_GOLDEN_MAX_BYTES >> 20);
    if (!error && !(*image = calloc(total, 1)))
        error = PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: %zu bytes for the file image", path, total);
    if (!error && H5Fget_file_image(file, *image + PARITY_GOLDEN_SEAL_BYTES, (size_t)length) != length)
        error = PARITY_HDF5_FAILURE(PARITY_ERROR_IO, path, "H5Fget_file_image", "/");
    static const uint8_t superblock[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    if (!error && memcmp(*image + PARITY_GOLDEN_SEAL_BYTES, superblock, sizeof superblock) != 0) {
        // an HDF5 whose image includes the user block: it is the whole file already
        if ((size_t)length > PARITY_GOLDEN_SEAL_BYTES + sizeof superblock &&
            memcmp(*image + 2 * PARITY_GOLDEN_SEAL_BYTES, superblock, sizeof superblock) == 0) {
            memmove(*image, *image + PARITY_GOLDEN_SEAL_BYTES, (size_t)length);
            total = (size_t)length;
        } else error = PARITY_ERROR(PARITY_ERROR_IO, "%s: H5Fget_file_image returned no HDF5 superblock where expected", path);
    }
    if (H5Fclose(file) < 0 && !error) error = PARITY_HDF5_FAILURE(PARITY_ERROR_IO, path, "H5Fclose", "/");
    if (error) {
        free(*image);
        *image = NULL;
    } else *size = total;
    return error;
}

parity_error *parity_golden_encode(const char *path, const parity_golden *golden, uint8_t **image, size_t *size) {
    *image = NULL;
    *size = 0;
    if (!path || !path[0]) return PARITY_ERROR(PARITY_ERROR_USAGE, "golden write: empty path");
    if (golden->schema_version != 0 && golden->schema_version != PARITY_GOLDEN_SCHEMA_VERSION)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "%s: cannot write schema_version %d (this parity writes %d)", path,
                            golden->schema_version, PARITY_GOLDEN_SCHEMA_VERSION);
    PARITY_TRY(check_golden(PARITY_ERROR_USAGE, path, golden));
    char label[4200]; // the in-memory file's name inside HDF5, unlike any file HDF5 may hold open
    snprintf(label, sizeof label, "%s.image.%ld", path, (long)getpid());
    parity_hdf5_quiet quiet;
    parity_hdf5_quiet_begin(&quiet);
    parity_error *error = build_image(label, path, golden, image, size);
    parity_hdf5_quiet_end(&quiet);
    if (!error) parity_golden_seal(*image, *size, PARITY_GOLDEN_SCHEMA_VERSION);
    return error;
}

parity_error *parity_golden_write(const char *path, const parity_golden *golden, bool force) {
    uint8_t *image = NULL;
    size_t size = 0;
    PARITY_TRY(parity_golden_encode(path, golden, &image, &size));
    struct stat info;
    parity_error *error = NULL;
    if (lstat(path, &info) == 0) {
        if (!force) error = refuse_overwrite(path);
        else if (S_ISDIR(info.st_mode)) error = PARITY_ERROR(PARITY_ERROR_IO, "%s: is a directory", path);
    }
    if (!error) error = parity_make_parent_directories(path);
    if (!error) error = parity_write_file_atomic(path, image, size, force);
    free(image);
    return error; // every error above names the file
}

// ---- reading ----

// Dataset `name` of `group` (named `where` in messages): float values of exactly the shape
// (shape[0]) or (shape[0], shape[1]) for `rank` 1 or 2, copied into `out` as f64.
static parity_error *read_float64s(hid_t group, const char *path, const char *where, const char *name, int rank,
                                   const int64_t *shape, double *out) {
    parity_tensor stored = {0};
    PARITY_TRY(parity_hdf5_read_tensor(group, path, name, rank, &stored));
    parity_error *error = NULL;
    if (!parity_dtype_is_float(stored.dtype))
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s/%s holds %s, must be float64", path, where, name, parity_dtype_name(stored.dtype));
    bool same_shape = true;
    for (int d = 0; d < rank; d++) same_shape = same_shape && stored.shape[d] == shape[d];
    if (!error && !same_shape) {
        char found[96], wanted[64];
        if (rank == 2) snprintf(wanted, sizeof wanted, "(%lld, %lld)", (long long)shape[0], (long long)shape[1]);
        else snprintf(wanted, sizeof wanted, "(%lld)", (long long)shape[0]);
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s/%s has shape %s, must be %s", path, where, name,
                             parity_tensor_shape_string(&stored, found, sizeof found), wanted);
    }
    for (int64_t i = 0; !error && i < stored.numel; i++) out[i] = parity_tensor_get(&stored, i);
    parity_tensor_release(&stored);
    return error;
}

static parity_error *read_values(hid_t parent, const char *path, const char *name, parity_step_result *values) {
    hid_t group = -1;
    PARITY_TRY(parity_hdf5_open_group(parent, path, name, &group));
    parity_error *error = parity_hdf5_read_double_attribute(group, path, "loss", &values->loss);
    if (!error) error = parity_hdf5_has_attribute(group, path, "aux_loss", &values->has_aux_loss);
    values->aux_loss = NAN;
    if (!error && values->has_aux_loss) error = parity_hdf5_read_double_attribute(group, path, "aux_loss", &values->aux_loss);
    if (!error) error = parity_hdf5_read_double_attribute(group, path, "grad_norm", &values->grad_norm);
    if (!error) error = parity_hdf5_read_double_attribute(group, path, "logits_sum", &values->logits_sum);
    size_t name_count = 0;
    char *names = NULL;
    if (!error) error = parity_hdf5_read_string_list(group, path, "parameter_names", NAME_WIDTH, &names, &name_count);
    values->parameter_names = (char (*)[NAME_WIDTH])names;
    parity_tensor norms = {0};
    if (!error) error = parity_hdf5_read_tensor(group, path, "parameter_grad_norms", 1, &norms);
    char where[64];
    parity_hdf5_object_name(group, where, sizeof where);
    if (!error && !parity_dtype_is_float(norms.dtype))
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s/parameter_grad_norms holds %s, must be float64", path, where,
                             parity_dtype_name(norms.dtype));
    if (!error && (size_t)norms.numel != name_count)
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s: parameter_names has %zu entries but parameter_grad_norms has %lld", path,
                             where, name_count, (long long)norms.numel);
    if (!error) {
        values->parameter_count = name_count;
        values->parameter_grad_norms = malloc((name_count ? name_count : 1) * sizeof(double));
        if (!values->parameter_grad_norms) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: %zu gradient norms", path, name_count);
        for (size_t i = 0; !error && i < name_count; i++) values->parameter_grad_norms[i] = parity_tensor_get(&norms, (int64_t)i);
    }
    parity_tensor_release(&norms);
    if (!error) {
        values->parameter_grad_sketches = malloc((name_count ? name_count : 1) * PARITY_SKETCH_K * sizeof(double));
        if (!values->parameter_grad_sketches) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: %zu gradient sketches", path, name_count);
    }
    if (!error)
        error = read_float64s(group, path, where, "parameter_grad_sketches", 2, (int64_t[]){(int64_t)name_count, PARITY_SKETCH_K},
                              values->parameter_grad_sketches);
    values->loss_input_grad_norm = NAN;
    for (int j = 0; j < PARITY_SKETCH_K; j++) values->loss_input_grad_sketch[j] = NAN;
    if (!error) error = parity_hdf5_has_attribute(group, path, "loss_input_grad_norm", &values->has_loss_input);
    if (!error && values->has_loss_input)
        error = parity_hdf5_read_double_attribute(group, path, "loss_input_grad_norm", &values->loss_input_grad_norm);
    bool has_loss_input_sketch = false;
    if (!error) error = parity_hdf5_has_link(group, path, "loss_input_grad_sketch", &has_loss_input_sketch);
    if (!error && has_loss_input_sketch != values->has_loss_input)
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s: loss_input_grad_%s without loss_input_grad_%s", path, where,
                             values->has_loss_input ? "norm" : "sketch", values->has_loss_input ? "sketch" : "norm");
    if (!error && values->has_loss_input)
        error = read_float64s(group, path, where, "loss_input_grad_sketch", 1, (int64_t[]){PARITY_SKETCH_K},
                              values->loss_input_grad_sketch);
    bool has_sample = false;
    if (!error) error = parity_hdf5_has_link(group, path, "logits_sample", &has_sample);
    if (!error && has_sample) error = parity_hdf5_read_tensor(group, path, "logits_sample", -1, &values->logits);
    H5Gclose(group);
    return error;
}

// Reads a batch tensor (any integer dtype, rank 2) as int64.
static parity_error *read_batch_tensor(hid_t group, const char *path, const char *name, parity_tensor *out) {
    parity_tensor stored = {0};
    PARITY_TRY(parity_hdf5_read_tensor(group, path, name, 2, &stored));
    parity_error *error = NULL;
    if (parity_dtype_is_float(stored.dtype))
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: /batch/%s holds %s, must be integers", path, name, parity_dtype_name(stored.dtype));
    else if (stored.dtype == PARITY_I64) {
        *out = stored;
        return NULL;
    } else if ((error = parity_tensor_to(out, &stored, PARITY_CPU, PARITY_I64)))
        error = parity_error_wrap(error, __FILE__, __LINE__, "%s: /batch/%s", path, name);
    parity_tensor_release(&stored);
    return error;
}

// The names of /eager's groups, in creation order when the group tracks it (ours do), else by name.
static parity_error *read_precisions(hid_t file, const char *path, parity_golden *out) {
    hid_t eager = -1;
    PARITY_TRY(parity_hdf5_open_group(file, path, "eager", &eager));
    parity_error *error = NULL;
    H5G_info_t info;
    unsigned order_flags = 0;
    hid_t properties = H5Gget_create_plist(eager);
    if (properties < 0 || H5Pget_link_creation_order(properties, &order_flags) < 0)
        error = PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Pget_link_creation_order", "/eager");
    if (properties >= 0) H5Pclose(properties);
    H5_index_t index = (order_flags & H5P_CRT_ORDER_INDEXED) ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME;
    if (!error && H5Gget_info(eager, &info) < 0) error = PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Gget_info", "/eager");
    if (!error && info.nlinks > COUNT_OF(out->precisions))
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: /eager has %llu groups, at most %zu (fp32, bf16)", path,
                             (unsigned long long)info.nlinks, COUNT_OF(out->precisions));
    for (hsize_t i = 0; !error && i < info.nlinks; i++) {
        parity_golden_precision *precision = &out->precisions[i];
        char name[64];
        ssize_t length = H5Lget_name_by_idx(eager, ".", index, H5_ITER_INC, i, name, sizeof name, H5P_DEFAULT);
        if (length < 0) error = PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, path, "H5Lget_name_by_idx", "/eager");
        else if ((size_t)length >= sizeof precision->dtype)
            error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: /eager/%s: not a precision name", path, name);
        else {
            memcpy(precision->dtype, name, (size_t)length + 1);
            out->precision_count = (size_t)i + 1;
            error = read_values(eager, path, name, &precision->eager);
        }
    }
    H5Gclose(eager);
    return error;
}

// Everything below the root of the open file `file`, a golden of the current schema.
static parity_error *read_contents(hid_t file, const char *path, parity_golden *out) {
    const int version = PARITY_GOLDEN_SCHEMA_VERSION;
    // The version first: a file of another schema is reported as such, not as a list of missing items.
    bool has_version = false;
    PARITY_TRY(parity_hdf5_has_attribute(file, path, "schema_version", &has_version));
    if (!has_version) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: no schema_version attribute: not a parity golden", path);
    PARITY_TRY(parity_hdf5_read_int_attribute(file, path, "schema_version", &out->schema_version));
    if (out->schema_version != version)
        return PARITY_ERROR(PARITY_ERROR_DATA,
                            "%s: schema_version is %d, this parity reads schema_version %d (regenerate it with "
                            "`parity golden generate --force`)",
                            path, out->schema_version, version);
    for (size_t i = 0; i < COUNT_OF(string_fields); i++)
        PARITY_TRY(parity_hdf5_read_string_attribute(file, path, string_fields[i].name, (char *)out + string_fields[i].offset,
                                                     string_fields[i].size));
    bool migrated = false;
    PARITY_TRY(parity_hdf5_has_attribute(file, path, "migrated", &migrated));
    if (migrated) PARITY_TRY(parity_hdf5_read_string_attribute(file, path, "migrated", out->migrated, sizeof out->migrated));
    PARITY_TRY(parity_hdf5_read_uint64_attribute(file, path, "weight_seed", &out->weight_seed));

    hid_t group = -1;
    PARITY_TRY(parity_hdf5_open_group(file, path, "model", &group));
    parity_error *error = parity_hdf5_read_string_dataset(group, path, "config_json", &out->model_config_json);
    H5Gclose(group);
    PARITY_TRY(error);

    PARITY_TRY(parity_hdf5_open_group(file, path, "batch", &group));
    bool has_positions = false;
    error = read_batch_tensor(group, path, "input_ids", &out->input_ids);
    if (!error) error = read_batch_tensor(group, path, "labels", &out->labels);
    if (!error) error = parity_hdf5_has_link(group, path, "position_ids", &has_positions);
    if (!error && has_positions) error = read_batch_tensor(group, path, "position_ids", &out->position_ids);
    H5Gclose(group);
    PARITY_TRY(error);

    PARITY_TRY(read_values(file, path, "expected", &out->expected));
    PARITY_TRY(read_precisions(file, path, out));
    return check_golden(PARITY_ERROR_DATA, path, out);
}

// Opens the `size` bytes of a file image with libhdf5 in memory (the core driver, no backing store:
// the disk is never touched) and reads a golden from it.
static parity_error *decode_image(const char *name, const uint8_t *data, size_t size, parity_golden *out) {
    static unsigned opened; // every image gets its own label: HDF5 treats two open files of one name as one
    char label[4200];
    snprintf(label, sizeof label, "%s.read.%ld.%u", name, (long)getpid(), opened++);
    parity_hdf5_quiet quiet;
    parity_hdf5_quiet_begin(&quiet);
    parity_error *error = NULL;
    hid_t access = strong_close_access();
    if (access < 0 || H5Pset_fapl_core(access, 1 << 16, false) < 0 || H5Pset_file_image(access, (void *)data, size) < 0)
        error = PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, name, "H5Pset_file_image", "/");
    hid_t file = error ? -1 : H5Fopen(label, H5F_ACC_RDONLY, access);
    if (!error && file < 0)
        error = parity_error_wrap(PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, name, "H5Fopen", "/"), __FILE__, __LINE__,
                                  "%s: not a valid HDF5 file", name);
    if (access >= 0) H5Pclose(access);
    if (!error) error = read_contents(file, name, out);
    if (file >= 0 && H5Fclose(file) < 0 && !error) error = PARITY_HDF5_FAILURE(PARITY_ERROR_DATA, name, "H5Fclose", "/");
    parity_hdf5_quiet_end(&quiet);
    if (error) parity_golden_release(out);
    return error; // every error above names the file
}

parity_error *parity_golden_decode(const char *name, const uint8_t *data, size_t size, parity_golden *out) {
    memset(out, 0, sizeof *out);
    PARITY_TRY(parity_golden_seal_check(name, data, size, PARITY_GOLDEN_SCHEMA_VERSION));
    return decode_image(name, data, size, out);
}

parity_error *parity_golden_read(const char *path, parity_golden *out) {
    memset(out, 0, sizeof *out);
    uint8_t *data = NULL;
    size_t size = 0;
    PARITY_TRY(parity_golden_read_bytes(path, &data, &size));
    parity_error *error = parity_golden_decode(path, data, size, out);
    free(data);
    return error;
}
