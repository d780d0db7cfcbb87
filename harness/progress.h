// progress.h: what `parity run` prints while it works. On a terminal one line rewritten in place
// with '\r' (combo i/N, model, elapsed, ETA, the combo id), never wider than the terminal: a line
// that wrapped could not be rewritten and would leave fragments on screen. The width is asked for
// at every update (TIOCGWINSZ, else $COLUMNS, else 80), the line is cut to it and the rest of the
// old line is erased. Otherwise (CI logs, pipes) one plain line per combo.
#ifndef PARITY_PROGRESS_H
#define PARITY_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct parity_progress {
    FILE *stream;           // NULL = silent
    bool terminal;          // rewrite one line
    bool erase_escape;      // "ESC [ K" erases the rest of a line (every terminal but TERM=dumb)
    size_t total, done;
    double started;         // monotonic seconds
    size_t last_width;      // display columns of the progress line on screen (0: none)
} parity_progress;

void parity_progress_start(parity_progress *progress, FILE *stream, bool terminal, size_t total);
// Before running combo `index` (0-based) of `model`.
void parity_progress_begin(parity_progress *progress, const char *model, const char *id);
// After it: status word and a short note ("ratio 0.42, 12.3 ms").
void parity_progress_end(parity_progress *progress, const char *id, const char *status, const char *note);
void parity_progress_finish(parity_progress *progress);

// The progress line for a terminal `columns` wide, `elapsed` seconds in: at most columns - 1 display
// columns (writing the last column makes many terminals wrap), cut at a UTF-8 character boundary, a
// cut id ending in "...". Returns its display width (code points). For begin, and for tests.
size_t parity_progress_format(const parity_progress *progress, const char *model, const char *id, double elapsed,
                              size_t columns, char *out, size_t size);
// The width of the terminal behind `stream`: TIOCGWINSZ, else $COLUMNS, else 80.
size_t parity_progress_columns(FILE *stream);

#endif
