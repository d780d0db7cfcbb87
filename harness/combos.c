// combos.c: combination enumeration (combos.h).
#include "harness/combos.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/config/value_support.h"
#include "harness/text.h"
#include "ops/registry.h"

void parity_combo_list_release(parity_combo_list *list) {
    free(list->items);
    memset(list, 0, sizeof *list);
}

static parity_combo_plan *append(parity_combo_list *list) {
    if (list->count == list->capacity) {
        size_t capacity = list->capacity ? 2 * list->capacity : 64;
        parity_combo_plan *grown = realloc(list->items, capacity * sizeof *grown);
        if (!grown) return NULL;
        list->items = grown;
        list->capacity = capacity;
    }
    parity_combo_plan *plan = &list->items[list->count++];
    memset(plan, 0, sizeof *plan);
    return plan;
}

// The kernel-selection fields the model calls, in vocabulary order, with what it needs from each
// field's op (capabilities[i] and why[i] belong to fields[i]).
typedef struct parity_used_fields {
    const parity_kernel_field *fields[PARITY_KERNEL_FIELD_COUNT];
    uint32_t capabilities[PARITY_KERNEL_FIELD_COUNT];
    const char *why[PARITY_KERNEL_FIELD_COUNT];
    size_t count;
} parity_used_fields;

static void parity_used_fields_of(const parity_model_requirements *requirements, parity_used_fields *out) {
    memset(out, 0, sizeof *out);
    for (size_t f = 0; f < PARITY_KERNEL_FIELD_COUNT; f++) {
        const parity_kernel_field *field = &parity_kernel_fields[f];
        parity_op_id op;
        if (!parity_op_id_find(field->op, &op) || !requirements->needed.contains[op]) continue;
        out->fields[out->count] = field;
        out->capabilities[out->count] = requirements->capabilities[op];
        out->why[out->count] = requirements->why[op];
        out->count++;
    }
}

static bool is_test_only(const parity_kernel_field *field, const char *value) {
    for (int device = 0; device < PARITY_DEVICE_TYPE_COUNT; device++) {
        const parity_backend *backend = parity_registry_find(field->op, value, (parity_device_type)device);
        if (backend && (backend->capabilities & PARITY_CAP_TEST_ONLY)) return true;
    }
    return false;
}

// Whether `value` of `field` can run here for a model needing `capabilities` (the checker,
// through the vocabulary); `reason` says why not.
static bool parity_combo_value_runnable(const parity_kernel_field *field, const char *value, parity_device device,
                                        parity_dtype dtype, uint32_t capabilities, const char *why, char *reason,
                                        size_t reason_size) {
    parity_backend_need need = {dtype, capabilities};
    parity_backend_check check;
    bool runnable = parity_kernel_value_check(field, value, device, &need, &check) == PARITY_VALUE_AVAILABLE;
    if (!runnable && check.verdict == PARITY_CAPABILITY_MISSING)
        snprintf(reason, reason_size, "does not support what the model needs from %s: %s", field->op,
                 why && why[0] ? why : "a required capability");
    else snprintf(reason, reason_size, "%s", check.reason);
    return runnable;
}

const char *parity_combo_value(const parity_combo_plan *plan, const parity_kernel_field *field) {
    for (size_t i = 0; i < plan->choice_count; i++)
        if (plan->fields[i] == field) return plan->values[i];
    return "eager";
}

void parity_combo_op_names(const parity_combo_plan *plan, parity_op_names *out) {
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < plan->choice_count; i++) {
        parity_op_id op;
        if (parity_op_id_find(plan->fields[i]->op, &op)) out->name[op] = plan->values[i];
    }
}

