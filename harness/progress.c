// progress.c: progress line or plain lines (progress.h).
#include "harness/progress.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "harness/timer.h"

void parity_progress_start(parity_progress *progress, FILE *stream, bool terminal, size_t total) {
    memset(progress, 0, sizeof *progress);
    progress->stream = stream;
    progress->terminal = terminal;
    const char *term = getenv("TERM");
    progress->erase_escape = !(term && strcmp(term, "dumb") == 0);
    progress->total = total;
    progress->started = parity_monotonic_seconds();
}

static void format_seconds(double seconds, char *out, size_t size) {
    if (seconds < 0) snprintf(out, size, "?");
    else if (seconds < 60) snprintf(out, size, "%.1fs", seconds);
    else snprintf(out, size, "%dm%02ds", (int)(seconds / 60), (int)seconds % 60);
}

static bool continuation_byte(char c) { return ((unsigned char)c & 0xC0) == 0x80; }

// Display columns of `text`: one per code point (ids and model names are ASCII or plain UTF-8 letters).
static size_t display_width(const char *text) {
    size_t width = 0;
    for (; *text; text++) width += !continuation_byte(*text);
    return width;
}

// Cuts `text` after `columns` code points; returns the new width.
static size_t cut_to(char *text, size_t columns) {
    size_t width = 0;
    char *c = text;
    for (; *c; c++) {
        if (continuation_byte(*c)) continue;
        if (width == columns) break;
        width++;
    }
    *c = '\0';
    return width;
}

size_t parity_progress_format(const parity_progress *progress, const char *model, const char *id, double elapsed,
                              size_t columns, char *out, size_t size) {
    size_t limit = columns > 1 ? columns - 1 : 1;
    double eta = progress->done ? elapsed / (double)progress->done * (double)(progress->total - progress->done) : -1;
    char elapsed_text[32], eta_text[32];
    format_seconds(elapsed, elapsed_text, sizeof elapsed_text);
    format_seconds(eta, eta_text, sizeof eta_text);
    snprintf(out, size, "combo %zu/%zu  %s  elapsed %s  ETA %s  %s", progress->done + 1, progress->total, model,
             elapsed_text, eta_text, id);
    if (size < 4) return cut_to(out, limit);
    if (display_width(out) <= limit) return display_width(out);
    if (limit <= 3) return cut_to(out, limit);
    cut_to(out, limit - 3);
    size_t length = strlen(out);
    snprintf(out + length, size - length, "...");
    return display_width(out);
}

size_t parity_progress_columns(FILE *stream) {
    struct winsize size;
    if (stream && ioctl(fileno(stream), TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
    const char *columns = getenv("COLUMNS");
    char *end = NULL;
    long value = columns ? strtol(columns, &end, 10) : 0;
    if (columns && end != columns && *end == '\0' && value > 0 && value < 100000) return (size_t)value;
    return 80;
}

// Returns to the start of the progress line and erases it.
static void erase_line(parity_progress *progress) {
    if (progress->erase_escape) fputs("\r\033[K", progress->stream);
    else fprintf(progress->stream, "\r%*s\r", (int)progress->last_width, "");
    progress->last_width = 0;
}

void parity_progress_begin(parity_progress *progress, const char *model, const char *id) {
    if (!progress->stream || !progress->terminal) return;
    char line[1024];
    size_t width = parity_progress_format(progress, model, id, parity_monotonic_seconds() - progress->started,
                                          parity_progress_columns(progress->stream), line, sizeof line);
    if (progress->erase_escape) fprintf(progress->stream, "\r%s\033[K", line);
    else { // pad over the longer old line (it never wrapped: it was cut to the width too)
        fprintf(progress->stream, "\r%s", line);
        for (size_t i = width; i < progress->last_width; i++) fputc(' ', progress->stream);
    }
    progress->last_width = width;
    fflush(progress->stream);
}

void parity_progress_end(parity_progress *progress, const char *id, const char *status, const char *note) {
    progress->done++;
    if (!progress->stream) return;
    if (progress->terminal) {
        // Failures stay on screen (a line of their own, which may wrap); passes are overwritten by the next line.
        if (strcmp(status, "fail") == 0 || strcmp(status, "error") == 0) {
            erase_line(progress);
            fprintf(progress->stream, "%s %s: %s\n", status, id, note);
            fflush(progress->stream);
        }
        return;
    }
    fprintf(progress->stream, "[%zu/%zu] %-13s %s%s%s\n", progress->done, progress->total, status, id, note[0] ? "  " : "",
            note);
    fflush(progress->stream);
}

void parity_progress_finish(parity_progress *progress) {
    if (progress->stream && progress->terminal && progress->last_width) {
        erase_line(progress);
        fflush(progress->stream);
    }
}
