// gnuplot_runner.c: find gnuplot, run it on a script in a private temporary directory (fork +
// exec, stdin from /dev/null, stderr kept for the message), and make its SVG inlinable.
#include "reports/gnuplot_runner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ops/core/file.h"
#include "ops/core/temporaries.h"

bool parity_gnuplot_find(char *path, size_t size) {
    const char *search = getenv("PATH");
    if (!search || !search[0]) return false;
    while (*search) {
        size_t length = strcspn(search, ":");
        if (length > 0 && (size_t)snprintf(path, size, "%.*s/gnuplot", (int)length, search) < size) {
            struct stat info;
            if (stat(path, &info) == 0 && S_ISREG(info.st_mode) && access(path, X_OK) == 0) return true;
        }
        search += length;
        if (*search == ':') search++;
    }
    path[0] = '\0';
    return false;
}

parity_error *parity_gnuplot_job_start(parity_gnuplot_job *job) {
    const char *base = getenv("TMPDIR");
    if (!base || !base[0]) base = "/tmp";
    job->tracked_count = 0;
    snprintf(job->directory, sizeof job->directory, "%s/parity-chart-XXXXXX", base);
    sigset_t saved;
    parity_temporaries_block(&saved); // mkdtemp picks the name: made and tracked before a signal's handler runs
    bool made = mkdtemp(job->directory) != NULL;
    int saved_errno = errno;
    parity_error *error = made ? parity_temporary_track(job->directory, true, &job->tracked[0]) : NULL;
    if (error) rmdir(job->directory);
    parity_temporaries_unblock(&saved);
    if (!made || error) job->directory[0] = '\0';
    if (!made)
        return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot create a temporary directory for chart data: %s", base, strerror(saved_errno));
    if (error) return error;
    job->tracked_count = 1;
    return NULL;
}

static void job_path(const parity_gnuplot_job *job, const char *name, char *path, size_t size) {
    snprintf(path, size, "%s/%s", job->directory, name);
}

// Tracks the job's file `name` before it exists (a handler that meets no file removes nothing).
static parity_error *track_file(parity_gnuplot_job *job, const char *name) {
    char path[4200];
    job_path(job, name, path, sizeof path);
    if (job->tracked_count == 1 + PARITY_GNUPLOT_JOB_FILES)
        return PARITY_ERROR(PARITY_ERROR_INTERNAL, "%s: more than %d files in one chart job", path, PARITY_GNUPLOT_JOB_FILES);
    PARITY_TRY(parity_temporary_track(path, false, &job->tracked[job->tracked_count]));
    job->tracked_count++;
    return NULL;
}

parity_error *parity_gnuplot_job_write(parity_gnuplot_job *job, const char *name, const parity_text *content) {
    PARITY_TRY(parity_text_check(content, name));
    char path[4200];
    job_path(job, name, path, sizeof path);
    PARITY_TRY(track_file(job, name));
    FILE *stream = fopen(path, "wb");
    if (!stream) return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot create: %s", path, strerror(errno));
    bool ok = content->length == 0 || fwrite(content->data, 1, content->length, stream) == content->length;
    ok = fclose(stream) == 0 && ok;
    if (!ok) return PARITY_ERROR(PARITY_ERROR_IO, "%s: write failed", path);
    return NULL;
}

// Runs `gnuplot script.gp` in the job directory; returns the exit status (-1: could not run).
static int run_gnuplot(const parity_gnuplot_job *job, const char *gnuplot) {
    char errors[4200];
    job_path(job, "stderr.txt", errors, sizeof errors);
    pid_t child = fork();
    if (child < 0) return -1;
    if (child == 0) {
        int input = open("/dev/null", O_RDONLY), output = open("/dev/null", O_WRONLY);
        int error_file = open(errors, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (input < 0 || output < 0 || error_file < 0 || chdir(job->directory) != 0) _exit(126);
        dup2(input, STDIN_FILENO);
        dup2(output, STDOUT_FILENO);
        dup2(error_file, STDERR_FILENO);
        execl(gnuplot, "gnuplot", "script.gp", (char *)NULL);
        _exit(127);
    }
    int status;
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR) return -1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return -1;
}

