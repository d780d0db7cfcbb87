// cli_runner.c: the `parity` runner behind cli_runner.h.
#include "cli_runner.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

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

command_result run_parity_mpi(const char *arguments) {
    char parity[4096], command[8192];
    parity_binary_path(parity, sizeof parity);
    snprintf(command, sizeof command,
             "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" NO_COLOR=1 '%s' %s",
             parity, arguments);
    return run_shell(command);
}

bool have_mpirun(void) {
    command_result which = run_shell("command -v mpirun");
    bool found = which.exit_code == 0;
    free(which.output);
    return found;
}

command_result run_parity_from(const char *directory, const char *parity, const char *arguments) {
    char path[4200], command[8192];
    if (parity) snprintf(path, sizeof path, "%s", parity);
    else parity_binary_path(path, sizeof path);
    snprintf(command, sizeof command, "%s%s%senv -u MODELING_BACKEND NO_COLOR=1 '%s' %s", directory ? "cd '" : "",
             directory ? directory : "", directory ? "' && " : "", path, arguments);
    return run_shell(command);
}

command_result run_shell(const char *shell_command) {
    char command[8400];
    snprintf(command, sizeof command, "%s 2>&1", shell_command);
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


parity_child start_parity(const char *arguments, const char *tmpdir) {
    char path[4200], command[8192], tmp[600] = "";
    parity_binary_path(path, sizeof path);
    if (tmpdir) snprintf(tmp, sizeof tmp, "TMPDIR='%s' ", tmpdir);
    snprintf(command, sizeof command, "exec env -u MODELING_BACKEND NO_COLOR=1 %s'%s' %s", tmp, path, arguments);
    int pipe_ends[2];
    cr_assert_eq(pipe(pipe_ends), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipe_ends[0]);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t defaults, none;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    char *argv[] = {"/bin/sh", "-c", command, NULL};
    parity_child child = {0};
    int failed = posix_spawn(&child.pid, "/bin/sh", &actions, &attributes, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    close(pipe_ends[1]);
    cr_assert_eq(failed, 0, "posix_spawn %s: %s", command, strerror(failed));
    child.output = pipe_ends[0];
    child.capacity = 1 << 16;
    child.text = calloc(child.capacity, 1);
    cr_assert_not_null(child.text);
    return child;
}

static double now_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

// Reads what is there (waiting up to `milliseconds`); false at the end of the output.
static bool read_some(parity_child *child, int milliseconds) {
    struct pollfd ready = {child->output, POLLIN, 0};
    int events = poll(&ready, 1, milliseconds);
    if (events < 0 && errno == EINTR) return true;
    if (events <= 0) return events == 0;
    if (child->capacity - child->length < 4096) {
        child->capacity *= 2;
        child->text = realloc(child->text, child->capacity);
        cr_assert_not_null(child->text);
    }
    ssize_t got = read(child->output, child->text + child->length, child->capacity - child->length - 1);
    if (got <= 0) return false;
    child->length += (size_t)got;
    child->text[child->length] = '\0';
    return true;
}

bool wait_for_output(parity_child *child, const char *needle, double seconds) {
    double deadline = now_seconds() + seconds;
    while (!strstr(child->text, needle)) {
        if (now_seconds() > deadline || !read_some(child, 100)) return strstr(child->text, needle) != NULL;
    }
    return true;
}

command_result finish_parity(parity_child *child) {
    while (read_some(child, 1000)) {
    }
    close(child->output);
    int status = 0;
    while (waitpid(child->pid, &status, 0) < 0 && errno == EINTR) {
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
    return (command_result){code, child->text};
}