static void set_choice(parity_combo_plan *plan, const parity_kernel_field *field, const char *value) {
    for (size_t i = 0; i < plan->choice_count; i++)
        if (plan->fields[i] == field) {
            snprintf(plan->values[i], sizeof plan->values[i], "%s", value);
            return;
        }
    // keep vocabulary order
    size_t index = parity_kernel_field_index(field), at = plan->choice_count;
    while (at > 0 && parity_kernel_field_index(plan->fields[at - 1]) > index) {
        plan->fields[at] = plan->fields[at - 1];
        memcpy(plan->values[at], plan->values[at - 1], sizeof plan->values[at]);
        at--;
    }
    plan->fields[at] = field;
    snprintf(plan->values[at], sizeof plan->values[at], "%s", value);
    plan->choice_count++;
}

static void format_id(parity_combo_plan *plan) {
    char fields[256] = "";
    size_t used = 0;
    if (plan->backend[0]) used += (size_t)snprintf(fields, sizeof fields, "backend=%s", plan->backend);
    for (size_t i = 0; i < plan->choice_count && used < sizeof fields; i++)
        used += (size_t)snprintf(fields + used, sizeof fields - used, "%s%s=%s", used ? "," : "", plan->fields[i]->alias,
                                 plan->values[i]);
    if (!fields[0]) snprintf(fields, sizeof fields, "eager");
    char device[32];
    if (plan->device.type == PARITY_DEVICE_CUDA && plan->device.index == 0) snprintf(device, sizeof device, "cuda");
    else parity_device_format(plan->device, device, sizeof device);
    parity_text_format(plan->id, sizeof plan->id, "%s/%s/%s/%s/%s", plan->model->name, plan->batch->name, fields,
             parity_dtype_name(plan->dtype), device);
}

// The value a condition key takes in this combo.
static const char *condition_subject(const parity_combo_plan *plan, const char *key) {
    if (strcmp(key, "dtype") == 0) return parity_dtype_name(plan->dtype);
    if (strcmp(key, "device") == 0) return parity_device_type_name(plan->device.type);
    if (strcmp(key, "batch") == 0) return plan->batch->name;
    if (strcmp(key, "backend") == 0) return plan->backend;
    return parity_combo_value(plan, parity_kernel_field_find(key, false));
}

static const parity_suite_exclusion *matching_exclusion(const parity_suite_exclusion *exclusions, size_t count,
                                                        const parity_combo_plan *plan) {
    for (size_t e = 0; e < count; e++) {
        bool all = true;
        for (size_t c = 0; c < exclusions[e].condition_count && all; c++)
            all = fnmatch(exclusions[e].conditions[c].pattern, condition_subject(plan, exclusions[e].conditions[c].key), 0) == 0;
        if (all) return &exclusions[e];
    }
    return NULL;
}

// Marks `plan` excluded when an exclusion matches; the baseline may not be excluded.
static parity_error *apply_exclusions(const parity_suite *suite, const parity_suite_model *model, parity_combo_plan *plan) {
    const parity_suite_exclusion *hit = matching_exclusion(model->exclusions, model->exclusion_count, plan);
    if (!hit) hit = matching_exclusion(suite->exclusions, suite->exclusion_count, plan);
    if (!hit) return NULL;
    if (plan->is_baseline)
        return PARITY_ERROR(PARITY_ERROR_CONFIG,
                            "%s:%d: exclusion '%s' excludes %s, the eager baseline every combo of it is compared with",
                            suite->path, hit->line, hit->match, plan->id);
    if (plan->status == PARITY_COMBO_PASS || plan->status == PARITY_COMBO_NOT_SUPPORTED) {
        plan->status = PARITY_COMBO_EXCLUDED;
        parity_text_format(plan->reason, sizeof plan->reason, "%s (%s:%d, match %s)", hit->reason, suite->path, hit->line, hit->match);
    }
    return NULL;
}

// A field's index among the used fields, or -1.
static int used_index(const parity_used_fields *used, const parity_kernel_field *field) {
    for (size_t i = 0; i < used->count; i++)
        if (used->fields[i] == field) return (int)i;
    return -1;
}

typedef struct field_values {
    const parity_kernel_field *field;
    int used;                                  // index into parity_used_fields
    const char *runnable[32];
    size_t runnable_count;
    const char *unsupported[32];
    char reasons[32][256];
    size_t unsupported_count;
} field_values;

