// ops_rules.c: the seed's kernel-selection rules for one field (see ops_rules.h), in the order
// VeOmni applies them: known value -> NPU default normalization -> device support -> attention SP
// rewrite and SP support -> registry availability. Each broken rule is its own problem.
#include "harness/config/ops_rules.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/config/value_support.h"
#include "ops/registry.h"

bool parity_ops_config_add_problem(parity_ops_config *config, parity_ops_problem_kind kind,
                                   const parity_kernel_field *field, const char *format, ...) {
    if (kind == PARITY_OPS_PROBLEM_REJECTED) config->rejected_count++;
    else config->unavailable_count++;
    if (config->problem_count == config->problem_capacity) {
        size_t capacity = config->problem_capacity ? config->problem_capacity * 2 : 16;
        parity_ops_problem *grown = realloc(config->problems, capacity * sizeof *grown);
        if (!grown) {
            config->lost_problem_count++;
            return false;
        }
        config->problems = grown;
        config->problem_capacity = capacity;
    }
    parity_ops_problem *problem = &config->problems[config->problem_count++];
    problem->kind = kind;
    problem->field = field;
    va_list args;
    va_start(args, format);
    vsnprintf(problem->message, sizeof problem->message, format, args);
    va_end(args);
    return true;
}

void parity_ops_selection_add_note(parity_ops_selection *selection, const char *format, ...) {
    size_t used = strlen(selection->notes);
    if (used + 3 >= sizeof selection->notes) return;
    if (used) {
        memcpy(selection->notes + used, "; ", 3);
        used += 2;
    }
    va_list args;
    va_start(args, format);
    vsnprintf(selection->notes + used, sizeof selection->notes - used, format, args);
    va_end(args);
}

// "run.yaml:4: " or "--ops: " in front of a message, nothing for defaults.
static void source_prefix(const parity_ops_source *source, char *buffer, size_t size) {
    if (source->kind == PARITY_OPS_FROM_DEFAULT) {
        buffer[0] = '\0';
        return;
    }
    char where[600];
    snprintf(buffer, size, "%s: ", parity_ops_source_format(source, where, sizeof where));
}

static void reject(parity_ops_config *config, parity_ops_selection *selection, const char *reason,
                   const char *format, ...) __attribute__((format(printf, 4, 5)));
static void reject(parity_ops_config *config, parity_ops_selection *selection, const char *reason,
                   const char *format, ...) {
    char message[PARITY_OPS_PROBLEM_MAX], prefix[640];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    source_prefix(&selection->source, prefix, sizeof prefix);
    parity_ops_config_add_problem(config, PARITY_OPS_PROBLEM_REJECTED, selection->field, "%s%s: %s", prefix,
                                  selection->field->name, message);
    if (selection->status != PARITY_OPS_REJECTED) snprintf(selection->reason, sizeof selection->reason, "%s", reason);
    selection->status = PARITY_OPS_REJECTED;
}

// Values of the attention field that can run under SP on `device`, comma-separated.
static const char *sequence_parallel_values(const parity_kernel_field *field, parity_device_type device,
                                            char *buffer, size_t size) {
    size_t used = 0;
    buffer[0] = '\0';
    for (size_t i = 0; i < field->value_count; i++) {
        const char *name = field->values[i].name;
        if (!field->values[i].sequence_parallel || !parity_kernel_value_supported_on(field, name, device)) continue;
        int written = snprintf(buffer + used, size - used, "%s%s", used ? ", " : "", name);
        if (written < 0 || (size_t)written >= size - used) break;
        used += (size_t)written;
    }
    if (!used) snprintf(buffer, size, "none");
    return buffer;
}

// MODELING_BACKEND=veomni's facade rename, and the sp > 1 rules. Attention only.
static void apply_sequence_parallel_rules(parity_ops_config *config, parity_ops_selection *selection) {
    const parity_kernel_field *field = selection->field;
    const parity_kernel_value *value = parity_kernel_field_value(field, selection->backend);
    if (value && value->sequence_parallel_facade) {
        if (config->modeling_backend == PARITY_MODELING_VEOMNI) {
            snprintf(selection->resolved, sizeof selection->resolved, "%s", value->sequence_parallel_facade);
            parity_ops_selection_add_note(selection, "SP: %s -> %s", selection->backend, selection->resolved);
        } else {
            parity_ops_selection_add_note(selection, "MODELING_BACKEND=hf: no SP rewrite");
        }
    }
    if (config->sequence_parallel_size <= 1) return;
    if (config->modeling_backend == PARITY_MODELING_HF) {
        reject(config, selection, "no SP with MODELING_BACKEND=hf",
               "sequence parallel (sp=%d) needs MODELING_BACKEND=veomni; hf attention has no Ulysses support",
               config->sequence_parallel_size);
    } else if (!parity_kernel_value_sequence_parallel(field, selection->backend)) {
        char allowed[512];
        reject(config, selection, "no sequence parallel support",
               "'%s' does not support sequence parallel (sp=%d) (allowed with sp > 1 on %s: %s)", selection->backend,
               config->sequence_parallel_size, parity_device_type_name(config->device.type),
               sequence_parallel_values(field, config->device.type, allowed, sizeof allowed));
    }
}

