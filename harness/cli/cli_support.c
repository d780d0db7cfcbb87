// cli_support.c: exit codes, option values, the color decision and the relaunch under mpirun shared by
// the subcommands.
#include "harness/cli/cli_support.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    char **child = calloc((size_t)argc + 8, sizeof *child);
    if (!child) return PARITY_EXIT_IO;
    int n = 0;
    child[n++] = "mpirun";
    child[n++] = "-np";
    child[n++] = count;
    child[n++] = "--oversubscribe";
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
    execvp("mpirun", child);
    fprintf(stderr, "parity %s: %d ranks: cannot start mpirun: %s (install openmpi-bin, or launch with mpirun)\n", command,
            ranks, strerror(errno));
    free(child);
    return PARITY_EXIT_IO;
}

int parity_cli_parse_parallel(const char *command, const char *text, parity_cli_parallel *out) {
    int *data_parallel = &out->data_parallel;
    bool *wrong_group = &out->wrong_group;
    char copy[128];
    snprintf(copy, sizeof copy, "%s", text);
    char *saveptr = NULL;
    for (char *item = strtok_r(copy, ",", &saveptr); item; item = strtok_r(NULL, ",", &saveptr)) {
        char *end;
        if (strncmp(item, "dp=", 3) == 0) {
            long ranks = strtol(item + 3, &end, 10);
            if (end == item + 3 || *end || ranks < 1 || ranks > 1024) {
                fprintf(stderr, "parity %s: --parallel: '%s' is not dp=N with N in [1, 1024]\n", command, item);
                return PARITY_EXIT_CONFIG;
            }
            *data_parallel = (int)ranks;
        } else if (strcmp(item, "test_wrong_group") == 0) {
            *wrong_group = true;
        } else if (strncmp(item, "test_stall_rank=", 16) == 0) {
            long rank = strtol(item + 16, &end, 10);
            if (end == item + 16 || *end || rank < 0 || rank > 1023) {
                fprintf(stderr, "parity %s: --parallel: '%s' is not test_stall_rank=R with R a rank\n", command, item);
                return PARITY_EXIT_CONFIG;
            }
            out->stall_rank = (int)rank;
        } else if (strncmp(item, "sp=", 3) == 0 || strncmp(item, "ep=", 3) == 0 || strncmp(item, "fsdp", 4) == 0) {
            fprintf(stderr, "parity %s: --parallel: '%s': sequence, expert and fully sharded parallelism are not built "
                            "yet (issue 16); dp=N is\n",
                    command, item);
            return PARITY_EXIT_CONFIG;
        } else {
            fprintf(stderr, "parity %s: --parallel: '%s' is not a layout (dp=N)\n", command, item);
            return PARITY_EXIT_CONFIG;
        }
    }
    if ((*wrong_group || out->stall_rank >= 0) && *data_parallel < 2) {
        fprintf(stderr, "parity %s: --parallel: the test faults need dp=N with N >= 2\n", command);
        return PARITY_EXIT_CONFIG;
    }
    if (out->stall_rank >= *data_parallel) {
        fprintf(stderr, "parity %s: --parallel: test_stall_rank=%d is not one of the %d ranks\n", command, out->stall_rank,
                *data_parallel);
        return PARITY_EXIT_CONFIG;
    }
    return PARITY_EXIT_OK;
}
