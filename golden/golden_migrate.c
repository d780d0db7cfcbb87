// golden_migrate.c: schema migration of a golden file and the bit-for-bit golden comparison that
// proves a migration kept every value (golden_migrate.h).
#include "golden/golden_migrate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden/golden_seal.h"
#include "ops/core/file.h"

#define COUNT_OF(array) (sizeof(array) / sizeof((array)[0]))

static bool same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static parity_error *compare_string(const char *name, const char *what, const char *a, const char *b, parity_golden_comparison *counts) {
    counts->strings++;
    if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0))
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s differs: '%.80s' vs '%.80s'", name, what, a ? a : "(none)", b ? b : "(none)");
    return NULL;
}

static parity_error *compare_number(const char *name, const char *what, double a, double b, parity_golden_comparison *counts) {
    counts->numbers++;
    if (!same_bits(a, b)) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s differs: %.17g vs %.17g", name, what, a, b);
    return NULL;
}

static parity_error *compare_tensor(const char *name, const char *what, const parity_tensor *a, const parity_tensor *b,
                                    parity_golden_comparison *counts) {
    char shape_a[96], shape_b[96];
    bool present_a = a->ndim > 0 && a->numel > 0, present_b = b->ndim > 0 && b->numel > 0;
    if (present_a != present_b || (present_a && (a->dtype != b->dtype || !parity_tensor_same_shape(a, b))))
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s differs: %s vs %s", name, what,
                            present_a ? parity_tensor_describe(a, shape_a, sizeof shape_a) : "absent",
                            present_b ? parity_tensor_describe(b, shape_b, sizeof shape_b) : "absent");
    if (!present_a) return NULL;
    size_t bytes = parity_tensor_nbytes(a);
    counts->tensor_bytes += bytes;
    if (memcmp(a->data, b->data, bytes) != 0) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: the bytes of %s differ", name, what);
    return NULL;
}

static parity_error *compare_values(const char *name, const char *where, const parity_step_result *a, const parity_step_result *b,
                                    parity_golden_comparison *counts) {
    char what[160];
#define WHAT(field) (snprintf(what, sizeof what, "%s %s", where, field), what)
    PARITY_TRY(compare_number(name, WHAT("loss"), a->loss, b->loss, counts));
    if (a->has_aux_loss != b->has_aux_loss)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s aux_loss is present in one only", name, where);
    if (a->has_aux_loss) PARITY_TRY(compare_number(name, WHAT("aux_loss"), a->aux_loss, b->aux_loss, counts));
    PARITY_TRY(compare_number(name, WHAT("grad_norm"), a->grad_norm, b->grad_norm, counts));
    PARITY_TRY(compare_number(name, WHAT("logits_sum"), a->logits_sum, b->logits_sum, counts));
    if (a->parameter_count != b->parameter_count)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s has %zu parameters vs %zu", name, where, a->parameter_count, b->parameter_count);
    for (size_t i = 0; i < a->parameter_count; i++) {
        snprintf(what, sizeof what, "%s parameter_names[%zu]", where, i);
        PARITY_TRY(compare_string(name, what, a->parameter_names[i], b->parameter_names[i], counts));
        snprintf(what, sizeof what, "%s parameter_grad_norms[%zu] (%s)", where, i, a->parameter_names[i]);
        PARITY_TRY(compare_number(name, what, a->parameter_grad_norms[i], b->parameter_grad_norms[i], counts));
    }
    return compare_tensor(name, WHAT("logits_sample"), &a->logits, &b->logits, counts);
#undef WHAT
}