static void collect_values(const parity_kernel_field *field, const parity_used_fields *used, int index,
                           parity_device device, parity_dtype dtype, bool with_test_backends, field_values *out) {
    memset(out, 0, sizeof *out);
    out->field = field;
    out->used = index;
    const char *names[48];
    size_t count = 0;
    for (size_t i = 0; i < field->value_count && count < 48; i++) names[count++] = field->values[i].name;
    const char *extra[16];
    size_t extra_count = parity_kernel_field_extra_values(field, extra, 16);
    for (size_t i = 0; i < extra_count && i < 16 && count < 48; i++) names[count++] = extra[i];
    for (size_t i = 0; i < count; i++) {
        if (is_test_only(field, names[i]) && !with_test_backends) continue;
        char reason[256];
        if (parity_combo_value_runnable(field, names[i], device, dtype, used->capabilities[index], used->why[index], reason,
                                        sizeof reason)) {
            if (out->runnable_count < 32) out->runnable[out->runnable_count++] = names[i];
        } else if (out->unsupported_count < 32) {
            out->unsupported[out->unsupported_count] = names[i];
            parity_text_format(out->reasons[out->unsupported_count++], sizeof out->reasons[0], "%s %s: %s", field->alias, names[i], reason);
        }
    }
}

// The --ops pins that apply to this model: (field, value) pairs; unknown keys are a CONFIG error.
typedef struct pinned_fields {
    const parity_kernel_field *fields[PARITY_KERNEL_FIELD_COUNT];
    const char *values[PARITY_KERNEL_FIELD_COUNT];
    size_t count;
} pinned_fields;

static parity_error *pins_of(const parity_ops_settings *fixed, const parity_used_fields *used, pinned_fields *out) {
    memset(out, 0, sizeof *out);
    for (size_t i = 0; fixed && i < fixed->count; i++) {
        const parity_kernel_field *field = parity_kernel_field_find(fixed->items[i].key, true);
        if (!field)
            return PARITY_ERROR(PARITY_ERROR_CONFIG, "--ops: '%s' is not a kernel-selection field (see parity list ops)",
                                fixed->items[i].key);
        if (used_index(used, field) < 0) continue; // the model never calls it
        size_t at = out->count;
        for (size_t j = 0; j < out->count; j++)
            if (out->fields[j] == field) at = j;
        out->fields[at] = field;
        out->values[at] = fixed->items[i].value;
        if (at == out->count) out->count++;
    }
    return NULL;
}

static void init_plan(parity_combo_plan *plan, const parity_suite_model *model, const parity_suite_batch *batch,
                      parity_dtype dtype, parity_device device) {
    plan->model = model;
    plan->batch = batch;
    plan->dtype = dtype;
    plan->device = device;
    plan->status = PARITY_COMBO_PASS;
}

// Checks every non-eager choice of a runnable plan (pins, mode values); marks it not_supported.
static void check_choices(parity_combo_plan *plan, const parity_used_fields *used) {
    for (size_t i = 0; i < plan->choice_count && plan->status == PARITY_COMBO_PASS; i++) {
        int index = used_index(used, plan->fields[i]);
        char reason[256];
        if (index >= 0 && !parity_combo_value_runnable(plan->fields[i], plan->values[i], plan->device, plan->dtype,
                                                       used->capabilities[index], used->why[index], reason, sizeof reason)) {
            plan->status = PARITY_COMBO_NOT_SUPPORTED;
            parity_text_format(plan->reason, sizeof plan->reason, "%s %s: %s", plan->fields[i]->alias, plan->values[i], reason);
        }
    }
}

