// command_golden.c: `parity golden generate | verify | show | migrate`: making a suite's eager
// goldens, recomputing them to see drift, printing one, and checking files whose old schema cannot
// be converted (golden/golden.h stores them in sealed HDF5 files; golden/golden_migrate.h).
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "golden/golden.h"
#include "golden/golden_migrate.h"
#include "harness/cli/cli_support.h"
#include "harness/cli/commands.h"
#include "harness/cli/interrupt.h"
#include "harness/golden_case.h"
#include "harness/provenance.h"
#include "harness/text.h"
#include "ops/core/file.h"

// fp64 drift above this (relative) fails `golden verify`.
#define VERIFY_RELATIVE_DRIFT 1e-12

void parity_command_golden_usage(FILE *stream) {
    fprintf(stream,
            "usage: parity golden generate --suite S [--model M] [--force] [--golden-dir DIR]\n"
            "       parity golden verify --suite S [--model M] [--golden-dir DIR]\n"
            "       parity golden show FILE.h5\n"
            "       parity golden migrate FILE.h5...\n"
            "\n"
            "generate  writes DIR/<suite>/<model>/<batch>.h5 for every (model, batch) of the suite: eager fp64\n"
            "          (on cuda:0 when the suite runs on cuda or best and a GPU is present, else on the CPU),\n"
            "          eager fp32 and bf16 on the same device, provenance, the config.json, the weight source\n"
            "          and its sha256, the batch. An existing golden is kept unless --force.\n"
            "verify    recomputes every golden of the suite on the device it was made on and prints the\n"
            "          largest relative drift of the fp64 values (and of eager fp32/bf16, for information)\n"
            "show      prints a golden readably\n"
            "migrate   checks goldens: a current one is left as it is; one of an older schema (1: no seal,\n"
            "          2: no gradient sketches) cannot be converted, because the sketches schema 3 added are\n"
            "          computed from gradients no golden stores: it is refused (exit 3), untouched, with how\n"
            "          to regenerate it\n"
            "\n"
            "Every command that reads a golden checks its seal (sha256 of the whole file) first: a damaged,\n"
            "truncated or old-format golden exits 3 naming the file; verify (and run) also refuse, exit 3,\n"
            "a golden of another suite, model or batch, naming both.\n"
            "\n"
            "  --golden-dir DIR  default golden\n"
            "\n"
            "SIGINT or SIGTERM stops generate after the golden in progress (every golden written is whole;\n"
            "no temporary file is left); a second signal stops at once (not the first\n"
            "delivered twice: the same signal from the same sender within 0.2 s, as timeout(1) sends it).\n"
            "\n"
            "exit status: 0 ok; 1 verify found fp64 drift above 1e-12 relative or changed inputs; 2 usage or\n"
            "             suite error; 3 missing or corrupt golden, unreadable input, device failure;\n"
            "             130 / 143 generate interrupted by SIGINT / SIGTERM\n");
}

typedef struct golden_arguments {
    const char *suite, *model, *golden_dir, *file;
    bool force;
} golden_arguments;

static int parse_arguments(int argc, char **argv, golden_arguments *arguments) {
    arguments->golden_dir = "golden";
    for (int i = 2; i < argc; i++) {
        const char *value = NULL;
        parity_cli_option_match match = PARITY_CLI_OPTION_NO_MATCH;
#define OPTION(name) ((match = parity_cli_option_value(argc, argv, &i, (name), &value)) != PARITY_CLI_OPTION_NO_MATCH)
        if (OPTION("--suite")) arguments->suite = value;
        else if (OPTION("--model")) arguments->model = value;
        else if (OPTION("--golden-dir")) arguments->golden_dir = value;
        else if (strcmp(argv[i], "--force") == 0) arguments->force = true;
        else if (argv[i][0] != '-' && !arguments->file) arguments->file = argv[i];
        else {
            fprintf(stderr, "parity golden: unknown argument '%s' (see parity golden --help)\n", argv[i]);
            return PARITY_EXIT_CONFIG;
        }
        if (match == PARITY_CLI_OPTION_MISSING_VALUE) return PARITY_EXIT_CONFIG;
#undef OPTION
    }
    return PARITY_EXIT_OK;
}

static bool file_exists(const char *path) {
    struct stat info;
    return stat(path, &info) == 0;
}