// The SVG from "<svg" on, with id='x' / id="x" / #x references prefixed. malloc'd; NULL on failure.
static char *inlinable_svg(const char *text, const char *prefix) {
    const char *start = strstr(text, "<svg");
    if (!start) return NULL;
    parity_text out = {0};
    size_t prefix_length = strlen(prefix);
    for (const char *c = start; *c; c++) {
        if (strncmp(c, "id='", 4) == 0 || strncmp(c, "id=\"", 4) == 0) {
            parity_text_append_bytes(&out, c, 4);
            parity_text_append_bytes(&out, prefix, prefix_length);
            c += 3;
        } else if (strncmp(c, "href='#", 7) == 0 || strncmp(c, "href=\"#", 7) == 0 || strncmp(c, "url(#", 5) == 0) {
            size_t length = c[0] == 'u' ? 5 : 7;
            parity_text_append_bytes(&out, c, length);
            parity_text_append_bytes(&out, prefix, prefix_length);
            c += length - 1;
        } else {
            parity_text_append_bytes(&out, c, 1);
        }
    }
    if (out.out_of_memory) {
        parity_text_free(&out);
        return NULL;
    }
    return out.data;
}

parity_error *parity_gnuplot_job_run(parity_gnuplot_job *job, const char *gnuplot, int width, int height, const parity_text *script,
                                     const char *id_prefix, char **svg) {
    *svg = NULL;
    parity_text full = {0};
    parity_text_appendf(&full, "set terminal svg size %d,%d dynamic noenhanced font 'sans,11' background rgb 'white'\n", width, height);
    parity_text_append(&full, "set output 'chart.svg'\nset encoding utf8\n");
    parity_text_append_bytes(&full, script->data ? script->data : "", script->length);
    parity_text_append(&full, "\nunset output\n");
    parity_error *error = parity_gnuplot_job_write(job, "script.gp", &full);
    parity_text_free(&full);
    if (!error) error = track_file(job, "stderr.txt"); // gnuplot makes these two
    if (!error) error = track_file(job, "chart.svg");
    if (error) return error;
    int status = run_gnuplot(job, gnuplot);
    char path[4200];
    job_path(job, "stderr.txt", path, sizeof path);
    char *messages = NULL, *drawn = NULL;
    size_t size;
    if (parity_read_file(path, &messages, &size)) messages = NULL; // the message is best effort
    if (status != 0) {
        // gnuplot's own message: the first line that says what went wrong
        const char *first = messages ? messages + strspn(messages, " \n") : "";
        error = PARITY_ERROR(PARITY_ERROR_IO, "%s exited with status %d: %.300s", gnuplot, status, first[0] ? first : "(no message)");
        free(messages);
        return error;
    }
    free(messages);
    job_path(job, "chart.svg", path, sizeof path);
    PARITY_TRY_CONTEXT(parity_read_file(path, &drawn, &size), "reading the chart gnuplot drew");
    *svg = inlinable_svg(drawn, id_prefix);
    free(drawn);
    if (!*svg) return PARITY_ERROR(PARITY_ERROR_IO, "gnuplot wrote no <svg> element (or out of memory)");
    return NULL;
}

void parity_gnuplot_job_finish(parity_gnuplot_job *job) {
    if (!job->directory[0]) return;
    DIR *directory = opendir(job->directory);
    if (directory) {
        struct dirent *entry;
        while ((entry = readdir(directory))) {
            if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
            char path[4400];
            snprintf(path, sizeof path, "%s/%s", job->directory, entry->d_name);
            unlink(path);
        }
        closedir(directory);
    }
    rmdir(job->directory);
    job->directory[0] = '\0';
    for (int i = 0; i < job->tracked_count; i++) parity_temporary_forget(job->tracked[i]);
    job->tracked_count = 0;
}

void parity_gnuplot_append_quoted(parity_text *script, const char *string) {
    parity_text_append(script, "'");
    for (const char *c = string; *c; c++) {
        if (*c == '\'') parity_text_append(script, "''");
        else if ((unsigned char)*c >= 0x20) parity_text_append_bytes(script, c, 1);
    }
    parity_text_append(script, "'");
}
