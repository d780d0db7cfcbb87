// command_bench.c: `parity bench op OP|all`: the CUDA backends of an op side by side on the same
// inputs (bench_run.h), with the device ceilings measured in the same run and, with --peers, the
// PyTorch peers measured in the same device call (tools/bench_torch_peers.py). Prints a table, or
// JSON with --json; --output / --markdown / --readme write files atomically.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/bench/bench_readme.h"
#include "harness/bench/bench_report.h"
#include "harness/bench/bench_run.h"
#include "harness/bench/bench_targets.h"
#include "harness/cli/cli_support.h"
#include "harness/cli/commands.h"
#include "ops/core/file.h"
#include "ops/registry.h"

enum { MAX_LIST = 32 };
#define DEFAULT_CHECK_MAX_ELEMENTS ((int64_t)1 << 28) // 256 Mi elements: every default shape but the largest

void parity_command_bench_usage(FILE *stream) {
    fprintf(stream,
            "usage: parity bench op OP|all --device cpu|cuda[:N] [--backends a,b,...] [--shape S]... [--dtype bf16|fp32|fp64]\n"
            "                      [--runs N] [--warmup N] [--no-check] [--check-max-elements N] [--peers FILE] [--json]\n"
            "                      [--output FILE] [--markdown FILE]\n"
            "       parity bench render REPORT.json [--json] [--markdown FILE] [--readme FILE]\n"
            "       parity bench comm [--ranks N] ... (the collectives over MPI; below)\n"
            "\n"
            "Times the backends of an op on one device side by side on the same random inputs: CUDA events\n"
            "around each call (on the cpu the monotonic clock), warm-up calls first, the L2 (last-level cache)\n"
            "flushed before every run, the median of the runs with its noise (median absolute deviation /\n"
            "median). Reports GB/s (bytes that must move) or TFLOP/s and the share of the copy bandwidth and of\n"
            "the GEMM rate (cuBLAS bf16; on the cpu OpenBLAS fp32), both measured in the same run, and for\n"
            "fwd+bwd the extra peak memory. Before timing a backend its results on those very inputs are\n"
            "checked (the check column): `parity check op`'s rule against that device's eager in fp64 (2x\n"
            "eager's error in the same dtype, NaN/Inf, out-of-bounds writes, determinism when claimed).\n"
            "\n"
            "  OP              one of:");
    for (size_t i = 0; i < parity_bench_op_count(); i++) fprintf(stream, " %s", parity_bench_op_at(i)->descriptor->name);
    fprintf(stream,
            "; all = every one\n"
            "  --device D      cpu, cuda or cuda:N (required)\n"
            "  --backends L    comma-separated backend names (default: every backend of the op on the device)\n"
            "  --shape S       a shape in the op's format, repeatable (default: the op's default shapes,\n"
            "                  those of perf-anchors.md first); formats:\n");
    for (size_t i = 0; i < parity_bench_op_count(); i++) {
        const parity_bench_op *op = parity_bench_op_at(i);
        fprintf(stream, "                    %-20s %s (default", op->descriptor->name, op->descriptor->work->size_format);
        for (const char *const *shape = op->default_shapes; *shape; shape++) fprintf(stream, " %s", *shape);
        fprintf(stream, ")\n");
    }
    fprintf(stream,
            "  --dtype T       bf16 (default), fp32 or fp64\n"
            "  --runs N        timed runs per measurement (default 30; 20 for the flop-bound cross_entropy,\n"
            "                  attention, moe_experts and gated_delta_rule, fewer, at least 3, where those would\n"
            "                  pass 2 s: slow\n"
            "                  backends; at least 20 is what the baselines use)\n"
            "  --warmup N      untimed runs first (default 5)\n"
            "  --no-check      leave the check column out (no eager reference is computed)\n"
            "  --check-max-elements N  inputs with a tensor larger than N elements are \"not checked\" (the check\n"
            "                  copies every tensor to the host; default 2^28; 0 = no limit)\n"
            "  --peers FILE    PyTorch peers written by tools/bench_torch_peers.py: printed beside, with speedups\n"
            "  --json          print the report as JSON instead of the table\n"
            "  --output FILE   also write the JSON report to FILE\n"
            "  --markdown FILE also write a Markdown table to FILE, with the targets of harness/bench/targets.tsv\n"
            "                  checked (read from the working directory, else bench_targets.tsv beside parity); a\n"
            "                  peer target (at least N x the torch peer it names) has a verdict only with that peer\n"
            "                  measured in the run\n"
            "  --readme FILE   rewrite the rendered part of FILE (between its two marker lines, see\n"
            "                  harness/bench/bench_readme.h) with the same Markdown, headings one level down\n"
            "\n"
            "render re-reads a report written with --output (a committed baseline, say) and prints it again, or\n"
            "writes it as Markdown or into a baseline README: no GPU needed.\n"
            "\n"
            "exit status: 0 ok; 1 a backend failed while timed or failed its check; 2 usage error, unknown op or\n"
            "             backend, no CUDA device; 3 unreadable peers file or device failure\n"
            "\n");
    parity_command_bench_comm_usage(stream);
}

