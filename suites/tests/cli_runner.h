// cli_runner.h: runs the `parity` binary built beside the test binary (build/parity next to
// build/parity-tests) and captures its exit code and output, for tests of the command line.
#ifndef PARITY_CLI_RUNNER_H
#define PARITY_CLI_RUNNER_H

#include <stddef.h>

typedef struct command_result {
    int exit_code;
    char *output; // stdout and stderr together; free() it
} command_result;

// Runs `parity ARGUMENTS` (a shell-quoted string) with NO_COLOR=1 and MODELING_BACKEND unset.
command_result run_parity(const char *arguments);
// The same with another binary (NULL: the one beside the tests) from another working directory
// (NULL: this one).
command_result run_parity_from(const char *directory, const char *parity, const char *arguments);
// The parity binary beside the test binary.
void parity_binary_path(char *path, size_t size);

#endif
