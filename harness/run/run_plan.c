// run_plan.c: planning a suite run (runner.h): the devices, dtypes, cases (model, batch) and combos,
// and which combos --filter selects (a filter that selects none is a USAGE error).
#include "harness/runner.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "harness/config/ops_config.h"
#include "harness/text.h"

void parity_run_plan_release(parity_run_plan *plan) {
    for (size_t i = 0; i < plan->case_count; i++) parity_case_release(&plan->cases[i]);
    free(plan->cases);
    free(plan->selected);
    free(plan->case_index);
    parity_combo_list_release(&plan->combos);
    memset(plan, 0, sizeof *plan);
}

static parity_error *resolve_device(const char *name, bool listing, parity_device *out) {
    if (strcmp(name, "best") == 0) *out = parity_device_best();
    else if (strcmp(name, "cpu") == 0) *out = PARITY_CPU;
    else if (strcmp(name, "cuda") == 0) *out = PARITY_CUDA(0);
    else return PARITY_ERROR(PARITY_ERROR_USAGE, "device '%s' is not one of cpu, cuda, best", name);
    if (listing || out->type == PARITY_DEVICE_CPU) return NULL;
    parity_device_info info;
    parity_error *error = parity_device_query(*out, &info);
    if (!error) return NULL;
    parity_error *absent = PARITY_ERROR(PARITY_ERROR_DEVICE, "device %s is absent: %s", name, parity_error_message(error));
    parity_error_free(error);
    return absent;
}

static parity_error *plan_devices(const parity_suite *suite, const parity_run_options *options, parity_run_plan *plan) {
    const char *names[PARITY_SUITE_MAX_DEVICES];
    size_t count = 0;
    if (options->device) names[count++] = options->device;
    else
        for (size_t i = 0; i < suite->device_count; i++) names[count++] = suite->devices[i];
    for (size_t i = 0; i < count; i++) {
        parity_device device;
        PARITY_TRY(resolve_device(names[i], options->listing, &device));
        bool seen = false;
        for (size_t j = 0; j < plan->device_count; j++) seen = seen || parity_device_equal(plan->devices[j], device);
        if (!seen) plan->devices[plan->device_count++] = device;
    }
    return NULL;
}

static parity_error *plan_dtypes(const parity_suite *suite, const parity_run_options *options, parity_dtype *dtypes,
                                 size_t *count) {
    *count = 0;
    if (!options->dtype) {
        for (size_t i = 0; i < suite->dtype_count; i++) dtypes[(*count)++] = suite->dtypes[i];
        return NULL;
    }
    parity_dtype dtype;
    if (!parity_dtype_parse(options->dtype, &dtype) || (dtype != PARITY_F64 && dtype != PARITY_F32 && dtype != PARITY_BF16))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "--dtype '%s' is not one of fp64, fp32, bf16", options->dtype);
    dtypes[(*count)++] = dtype;
    return NULL;
}

// The --ops pins are known values of their fields, each field set once: the vocabulary rule of
// `parity config check` (harness/config/ops_config.h), with its messages, so a value no backend has
// is a CONFIG error in both. Device and availability rules stay with the combos: a known value that
// cannot run on a device makes that device's combos not_supported, with the reason. Unknown fields
// are named by the combo enumeration (combos.c).
static parity_error *check_pins(const parity_ops_settings *fixed) {
    if (!fixed || fixed->count == 0) return NULL;
    parity_ops_config_options options = parity_ops_config_options_default();
    options.vocabulary_only = true;
    options.modeling_backend = PARITY_MODELING_VEOMNI; // MODELING_BACKEND is not read by `parity run`
    parity_ops_config config;
    parity_error *error = parity_ops_config_build(fixed, &options, &config);
    if (error && parity_error_kind_of(error) == PARITY_ERROR_MEMORY) {
        parity_ops_config_release(&config);
        return error;
    }
    parity_error_free(error); // the problems are in config.problems
    char problems[900] = "";
    size_t shown = 0;
    for (size_t i = 0; i < config.problem_count; i++) {
        if (!config.problems[i].field) continue;
        parity_text_extend(problems, sizeof problems, "%s%s", shown++ ? "; " : "", config.problems[i].message);
    }
    parity_ops_config_release(&config);
    return shown ? PARITY_ERROR(PARITY_ERROR_CONFIG, "%s", problems) : NULL;
}

int parity_run_ranks_needed(const parity_suite *suite, const parity_run_options *options) {
    if (options->has_layout) return parity_layout_ranks(&options->layout);
    int most = 1;
    for (size_t l = 0; l < suite->layout_count; l++)
        if (parity_layout_ranks(&suite->layouts[l]) > most) most = parity_layout_ranks(&suite->layouts[l]);
    return most;
}