// Calls `each` for every (model, batch) of the suite (or of --model); with `stop`, none after *stop
// turned nonzero (a signal: golden generate stops between cases), and then *stopped is true.
typedef parity_error *(*case_visitor)(const parity_case *c, const char *path, void *context);
static parity_error *for_each_case(const char *suite_argument, const golden_arguments *arguments, parity_suite **suite_out,
                                   const volatile sig_atomic_t *stop, bool *stopped, case_visitor each, void *context) {
    char suite_path[1024];
    PARITY_TRY(parity_suite_locate(suite_argument, "suites", suite_path, sizeof suite_path));
    PARITY_TRY(parity_suite_load(suite_path, suite_out));
    const parity_suite *suite = *suite_out;
    if (arguments->model && !parity_suite_find_model(suite, arguments->model))
        return PARITY_ERROR(PARITY_ERROR_USAGE, "--model: suite %s has no model '%s'", suite->name, arguments->model);
    for (size_t m = 0; m < suite->model_count; m++) {
        const parity_suite_model *model = &suite->models[m];
        if (arguments->model && strcmp(arguments->model, model->name) != 0) continue;
        size_t batch_count;
        const parity_suite_batch *batches = parity_suite_model_batches(suite, model, &batch_count);
        for (size_t b = 0; b < batch_count; b++) {
            if (stop && *stop) {
                *stopped = true;
                return NULL;
            }
            char path[1400];
            parity_golden_path_of(arguments->golden_dir, suite->name, model->name, batches[b].name, path, sizeof path);
            parity_case c;
            PARITY_TRY(parity_case_prepare(suite, model, &batches[b], &c));
            parity_error *error = each(&c, path, context);
            parity_case_release(&c);
            PARITY_TRY(error);
        }
    }
    return NULL;
}

// ---- generate ----

typedef struct generate_state {
    const golden_arguments *arguments;
    parity_device device;
    int argc;
    char **argv;
    size_t written, kept;
} generate_state;

static parity_error *generate_one(const parity_case *c, const char *path, void *context) {
    generate_state *state = context;
    if (file_exists(path) && !state->arguments->force) {
        printf("kept     %s (exists; --force regenerates it)\n", path);
        fflush(stdout); // each line as it happens, also into a pipe or a log
        state->kept++;
        return NULL;
    }
    PARITY_TRY(parity_make_parent_directories(path)); // before the (slow) compute: a bad folder shows at once
    parity_provenance provenance;
    parity_provenance_collect(state->device, state->argc, state->argv, &provenance);
    parity_golden golden;
    PARITY_TRY(parity_golden_compute(c, state->device, &provenance, &golden));
    parity_error *error = parity_golden_write(path, &golden, state->arguments->force);
    if (!error)
        printf("written  %s  (loss %.17g, grad_norm %.17g, %zu parameters, eager on %s)\n", path, golden.expected.loss,
               golden.expected.grad_norm, golden.expected.parameter_count, provenance.device);
    fflush(stdout);
    parity_golden_release(&golden);
    if (!error) state->written++;
    return error;
}

// ---- verify ----

typedef struct verify_state {
    size_t checked, drifted;
} verify_state;

// Relative drift of one value: 0 when equal (both NaN included), inf when only one is NaN (a NaN
// drift would lose every `drift > worst` below), else |now - stored| / |stored|.
static double relative_drift(double now, double stored) {
    if (isnan(now) && isnan(stored)) return 0.0;
    if (isnan(now) || isnan(stored)) return INFINITY;
    if (now == stored) return 0.0;
    double drift = fabs(now - stored) / (fabs(stored) > 0 ? fabs(stored) : 1.0);
    return isnan(drift) ? INFINITY : drift; // (inf - inf)
}

// Largest drift of a sketch's components relative to the gradient's norm (a component's own size is
// no scale: it may be near 0), and which component; inf when `now` has none.
static double sketch_drift(const double *now, const double *stored, double norm, int *component) {
    *component = 0;
    if (!now) return INFINITY;
    double worst = 0;
    for (int j = 0; j < PARITY_SKETCH_K; j++) {
        double drift = now[j] == stored[j] ? 0.0 : fabs(now[j] - stored[j]) / (norm > 0 ? norm : 1.0);
        if (isnan(drift)) drift = INFINITY; // a NaN component (now's or the norm's) is drift
        if (drift > worst) worst = drift, *component = j;
    }
    return worst;
}

