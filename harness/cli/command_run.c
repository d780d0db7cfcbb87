// command_run.c: `parity run`: every combo of a suite against its goldens, into a report folder
// (harness/runner.h does the work; this file is arguments, listing, output and the exit code).
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/cli/cli_support.h"
#include "harness/cli/commands.h"
#include "harness/cli/interrupt.h"
#include "harness/config/ops_override.h"
#include "harness/provenance.h"
#include "harness/runner.h"
#include "harness/text.h"
#include "ops/core/comm.h"
#include "ops/core/file.h"
#include "ops/core/temporaries.h"
#include "ops/testing/test_backends.h"
#include "reports/render.h"
#include "reports/results.h"

void parity_command_run_usage(FILE *stream) {
    fprintf(stream,
            "usage: parity run --suite S [--model M] [--device cpu|cuda|best] [--dtype fp64|fp32|bf16]\n"
            "                  [--filter GLOB] [--ops field=value,...] [--list] [--out DIR]\n"
            "                  [--golden-dir DIR] [--with-test-backends]\n"
            "                  [--parallel dp=D,sp=S,ep=E[,fsdp]]\n"
            "\n"
            "Runs every combination of kernel backends a suite allows (the product of the available values of\n"
            "every swept field the model calls, or the suite's modes) as one forward + backward, compares loss,\n"
            "aux_loss, grad_norm and per-parameter gradient norms with the suite's eager fp64 goldens, times\n"
            "warm-up + repeats, and writes results.json, junit.xml, summary.md and report.html.\n"
            "\n"
            "  --suite S             suites/S.yaml, or a path to a suite file\n"
            "  --model M             only this model of the suite\n"
            "  --device D            instead of the suite's devices (best = cuda:0 when usable, else cpu)\n"
            "  --dtype T             instead of the suite's dtypes\n"
            "  --filter GLOB         only combos whose id matches (fnmatch), e.g. '*/attn=sdpa,*/bf16/*'\n"
            "  --ops k=v,...         pin fields in every combo but the eager baseline (they leave the sweep)\n"
            "  --list                print the combo ids (and why a combo is excluded or not supported); run nothing\n"
            "  --out DIR             report folder, new or empty (default: a new reports/out/<UTC time>-<suite>-<device>/)\n"
            "  --golden-dir DIR      where golden/<suite>/<model>/<case>.h5 are (default golden)\n"
            "  --with-test-backends  add the deliberately wrong test-only backends (they must fail)\n"
            "  --parallel LAYOUT     instead of the suite's parallel: list, every combo (baseline and jittered\n"
            "                        runs too) under this layout over MPI ranks (see parity eval --help: dp=D,\n"
            "                        sp=S, ep=E, fsdp), against the same single-device goldens; mpirun -np N,\n"
            "                        or it relaunches itself under mpirun with the ranks the layouts need;\n"
            "                        rank 0 writes the reports. Faults test_wrong_group, test_skip_all_to_all\n"
            "                        must fail\n"
            "\n"
            "Combo ids: <model>/<batch>/<field alias>=<value>,.../<dtype>/<device>[/<layout>]\n"
            "(layout: dp2, sp2ep2, fsdp4, ...).\n"
            "Tolerance (suite `tolerance: parity`): |x - golden| <= max(k * |eager - golden|, c * u(dtype) * |golden|),\n"
            "k = 2 loss-like, 3 gradients; see README.\n"
            "\n"
            "SIGINT or SIGTERM stops the run after the combo in progress: the reports are written for the\n"
            "combos that finished (results.json says \"interrupted\"); a second signal stops at once (not the\n"
            "first delivered twice: the same signal from the same sender within 0.2 s, as timeout(1) sends it).\n"
            "\n"
            "exit status: 0 every combo passed (not_supported and excluded do not fail); 1 a combo failed or\n"
            "             could not run; 2 usage or suite error (an unknown --ops value, a --filter no combo\n"
            "             matches, an --out that is a file or a folder that is not empty); 3 missing, corrupt or\n"
            "             stale golden, absent device, unreadable file, an --out that cannot be made or written,\n"
            "             a rank that died or hangs under a layout (the reports keep the combos done);\n"
            "             130 / 143 interrupted by SIGINT / SIGTERM\n");
}

