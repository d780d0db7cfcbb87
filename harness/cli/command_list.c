// command_list.c: `parity list ops` (the kernel-selection fields) and `parity list backends` (every
// value of every field, plus third-party registrations, with whether it can run here and why not).
#include <stdio.h>
#include <string.h>

#include "harness/cli/cli_support.h"
#include "harness/cli/commands.h"
#include "harness/cli/text_table.h"
#include "harness/config/fields.h"
#include "harness/config/value_support.h"
#include "ops/registry.h"

void parity_command_list_usage(FILE *stream) {
    fprintf(stream,
            "usage: parity list ops [--device cpu|cuda|npu]\n"
            "       parity list backends [--device cpu|cuda|npu|all]\n"
            "\n"
            "ops       one row per kernel-selection field (model.ops_implementation.*): its --ops alias,\n"
            "          the registry op it selects, its default and its values. With --device, only the\n"
            "          values written for that device, and the default that device resolves to.\n"
            "backends  one row per (field, value, device) with its status here: available, or why not\n"
            "          (not built yet, needs an Ascend NPU build, needs SM90+, no CUDA device present...).\n"
            "          --device all (default) lists each value on the devices it is written for; naming a\n"
            "          device lists every value, marking the others \"not supported on <device>\".\n"
            "\n"
            "exit status: 0 listed, 2 usage error\n");
}

// "SM90+, sequence parallel, DeepSeek-V4" for a seed value.
static const char *requirements(const parity_kernel_field *field, const parity_kernel_value *value, char *buffer,
                                size_t size) {
    size_t used = 0;
    buffer[0] = '\0';
    if (value->min_compute_capability)
        used += (size_t)snprintf(buffer + used, size - used, "SM%d+", value->min_compute_capability);
    if (strcmp(field->op, PARITY_OP_ATTENTION) == 0 && used < size)
        used += (size_t)snprintf(buffer + used, size - used, "%s%s", used ? ", " : "",
                                 value->sequence_parallel ? "sequence parallel" : "no sequence parallel");
    if (value->model_restriction && used < size)
        snprintf(buffer + used, size - used, "%s%s", used ? ", " : "", value->model_restriction);
    return buffer[0] ? buffer : "-";
}

// The default `field` takes on `device` ("liger_kernel -> npu", "fla (set npu explicitly)").
static const char *default_on(const parity_kernel_field *field, const parity_device *device, char *buffer,
                              size_t size) {
    snprintf(buffer, size, "%s", field->default_value);
    if (!device || parity_kernel_value_supported_on(field, field->default_value, device->type)) return buffer;
    if (device->type == PARITY_DEVICE_NPU && field->npu_target)
        snprintf(buffer, size, "%s -> %s", field->default_value, field->npu_target);
    else if (device->type == PARITY_DEVICE_NPU && field->npu_needs_explicit_value)
        snprintf(buffer, size, "%s (not auto-resolved: set npu explicitly)", field->default_value);
    else snprintf(buffer, size, "%s (not on %s)", field->default_value, parity_device_type_name(device->type));
    return buffer;
}

static int list_ops(const parity_device *device) {
    const char *headers[] = {"field", "alias", "op", device ? "default here" : "default", "values"};
    parity_text_table *table = parity_text_table_new(5, headers);
    if (!table) return parity_cli_report_error("list", PARITY_ERROR(PARITY_ERROR_MEMORY, "making the ops table"));
    parity_error *error = NULL;
    for (size_t i = 0; i < PARITY_KERNEL_FIELD_COUNT && !error; i++) {
        const parity_kernel_field *field = &parity_kernel_fields[i];
        char values[512], default_text[160];
        if (device) parity_kernel_field_allowed_values_on(field, device->type, values, sizeof values);
        else parity_kernel_field_allowed_values(field, values, sizeof values);
        const char *row[] = {field->name, field->alias, field->op, default_on(field, device, default_text,
                                                                                sizeof default_text), values};
        error = parity_text_table_add_row(table, row);
    }
    if (!error) parity_text_table_print(table, stdout, false);
    parity_text_table_free(table);
    return parity_cli_report_error("list", error);
}

// Adds the row of (field, value) on one device.
static parity_error *add_backend_row(parity_text_table *table, const parity_kernel_field *field, const char *value,
                                     parity_device_type device, const char *notes) {
    char status[256];
    parity_kernel_value_status(field, value, (parity_device){device, 0}, status, sizeof status);
    const char *row[] = {field->name, value, parity_device_type_name(device), status, notes};
    return parity_text_table_add_row(table, row);
}