// Largest relative drift between two sets of values (names matched), and where it is.
static double values_drift(const parity_step_result *now, const parity_step_result *stored, char *where, size_t size) {
    int component;
    double worst = relative_drift(now->loss, stored->loss);
    parity_text_format(where, size, "loss");
    double drift;
    if (stored->has_aux_loss && (drift = relative_drift(now->aux_loss, stored->aux_loss)) > worst) {
        worst = drift;
        parity_text_format(where, size, "aux_loss");
    }
    if ((drift = relative_drift(now->grad_norm, stored->grad_norm)) > worst) {
        worst = drift;
        parity_text_format(where, size, "grad_norm");
    }
    if (!isnan(stored->logits_sum) && (drift = relative_drift(now->logits_sum, stored->logits_sum)) > worst) {
        worst = drift;
        parity_text_format(where, size, "logits_sum");
    }
    for (size_t i = 0; i < stored->parameter_count; i++) {
        double value = parity_step_result_norm(now, stored->parameter_names[i], i);
        drift = isnan(value) ? INFINITY : relative_drift(value, stored->parameter_grad_norms[i]);
        if (drift > worst) {
            worst = drift;
            parity_text_format(where, size, "grad_norm:%s", stored->parameter_names[i]);
        }
        const double *sketch = parity_step_result_sketch(now, stored->parameter_names[i], i);
        if ((drift = sketch_drift(sketch, stored->parameter_grad_sketches + i * PARITY_SKETCH_K, stored->parameter_grad_norms[i],
                                  &component)) > worst) {
            worst = drift;
            parity_text_format(where, size, "grad_sketch:%s[%d]", stored->parameter_names[i], component);
        }
    }
    if (stored->has_loss_input) {
        double norm = now->has_loss_input ? now->loss_input_grad_norm : NAN;
        if ((drift = isnan(norm) ? INFINITY : relative_drift(norm, stored->loss_input_grad_norm)) > worst) {
            worst = drift;
            parity_text_format(where, size, "grad_norm:%s", PARITY_STEP_LOSS_INPUT);
        }
        if ((drift = sketch_drift(now->has_loss_input ? now->loss_input_grad_sketch : NULL, stored->loss_input_grad_sketch,
                                  stored->loss_input_grad_norm, &component)) > worst) {
            worst = drift;
            parity_text_format(where, size, "grad_sketch:%s[%d]", PARITY_STEP_LOSS_INPUT, component);
        }
    }
    return worst;
}

static parity_error *verify_one(const parity_case *c, const char *path, void *context) {
    verify_state *state = context;
    parity_golden stored;
    parity_error *error = parity_golden_read(path, &stored);
    if (error) return parity_error_wrap(error, __FILE__, __LINE__, "golden %s", path);
    if ((error = parity_golden_check_owner(path, &stored, c))) { // foreign: an error (exit 3), not drift
        parity_golden_release(&stored);
        return error;
    }
    state->checked++;
    error = parity_golden_check_case(path, &stored, c);
    if (error) {
        char message[1500];
        printf("DRIFT    %s: inputs changed: %s\n", path, parity_error_format(error, message, sizeof message));
        parity_error_free(error);
        parity_golden_release(&stored);
        state->drifted++;
        return NULL;
    }
    parity_device device = strncmp(stored.device, "cpu", 3) == 0 ? PARITY_CPU : PARITY_CUDA(0);
    parity_provenance provenance;
    parity_provenance_collect(device, 0, NULL, &provenance);
    parity_golden now;
    error = parity_golden_compute(c, device, &provenance, &now);
    if (error) {
        parity_golden_release(&stored);
        return parity_error_wrap(error, __FILE__, __LINE__, "recomputing %s", path);
    }
    char where[256];
    double drift = values_drift(&now.expected, &stored.expected, where, sizeof where);
    bool failed = !(drift <= VERIFY_RELATIVE_DRIFT);
    printf("%s %s: fp64 drift %.3g (largest at %s)", failed ? "DRIFT   " : "ok      ", path, drift, where);
    for (size_t i = 0; i < now.precision_count; i++) {
        const parity_step_result *old = parity_golden_eager(&stored, now.precisions[i].dtype);
        if (!old) continue;
        char other[256];
        printf("; eager %s drift %.3g", now.precisions[i].dtype, values_drift(&now.precisions[i].eager, old, other, sizeof other));
    }
    printf("\n");
    state->drifted += failed;
    parity_golden_release(&now);
    parity_golden_release(&stored);
    return NULL;
}

