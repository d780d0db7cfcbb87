// command_config.c: `parity config check`: reads a VeOmni YAML's model.ops_implementation block
// and any --ops overrides, resolves them for a device / SP degree / MODELING_BACKEND with every rule
// of the seed, prints the resolved config, and lists every problem: rejections (rules broken) apart
// from unavailable backends. Exit 0 only when every selected backend a model can use runs here. A
// field whose op no model family of parity calls (models/model_traits.h: the union of the families'
// ops; today dsa_indexer, dsa_attn, mhc and rope_vision) is checked for a known value that the device
// allows, then reported as "not used by any model" instead of failing for a backend nobody can call.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli/cli_support.h"
#include "harness/cli/commands.h"
#include "harness/cli/text_table.h"
#include "harness/config/ops_config.h"
#include "harness/config/ops_override.h"
#include "harness/config/yaml_ops.h"
#include "models/model_traits.h"

enum { MAX_OVERRIDES = 32 };

void parity_command_config_usage(FILE *stream) {
    fprintf(stream,
            "usage: parity config check [FILE.yaml] [--ops field=value,...] [--device cpu|cuda|npu]\n"
            "                           [--sp N] [--modeling-backend veomni|hf]\n"
            "\n"
            "Validates and resolves a kernel-selection config the way VeOmni's OpsImplementationConfig does,\n"
            "then checks that every selected backend can run here. Prints one row per field (requested value,\n"
            "where it came from, resolved value, status, notes), then every problem.\n"
            "\n"
            "  FILE.yaml            a VeOmni YAML; only model.ops_implementation is read (optional: without it,\n"
            "                       the defaults plus --ops)\n"
            "  --ops k=v,...        overrides, applied after FILE; keys are field names or aliases\n"
            "                       (parity list ops); may be given more than once\n"
            "  --device D           cpu, cuda (default; VeOmni's defaults are GPU-oriented) or npu\n"
            "  --sp N               Ulysses sequence-parallel degree (default 1)\n"
            "  --modeling-backend B veomni or hf (default: $MODELING_BACKEND, else veomni)\n"
            "\n"
            "Fields whose op no model of parity calls (dsa_indexer, dsa_attn, mhc, rope_vision today) are\n"
            "checked for a known value, then listed as not used by any model; their backends are not asked for.\n"
            "\n"
            "exit status: 0 every selected backend that a model can use is available on the device\n"
            "             2 usage error, invalid config (unknown field or value, a value not supported on the\n"
            "               device, no sequence-parallel support, malformed or ill-formed YAML), or a selected\n"
            "               backend that is unavailable here (not built yet, needs an Ascend NPU build, ...)\n"
            "             3 FILE cannot be read, or a system failure\n");
}

typedef struct check_arguments {
    const char *file;
    const char *overrides[MAX_OVERRIDES];
    int override_count;
    parity_ops_config_options options;
} check_arguments;

