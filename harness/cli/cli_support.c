// cli_support.c: exit codes, option values and the color decision shared by the subcommands.
#include "harness/cli/cli_support.h"

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