parity_error *parity_golden_compare(const char *name, const parity_golden *a, const parity_golden *b,
                                    parity_golden_comparison *counts) {
    parity_golden_comparison ignored;
    if (!counts) counts = &ignored;
    memset(counts, 0, sizeof *counts);
    const struct {
        const char *what, *a, *b;
    } strings[] = {
        {"git_sha", a->git_sha, b->git_sha},
        {"created", a->created, b->created},
        {"host", a->host, b->host},
        {"device", a->device, b->device},
        {"compiler", a->compiler, b->compiler},
        {"libraries", a->libraries, b->libraries},
        {"command", a->command, b->command},
        {"suite", a->suite, b->suite},
        {"model", a->model, b->model},
        {"case", a->case_name, b->case_name},
        {"model_type", a->model_type, b->model_type},
        {"/model/config_json", a->model_config_json, b->model_config_json},
        {"weight_source", a->weight_source, b->weight_source},
        {"weight_sha256", a->weight_sha256, b->weight_sha256},
        {"batch_source", a->batch_source, b->batch_source},
        {"batch_sha256", a->batch_sha256, b->batch_sha256},
    };
    for (size_t i = 0; i < COUNT_OF(strings); i++) PARITY_TRY(compare_string(name, strings[i].what, strings[i].a, strings[i].b, counts));
    counts->numbers++;
    if (a->weight_seed != b->weight_seed)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: weight_seed differs: %llu vs %llu", name, (unsigned long long)a->weight_seed,
                            (unsigned long long)b->weight_seed);
    PARITY_TRY(compare_tensor(name, "/batch/input_ids", &a->input_ids, &b->input_ids, counts));
    PARITY_TRY(compare_tensor(name, "/batch/labels", &a->labels, &b->labels, counts));
    PARITY_TRY(compare_tensor(name, "/batch/position_ids", &a->position_ids, &b->position_ids, counts));
    PARITY_TRY(compare_values(name, "/expected", &a->expected, &b->expected, counts));
    if (a->precision_count != b->precision_count)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: %zu eager precisions vs %zu", name, a->precision_count, b->precision_count);
    for (size_t i = 0; i < a->precision_count && i < COUNT_OF(a->precisions); i++) {
        char where[48];
        snprintf(where, sizeof where, "/eager/%s", a->precisions[i].dtype);
        PARITY_TRY(compare_string(name, "eager precision name (in order)", a->precisions[i].dtype, b->precisions[i].dtype, counts));
        PARITY_TRY(compare_values(name, where, &a->precisions[i].eager, &b->precisions[i].eager, counts));
    }
    return NULL;
}

// Builds the new file for `old` (a schema 1 golden), checks it decodes to the same golden, writes it.
static parity_error *convert(const char *path, parity_golden *old, const char *by, parity_golden_migration *out) {
    int written = snprintf(old->migrated, sizeof old->migrated, "schema_version %d -> %d %s; values and provenance unchanged",
                           old->schema_version, PARITY_GOLDEN_SCHEMA_VERSION, by);
    if (written < 0 || (size_t)written >= sizeof old->migrated)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "%s: the migration note is longer than %zu bytes", path, sizeof old->migrated - 1);
    old->schema_version = 0; // the current one
    uint8_t *image = NULL;
    size_t size = 0;
    PARITY_TRY(parity_golden_encode(path, old, &image, &size));
    parity_golden decoded;
    parity_error *error = parity_golden_decode(path, image, size, &decoded);
    if (!error) error = parity_golden_compare(path, old, &decoded, &out->compared);
    if (!error && strcmp(decoded.migrated, old->migrated) != 0)
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: the migration note did not read back", path);
    if (error) error = parity_error_wrap(error, __FILE__, __LINE__, "%s: the migrated golden does not read back identical; not written", path);
    if (!error) error = parity_write_file_atomic(path, image, size, true);
    parity_golden_release(&decoded);
    free(image);
    return error;
}

parity_error *parity_golden_migrate(const char *path, const char *by, parity_golden_migration *out) {
    memset(out, 0, sizeof *out);
    uint8_t *data = NULL;
    size_t size = 0;
    PARITY_TRY(parity_golden_read_bytes(path, &data, &size));
    parity_golden golden;
    parity_error *error = NULL;
    parity_error *unsealed = parity_golden_seal_check(path, data, size, PARITY_GOLDEN_SCHEMA_VERSION);
    bool sealed = unsealed == NULL;
    parity_error_free(unsealed); // (decode_schema1 below says what is wrong when it is not schema 1 either)
    if (sealed) {
        // sealed with the current format: check all of it, leave it as it is
        error = parity_golden_decode(path, data, size, &golden);
        out->from_version = PARITY_GOLDEN_SCHEMA_VERSION;
    } else {
        error = parity_golden_decode_schema1(path, data, size, &golden);
        out->from_version = 1;
        if (!error) {
            error = convert(path, &golden, by, out);
            out->migrated = error == NULL;
        }
    }
    parity_golden_release(&golden);
    free(data);
    return error;
}
