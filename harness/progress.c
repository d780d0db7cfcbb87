// progress.c: progress line or plain lines (progress.h).
#include "harness/progress.h"

#include <string.h>

#include "harness/timer.h"

void parity_progress_start(parity_progress *progress, FILE *stream, bool terminal, size_t total) {
    memset(progress, 0, sizeof *progress);
    progress->stream = stream;
    progress->terminal = terminal;
    progress->total = total;
    progress->started = parity_monotonic_seconds();
}

static void format_seconds(double seconds, char *out, size_t size) {
    if (seconds < 0) snprintf(out, size, "?");
    else if (seconds < 60) snprintf(out, size, "%.1fs", seconds);
    else snprintf(out, size, "%dm%02ds", (int)(seconds / 60), (int)seconds % 60);
}

void parity_progress_begin(parity_progress *progress, const char *model, const char *id) {
    if (!progress->stream || !progress->terminal) return;
    double elapsed = parity_monotonic_seconds() - progress->started;
    double eta = progress->done ? elapsed / (double)progress->done * (double)(progress->total - progress->done) : -1;
    char elapsed_text[32], eta_text[32];
    format_seconds(elapsed, elapsed_text, sizeof elapsed_text);
    format_seconds(eta, eta_text, sizeof eta_text);
    char line[400];
    int width = snprintf(line, sizeof line, "combo %zu/%zu  %s  elapsed %s  ETA %s  %.*s", progress->done + 1,
                         progress->total, model, elapsed_text, eta_text, 120, id);
    if (width < 0) return;
    size_t length = (size_t)width < sizeof line ? (size_t)width : sizeof line - 1;
    fprintf(progress->stream, "\r%s", line);
    for (size_t i = length; i < progress->last_width; i++) fputc(' ', progress->stream); // erase the longer old line
    progress->last_width = length;
    fflush(progress->stream);
}

void parity_progress_end(parity_progress *progress, const char *id, const char *status, const char *note) {
    progress->done++;
    if (!progress->stream) return;
    if (progress->terminal) {
        // Failures stay on screen; passes are overwritten by the next line.
        if (strcmp(status, "fail") == 0 || strcmp(status, "error") == 0) {
            fprintf(progress->stream, "\r%-*s\r%s %s: %s\n", (int)progress->last_width, "", status, id, note);
            progress->last_width = 0;
        }
        return;
    }
    fprintf(progress->stream, "[%zu/%zu] %-13s %s%s%s\n", progress->done, progress->total, status, id, note[0] ? "  " : "",
            note);
    fflush(progress->stream);
}

void parity_progress_finish(parity_progress *progress) {
    if (progress->stream && progress->terminal && progress->last_width) {
        fprintf(progress->stream, "\r%-*s\r", (int)progress->last_width, "");
        fflush(progress->stream);
    }
}
