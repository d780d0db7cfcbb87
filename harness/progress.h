// progress.h: what `parity run` prints while it works. On a terminal one line rewritten in place
// with '\r' (combo i/N, model, elapsed, ETA); otherwise (CI logs, pipes) one plain line per combo.
#ifndef PARITY_PROGRESS_H
#define PARITY_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct parity_progress {
    FILE *stream;           // NULL = silent
    bool terminal;          // rewrite one line
    size_t total, done;
    double started;         // monotonic seconds
    size_t last_width;
} parity_progress;

void parity_progress_start(parity_progress *progress, FILE *stream, bool terminal, size_t total);
// Before running combo `index` (0-based) of `model`.
void parity_progress_begin(parity_progress *progress, const char *model, const char *id);
// After it: status word and a short note ("ratio 0.42, 12.3 ms").
void parity_progress_end(parity_progress *progress, const char *id, const char *status, const char *note);
void parity_progress_finish(parity_progress *progress);

#endif