typedef struct bench_arguments {
    const char *op;
    parity_device device;
    bool device_given;
    char backend_text[512];
    const char *backends[MAX_LIST];
    size_t backend_count;
    const char *shapes[MAX_LIST];
    size_t shape_count;
    parity_dtype dtype;
    int runs, warmup;
    bool runs_given;
    const char *peers, *output, *markdown, *readme;
    bool json;
    bool render; // `parity bench render REPORT.json`: arguments->op is the file
    bool no_check;
    int64_t check_max_elements;
} bench_arguments;

static bool parse_count(const char *name, const char *value, int minimum, int *out) {
    char *end = NULL;
    long parsed = value ? strtol(value, &end, 10) : -1;
    if (!value || !*value || *end || parsed < minimum || parsed > 100000) {
        fprintf(stderr, "parity bench: %s '%s' is not an integer >= %d\n", name, value ? value : "", minimum);
        return false;
    }
    *out = (int)parsed;
    return true;
}

static int parse_arguments(int argc, char **argv, bench_arguments *arguments) {
    arguments->dtype = PARITY_BF16;
    arguments->runs = 30;
    arguments->warmup = 5;
    arguments->check_max_elements = DEFAULT_CHECK_MAX_ELEMENTS;
    if (argc < 3 || (strcmp(argv[1], "op") != 0 && strcmp(argv[1], "render") != 0)) {
        fprintf(stderr, "parity bench: expected 'parity bench op OP|all ...', 'parity bench render REPORT.json' or "
                        "'parity bench comm ...' (see parity bench --help)\n");
        return PARITY_EXIT_CONFIG;
    }
    arguments->render = strcmp(argv[1], "render") == 0;
    arguments->op = argv[2];
    for (int i = 3; i < argc; i++) {
        const char *value = NULL;
        parity_cli_option_match match = PARITY_CLI_OPTION_NO_MATCH;
#define OPTION(name) ((match = parity_cli_option_value(argc, argv, &i, (name), &value)) != PARITY_CLI_OPTION_NO_MATCH)
        if (OPTION("--device")) {
            if (match == PARITY_CLI_OPTION_MATCHED && !parity_device_parse(value, &arguments->device)) {
                fprintf(stderr, "parity bench: --device '%s' is not a device (cuda, cuda:N)\n", value);
                return PARITY_EXIT_CONFIG;
            }
            arguments->device_given = true;
        } else if (OPTION("--backends")) {
            if (match == PARITY_CLI_OPTION_MATCHED) {
                snprintf(arguments->backend_text, sizeof arguments->backend_text, "%s", value);
                char *saveptr = NULL;
                for (char *name = strtok_r(arguments->backend_text, ",", &saveptr); name;
                     name = strtok_r(NULL, ",", &saveptr)) {
                    if (arguments->backend_count == MAX_LIST) {
                        fprintf(stderr, "parity bench: at most %d backends\n", MAX_LIST);
                        return PARITY_EXIT_CONFIG;
                    }
                    arguments->backends[arguments->backend_count++] = name;
                }
                if (!arguments->backend_count) {
                    fprintf(stderr, "parity bench: --backends '%s' names no backend\n", value);
                    return PARITY_EXIT_CONFIG;
                }
            }
        } else if (OPTION("--shape")) {
            if (match == PARITY_CLI_OPTION_MATCHED) {
                if (arguments->shape_count == MAX_LIST) {
                    fprintf(stderr, "parity bench: at most %d shapes\n", MAX_LIST);
                    return PARITY_EXIT_CONFIG;
                }
                arguments->shapes[arguments->shape_count++] = value;
            }
        } else if (OPTION("--dtype")) {
            if (match == PARITY_CLI_OPTION_MATCHED &&
                (!parity_dtype_parse(value, &arguments->dtype) ||
                 !(arguments->dtype == PARITY_BF16 || arguments->dtype == PARITY_F32 || arguments->dtype == PARITY_F64))) {
                fprintf(stderr, "parity bench: --dtype '%s' is not bf16, fp32 or fp64\n", value);
                return PARITY_EXIT_CONFIG;
            }
        } else if (OPTION("--runs")) {
            if (match == PARITY_CLI_OPTION_MATCHED && !parse_count("--runs", value, 1, &arguments->runs))
                return PARITY_EXIT_CONFIG;
            arguments->runs_given = true;
        } else if (OPTION("--warmup")) {
            if (match == PARITY_CLI_OPTION_MATCHED && !parse_count("--warmup", value, 0, &arguments->warmup))
                return PARITY_EXIT_CONFIG;
        } else if (OPTION("--peers")) arguments->peers = value;
        else if (OPTION("--output")) arguments->output = value;
        else if (OPTION("--markdown")) arguments->markdown = value;
        else if (OPTION("--readme")) arguments->readme = value;
        else if (OPTION("--check-max-elements")) {
            char *end = NULL;
            long long parsed = match == PARITY_CLI_OPTION_MATCHED ? strtoll(value, &end, 10) : 0;
            if (match == PARITY_CLI_OPTION_MATCHED && (!*value || *end || parsed < 0)) {
                fprintf(stderr, "parity bench: --check-max-elements '%s' is not an integer >= 0\n", value);
                return PARITY_EXIT_CONFIG;
            }
            arguments->check_max_elements = parsed;
        } else if (strcmp(argv[i], "--no-check") == 0) arguments->no_check = true;
        else if (strcmp(argv[i], "--json") == 0) arguments->json = true;
        else {
            fprintf(stderr, "parity bench: unknown argument '%s' (see parity bench --help)\n", argv[i]);
            return PARITY_EXIT_CONFIG;
        }
        if (match == PARITY_CLI_OPTION_MISSING_VALUE) return PARITY_EXIT_CONFIG;
#undef OPTION
    }
    if (arguments->render) {
        if (arguments->device_given || arguments->backend_count || arguments->shape_count || arguments->peers ||
            arguments->output) {
            fprintf(stderr, "parity bench render: takes only --json, --markdown and --readme\n");
            return PARITY_EXIT_CONFIG;
        }
        return PARITY_EXIT_OK;
    }
    if (!arguments->device_given) {
        fprintf(stderr, "parity bench: --device is required (cpu, cuda or cuda:N)\n");
        return PARITY_EXIT_CONFIG;
    }
    if (arguments->device.type != PARITY_DEVICE_CPU && arguments->device.type != PARITY_DEVICE_CUDA) {
        fprintf(stderr, "parity bench: --device %s: bench times cpu and CUDA backends\n",
                parity_device_type_name(arguments->device.type));
        return PARITY_EXIT_CONFIG;
    }
    return PARITY_EXIT_OK;
}

