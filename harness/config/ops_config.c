// ops_config.c: builds the resolved kernel-selection config (see ops_config.h): settles
// MODELING_BACKEND, applies the raw settings in order (naming unknown fields and repeated --ops
// keys), runs the per-field rules of ops_rules.c, and sums every problem up in one error.
#include "harness/config/ops_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/config/ops_rules.h"

const char *parity_ops_status_name(parity_ops_status status) {
    switch (status) {
    case PARITY_OPS_AVAILABLE: return "available";
    case PARITY_OPS_REJECTED: return "rejected";
    case PARITY_OPS_UNAVAILABLE: return "unavailable";
    case PARITY_OPS_NOT_NEEDED: return "not needed";
    case PARITY_OPS_NOT_CHECKED: return "not checked";
    }
    return "unknown";
}

parity_ops_config_options parity_ops_config_options_default(void) {
    return (parity_ops_config_options){
        .device = PARITY_CUDA(0),
        .sequence_parallel_size = 1,
        .modeling_backend = PARITY_MODELING_FROM_ENVIRONMENT,
        .needed_ops = NULL,
        .skip_availability = false,
        .vocabulary_only = false,
    };
}

// Settles the effective modeling backend; an invalid MODELING_BACKEND is a problem, and the rules
// then run as veomni so that every other problem is still found.
static void settle_modeling_backend(parity_ops_config *config, parity_modeling_backend requested) {
    config->modeling_backend = PARITY_MODELING_VEOMNI;
    if (requested != PARITY_MODELING_FROM_ENVIRONMENT) {
        config->modeling_backend = requested;
        snprintf(config->modeling_backend_source, sizeof config->modeling_backend_source, "options");
        return;
    }
    const char *text = getenv(PARITY_MODELING_BACKEND_VARIABLE);
    if (!text || !text[0]) {
        snprintf(config->modeling_backend_source, sizeof config->modeling_backend_source, "default");
        return;
    }
    snprintf(config->modeling_backend_source, sizeof config->modeling_backend_source, PARITY_MODELING_BACKEND_VARIABLE);
    if (!parity_modeling_backend_parse(text, &config->modeling_backend))
        parity_ops_config_add_problem(config, PARITY_OPS_PROBLEM_REJECTED, NULL,
                                      PARITY_MODELING_BACKEND_VARIABLE "='%s' is not a modeling backend (allowed: veomni, hf)",
                                      text);
}

static const char *valid_field_names(char *buffer, size_t size) {
    size_t used = 0;
    buffer[0] = '\0';
    for (size_t i = 0; i < PARITY_KERNEL_FIELD_COUNT && used < size; i++) {
        int written = snprintf(buffer + used, size - used, "%s%s", i ? ", " : "", parity_kernel_fields[i].name);
        if (written < 0) break;
        used += (size_t)written;
    }
    return buffer;
}

static void apply_setting(parity_ops_config *config, const parity_ops_setting *setting) {
    bool from_command_line = setting->source.kind == PARITY_OPS_FROM_COMMAND_LINE;
    const parity_kernel_field *field = parity_kernel_field_find(setting->key, from_command_line);
    char where[600];
    parity_ops_source_format(&setting->source, where, sizeof where);
    if (!field) {
        char fields[600], hint[160] = "";
        const parity_kernel_field *by_alias = parity_kernel_field_find(setting->key, true);
        if (by_alias) snprintf(hint, sizeof hint, "; in YAML write the full name %s", by_alias->name);
        else if (from_command_line) snprintf(hint, sizeof hint, "; --ops also takes the aliases of `parity list ops`");
        parity_ops_config_add_problem(config, PARITY_OPS_PROBLEM_REJECTED, NULL,
                                      "%s: '%s' is not a kernel selection knob (valid fields: %s%s)", where,
                                      setting->key, valid_field_names(fields, sizeof fields), hint);
        return;
    }
    parity_ops_selection *selection = &config->selections[parity_kernel_field_index(field)];
    if (from_command_line && selection->source.kind == PARITY_OPS_FROM_COMMAND_LINE) {
        parity_ops_config_add_problem(config, PARITY_OPS_PROBLEM_REJECTED, field,
                                      "--ops: %s is set twice ('%s', then '%s')", field->name, selection->requested,
                                      setting->value);
        return;
    }
    if (selection->source.kind != PARITY_OPS_FROM_DEFAULT) {
        char earlier[600];
        parity_ops_selection_add_note(selection, "%s overrides '%s' from %s", where, selection->requested,
                                      parity_ops_source_format(&selection->source, earlier, sizeof earlier));
    }
    snprintf(selection->requested, sizeof selection->requested, "%s", setting->value);
    selection->source = setting->source;
}