static parity_error *enumerate_modes(const parity_suite *suite, const parity_suite_model *model,
                                     const parity_used_fields *used, const pinned_fields *pins,
                                     const parity_suite_batch *batch, parity_dtype dtype, parity_device device,
                                     parity_combo_list *out) {
    // The id lists every field any applicable mode mentions (and every pin), eager where unset.
    bool listed[PARITY_KERNEL_FIELD_COUNT] = {false};
    bool applies[PARITY_SUITE_MAX_MODES];
    for (size_t m = 0; m < suite->mode_count; m++) {
        const parity_suite_mode *mode = &suite->modes[m];
        applies[m] = true;
        for (size_t r = 0; r < mode->require_count; r++)
            if (used_index(used, mode->requires[r]) < 0) applies[m] = false;
        for (size_t c = 0; applies[m] && c < mode->choice_count; c++)
            if (used_index(used, mode->fields[c]) >= 0) listed[parity_kernel_field_index(mode->fields[c])] = true;
    }
    for (size_t p = 0; p < pins->count; p++) listed[parity_kernel_field_index(pins->fields[p])] = true;
    size_t group_start = out->count;
    bool first = true;
    for (size_t m = 0; m < suite->mode_count; m++) {
        if (!applies[m]) continue;
        const parity_suite_mode *mode = &suite->modes[m];
        parity_combo_plan *plan = append(out);
        if (!plan) return PARITY_ERROR(PARITY_ERROR_MEMORY, "enumerating combos");
        init_plan(plan, model, batch, dtype, device);
        snprintf(plan->mode, sizeof plan->mode, "%s", mode->name);
        snprintf(plan->backend, sizeof plan->backend, "%s", mode->backend);
        for (size_t f = 0; f < PARITY_KERNEL_FIELD_COUNT; f++)
            if (listed[f]) set_choice(plan, &parity_kernel_fields[f], "eager");
        for (size_t c = 0; c < mode->choice_count; c++)
            if (used_index(used, mode->fields[c]) >= 0) set_choice(plan, mode->fields[c], mode->values[c]);
        plan->is_baseline = first;
        if (first) {
            for (size_t i = 0; i < plan->choice_count; i++)
                if (strcmp(plan->values[i], "eager") != 0)
                    return PARITY_ERROR(PARITY_ERROR_CONFIG,
                                        "%s:%d: mode '%s' is the first mode for model %s, so it is the reference, and must "
                                        "be all eager (it sets %s=%s)",
                                        suite->path, mode->line, mode->name, model->name, plan->fields[i]->name,
                                        plan->values[i]);
        } else {
            for (size_t p = 0; p < pins->count; p++) set_choice(plan, pins->fields[p], pins->values[p]);
        }
        first = false;
        check_choices(plan, used);
        format_id(plan);
        for (size_t earlier = group_start; earlier + 1 < out->count; earlier++)
            if (strcmp(out->items[earlier].id, plan->id) == 0) {
                plan->status = PARITY_COMBO_EXCLUDED;
                parity_text_format(plan->reason, sizeof plan->reason, "mode '%s' is the same combination as mode '%s' for %s",
                                   mode->name, out->items[earlier].mode, model->name);
                break;
            }
        PARITY_TRY(apply_exclusions(suite, model, plan));
    }
    return NULL;
}