// The rendered part of the README at `path` rewritten from `report` (bench_readme.h), atomically.
static parity_error *write_readme(const parity_bench_report *report, const parity_bench_targets *targets, const char *path) {
    char *readme = NULL, *rendered = NULL, *spliced = NULL;
    size_t size;
    parity_error *error = parity_read_file(path, &readme, &size);
    if (!error) error = parity_bench_render_markdown(report, targets, 2, &rendered);
    if (!error) error = parity_bench_readme_splice(readme, rendered, path, &spliced);
    if (!error) error = parity_write_file_atomic(path, spliced, strlen(spliced), true);
    free(readme);
    free(rendered);
    free(spliced);
    return error;
}

// Prints (or writes) a report; the exit code for a successful run.
static parity_error *emit(const bench_arguments *arguments, const parity_bench_report *report) {
    if (arguments->output) PARITY_TRY(parity_bench_write_json(report, arguments->output));
    if (arguments->markdown || arguments->readme) {
        char path[4200];
        parity_bench_targets targets;
        PARITY_TRY(parity_bench_targets_locate(path, sizeof path));
        PARITY_TRY(parity_bench_targets_read(path, &targets));
        parity_error *error = arguments->markdown ? parity_bench_write_markdown(report, &targets, arguments->markdown) : NULL;
        if (!error && arguments->readme) error = write_readme(report, &targets, arguments->readme);
        parity_bench_targets_release(&targets);
        PARITY_TRY(error);
    }
    if (arguments->json) return parity_bench_write_json(report, NULL);
    parity_bench_print_table(report, stdout, parity_cli_use_color(stdout));
    return NULL;
}