typedef struct run_arguments {
    const char *suite, *out;
    const char *ops[16];
    int ops_count;
    bool list;
    parity_run_options options;
} run_arguments;

static int parse_arguments(int argc, char **argv, run_arguments *arguments) {
    parity_run_options *options = &arguments->options;
    for (int i = 1; i < argc; i++) {
        const char *value = NULL;
        parity_cli_option_match match = PARITY_CLI_OPTION_NO_MATCH;
#define OPTION(name) ((match = parity_cli_option_value(argc, argv, &i, (name), &value)) != PARITY_CLI_OPTION_NO_MATCH)
        if (OPTION("--suite")) arguments->suite = value;
        else if (OPTION("--model")) options->model = value;
        else if (OPTION("--device")) options->device = value;
        else if (OPTION("--dtype")) options->dtype = value;
        else if (OPTION("--filter")) options->filter = value;
        else if (OPTION("--out")) arguments->out = value;
        else if (OPTION("--golden-dir")) options->golden_dir = value;
        else if (OPTION("--ops")) {
            if (value && arguments->ops_count < 16) arguments->ops[arguments->ops_count++] = value;
        } else if (OPTION("--parallel")) {
            if (value && parity_cli_parse_parallel("run", value, &options->layout) != PARITY_EXIT_OK) return PARITY_EXIT_CONFIG;
            options->has_layout = true;
        } else if (strcmp(argv[i], "--list") == 0) arguments->list = true;
        else if (strcmp(argv[i], "--with-test-backends") == 0) options->with_test_backends = true;
        else {
            fprintf(stderr, "parity run: unknown argument '%s' (see parity run --help)\n", argv[i]);
            return PARITY_EXIT_CONFIG;
        }
        if (match == PARITY_CLI_OPTION_MISSING_VALUE) return PARITY_EXIT_CONFIG;
#undef OPTION
    }
    if (!arguments->suite) {
        fprintf(stderr, "parity run: --suite S is required (see parity run --help)\n");
        return PARITY_EXIT_CONFIG;
    }
    if (options->device && strcmp(options->device, "cpu") != 0 && strcmp(options->device, "cuda") != 0 &&
        strcmp(options->device, "best") != 0) {
        fprintf(stderr, "parity run: --device '%s' (use cpu, cuda or best)\n", options->device);
        return PARITY_EXIT_CONFIG;
    }
    return PARITY_EXIT_OK;
}

static void print_list(const parity_run_plan *plan) {
    size_t shown = 0;
    for (size_t i = 0; i < plan->combos.count; i++) {
        if (!plan->selected[i]) continue;
        const parity_combo_plan *combo = &plan->combos.items[i];
        shown++;
        printf("%s", combo->id);
        if (combo->mode[0]) printf("  mode %s", combo->mode);
        if (combo->is_baseline) printf("  (eager baseline)");
        if (combo->status != PARITY_COMBO_PASS) printf("  %s: %s", parity_combo_status_name(combo->status), combo->reason);
        printf("\n");
    }
    size_t runnable = 0;
    for (size_t i = 0; i < plan->combos.count; i++)
        runnable += plan->selected[i] && plan->combos.items[i].status == PARITY_COMBO_PASS;
    printf("%zu combos (%zu to run, %zu excluded or not supported)\n", shown, runnable, shown - runnable);
}

// 1 when a combo failed or could not run, 128 + the signal when interrupted, else 0.
static int exit_status(const parity_results *results) {
    if (results->context.interrupted[0]) return parity_cli_interrupt_exit_code(parity_cli_interrupt_signal());
    if (results->context.stopped[0]) return PARITY_EXIT_IO; // a rank died or hangs
    size_t counts[5] = {0};
    parity_results_counts(results, counts);
    return counts[PARITY_COMBO_FAIL] || counts[PARITY_COMBO_ERROR] ? PARITY_EXIT_FAILURES : PARITY_EXIT_OK;
}