// Parses the arguments after "config check"; returns an exit code, PARITY_EXIT_OK to go on.
static int parse_check_arguments(int argc, char **argv, check_arguments *arguments) {
    arguments->options = parity_ops_config_options_default();
    for (int i = 0; i < argc; i++) {
        const char *value = NULL;
        parity_cli_option_match match;
        if ((match = parity_cli_option_value(argc, argv, &i, "--ops", &value))) {
            if (match == PARITY_CLI_OPTION_MISSING_VALUE) return PARITY_EXIT_CONFIG;
            if (arguments->override_count == MAX_OVERRIDES) {
                fprintf(stderr, "parity config check: at most %d --ops options\n", MAX_OVERRIDES);
                return PARITY_EXIT_CONFIG;
            }
            arguments->overrides[arguments->override_count++] = value;
        } else if ((match = parity_cli_option_value(argc, argv, &i, "--device", &value))) {
            if (match == PARITY_CLI_OPTION_MISSING_VALUE) return PARITY_EXIT_CONFIG;
            if (!parity_device_parse(value, &arguments->options.device)) {
                fprintf(stderr, "parity config check: unknown device '%s' (choose cpu, cuda or npu)\n", value);
                return PARITY_EXIT_CONFIG;
            }
        } else if ((match = parity_cli_option_value(argc, argv, &i, "--sp", &value))) {
            if (match == PARITY_CLI_OPTION_MISSING_VALUE) return PARITY_EXIT_CONFIG;
            char *end = NULL;
            long degree = strtol(value, &end, 10);
            if (!value[0] || *end || degree < 1 || degree > 1 << 20) {
                fprintf(stderr, "parity config check: --sp needs a positive integer, got '%s'\n", value);
                return PARITY_EXIT_CONFIG;
            }
            arguments->options.sequence_parallel_size = (int)degree;
        } else if ((match = parity_cli_option_value(argc, argv, &i, "--modeling-backend", &value))) {
            if (match == PARITY_CLI_OPTION_MISSING_VALUE) return PARITY_EXIT_CONFIG;
            if (!parity_modeling_backend_parse(value, &arguments->options.modeling_backend)) {
                fprintf(stderr, "parity config check: unknown modeling backend '%s' (choose veomni or hf)\n", value);
                return PARITY_EXIT_CONFIG;
            }
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "parity config check: unknown option '%s' (see parity config --help)\n", argv[i]);
            return PARITY_EXIT_CONFIG;
        } else if (arguments->file) {
            fprintf(stderr, "parity config check: one config file at most ('%s' and '%s')\n", arguments->file,
                    argv[i]);
            return PARITY_EXIT_CONFIG;
        } else {
            arguments->file = argv[i];
        }
    }
    return PARITY_EXIT_OK;
}

// The status column: "available", "rejected", or the reason a valid value cannot run.
static const char *status_text(const parity_ops_selection *selection) {
    if (selection->status == PARITY_OPS_UNAVAILABLE) return selection->reason;
    return parity_ops_status_name(selection->status);
}

static parity_error *print_selections(const parity_ops_config *config) {
    const char *headers[] = {"field", "requested", "source", "resolved", "status", "notes"};
    parity_text_table *table = parity_text_table_new(6, headers);
    if (!table) return PARITY_ERROR(PARITY_ERROR_MEMORY, "making the config table");
    parity_text_table_set_color(table, 4, parity_text_table_status_color);
    parity_error *error = NULL;
    for (size_t i = 0; i < PARITY_KERNEL_FIELD_COUNT && !error; i++) {
        const parity_ops_selection *selection = &config->selections[i];
        char source[600], notes[PARITY_OPS_NOTES_MAX + PARITY_OPS_REASON_MAX + 4];
        bool rejected = selection->status == PARITY_OPS_REJECTED;
        if (rejected) // the short why first; the full message is in the problem list below
            snprintf(notes, sizeof notes, "%s%s%s", selection->reason, selection->notes[0] ? "; " : "",
                     selection->notes);
        else snprintf(notes, sizeof notes, "%s", selection->notes[0] ? selection->notes : "-");
        const char *row[] = {selection->field->name,
                             selection->requested,
                             parity_ops_source_format(&selection->source, source, sizeof source),
                             rejected || !selection->resolved[0] ? "-" : selection->resolved,
                             status_text(selection), notes};
        error = parity_text_table_add_row(table, row);
    }
    if (!error) parity_text_table_print(table, stdout, parity_cli_use_color(stdout));
    parity_text_table_free(table);
    return error;
}

static void print_problems(const parity_ops_config *config, parity_ops_problem_kind kind, const char *title,
                           size_t count) {
    if (!count) return;
    printf("\n%s (%zu):\n", title, count);
    for (size_t i = 0; i < config->problem_count; i++)
        if (config->problems[i].kind == kind) printf("  %s\n", config->problems[i].message);
}

