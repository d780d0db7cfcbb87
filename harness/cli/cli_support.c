// cli_support.c: exit codes, option values, the color decision and the relaunch under mpirun shared by
// the subcommands.
#include "harness/cli/cli_support.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ops/core/comm.h"

int parity_cli_exit_code(const parity_error *error) {
    if (!error) return PARITY_EXIT_OK;
    switch (parity_error_kind_of(error)) {
    case PARITY_ERROR_USAGE:
    case PARITY_ERROR_CONFIG:
    case PARITY_ERROR_UNSUPPORTED:
    case PARITY_ERROR_UNAVAILABLE: return PARITY_EXIT_CONFIG;
    case PARITY_ERROR_SHAPE:
    case PARITY_ERROR_NUMERIC: return PARITY_EXIT_FAILURES;
    default: return PARITY_EXIT_IO;
    }
}

int parity_cli_report_error(const char *command, parity_error *error) {
    int code = parity_cli_exit_code(error);
    if (error) {
        fprintf(stderr, "parity %s: ", command);
        parity_error_print(error, stderr);
        parity_error_free(error);
    }
    return code;
}

int parity_cli_report_ops_file_error(const char *command, parity_error *error) {
    bool malformed = parity_error_kind_of(error) == PARITY_ERROR_DATA;
    int code = parity_cli_report_error(command, error);
    return malformed ? PARITY_EXIT_CONFIG : code;
}

parity_cli_option_match parity_cli_option_value(int argc, char **argv, int *index, const char *name,
                                                const char **value) {
    const char *argument = argv[*index];
    size_t length = strlen(name);
    if (strncmp(argument, name, length) != 0) return PARITY_CLI_OPTION_NO_MATCH;
    if (argument[length] == '=') {
        *value = argument + length + 1;
        return PARITY_CLI_OPTION_MATCHED;
    }
    if (argument[length] != '\0') return PARITY_CLI_OPTION_NO_MATCH;
    if (*index + 1 >= argc) {
        fprintf(stderr, "parity: option %s needs a value\n", name);
        return PARITY_CLI_OPTION_MISSING_VALUE;
    }
    *index += 1;
    *value = argv[*index];
    return PARITY_CLI_OPTION_MATCHED;
}

bool parity_cli_use_color(FILE *stream) {
    const char *no_color = getenv("NO_COLOR");
    const char *term = getenv("TERM");
    if (no_color && no_color[0]) return false;
    if (term && strcmp(term, "dumb") == 0) return false;
    return isatty(fileno(stream)) == 1;
}

// ---- the relaunch under mpirun, and the end of a command on several ranks ----

static volatile sig_atomic_t launched_child; // mpirun's pid while the parent waits for it

static void forward_signal(int signal_number) {
    if (launched_child > 0) kill((pid_t)launched_child, signal_number);
}

// Where rank 0 of a relaunched run leaves its exit status for the parent (PARITY_RELAUNCH_STATUS).
static const char relaunch_status_variable[] = "PARITY_RELAUNCH_STATUS";