static int finish(const parity_results *results, const char *out) {
    size_t counts[5] = {0};
    parity_results_counts(results, counts);
    printf("%zu pass, %zu fail, %zu error, %zu not supported, %zu excluded\n", counts[PARITY_COMBO_PASS],
           counts[PARITY_COMBO_FAIL], counts[PARITY_COMBO_ERROR], counts[PARITY_COMBO_NOT_SUPPORTED],
           counts[PARITY_COMBO_EXCLUDED]);
    printf("report: %s/report.html (results.json, junit.xml, summary.md beside it)\n", out);
    if (results->context.interrupted[0])
        printf("interrupted by %s: %zu of the %zu combos selected were done; the reports hold those\n",
               results->context.interrupted, results->combo_count, results->context.combos_selected);
    if (results->context.stopped[0])
        fprintf(stderr, "parity run: stopped by a rank failure: %s\n  %zu of the %zu combos selected were done; the reports "
                        "hold those (exit 3)\n",
                results->context.stopped, results->combo_count, results->context.combos_selected);
    return exit_status(results);
}

static bool directory_is_empty(const char *path) {
    DIR *directory = opendir(path);
    if (!directory) return false;
    bool empty = true;
    struct dirent *entry;
    while (empty && (entry = readdir(directory)))
        empty = strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0;
    closedir(directory);
    return empty;
}

// The report folder, made (or found new and empty) before anything runs, so a bad --out shows at
// once, not after the last combo. A results folder is never mixed with another run's files: --out
// must be a new or an empty folder, and the default reports/out/<UTC time>-<suite>-<device> is always
// a new one (-2, -3, ... when a run of the same second took the name). *created: this call made it.
static parity_error *prepare_out(const char *requested, const char *suite, const char *device, char *out, size_t size,
                                 bool *created) {
    *created = false;
    if (requested) {
        parity_text_format(out, size, "%s", requested);
        struct stat info;
        if (stat(out, &info) == 0) {
            if (!S_ISDIR(info.st_mode)) return PARITY_ERROR(PARITY_ERROR_USAGE, "--out %s: a file is in the way (give a folder)", out);
            if (!directory_is_empty(out))
                return PARITY_ERROR(PARITY_ERROR_USAGE,
                                    "--out %s: the folder is not empty (the reports of another run?); give a new or empty "
                                    "folder: a run never mixes its files with others", out);
        } else {
            PARITY_TRY_CONTEXT(parity_make_directories(out), "--out %s", out);
            *created = true;
        }
    } else {
        char stamp[32], base[900];
        parity_utc_timestamp(stamp, sizeof stamp, 1);
        parity_text_format(base, sizeof base, "reports/out/%s-%s-%s", stamp, suite, device);
        PARITY_TRY(parity_make_directories("reports/out"));
        for (int attempt = 1; !*created; attempt++) {
            if (attempt == 1) parity_text_format(out, size, "%s", base);
            else parity_text_format(out, size, "%s-%d", base, attempt);
            if (mkdir(out, 0777) == 0) *created = true;
            else if (errno != EEXIST || attempt == 100)
                return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot create the report folder: %s", out, strerror(errno));
        }
    }
    if (access(out, W_OK | X_OK) != 0)
        return PARITY_ERROR(PARITY_ERROR_IO, "%s: the report folder is not writable: %s", out, strerror(errno));
    return NULL;
}

// The suite, the --ops pins (kept in *fixed, which the options point at) and the plan.
static parity_error *plan_run(run_arguments *arguments, parity_suite **suite, parity_ops_settings *fixed,
                              parity_run_plan *plan) {
    parity_run_options *options = &arguments->options;
    char path[1024];
    PARITY_TRY(parity_suite_locate(arguments->suite, "suites", path, sizeof path));
    PARITY_TRY(parity_suite_load(path, suite));
    for (int i = 0; i < arguments->ops_count; i++) PARITY_TRY(parity_ops_override_parse(arguments->ops[i], fixed));
    options->fixed = fixed;
    if (options->with_test_backends) PARITY_TRY(parity_test_backends_register());
    return parity_run_plan_build(*suite, options, plan);
}