static parity_error *enumerate_product(const parity_suite *suite, const parity_suite_model *model,
                                       const parity_used_fields *used, const pinned_fields *pins,
                                       const parity_suite_batch *batch, parity_dtype dtype, parity_device device,
                                       bool with_test_backends, parity_combo_list *out) {
    field_values *swept = calloc(PARITY_KERNEL_FIELD_COUNT, sizeof *swept);
    if (!swept) return PARITY_ERROR(PARITY_ERROR_MEMORY, "enumerating combos");
    size_t swept_count = 0;
    for (size_t i = 0; i < used->count; i++) {
        const parity_kernel_field *field = used->fields[i];
        bool wanted = !suite->sweep_given;
        for (size_t s = 0; s < suite->sweep_count; s++) wanted = wanted || suite->sweep[s] == field;
        for (size_t p = 0; p < pins->count; p++) wanted = wanted && pins->fields[p] != field;
        if (wanted) collect_values(field, used, (int)i, device, dtype, with_test_backends, &swept[swept_count++]);
    }
    // Eager must run for every swept field: it is the reference.
    const char *no_reference = NULL;
    char no_reference_reason[256] = "";
    for (size_t s = 0; s < swept_count && !no_reference; s++)
        if (swept[s].runnable_count == 0 || strcmp(swept[s].runnable[0], "eager") != 0) {
            no_reference = swept[s].field->alias;
            for (size_t u = 0; u < swept[s].unsupported_count; u++)
                if (strcmp(swept[s].unsupported[u], "eager") == 0)
                    parity_text_format(no_reference_reason, sizeof no_reference_reason, "%s", swept[s].reasons[u]);
        }

    size_t index[PARITY_KERNEL_FIELD_COUNT] = {0};
    parity_error *error = NULL;
    bool done = false;
    bool first = true;
    while (!done && !error) {
        parity_combo_plan *plan = append(out);
        if (!plan) {
            error = PARITY_ERROR(PARITY_ERROR_MEMORY, "enumerating combos");
            break;
        }
        init_plan(plan, model, batch, dtype, device);
        for (size_t s = 0; s < swept_count; s++)
            set_choice(plan, swept[s].field, swept[s].runnable_count ? swept[s].runnable[index[s]] : "eager");
        for (size_t p = 0; p < pins->count; p++) set_choice(plan, pins->fields[p], first ? "eager" : pins->values[p]);
        plan->is_baseline = first;
        if (no_reference) {
            plan->status = PARITY_COMBO_NOT_SUPPORTED;
            parity_text_format(plan->reason, sizeof plan->reason, "no eager reference: %s",
                     no_reference_reason[0] ? no_reference_reason : no_reference);
        } else if (!first) {
            check_choices(plan, used);
        }
        format_id(plan);
        error = apply_exclusions(suite, model, plan);
        bool pins_change_something = false;
        for (size_t p = 0; p < pins->count; p++) pins_change_something = pins_change_something || strcmp(pins->values[p], "eager") != 0;
        if (first && pins_change_something && !no_reference) {
            first = false; // the baseline ignores pins; the pinned all-eager-swept combo comes next
            continue;
        }
        first = false;
        // next index (mixed radix, last field fastest)
        done = true;
        for (size_t s = swept_count; s-- > 0;) {
            if (swept[s].runnable_count == 0) continue;
            if (++index[s] < swept[s].runnable_count) {
                done = false;
                break;
            }
            index[s] = 0;
        }
    }
    // One not_supported combo per unusable value: that value, every other swept field eager.
    for (size_t s = 0; s < swept_count && !error && !no_reference; s++) {
        for (size_t u = 0; u < swept[s].unsupported_count && !error; u++) {
            parity_combo_plan *plan = append(out);
            if (!plan) {
                error = PARITY_ERROR(PARITY_ERROR_MEMORY, "enumerating combos");
                break;
            }
            init_plan(plan, model, batch, dtype, device);
            for (size_t t = 0; t < swept_count; t++) set_choice(plan, swept[t].field, "eager");
            for (size_t p = 0; p < pins->count; p++) set_choice(plan, pins->fields[p], pins->values[p]);
            set_choice(plan, swept[s].field, swept[s].unsupported[u]);
            plan->status = PARITY_COMBO_NOT_SUPPORTED;
            parity_text_format(plan->reason, sizeof plan->reason, "%s", swept[s].reasons[u]);
            format_id(plan);
            error = apply_exclusions(suite, model, plan);
        }
    }
    free(swept);
    return error;
}

parity_error *parity_combos_enumerate(const parity_suite *suite, const parity_suite_model *model,
                                      const parity_model_requirements *requirements, const parity_suite_batch *batch,
                                      parity_dtype dtype, parity_device device, const parity_combo_options *options,
                                      parity_combo_list *out) {
    parity_used_fields used;
    parity_used_fields_of(requirements, &used);
    pinned_fields pins;
    PARITY_TRY(pins_of(options ? options->fixed : NULL, &used, &pins));
    if (suite->mode_count) return enumerate_modes(suite, model, &used, &pins, batch, dtype, device, out);
    return enumerate_product(suite, model, &used, &pins, batch, dtype, device, options && options->with_test_backends, out);
}