parity_error *parity_run_plan_build(const parity_suite *suite, const parity_run_options *options, parity_run_plan *out) {
    memset(out, 0, sizeof *out);
    PARITY_TRY(parity_suite_check_ranks(suite));
    PARITY_TRY(check_pins(options->fixed));
    if (options->model && !parity_suite_find_model(suite, options->model)) {
        char names[512] = "";
        for (size_t i = 0; i < suite->model_count; i++)
            parity_text_extend(names, sizeof names, "%s%s", i ? ", " : "", suite->models[i].name);
        return PARITY_ERROR(PARITY_ERROR_USAGE, "--model: suite %s has no model '%s' (models: %s)", suite->name,
                            options->model, names);
    }
    parity_dtype dtypes[PARITY_SUITE_MAX_DTYPES];
    size_t dtype_count;
    PARITY_TRY(plan_dtypes(suite, options, dtypes, &dtype_count));
    PARITY_TRY(plan_devices(suite, options, out));

    static const parity_layout one_rank = {.dp = 1, .sp = 1, .ep = 1};
    const parity_layout *layouts = options->has_layout ? &options->layout : suite->layout_count ? suite->layouts : &one_rank;
    const size_t layout_count = options->has_layout || !suite->layout_count ? 1 : suite->layout_count;
    size_t total_cases = 0;
    for (size_t m = 0; m < suite->model_count; m++) {
        size_t count;
        parity_suite_model_batches(suite, &suite->models[m], &count);
        total_cases += count * layout_count;
    }
    out->cases = calloc(total_cases ? total_cases : 1, sizeof *out->cases);
    if (!out->cases) return PARITY_ERROR(PARITY_ERROR_MEMORY, "planning the run");
    parity_combo_options combo_options = {options->with_test_backends, options->fixed};
    parity_error *error = NULL;
    size_t *case_of = NULL, case_capacity = 0;
    for (size_t l = 0; l < layout_count && !error; l++)
    for (size_t m = 0; m < suite->model_count && !error; m++) {
        const parity_suite_model *model = &suite->models[m];
        char layout_name[64];
        parity_layout_name(&layouts[l], layout_name, sizeof layout_name);
        if (options->model && strcmp(options->model, model->name) != 0) continue;
        size_t batch_count;
        const parity_suite_batch *batches = parity_suite_model_batches(suite, model, &batch_count);
        for (size_t b = 0; b < batch_count && !error; b++) {
            parity_case *c = &out->cases[out->case_count];
            error = parity_case_prepare(suite, model, &batches[b], c);
            if (error) break;
            c->layout = layouts[l];
            out->case_count++;
            for (size_t d = 0; d < dtype_count && !error; d++)
                for (size_t v = 0; v < out->device_count && !error; v++) {
                    size_t before = out->combos.count;
                    error = parity_combos_enumerate(suite, model, &c->requirements, &batches[b], dtypes[d], out->devices[v],
                                                    &combo_options, &out->combos);
                    if (!error && out->combos.count > case_capacity) {
                        case_capacity = out->combos.capacity;
                        size_t *grown = realloc(case_of, case_capacity * sizeof *case_of);
                        if (!grown) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "planning the run");
                        else case_of = grown;
                    }
                    for (size_t i = before; !error && i < out->combos.count; i++) {
                        case_of[i] = out->case_count - 1;
                        // the layout is the ids' last segment, so a filter, a report and a history tell layouts apart
                        parity_combo_plan *combo = &out->combos.items[i];
                        if (!layout_name[0]) continue;
                        if (strlen(combo->id) + strlen(layout_name) + 2 > sizeof combo->id)
                            error = PARITY_ERROR(PARITY_ERROR_INTERNAL, "combo id %s has no room for its layout", combo->id);
                        else
                            parity_text_extend(combo->id, sizeof combo->id, "/%s", layout_name);
                    }
                }
        }
    }
    out->case_index = case_of;
    out->selected = calloc(out->combos.count ? out->combos.count : 1, sizeof *out->selected);
    if (!error && !out->selected) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "planning the run");
    for (size_t i = 0; !error && i < out->combos.count; i++) {
        out->selected[i] = !options->filter || fnmatch(options->filter, out->combos.items[i].id, 0) == 0;
        out->selected_count += out->selected[i];
    }
    if (!error && options->filter && out->selected_count == 0) // as pytest's "no tests ran": not a pass
        error = PARITY_ERROR(PARITY_ERROR_USAGE,
                             "--filter '%s': no combo matches (of the %zu combos planned; `parity run --suite %s --list` "
                             "shows their ids)", options->filter, out->combos.count, suite->name);
    if (error) parity_run_plan_release(out);
    return error;
}