// ---- migrate ----

// Checks every file named after `migrate`: a current golden is left as it is, an older one is
// refused with why it cannot be converted (golden_migrate.h). Returns the worst exit code.
static int migrate(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "parity golden migrate: give the golden files to check (parity golden migrate FILE.h5...)\n");
        return PARITY_EXIT_CONFIG;
    }
    int status = PARITY_EXIT_OK;
    for (int i = 2; i < argc; i++) {
        int version = 0;
        parity_error *error = parity_golden_migrate(argv[i], &version);
        if (error) {
            int code = parity_cli_report_error("golden migrate", error);
            if (code > status) status = code;
        } else
            printf("current   %s (schema_version %d already, checked, unchanged)\n", argv[i], version);
    }
    return status;
}

// ---- show ----

static int show(const char *file) {
    parity_golden golden;
    parity_error *error = parity_golden_read(file, &golden);
    if (error) return parity_cli_report_error("golden show", error);
    printf("%s\n", file);
    parity_golden_describe(&golden, stdout);
    parity_golden_release(&golden);
    return PARITY_EXIT_OK;
}

int parity_command_golden(int argc, char **argv) {
    if (argc < 2) {
        parity_command_golden_usage(stderr);
        return PARITY_EXIT_CONFIG;
    }
    if (strcmp(argv[1], "migrate") == 0) return migrate(argc, argv);
    golden_arguments arguments;
    memset(&arguments, 0, sizeof arguments);
    int status = parse_arguments(argc, argv, &arguments);
    if (status != PARITY_EXIT_OK) return status;
    const char *action = argv[1];
    if (strcmp(action, "show") == 0) {
        if (!arguments.file || arguments.suite) {
            fprintf(stderr, "parity golden show: give one golden file (parity golden show FILE.h5)\n");
            return PARITY_EXIT_CONFIG;
        }
        return show(arguments.file);
    }
    if (strcmp(action, "generate") != 0 && strcmp(action, "verify") != 0) {
        fprintf(stderr, "parity golden: unknown action '%s' (generate, verify, show or migrate)\n", action);
        return PARITY_EXIT_CONFIG;
    }
    if (!arguments.suite || arguments.file) {
        fprintf(stderr, "parity golden %s: --suite S is required (and takes no file argument)\n", action);
        return PARITY_EXIT_CONFIG;
    }
    parity_suite *suite = NULL;
    parity_error *error = NULL;
    if (strcmp(action, "generate") == 0) {
        char suite_path[1024];
        error = parity_suite_locate(arguments.suite, "suites", suite_path, sizeof suite_path);
        parity_suite *probe = NULL;
        if (!error) error = parity_suite_load(suite_path, &probe);
        generate_state state = {&arguments, probe ? parity_golden_device(probe) : PARITY_CPU, argc + 1, NULL, 0, 0};
        parity_suite_free(probe);
        char **command_line = calloc((size_t)argc + 2, sizeof *command_line);
        if (command_line) {
            command_line[0] = "parity";
            for (int i = 0; i < argc; i++) command_line[i + 1] = argv[i];
        }
        state.argv = command_line;
        parity_cli_interrupts_install("stopping after the golden in progress (a second signal stops at once)");
        bool stopped = false;
        if (!error)
            error = for_each_case(arguments.suite, &arguments, &suite, parity_cli_interrupt_flag(), &stopped, generate_one, &state);
        free(command_line);
        if (!error) printf("%zu written, %zu kept\n", state.written, state.kept);
        if (!error && stopped) {
            int signal_number = parity_cli_interrupt_signal();
            printf("interrupted by SIG%s: the goldens above are whole; the rest were not made\n", sigabbrev_np(signal_number));
            status = parity_cli_interrupt_exit_code(signal_number);
        }
    } else {
        verify_state state = {0, 0};
        error = for_each_case(arguments.suite, &arguments, &suite, NULL, NULL, verify_one, &state);
        if (!error) {
            printf("%zu goldens checked, %zu drifted\n", state.checked, state.drifted);
            status = state.drifted ? PARITY_EXIT_FAILURES : PARITY_EXIT_OK;
        }
    }
    parity_suite_free(suite);
    if (error) return parity_cli_report_error("golden", error);
    return status;
}
