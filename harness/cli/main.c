// main.c: the `parity` command. Takes the global --verbose and --plugin options out of the
// arguments, installs the SIGINT/SIGTERM handler (interrupt.h), registers the built-in backends and
// the plugins' (harness/plugins/plugins.h), then dispatches to a subcommand from the table below;
// the only place in parity that exits.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli/cli_support.h"
#include "harness/cli/commands.h"
#include "harness/cli/interrupt.h"
#include "harness/cli/version.h"
#include "harness/plugins/plugins.h"
#include "ops/core/cuda_api.h"
#include "ops/registry.h"

typedef struct parity_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); // argv[0] is the command name
    void (*usage)(FILE *stream);
} parity_command;

static const parity_command commands[] = {
    {"list", "list kernel-selection fields (ops) and every backend with its status here (backends)",
     parity_command_list, parity_command_list_usage},
    {"config", "check a VeOmni kernel-selection config: resolve it for a device and report every problem",
     parity_command_config, parity_command_config_usage},
    {"eval", "one forward + backward of a model on a batch: loss, aux loss, gradient norms, logits sum",
     parity_command_eval, parity_command_eval_usage},
    {"golden", "make, verify, show or migrate a suite's eager fp64 goldens (sealed HDF5)", parity_command_golden,
     parity_command_golden_usage},
    {"run", "run every backend combination of a suite against its goldens and write the reports", parity_command_run,
     parity_command_run_usage},
    {"report", "re-render junit.xml, summary.md and report.html of a run from its results.json",
     parity_command_report, parity_command_report_usage},
    {"history", "the results history (SQLite): add run directories and bench reports, list runs, show one",
     parity_command_history, parity_command_history_usage},
    {"compare", "compare two runs combo by combo: new failures, tolerance drift, time beyond threshold and noise",
     parity_command_compare, parity_command_compare_usage},
    {"dashboard", "the history as a static site: latest run per suite/device, grid, tokens/s trends, regressions marked",
     parity_command_dashboard, parity_command_dashboard_usage},
    {"check", "an op's backends against eager fp64 on every row of its table (2x eager's error, NaN, bounds, determinism)",
     parity_command_check, parity_command_check_usage},
    {"bench", "time an op's backends side by side on cpu or cuda, each checked first (GB/s or TFLOP/s, % of ceilings, peers)",
     parity_command_bench, parity_command_bench_usage},
};
static const size_t command_count = sizeof commands / sizeof commands[0];

