// history_internal.h: what the history's source files share and its users never see: the handle
// (an sqlite3 connection and the file's path) and turning SQLite result codes into parity errors
// that name the database file.
#ifndef PARITY_HISTORY_INTERNAL_H
#define PARITY_HISTORY_INTERNAL_H

#include <sqlite3.h>

#include "reports/history/history.h"

struct parity_history {
    sqlite3 *db;
    int schema_version;
    char path[4096];
};

// An error for SQLite result `rc` while doing `what`: DATA when the file is not a database or is
// corrupt, IO otherwise (busy past the timeout, disk full, read-only, ...). Names the file.
parity_error *history_sqlite_error(const parity_history *history, int rc, const char *what);
// Runs SQL statements that return no rows.
parity_error *history_exec(parity_history *history, const char *sql);
parity_error *history_prepare(parity_history *history, const char *sql, sqlite3_stmt **out);
// BEGIN IMMEDIATE (the write lock up front, so a second writer waits in the busy handler rather
// than failing on a read-to-write upgrade), COMMIT, and a ROLLBACK that ignores its own failure.
parity_error *history_begin(parity_history *history);
parity_error *history_commit(parity_history *history);
void history_rollback(parity_history *history);

// The SQL of the migration from `from_version` to from_version + 1 (NULL past the last): for tests
// that build an old database.
const char *history_migration(int from_version);

// Binds text (copied; NULL binds NULL) and doubles (NaN binds NULL: SQLite has no NaN).
void history_bind_text(sqlite3_stmt *statement, int index, const char *text);
void history_bind_double(sqlite3_stmt *statement, int index, double value);
// Reads a column back: NULL -> NaN; text NULL -> "".
double history_column_double(sqlite3_stmt *statement, int column);
void history_column_text(sqlite3_stmt *statement, int column, char *out, size_t size);

// The `runs` row of a run or a bench report (every text non-NULL).
typedef struct history_run_row {
    const char *identity, *kind, *suite, *git_sha, *started, *finished, *host, *device, *driver, *cuda;
    const char *libraries, *command, *tolerance_rule, *timing_method, *interrupted, *source;
    int64_t combos_selected;
    int results_schema;
} history_run_row;
// Adds what `insert` writes under a new run's id (a run's combos, a bench report's rows).
typedef parity_error *(*history_insert_rows)(parity_history *history, int64_t run_id, const void *rows);
// One transaction (history_ingest.c): when a run of row->identity is there, nothing is written and
// out->added is false (out->run_id its id); else the row (its `added` time now) and insert(rows)
// under its id, out->added true. On any error nothing of it is left, and the error names `what`.
parity_error *history_add_once(parity_history *history, const history_run_row *row, history_insert_rows insert,
                               const void *rows, const char *what, parity_history_added *out);
// Ingests a bench report's parsed JSON (history_bench.c); `text` is the file's content (its identity).
parity_error *history_add_bench(parity_history *history, const char *path, const char *text, const void *root,
                                parity_history_added *out);

#endif
