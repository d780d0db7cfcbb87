// cli_support.h: what every `parity` subcommand shares: the documented exit codes, turning an
// error into one, reading "--name value" / "--name=value" options, and whether to color output.
// Commands return exit codes; only main() exits.
#ifndef PARITY_CLI_SUPPORT_H
#define PARITY_CLI_SUPPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "models/parallel/layout.h"

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

// --parallel TEXT: a layout, "dp=D,sp=S,ep=E[,fsdp]" (models/parallel/layout.h), with the test-only
// faults test_wrong_group, test_skip_all_to_all and test_stall_rank=R. Prints the problem as
// `parity COMMAND: --parallel: ...` and returns 2, else 0.
int parity_cli_parse_parallel(const char *command, const char *text, parity_layout *out);

// Runs this command (`argv`: the command's, argv[0] its name) again under `mpirun -np RANKS
// --oversubscribe --enable-recovery` (and --allow-run-as-root as root), leaving out `drop_option` and
// its value (NULL: none), for a command that needs more ranks than it was started with, and waits for
// it (SIGINT / SIGTERM passed on). Returns rank 0's exit status (parity_cli_end_ranks leaves it in a
// file named by PARITY_RELAUNCH_STATUS); 3 with a message naming `command` when rank 0 left none (it
// died, or mpirun could not start).
int parity_cli_relaunch_ranks(const char *command, int ranks, int argc, char **argv, const char *drop_option);
// The end of a command run on several ranks, returning `status`: rank 0 records it for a relaunching
// parent; on exit 3 the others are ended (MPI_Abort), except that after a failed collective a rank
// other than 0 leaves at once, so rank 0 is not killed before its report is written; else MPI is
// finalized.
int parity_cli_end_ranks(int status);

// True when `stream` is a terminal and NO_COLOR is unset (and TERM is not "dumb").
bool parity_cli_use_color(FILE *stream);

#endif