static const parity_command *find_command(const char *name) {
    for (size_t i = 0; i < command_count; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

static void print_usage(FILE *stream) {
    fprintf(stream,
            "usage: parity COMMAND [ARGS]\n"
            "       parity help COMMAND | parity COMMAND --help | parity --version\n"
            "\n"
            "A benchmarking and numerical-equivalence harness for LLM training kernels, driven by\n"
            "VeOmni's kernel-selection config (model.ops_implementation).\n"
            "\n"
            "commands:\n");
    for (size_t i = 0; i < command_count; i++) fprintf(stream, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(stream,
            "\n"
            "options of every command:\n"
            "  --verbose      errors also say where in parity's source they arose (file:line of each step)\n"
            "  --plugin PATH  load backends from a shared library (repeatable; ops/plugin_api.h); they join\n"
            "                 every matrix and `parity list backends` shows them as \"plugin PATH\"\n"
            "\n"
            "environment:\n"
            "  PARITY_PLUGINS  plugins to load, paths separated by ':' (the --plugin options are added to it,\n"
            "                  so ranks that parity starts under mpirun load them too)\n"
            "\n"
            "exit status: 0 success; 1 the command ran and found failures; 2 usage error, invalid config or\n"
            "             an unavailable backend; 3 unreadable input file, device or system failure;\n"
            "             130 / 143 interrupted by SIGINT / SIGTERM (run and golden generate keep what finished)\n");
}

static bool is_help_flag(const char *argument) {
    return strcmp(argument, "--help") == 0 || strcmp(argument, "-h") == 0;
}

static int print_command_usage(const char *name) {
    const parity_command *command = find_command(name);
    if (!command) {
        fprintf(stderr, "parity help: unknown command '%s' (see parity --help)\n", name);
        return PARITY_EXIT_CONFIG;
    }
    command->usage(stdout);
    return PARITY_EXIT_OK;
}

static int run(int argc, char **argv) {
    if (argc < 2) {
        print_usage(stderr);
        return PARITY_EXIT_CONFIG;
    }
    const char *name = argv[1];
    if (is_help_flag(name)) {
        print_usage(stdout);
        return PARITY_EXIT_OK;
    }
    if (strcmp(name, "--version") == 0) {
        printf("parity %s (%s build)\n", PARITY_VERSION, parity_cuda_built() ? "CUDA" : "CPU-only");
        return PARITY_EXIT_OK;
    }
    if (strcmp(name, "help") == 0) {
        if (argc < 3) {
            print_usage(stdout);
            return PARITY_EXIT_OK;
        }
        return print_command_usage(argv[2]);
    }
    if (name[0] == '-') {
        fprintf(stderr, "parity: unknown option '%s' (see parity --help)\n", name);
        return PARITY_EXIT_CONFIG;
    }
    const parity_command *command = find_command(name);
    if (!command) {
        fprintf(stderr, "parity: unknown command '%s' (see parity --help)\n", name);
        return PARITY_EXIT_CONFIG;
    }
    for (int i = 2; i < argc; i++) {
        if (is_help_flag(argv[i])) {
            command->usage(stdout);
            return PARITY_EXIT_OK;
        }
    }
    parity_error *error = parity_registry_register_builtins();
    if (!error) error = parity_plugins_load_list(getenv(PARITY_PLUGINS_VARIABLE));
    if (error) return parity_cli_report_error(name, error);
    return command->run(argc - 1, argv + 1);
}

// Removes every --verbose from argv (it may come before or after the command); true when one was there.
static bool take_verbose(int *argc, char **argv) {
    bool verbose = false;
    int kept = 1;
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], "--verbose") == 0) verbose = true;
        else argv[kept++] = argv[i];
    }
    argv[kept] = NULL;
    *argc = kept;
    return verbose;
}

// Removes every --plugin PATH / --plugin=PATH from argv and appends the paths to PARITY_PLUGINS (the
// one list the plugins are loaded from, inherited by ranks relaunched under mpirun). False (after a
// message) when a --plugin has no path or the environment cannot be set.
static bool take_plugins(int *argc, char **argv) {
    const char *inherited = getenv(PARITY_PLUGINS_VARIABLE);
    size_t size = (inherited ? strlen(inherited) : 0) + 1;
    for (int i = 1; i < *argc; i++) size += strlen(argv[i]) + 1;
    char *list = malloc(size);
    if (!list) return false;
    snprintf(list, size, "%s", inherited ? inherited : "");
    bool changed = false, ok = true;
    int kept = 1;
    for (int i = 1; i < *argc && ok; i++) {
        const char *path = NULL;
        parity_cli_option_match match = parity_cli_option_value(*argc, argv, &i, "--plugin", &path);
        if (match == PARITY_CLI_OPTION_NO_MATCH) {
            argv[kept++] = argv[i];
        } else if (match == PARITY_CLI_OPTION_MISSING_VALUE || !path[0]) {
            if (match == PARITY_CLI_OPTION_MATCHED) fprintf(stderr, "parity: option --plugin needs a value\n");
            ok = false;
        } else {
            if (list[0]) strcat(list, ":");
            strcat(list, path);
            changed = true;
        }
    }
    if (ok) {
        argv[kept] = NULL;
        *argc = kept;
        if (changed && setenv(PARITY_PLUGINS_VARIABLE, list, 1) != 0) {
            fprintf(stderr, "parity: cannot set %s for the plugins\n", PARITY_PLUGINS_VARIABLE);
            ok = false;
        }
    }
    free(list);
    return ok;
}

int main(int argc, char **argv) {
    parity_error_show_locations(take_verbose(&argc, argv));
    if (!take_plugins(&argc, argv)) return PARITY_EXIT_CONFIG;
    parity_cli_interrupts_install(NULL); // run and golden generate ask for a graceful stop
    return run(argc, argv);
}