int parity_cli_relaunch_ranks(const char *command, int ranks, int argc, char **argv, const char *drop_option) {
    char count[16], self[4096];
    snprintf(count, sizeof count, "%d", ranks);
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    if (length <= 0) {
        fprintf(stderr, "parity %s: %d ranks: cannot find this program (/proc/self/exe: %s)\n", command, ranks,
                strerror(errno));
        return PARITY_EXIT_IO;
    }
    self[length] = '\0';
    char status_path[] = "/tmp/parity-relaunch-XXXXXX";
    int status_file = mkstemp(status_path);
    if (status_file < 0) {
        fprintf(stderr, "parity %s: %d ranks: cannot make a status file in /tmp: %s\n", command, ranks, strerror(errno));
        return PARITY_EXIT_IO;
    }
    close(status_file);
    char **child = calloc((size_t)argc + 10, sizeof *child);
    if (!child) {
        unlink(status_path);
        return PARITY_EXIT_IO;
    }
    int n = 0;
    child[n++] = "mpirun";
    child[n++] = "-np";
    child[n++] = count;
    child[n++] = "--oversubscribe";
    // the ranks outlive one that dies: they time out (comm_mpi.c), rank 0 writes its report and ends them
    child[n++] = "--enable-recovery";
    if (geteuid() == 0) child[n++] = "--allow-run-as-root";
    child[n++] = self;
    size_t drop = drop_option ? strlen(drop_option) : 0;
    for (int i = 0; i < argc; i++) {
        if (drop && strcmp(argv[i], drop_option) == 0 && i + 1 < argc) {
            i++;
            continue;
        }
        if (drop && strncmp(argv[i], drop_option, drop) == 0 && argv[i][drop] == '=') continue;
        child[n++] = argv[i];
    }
    child[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        setenv(relaunch_status_variable, status_path, 1);
        execvp("mpirun", child);
        fprintf(stderr, "parity %s: %d ranks: cannot start mpirun: %s (install openmpi-bin, or launch with mpirun)\n",
                command, ranks, strerror(errno));
        _exit(PARITY_EXIT_IO);
    }
    free(child);
    if (pid < 0) {
        fprintf(stderr, "parity %s: %d ranks: cannot fork for mpirun: %s\n", command, ranks, strerror(errno));
        unlink(status_path);
        return PARITY_EXIT_IO;
    }
    // SIGINT / SIGTERM reach mpirun, which passes them to the ranks (their graceful stop)
    launched_child = pid;
    struct sigaction forward = {.sa_handler = forward_signal}, previous_int, previous_term;
    sigemptyset(&forward.sa_mask);
    sigaction(SIGINT, &forward, &previous_int);
    sigaction(SIGTERM, &forward, &previous_term);
    int wait_status = 0;
    while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {}
    launched_child = 0;
    sigaction(SIGINT, &previous_int, NULL);
    sigaction(SIGTERM, &previous_term, NULL);
    // rank 0's own status when it wrote one (mpirun's is not it: under --enable-recovery an MPI_Abort
    // ends mpirun with 0); without one, rank 0 died or never ran
    int status = -1;
    FILE *recorded = fopen(status_path, "r");
    if (recorded) {
        if (fscanf(recorded, "%d", &status) != 1) status = -1;
        fclose(recorded);
    }
    unlink(status_path);
    if (status >= 0) return status;
    if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == PARITY_EXIT_IO) return PARITY_EXIT_IO; // mpirun missing
    char how[64];
    if (WIFSIGNALED(wait_status)) snprintf(how, sizeof how, "mpirun ended by signal %d", WTERMSIG(wait_status));
    else snprintf(how, sizeof how, "mpirun exit %d", WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1);
    fprintf(stderr, "parity %s: %d ranks: rank 0 ended without an exit status (%s): a rank died or was killed; see "
                    "mpirun's message above\n", command, ranks, how);
    return PARITY_EXIT_IO;
}

int parity_cli_end_ranks(int status) {
    parity_comm *world = NULL;
    parity_error *error = parity_comm_world(&world);
    parity_error_free(error);
    const int rank = world ? parity_comm_rank(world) : 0;
    const char *status_path = getenv(relaunch_status_variable);
    if (rank == 0 && status_path && *status_path) { // the relaunching parent returns this
        FILE *file = fopen(status_path, "w");
        if (file) {
            fprintf(file, "%d\n", status);
            fclose(file);
        }
    }
    if (status == PARITY_EXIT_IO) {
        // after a failed collective rank 0 writes its report, then ends the others (MPI_Abort); another
        // rank leaves without a word more, so it cannot end rank 0 before the report is written
        if (rank != 0 && parity_comm_failure()) {
            fflush(NULL);
            _exit(status);
        }
        parity_comm_abort(status); // the others may wait for this rank
    }
    parity_comm_finalize();
    return status;
}

int parity_cli_parse_parallel(const char *command, const char *text, parity_layout *out) {
    parity_error *error = parity_layout_parse(text, out);
    if (!error) return PARITY_EXIT_OK;
    fprintf(stderr, "parity %s: --parallel: %s\n", command, parity_error_message(error));
    parity_error_free(error);
    return PARITY_EXIT_CONFIG;
}