int parity_command_run(int argc, char **argv) {
    run_arguments arguments;
    memset(&arguments, 0, sizeof arguments);
    int status = parse_arguments(argc, argv, &arguments);
    if (status != PARITY_EXIT_OK) return status;
    parity_run_options *options = &arguments.options;
    // the ranks the layouts need (the suite's parallel: list, or --parallel): read from the suite
    // before anything else, so a command launched alone can start itself under mpirun
    int ranks = parity_layout_ranks(&options->layout);
    if (!options->has_layout) {
        char path[1024];
        parity_suite *peek = NULL;
        parity_error *peek_error = parity_suite_locate(arguments.suite, "suites", path, sizeof path);
        if (!peek_error) peek_error = parity_suite_load(path, &peek);
        if (!peek_error) ranks = parity_run_ranks_needed(peek, options);
        parity_suite_free(peek);
        parity_error_free(peek_error); // reported by the run itself, below
    }
    if (ranks > 1 && !arguments.list && parity_comm_launched_size() == 1)
        return parity_cli_relaunch_ranks("run", ranks, argc, argv, NULL);
    const bool ranked = (ranks > 1 || parity_comm_launched_size() > 1) && !arguments.list;
    int rank = 0;
    if (ranked) {
        parity_comm *world;
        parity_error *world_error = parity_comm_world(&world);
        if (world_error) return parity_cli_report_error("run", world_error);
        rank = parity_comm_rank(world);
    }
    // Under --parallel every rank runs the same plan in step (their collectives pair up); rank 0
    // alone shows progress and writes the report folder, the others run silently and exit as it does.
    const bool reporting = rank == 0;
    char command_name[32];
    snprintf(command_name, sizeof command_name, reporting ? "run" : "run (rank %d)", rank);
    options->listing = arguments.list;
    options->progress = reporting ? stderr : NULL;
    options->terminal = isatty(fileno(stderr)) == 1;
    options->argc = argc + 1; // with "parity"
    char **command_line = calloc((size_t)argc + 2, sizeof *command_line);
    if (command_line) {
        command_line[0] = "parity";
        for (int i = 0; i < argc; i++) command_line[i + 1] = argv[i];
    }
    options->argv = command_line;

    parity_ops_settings fixed = {0};
    parity_suite *suite = NULL;
    parity_run_plan plan;
    memset(&plan, 0, sizeof plan);
    parity_results results;
    memset(&results, 0, sizeof results);
    char out[1024] = "";
    bool out_created = false;
    parity_error *error = plan_run(&arguments, &suite, &fixed, &plan);
    if (!error && arguments.list) {
        print_list(&plan);
    } else if (!error) {
        if (reporting)
            error = prepare_out(arguments.out, suite->name,
                                plan.device_count ? parity_device_type_name(plan.devices[0].type) : "none", out,
                                sizeof out, &out_created);
        // A folder made for this run is tracked until its reports are in: a second signal (which ends
        // the process at once) or a failure leaves no empty report folder behind.
        int out_handle = -1;
        if (!error && out_created) error = parity_temporary_track(out, true, &out_handle);
        if (!error) {
            parity_cli_interrupts_install(reporting ? "stopping after the current combo; the reports keep the combos "
                                                      "that were done (a second signal stops at once)"
                                                    : "this rank stops with the others after the current combo");
            options->stop = parity_cli_interrupt_flag();
            error = parity_run_execute(suite, &plan, options, &results);
        }
        if (!error && reporting) error = parity_reports_render_all(out, &results);
        if (!error) status = reporting ? finish(&results, out) : exit_status(&results);
        if (error && out_created) rmdir(out); // removed only when empty: nothing of this run is in it
        parity_temporary_forget(out_handle);
    }
    if (error) status = parity_cli_report_error(command_name, error);
    parity_results_release(&results);
    parity_run_plan_release(&plan);
    parity_suite_free(suite);
    parity_ops_settings_free(&fixed);
    free(command_line);
    if (ranked) return parity_cli_end_ranks(status);
    return status;
}
