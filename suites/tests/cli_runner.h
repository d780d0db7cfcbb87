// cli_runner.h: runs the `parity` binary built beside the test binary (build/parity next to
// build/parity-tests) and captures its exit code and output, for tests of the command line.
#ifndef PARITY_CLI_RUNNER_H
#define PARITY_CLI_RUNNER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct command_result {
    int exit_code;
    char *output; // stdout and stderr together; free() it
} command_result;

// Runs `parity ARGUMENTS` (a shell-quoted string) with NO_COLOR=1 and MODELING_BACKEND unset.
command_result run_parity(const char *arguments);
// The same with another binary (NULL: the one beside the tests) from another working directory
// (NULL: this one).
command_result run_parity_from(const char *directory, const char *parity, const char *arguments);
// Runs a /bin/sh command line (stderr joined to stdout), as run_parity does for parity.
command_result run_shell(const char *shell_command);
// The parity binary beside the test binary.
void parity_binary_path(char *path, size_t size);
// `parity ARGUMENTS` for runs over MPI ranks (mpirun, or parity relaunching itself under it): under
// SAN=1 without LeakSanitizer (AddressSanitizer and UBSan still check every access): what Open MPI
// holds for a process's lifetime is allocated in components it unloads, whose frames ASan's fast
// unwinder cannot name, and exact stacks make a suite run hundreds of times slower. So parity's own
// allocations on the multi-rank paths are not leak-checked (the one-rank paths are).
command_result run_parity_mpi(const char *arguments);
// `mpirun` is on the PATH (openmpi-bin).
bool have_mpirun(void);

// A `parity ARGUMENTS` running in the background, for tests that signal it while it works: started
// through /bin/sh (`exec env ... parity ...`, NO_COLOR=1, MODELING_BACKEND unset, TMPDIR=`tmpdir`
// when not NULL) with SIGINT and SIGTERM at their defaults and unblocked, whatever the test runner
// set; stdout and stderr go into one pipe the test reads.
typedef struct parity_child {
    pid_t pid;
    int output;      // read end of the pipe
    char *text;      // everything read so far, NUL-terminated
    size_t length, capacity;
} parity_child;
parity_child start_parity(const char *arguments, const char *tmpdir);
// Reads the child's output until `needle` appears (true) or it closes the pipe or `seconds` pass (false).
bool wait_for_output(parity_child *child, const char *needle, double seconds);
// Reads the rest and waits for the child. exit_code is its exit status, or 128 + the signal that
// ended it (as a shell reports it); output takes over child->text.
command_result finish_parity(parity_child *child);

#endif
