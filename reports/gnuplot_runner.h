// gnuplot_runner.h: running gnuplot (Debian gnuplot-nox, found on PATH) on a script whose data
// lives in files of a private temporary directory, and taking back the SVG it drew, ready to
// inline in HTML: the XML prolog dropped and every id prefixed so two charts in one page never
// share one. The directory and everything in it is removed by parity_gnuplot_job_finish; until then
// each is tracked (ops/core/temporaries.h), so a signal that ends the process removes them too.
#ifndef PARITY_REPORTS_GNUPLOT_RUNNER_H
#define PARITY_REPORTS_GNUPLOT_RUNNER_H

#include <stdbool.h>
#include <stddef.h>

#include "ops/core/error.h"
#include "reports/text_buffer.h"

// Looks for an executable `gnuplot` in $PATH; writes its path and returns true when found.
bool parity_gnuplot_find(char *path, size_t size);

enum { PARITY_GNUPLOT_JOB_FILES = 8 };

typedef struct parity_gnuplot_job {
    char directory[4096]; // mkdtemp under $TMPDIR (or /tmp); "" before start
    int tracked[1 + PARITY_GNUPLOT_JOB_FILES]; // temporaries.h handles: the directory, then its files
    int tracked_count;
} parity_gnuplot_job;

parity_error *parity_gnuplot_job_start(parity_gnuplot_job *job);
// Writes a data file `name` (a plain file name) into the job's directory (at most
// PARITY_GNUPLOT_JOB_FILES files a job, the script and gnuplot's output included).
parity_error *parity_gnuplot_job_write(parity_gnuplot_job *job, const char *name, const parity_text *content);
// Runs `gnuplot` on `script` with the job directory as its working directory and an SVG terminal of
// width x height pixels (scaled to its container: "dynamic"); *svg receives the malloc'd <svg>...</svg>
// with ids prefixed by `id_prefix`. A failing gnuplot is an IO error carrying its first message.
parity_error *parity_gnuplot_job_run(parity_gnuplot_job *job, const char *gnuplot, int width, int height, const parity_text *script,
                                     const char *id_prefix, char **svg);
// Removes every file of the job and its directory (safe to call after a failed start).
void parity_gnuplot_job_finish(parity_gnuplot_job *job);

// Appends `string` as a gnuplot single-quoted string ('' for a quote, control characters dropped).
void parity_gnuplot_append_quoted(parity_text *script, const char *string);

#endif