static bool op_is_needed(const char *op, const parity_op_set *needed_ops) {
    parity_op_id id;
    return !needed_ops || (parity_op_id_find(op, &id) && needed_ops->contains[id]);
}

// One error naming every problem, as many as fit in an error message.
static parity_error *summarize(const parity_ops_config *config) {
    if (config->problem_count == 0) return NULL;
    char text[960];
    size_t used = 0, shown = 0;
    for (size_t i = 0; i < config->problem_count; i++) {
        const char *message = config->problems[i].message;
        if (used + strlen(message) + 3 >= sizeof text) break;
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%s", used ? "; " : "", message);
        shown++;
    }
    char more[48] = "";
    if (shown < config->problem_count)
        snprintf(more, sizeof more, "%s(and %zu more)", shown ? " " : "", config->problem_count - shown);
    return PARITY_ERROR(config->rejected_count ? PARITY_ERROR_CONFIG : PARITY_ERROR_UNAVAILABLE,
                        "kernel selection on %s: %zu rejected, %zu unavailable: %s%s",
                        parity_device_type_name(config->device.type), config->rejected_count,
                        config->unavailable_count, text, more);
}

parity_error *parity_ops_config_build(const parity_ops_settings *settings, const parity_ops_config_options *options,
                                      parity_ops_config *config) {
    if (!config) return PARITY_ERROR(PARITY_ERROR_USAGE, "parity_ops_config_build needs a config to fill");
    memset(config, 0, sizeof *config);
    parity_ops_config_options defaults = parity_ops_config_options_default();
    if (!options) options = &defaults;
    config->device = options->device;
    config->sequence_parallel_size = options->sequence_parallel_size;
    for (size_t i = 0; i < PARITY_KERNEL_FIELD_COUNT; i++) {
        parity_ops_selection *selection = &config->selections[i];
        selection->field = &parity_kernel_fields[i];
        snprintf(selection->requested, sizeof selection->requested, "%s", parity_kernel_fields[i].default_value);
        selection->source.kind = PARITY_OPS_FROM_DEFAULT;
    }
    if ((unsigned)options->device.type >= PARITY_DEVICE_TYPE_COUNT)
        return PARITY_ERROR(PARITY_ERROR_USAGE, "kernel selection: unknown device type %d", (int)options->device.type);
    settle_modeling_backend(config, options->modeling_backend);
    if (options->sequence_parallel_size < 1)
        parity_ops_config_add_problem(config, PARITY_OPS_PROBLEM_REJECTED, NULL,
                                      "sequence parallel size must be at least 1, got %d",
                                      options->sequence_parallel_size);
    for (size_t i = 0; settings && i < settings->count; i++) apply_setting(config, &settings->items[i]);
    for (size_t i = 0; i < PARITY_KERNEL_FIELD_COUNT; i++) {
        parity_ops_selection *selection = &config->selections[i];
        if (options->vocabulary_only) {
            if (parity_ops_check_vocabulary(config, selection)) selection->status = PARITY_OPS_NOT_CHECKED;
            continue;
        }
        parity_ops_resolve_selection(config, selection, op_is_needed(selection->field->op, options->needed_ops),
                                     !options->skip_availability);
    }
    if (config->lost_problem_count)
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "out of memory recording %zu kernel-selection problems",
                            config->lost_problem_count);
    return summarize(config);
}

void parity_ops_config_release(parity_ops_config *config) {
    if (!config) return;
    free(config->problems);
    config->problems = NULL;
    config->problem_count = config->problem_capacity = 0;
}

const parity_ops_selection *parity_ops_config_find(const parity_ops_config *config, const char *name) {
    if (!config || !name) return NULL;
    const parity_kernel_field *field = parity_kernel_field_find(name, true);
    if (!field) field = parity_kernel_field_for_op(name);
    return field ? &config->selections[parity_kernel_field_index(field)] : NULL;
}

const char *parity_ops_config_backend(const parity_ops_config *config, const char *op) {
    const parity_kernel_field *field = parity_kernel_field_for_op(op);
    if (!config || !field) return NULL;
    const parity_ops_selection *selection = &config->selections[parity_kernel_field_index(field)];
    return selection->status == PARITY_OPS_REJECTED ? NULL : selection->backend;
}

void parity_ops_config_op_names(const parity_ops_config *config, parity_op_names *out) {
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < PARITY_KERNEL_FIELD_COUNT; i++) {
        parity_op_id op;
        if (parity_op_id_find(parity_kernel_fields[i].op, &op))
            out->name[op] = parity_ops_config_backend(config, parity_kernel_fields[i].op);
    }
}