// The note on fields no model uses (status "not needed"), one line each.
static void print_unused(const parity_ops_config *config) {
    size_t count = 0;
    for (size_t i = 0; i < PARITY_KERNEL_FIELD_COUNT; i++) count += config->selections[i].status == PARITY_OPS_NOT_NEEDED;
    if (!count) return;
    printf("\nnote: not used by any model of parity (%zu): the value is checked, its backend is not asked for\n", count);
    for (size_t i = 0; i < PARITY_KERNEL_FIELD_COUNT; i++) {
        const parity_ops_selection *selection = &config->selections[i];
        if (selection->status == PARITY_OPS_NOT_NEEDED)
            printf("  %s: '%s' (op %s)\n", selection->field->name, selection->resolved, selection->field->op);
    }
}

// Reads FILE and the --ops strings into settings. YAML problems are config errors here (exit 2);
// only an unreadable file is an I/O error (exit 3).
static int load_settings(const check_arguments *arguments, parity_ops_settings *settings) {
    if (arguments->file) {
        parity_error *error = parity_yaml_ops_read_file(arguments->file, settings);
        if (error) return parity_cli_report_ops_file_error("config check", error);
    }
    for (int i = 0; i < arguments->override_count; i++) {
        parity_error *error = parity_ops_override_parse(arguments->overrides[i], settings);
        if (error) return parity_cli_report_error("config check", error);
    }
    return PARITY_EXIT_OK;
}

static int config_check(int argc, char **argv) {
    check_arguments arguments = {0};
    int code = parse_check_arguments(argc, argv, &arguments);
    if (code != PARITY_EXIT_OK) return code;
    parity_ops_settings settings = {0};
    code = load_settings(&arguments, &settings);
    if (code != PARITY_EXIT_OK) {
        parity_ops_settings_free(&settings);
        return code;
    }
    parity_op_set used_ops; // by some model: the other fields are reported, not failed
    parity_model_traits_all_ops(&used_ops);
    arguments.options.needed_ops = &used_ops;
    parity_ops_config config;
    parity_error *error = parity_ops_config_build(&settings, &arguments.options, &config);
    parity_ops_settings_free(&settings);
    if (error && parity_error_kind_of(error) != PARITY_ERROR_CONFIG &&
        parity_error_kind_of(error) != PARITY_ERROR_UNAVAILABLE) {
        parity_ops_config_release(&config);
        return parity_cli_report_error("config check", error);
    }
    parity_error_free(error);
    char device[32];
    printf("kernel selection for %s, sp=%d, MODELING_BACKEND=%s (%s), from %s%s\n\n",
           parity_device_format(config.device, device, sizeof device), config.sequence_parallel_size,
           parity_modeling_backend_name(config.modeling_backend), config.modeling_backend_source,
           arguments.file ? arguments.file : "defaults", arguments.override_count ? " + --ops" : "");
    error = print_selections(&config);
    if (error) {
        parity_ops_config_release(&config);
        return parity_cli_report_error("config check", error);
    }
    print_problems(&config, PARITY_OPS_PROBLEM_REJECTED, "rejected", config.rejected_count);
    print_problems(&config, PARITY_OPS_PROBLEM_UNAVAILABLE, "unavailable on this machine", config.unavailable_count);
    print_unused(&config);
    if (config.problem_count == 0)
        printf("\nok: every selected backend that a model uses is available on %s\n", parity_device_type_name(config.device.type));
    else
        printf("\nconfig check failed: %zu rejected, %zu unavailable\n", config.rejected_count,
               config.unavailable_count);
    code = config.problem_count ? PARITY_EXIT_CONFIG : PARITY_EXIT_OK;
    parity_ops_config_release(&config);
    return code;
}

int parity_command_config(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "check") != 0) {
        if (argc < 2) fprintf(stderr, "parity config: say what to do: check\n");
        else fprintf(stderr, "parity config: unknown action '%s' (the one action is: check)\n", argv[1]);
        parity_command_config_usage(stderr);
        return PARITY_EXIT_CONFIG;
    }
    return config_check(argc - 2, argv + 2);
}
