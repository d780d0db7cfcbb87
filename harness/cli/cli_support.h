// cli_support.h: what every `parity` subcommand shares: the documented exit codes, turning an
// error into one, reading "--name value" / "--name=value" options, and whether to color output.
// Commands return exit codes; only main() exits.
#ifndef PARITY_CLI_SUPPORT_H
#define PARITY_CLI_SUPPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "ops/core/error.h"

// Exit codes of the `parity` command (documented in `parity --help`).
enum parity_exit_code {
    PARITY_EXIT_OK = 0,
    PARITY_EXIT_FAILURES = 1, // the command ran and found failures (numeric mismatches, regressions)
    PARITY_EXIT_CONFIG = 2,   // usage error, invalid config, or a selected backend that cannot run here
    PARITY_EXIT_IO = 3,       // unreadable or malformed input file, device or system failure
};

// USAGE, CONFIG, UNSUPPORTED, UNAVAILABLE -> 2; SHAPE, NUMERIC -> 1; everything else -> 3.
int parity_cli_exit_code(const parity_error *error);
// Prints "parity CMD: " + the error chain to stderr and frees it; returns its exit code.
int parity_cli_report_error(const char *command, parity_error *error);
// The same for an error reading a kernel-selection YAML (harness/config/yaml_ops.h): a malformed or
// ill-formed file is a config error (2) in every command; only an unreadable one is an I/O error (3).
int parity_cli_report_ops_file_error(const char *command, parity_error *error);

typedef enum parity_cli_option_match {
    PARITY_CLI_OPTION_NO_MATCH = 0,
    PARITY_CLI_OPTION_MATCHED,
    PARITY_CLI_OPTION_MISSING_VALUE, // "--name" was last: a message is already printed
} parity_cli_option_match;

// Matches argv[*index] against "--name VALUE" or "--name=VALUE". On a match stores VALUE and
// leaves *index on the last argument consumed.
parity_cli_option_match parity_cli_option_value(int argc, char **argv, int *index, const char *name,
                                                const char **value);

// --parallel TEXT: "dp=N", with the test-only faults ",test_wrong_group" (sums over the wrong group)
// and ",test_stall_rank=R" (rank R stalls before its first collective) (the layouts built so far; sp,
// ep and fsdp are named as not built yet). Prints the problem as `parity COMMAND: ...` and returns 2,
// else 0.
typedef struct parity_cli_parallel {
    int data_parallel;
    bool wrong_group;
    int stall_rank; // -1: none
} parity_cli_parallel;
int parity_cli_parse_parallel(const char *command, const char *text, parity_cli_parallel *out);

// Re-executes this command (`argv`: the command's, argv[0] its name) under `mpirun -np RANKS
// --oversubscribe` (and --allow-run-as-root as root), leaving out `drop_option` and its value (NULL:
// none), for a command that needs more ranks than it was started with. Returns only on failure (3,
// with a message naming `command`).
int parity_cli_relaunch_ranks(const char *command, int ranks, int argc, char **argv, const char *drop_option);

// True when `stream` is a terminal and NO_COLOR is unset (and TERM is not "dumb").
bool parity_cli_use_color(FILE *stream);

#endif