static int render(const bench_arguments *arguments) {
    parity_bench_report report;
    memset(&report, 0, sizeof report);
    parity_error *error = parity_bench_read_report(arguments->op, &report);
    if (!error) error = emit(arguments, &report);
    parity_bench_report_release(&report);
    return error ? parity_cli_report_error("bench render", error) : PARITY_EXIT_OK;
}

int parity_command_bench(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "comm") == 0) return parity_command_bench_comm(argc, argv);
    bench_arguments arguments;
    memset(&arguments, 0, sizeof arguments);
    int status = parse_arguments(argc, argv, &arguments);
    if (status != PARITY_EXIT_OK) return status;
    if (arguments.render) return render(&arguments);

    const parity_bench_op *ops[16];
    size_t op_count = 0;
    if (strcmp(arguments.op, "all") == 0) {
        for (size_t i = 0; i < parity_bench_op_count() && op_count < 16; i++) ops[op_count++] = parity_bench_op_at(i);
        if (arguments.shape_count) {
            fprintf(stderr, "parity bench: --shape needs a single op (shape formats differ between ops)\n");
            return PARITY_EXIT_CONFIG;
        }
    } else {
        ops[0] = parity_bench_find_op(arguments.op);
        if (!ops[0]) {
            fprintf(stderr, "parity bench: unknown op '%s' (see parity bench --help for the ops it times)\n", arguments.op);
            return PARITY_EXIT_CONFIG;
        }
        op_count = 1;
        for (size_t s = 0; s < arguments.shape_count; s++) {
            parity_bench_shape shape;
            parity_error *error = parity_bench_parse_shape(ops[0], arguments.shapes[s], &shape);
            if (error) return parity_cli_report_error("bench", error);
        }
        // a named backend must exist on the device for this op (availability is checked when it runs)
        const char *device_type = parity_device_type_name(arguments.device.type);
        for (size_t b = 0; b < arguments.backend_count; b++)
            if (!parity_registry_find(ops[0]->descriptor->name, arguments.backends[b], arguments.device.type)) {
                fprintf(stderr, "parity bench: %s has no backend '%s' on %s (see parity list backends --device %s)\n",
                        ops[0]->descriptor->name, arguments.backends[b], device_type, device_type);
                return PARITY_EXIT_CONFIG;
            }
    }
    parity_bench_options options = {
        .ops = ops,
        .op_count = op_count,
        .backends = arguments.backend_count ? arguments.backends : NULL,
        .backend_count = arguments.backend_count,
        .shapes = arguments.shape_count ? arguments.shapes : NULL,
        .shape_count = arguments.shape_count,
        .dtype = arguments.dtype,
        .device = arguments.device,
        .warmup = arguments.warmup,
        .runs = arguments.runs,
        .flop_bound_runs = arguments.runs_given ? arguments.runs : 20,
        .check = !arguments.no_check,
        .check_max_elements = arguments.check_max_elements,
    };
    parity_bench_report report;
    memset(&report, 0, sizeof report);
    parity_error *error = parity_bench_run(&options, &report);
    if (!error && arguments.peers) error = parity_bench_read_peers(arguments.peers, &report);
    if (!error) error = emit(&arguments, &report);
    bool failures = !error && parity_bench_report_has_errors(&report);
    parity_bench_report_release(&report);
    if (error) return parity_cli_report_error("bench", error);
    return failures ? PARITY_EXIT_FAILURES : PARITY_EXIT_OK;
}