// NPU default normalization and "is this value written for the device". Returns true when the
// selection may go on to availability. A default that is not written for the device and is not
// normalized (liger_kernel on cpu, eager DSA on npu) is not a rejection: availability reports it
// "not supported on <device>".
static bool apply_device_rules(parity_ops_config *config, parity_ops_selection *selection, bool needed) {
    const parity_kernel_field *field = selection->field;
    parity_device_type device = config->device.type;
    bool equals_default = strcmp(selection->requested, field->default_value) == 0;
    if (device == PARITY_DEVICE_NPU && equals_default && field->npu_target) {
        snprintf(selection->backend, sizeof selection->backend, "%s", field->npu_target);
        parity_ops_selection_add_note(selection, "NPU: %s %s -> %s",
                                      selection->source.kind == PARITY_OPS_FROM_DEFAULT ? "default"
                                                                                        : "explicit GPU default",
                                      selection->requested, field->npu_target);
    }
    if (parity_kernel_value_supported_on(field, selection->backend, device)) return true;
    char allowed[512];
    parity_kernel_field_allowed_values_on(field, device, allowed, sizeof allowed);
    if (!equals_default) {
        char reason[64];
        snprintf(reason, sizeof reason, "not supported on %s", parity_device_type_name(device));
        reject(config, selection, reason, "'%s' is not supported on %s (allowed on %s: %s)",
               selection->requested, parity_device_type_name(device), parity_device_type_name(device), allowed);
        return false;
    }
    if (device == PARITY_DEVICE_NPU && field->npu_needs_explicit_value) {
        if (!needed) {
            parity_ops_selection_add_note(selection, "NPU: '%s' is not auto-resolved; set npu explicitly",
                                          selection->requested);
            return true;
        }
        reject(config, selection, "set npu explicitly",
               "'%s' (the GPU default) is not auto-resolved on npu; set it to npu explicitly (allowed on npu: %s): "
               "the causal-conv1d and gated-delta-rule eager fallbacks do not support dynamic-batch cu_seqlens",
               selection->requested, allowed);
        return false;
    }
    return true;
}

bool parity_ops_check_vocabulary(parity_ops_config *config, parity_ops_selection *selection) {
    const parity_kernel_field *field = selection->field;
    selection->status = PARITY_OPS_AVAILABLE;
    selection->backend[0] = selection->resolved[0] = selection->reason[0] = '\0';
    if (strlen(selection->requested) + 1 >= sizeof selection->requested) {
        reject(config, selection, "value too long", "value '%.40s...' is too long (at most %d characters)",
               selection->requested, PARITY_OPS_VALUE_MAX - 2);
        return false;
    }
    if (!parity_kernel_value_known(field, selection->requested)) {
        char allowed[512];
        reject(config, selection, "unknown value", "'%s' is not a known value (allowed: %s)", selection->requested,
               parity_kernel_field_allowed_values(field, allowed, sizeof allowed));
        return false;
    }
    snprintf(selection->backend, sizeof selection->backend, "%s", selection->requested);
    snprintf(selection->resolved, sizeof selection->resolved, "%s", selection->requested);
    return true;
}

void parity_ops_resolve_selection(parity_ops_config *config, parity_ops_selection *selection, bool needed,
                                  bool check_availability) {
    const parity_kernel_field *field = selection->field;
    parity_device_type device = config->device.type;
    if (!parity_ops_check_vocabulary(config, selection)) return;
    bool device_ok = apply_device_rules(config, selection, needed);
    snprintf(selection->resolved, sizeof selection->resolved, "%s", selection->backend);
    if (strcmp(field->op, PARITY_OP_ATTENTION) == 0) apply_sequence_parallel_rules(config, selection);
    if (!device_ok || selection->status == PARITY_OPS_REJECTED) return;
    if (!needed) {
        selection->status = PARITY_OPS_NOT_NEEDED;
        return;
    }
    if (!check_availability) {
        selection->status = PARITY_OPS_NOT_CHECKED;
        return;
    }
    char reason[PARITY_OPS_REASON_MAX];
    parity_value_status status =
        parity_kernel_value_status(field, selection->backend, config->device, reason, sizeof reason);
    if (status == PARITY_VALUE_AVAILABLE) return;
    selection->status = PARITY_OPS_UNAVAILABLE;
    snprintf(selection->reason, sizeof selection->reason, "%s", reason);
    char normalized[PARITY_OPS_VALUE_MAX + 32] = "";
    if (strcmp(selection->backend, selection->requested) != 0)
        snprintf(normalized, sizeof normalized, " (from %s)", selection->requested);
    parity_ops_config_add_problem(config, PARITY_OPS_PROBLEM_UNAVAILABLE, field, "%s: '%s'%s is not available on %s: %s",
                                  field->name, selection->backend, normalized, parity_device_type_name(device), reason);
}
