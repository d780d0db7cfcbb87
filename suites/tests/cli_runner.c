// cli_runner.c: the `parity` runner behind cli_runner.h.
#include "cli_runner.h"

#include <criterion/criterion.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

// The parity binary beside this test binary; ./build/parity when /proc is unavailable.
void parity_binary_path(char *path, size_t size) {
    char self[4096];
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    if (length <= 0) {
        snprintf(path, size, "./build/parity");
        return;
    }
    self[length] = '\0';
    snprintf(path, size, "%s/parity", dirname(self));
}

command_result run_parity(const char *arguments) { return run_parity_from(NULL, NULL, arguments); }

command_result run_parity_from(const char *directory, const char *parity, const char *arguments) {
    char path[4200], command[8192];
    if (parity) snprintf(path, sizeof path, "%s", parity);
    else parity_binary_path(path, sizeof path);
    snprintf(command, sizeof command, "%s%s%senv -u MODELING_BACKEND NO_COLOR=1 '%s' %s 2>&1", directory ? "cd '" : "",
             directory ? directory : "", directory ? "' && " : "", path, arguments);
    FILE *pipe = popen(command, "r");
    cr_assert_not_null(pipe, "popen %s", command);
    size_t capacity = 1 << 16, used = 0;
    char *output = malloc(capacity);
    cr_assert_not_null(output);
    size_t got;
    while ((got = fread(output + used, 1, capacity - used - 1, pipe)) > 0) {
        used += got;
        if (capacity - used < 4096) {
            capacity *= 2;
            output = realloc(output, capacity);
            cr_assert_not_null(output);
        }
    }
    output[used] = '\0';
    int status = pclose(pipe);
    return (command_result){WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

