// history.h: the results history: every `parity run` (its results.json) and every `parity bench
// --output` report ingested into one SQLite database, so that runs can be listed, shown, compared
// and drawn over time (`parity history`, `parity compare --db`, `parity dashboard`). This header is
// the whole API: opening (which creates or migrates the schema), ingesting, and the queries.
//
// The database keeps what a comparison or a trend needs, not every metric: per combo its status,
// reason, worst tolerance ratio and that metric's name, timing (median, noise, samples), tokens,
// peak memory and field choices, and of its metrics only the top-level ones ("loss", "aux_loss",
// "grad_norm") plus the worst one. A run's results.json stays the full record (docs/history.md).
//
// Thread and process safety: a parity_history handle is for one thread. Several processes may
// write one database at once: it is in WAL mode, every write is one IMMEDIATE transaction (a run is
// in the database whole or not at all) and a writer that finds it locked waits (busy timeout,
// PARITY_HISTORY_BUSY_TIMEOUT_MS) instead of failing.
#ifndef PARITY_HISTORY_H
#define PARITY_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/core/error.h"
#include "reports/results.h"

// Version of the database schema this parity writes (meta.schema_version). An older database is
// migrated on open, one step per version; a newer one is refused (DATA error naming both versions).
#define PARITY_HISTORY_SCHEMA_VERSION 2
#define PARITY_HISTORY_DEFAULT_DB "reports/history.sqlite"
#define PARITY_HISTORY_DB_ENV "PARITY_HISTORY_DB" // overrides the default (not an explicit --db)
#define PARITY_HISTORY_BUSY_TIMEOUT_MS 60000

typedef struct parity_history parity_history;

// Opens the database at `path`. With `create`, a missing file is created with the current schema;
// without it, a missing file is an IO error ("no history database at ..."). Either way an older
// schema is migrated (in one transaction) and WAL mode is set. DATA errors naming the file: not a
// SQLite database, a SQLite database that is not a parity history (no meta table, or another
// application), a schema version newer than PARITY_HISTORY_SCHEMA_VERSION.
parity_error *parity_history_open(const char *path, bool create, parity_history **out);
void parity_history_close(parity_history *history); // NULL is fine
// The schema version of an open database (PARITY_HISTORY_SCHEMA_VERSION after a successful open).
int parity_history_schema_version(parity_history *history);

typedef enum parity_history_kind {
    PARITY_HISTORY_RUN = 0,   // a `parity run`: results.json, rows in `combos` (and `metrics`)
    PARITY_HISTORY_BENCH,     // a `parity bench ... --output FILE.json`: rows in `bench_rows`
} parity_history_kind;

typedef struct parity_history_added {
    int64_t run_id;           // the new run's id, or that of the run already there
    bool added;               // false: the same run was already in the history (nothing written)
    parity_history_kind kind;
    size_t rows;              // combos (run) or bench rows (bench) of the file
} parity_history_added;

// Ingests one results in one transaction. A run's identity is its context's (suite, git_sha,
// started, finished, host, device, command; the times are to the second): a second ingest of the
// same run writes nothing and reports added = false.
// `source` is recorded as where it came from (a path; may be NULL). DATA error for an empty
// context.suite or started; on any error nothing of the run is left in the database.
parity_error *parity_history_add_results(parity_history *history, const parity_results *results, const char *source,
                                         parity_history_added *out);
// Ingests a run directory (its results.json) or a file: a results.json, or a bench report (a JSON
// object with "context" and a "benchmarks" array; its identity is its device and its content, its
// date the file's modification time). DATA error naming the file and the field for a malformed one,
// IO error for an unreadable one; nothing is written then.
parity_error *parity_history_add_path(parity_history *history, const char *path, parity_history_added *out);

// One run as `parity history list` shows it.
typedef struct parity_history_run {
    int64_t id;
    parity_history_kind kind;
    char suite[64], git_sha[64], started[32], finished[32], host[128], device[160];
    char source[1024];
    size_t counts[PARITY_COMBO_STATUS_COUNT]; // combos per status (runs)
    size_t combo_count;
    size_t bench_rows;                        // rows (bench reports)
} parity_history_run;

// Every run (suite == NULL) or those of one suite, oldest first (by started, then id). *runs is
// malloc'ed (free() it; NULL when *count is 0).
parity_error *parity_history_list(parity_history *history, const char *suite, parity_history_run **runs, size_t *count);
// One run's summary; a USAGE error "no run ID in FILE" when there is none.
parity_error *parity_history_get_run(parity_history *history, int64_t run_id, parity_history_run *out);

// A stored run back as a parity_results (zeroed first; release with parity_results_release): its
// context and its combos in their original order, each with its timing and the metrics the history
// keeps (see above). A NaN stored (as SQL NULL) reads back as NaN. USAGE error when there is no such
// run, or when it is a bench report.
parity_error *parity_history_load_run(parity_history *history, int64_t run_id, parity_results *out);

// A bench report's row as stored.
typedef struct parity_history_bench_row {
    char op[32], pass[16], shape[64], dtype[8], backend[64], status[256], peer[64];
    bool is_peer, ok;
    double median_ms, min_ms, max_ms, noise;  // NaN when not timed
    int runs;
    double gigabytes_per_second, copy_fraction, teraflops, gemm_fraction, peer_median_ms; // 0 when not measured
} parity_history_bench_row;
// The rows of a bench run, in file order (*rows malloc'ed; free() it).
parity_error *parity_history_bench_rows(parity_history *history, int64_t run_id, parity_history_bench_row **rows, size_t *count);

// The baseline a comparison runs against: the median of the last `last_n` runs.
//
// Contract. Of the runs (not bench reports) of `suite` whose context device equals `device`
// exactly (device NULL: any device), the `last_n` latest (by started, then id; last_n >= 1) are
// taken (at most 64: a larger last_n is 64). *out (zeroed first; release with parity_results_release) is a synthetic parity_results:
//   - context: the latest run's, except `command`, which says what it is ("parity history baseline:
//     median of K runs (ids 9, 7, 4) of suite S on D");
//   - combos: exactly the latest run's combos, in its order, with the latest run's status, reason,
//     fields, metrics, tokens and peak memory;
//   - median_ms: the median (mean of the two middle values for an even count) of that combo's
//     median_ms over those of the K runs that timed it (NaN when none did);
//   - noise: the largest noise of that combo over those runs (NaN when none had one);
//   - samples_ms: none (sample_count 0): the samples of K runs are not one distribution;
//     warmup_count is the number of runs whose median went into median_ms.
// A combo of an older run that the latest run lacks is not in the baseline. DATA error when no run
// matches; USAGE error for last_n < 1. Opens `db_path` without creating it.
parity_error *parity_history_baseline(const char *db_path, const char *suite, const char *device, int last_n,
                                      parity_results *out);
// The same on an open database.
parity_error *parity_history_baseline_in(parity_history *history, const char *suite, const char *device, int last_n,
                                         parity_results *out);

#endif