// Rows for one field: its seed values, then third-party registrations.
static parity_error *add_field_rows(parity_text_table *table, const parity_kernel_field *field,
                                    const parity_device *only) {
    for (size_t v = 0; v < field->value_count; v++) {
        const parity_kernel_value *value = &field->values[v];
        char buffer[256];
        const char *notes = requirements(field, value, buffer, sizeof buffer);
        for (int device = 0; device < PARITY_DEVICE_TYPE_COUNT; device++) {
            bool show = only ? device == (int)only->type : parity_kernel_value_targets(value, device);
            if (!show) continue;
            // A backend built here that needs more than the seed's minimum says so (fused_triton's
            // mma.sync needs SM80; VeOmni's Triton kernel runs from SM70).
            const parity_backend *backend = parity_registry_find(field->op, value->name, (parity_device_type)device);
            char stricter[320];
            const char *row_notes = notes;
            if (backend && backend->min_compute_capability > value->min_compute_capability) {
                snprintf(stricter, sizeof stricter, "SM%d+ here (seed: %.200s)", backend->min_compute_capability, notes);
                row_notes = stricter;
            }
            PARITY_TRY(add_backend_row(table, field, value->name, (parity_device_type)device, row_notes));
        }
    }
    enum { EXTRA_MAX = 64 };
    const char *extra[EXTRA_MAX];
    size_t extra_count = parity_kernel_field_extra_values(field, extra, EXTRA_MAX);
    for (size_t e = 0; e < extra_count && e < EXTRA_MAX; e++) {
        for (int device = 0; device < PARITY_DEVICE_TYPE_COUNT; device++) {
            const parity_backend *backend = parity_registry_find(field->op, extra[e], (parity_device_type)device);
            bool show = only ? device == (int)only->type : backend != NULL;
            if (!show) continue;
            char notes[256];
            snprintf(notes, sizeof notes, "third party: %s", backend ? backend->origin : "registered elsewhere");
            PARITY_TRY(add_backend_row(table, field, extra[e], (parity_device_type)device, notes));
        }
    }
    return NULL;
}

// Registered backends of ops that have no kernel-selection field (linear, embedding, ...).
static parity_error *add_fieldless_rows(parity_text_table *table, const parity_device *only) {
    size_t count = parity_registry_count();
    for (size_t i = 0; i < count; i++) {
        const parity_backend *backend = parity_registry_at(i);
        if (!backend || parity_kernel_field_for_op(backend->op)) continue;
        if (only && backend->device != only->type) continue;
        char status[256], field[160], notes[256];
        if (parity_registry_availability(backend->op, backend->name, (parity_device){backend->device, 0}, NULL, status,
                                         sizeof status) == PARITY_AVAILABLE)
            snprintf(status, sizeof status, "available");
        snprintf(field, sizeof field, "(op %s)", backend->op);
        snprintf(notes, sizeof notes, "no kernel-selection field; %s", backend->origin);
        const char *row[] = {field, backend->name, parity_device_type_name(backend->device), status, notes};
        PARITY_TRY(parity_text_table_add_row(table, row));
    }
    return NULL;
}

static int list_backends(const parity_device *only) {
    const char *headers[] = {"field", "value", "device", "status", "requirements"};
    parity_text_table *table = parity_text_table_new(5, headers);
    if (!table) return parity_cli_report_error("list", PARITY_ERROR(PARITY_ERROR_MEMORY, "making the backends table"));
    parity_text_table_set_color(table, 3, parity_text_table_status_color);
    parity_error *error = NULL;
    for (size_t i = 0; i < PARITY_KERNEL_FIELD_COUNT && !error; i++)
        error = add_field_rows(table, &parity_kernel_fields[i], only);
    if (!error) error = add_fieldless_rows(table, only);
    if (!error) parity_text_table_print(table, stdout, parity_cli_use_color(stdout));
    parity_text_table_free(table);
    return parity_cli_report_error("list", error);
}

int parity_command_list(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "parity list: say what to list: ops or backends\n");
        parity_command_list_usage(stderr);
        return PARITY_EXIT_CONFIG;
    }
    const char *subject = argv[1];
    bool backends = strcmp(subject, "backends") == 0;
    if (!backends && strcmp(subject, "ops") != 0) {
        fprintf(stderr, "parity list: unknown list '%s' (choose ops or backends)\n", subject);
        return PARITY_EXIT_CONFIG;
    }
    const char *device_text = NULL;
    for (int i = 2; i < argc; i++) {
        parity_cli_option_match match = parity_cli_option_value(argc, argv, &i, "--device", &device_text);
        if (match == PARITY_CLI_OPTION_MISSING_VALUE) return PARITY_EXIT_CONFIG;
        if (match == PARITY_CLI_OPTION_NO_MATCH) {
            fprintf(stderr, "parity list %s: unknown argument '%s' (see parity list --help)\n", subject, argv[i]);
            return PARITY_EXIT_CONFIG;
        }
    }
    parity_device device;
    bool all = !device_text || (backends && strcmp(device_text, "all") == 0);
    if (!all && !parity_device_parse(device_text, &device)) {
        fprintf(stderr, "parity list %s: unknown device '%s' (choose cpu, cuda, npu%s)\n", subject, device_text,
                backends ? " or all" : "");
        return PARITY_EXIT_CONFIG;
    }
    return backends ? list_backends(all ? NULL : &device) : list_ops(all ? NULL : &device);
}
