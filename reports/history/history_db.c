// history_db.c: opening the history database: WAL mode, the busy timeout, checking that the file is
// a parity history, and the schema migrations — an ordered table of SQL steps, row N taking a
// database from version N-1 to N, all applied in one transaction. Also the small SQLite helpers
// the other history files share (history_internal.h).
#include "reports/history/history_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define APPLICATION "parity history"

// migrations[i] takes a database from version i to version i + 1. Append a row for a new version
// (and raise PARITY_HISTORY_SCHEMA_VERSION); never edit a row that has shipped.
static const char *const migrations[] = {
    // 0 -> 1: runs, their combos, the metrics kept per combo.
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "INSERT INTO meta (key, value) VALUES ('application', '" APPLICATION "'), ('schema_version', '0');"
    "CREATE TABLE runs ("
    "  id INTEGER PRIMARY KEY,"
    "  identity TEXT NOT NULL UNIQUE," // what makes a run the same run: see history_ingest.c
    "  kind TEXT NOT NULL,"            // 'run' | 'bench'
    "  suite TEXT NOT NULL, git_sha TEXT NOT NULL, started TEXT NOT NULL, finished TEXT NOT NULL,"
    "  host TEXT NOT NULL, device TEXT NOT NULL, driver TEXT NOT NULL, cuda TEXT NOT NULL,"
    "  libraries TEXT NOT NULL, command TEXT NOT NULL, tolerance_rule TEXT NOT NULL,"
    "  timing_method TEXT NOT NULL, interrupted TEXT NOT NULL, combos_selected INTEGER NOT NULL,"
    "  results_schema INTEGER NOT NULL, source TEXT NOT NULL, added TEXT NOT NULL);"
    "CREATE INDEX runs_by_suite ON runs (suite, device, started);"
    "CREATE TABLE combos ("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,"
    "  position INTEGER NOT NULL,"     // order in results.json
    "  combo TEXT NOT NULL,"           // the combo id, e.g. qwen3_tiny/attn=sdpa,ce=chunk_loss/bf16/cpu
    "  suite TEXT NOT NULL, model TEXT NOT NULL, batch TEXT NOT NULL, dtype TEXT NOT NULL, device TEXT NOT NULL,"
    "  status TEXT NOT NULL, reason TEXT NOT NULL, is_eager_baseline INTEGER NOT NULL,"
    "  worst_ratio REAL, worst_metric TEXT," // NULL ratio with a metric name: a NaN ratio
    "  median_ms REAL, noise REAL, samples_ms TEXT NOT NULL, warmup_count INTEGER NOT NULL,"
    "  tokens INTEGER NOT NULL, peak_memory_bytes INTEGER NOT NULL, fields TEXT NOT NULL,"
    "  UNIQUE (run_id, combo));"
    "CREATE INDEX combos_by_id ON combos (combo);"
    "CREATE TABLE metrics ("
    "  combo_id INTEGER NOT NULL REFERENCES combos (id) ON DELETE CASCADE,"
    "  position INTEGER NOT NULL, name TEXT NOT NULL, value REAL, golden REAL, error REAL,"
    "  tolerance REAL, ratio REAL, pass INTEGER NOT NULL, basis TEXT NOT NULL,"
    "  PRIMARY KEY (combo_id, position));",
    // 1 -> 2: the rows of bench reports (`parity bench ... --output FILE.json`).
    "CREATE TABLE bench_rows ("
    "  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,"
    "  position INTEGER NOT NULL, op TEXT NOT NULL, pass TEXT NOT NULL, shape TEXT NOT NULL,"
    "  dtype TEXT NOT NULL, backend TEXT NOT NULL, is_peer INTEGER NOT NULL, status TEXT NOT NULL,"
    "  median_ms REAL, min_ms REAL, max_ms REAL, noise REAL, runs INTEGER NOT NULL,"
    "  gigabytes_per_second REAL NOT NULL, copy_fraction REAL NOT NULL, teraflops REAL NOT NULL,"
    "  gemm_fraction REAL NOT NULL, peer TEXT NOT NULL, peer_median_ms REAL NOT NULL,"
    "  PRIMARY KEY (run_id, position));",
};
_Static_assert(sizeof migrations / sizeof migrations[0] == PARITY_HISTORY_SCHEMA_VERSION,
               "one migration per schema version");

const char *history_migration(int from_version) {
    return from_version >= 0 && from_version < PARITY_HISTORY_SCHEMA_VERSION ? migrations[from_version] : NULL;
}

// ---- helpers ----

parity_error *history_sqlite_error(const parity_history *history, int rc, const char *what) {
    const char *message = history->db ? sqlite3_errmsg(history->db) : sqlite3_errstr(rc);
    int primary = rc & 0xff;
    if (primary == SQLITE_NOTADB)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: not a parity history (not a SQLite database) while %s", history->path, what);
    if (primary == SQLITE_CORRUPT)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: the history database is corrupt (%s) while %s", history->path, message, what);
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
        return PARITY_ERROR(PARITY_ERROR_IO, "%s: the history database stayed locked by another writer for %d s while %s", history->path,
                            PARITY_HISTORY_BUSY_TIMEOUT_MS / 1000, what);
    return PARITY_ERROR(PARITY_ERROR_IO, "%s: %s while %s", history->path, message, what);
}

parity_error *history_exec(parity_history *history, const char *sql) {
    int rc = sqlite3_exec(history->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? NULL : history_sqlite_error(history, rc, "updating the history");
}

parity_error *history_prepare(parity_history *history, const char *sql, sqlite3_stmt **out) {
    int rc = sqlite3_prepare_v2(history->db, sql, -1, out, NULL);
    return rc == SQLITE_OK ? NULL : history_sqlite_error(history, rc, "preparing a query");
}

parity_error *history_begin(parity_history *history) {
    int rc = sqlite3_exec(history->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    return rc == SQLITE_OK ? NULL : history_sqlite_error(history, rc, "starting a transaction");
}

parity_error *history_commit(parity_history *history) {
    int rc = sqlite3_exec(history->db, "COMMIT", NULL, NULL, NULL);
    return rc == SQLITE_OK ? NULL : history_sqlite_error(history, rc, "committing");
}

void history_rollback(parity_history *history) {
    if (!sqlite3_get_autocommit(history->db)) sqlite3_exec(history->db, "ROLLBACK", NULL, NULL, NULL);
}

void history_bind_text(sqlite3_stmt *statement, int index, const char *text) {
    if (text) sqlite3_bind_text(statement, index, text, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(statement, index);
}

void history_bind_double(sqlite3_stmt *statement, int index, double value) {
    if (isnan(value)) sqlite3_bind_null(statement, index);
    else sqlite3_bind_double(statement, index, value);
}

double history_column_double(sqlite3_stmt *statement, int column) {
    return sqlite3_column_type(statement, column) == SQLITE_NULL ? NAN : sqlite3_column_double(statement, column);
}

void history_column_text(sqlite3_stmt *statement, int column, char *out, size_t size) {
    const unsigned char *text = sqlite3_column_text(statement, column);
    snprintf(out, size, "%s", text ? (const char *)text : "");
}

// ---- opening ----

// One text value of a single-row query (out "" when no row); rc of the step.
static parity_error *query_text(parity_history *history, const char *sql, char *out, size_t size, bool *found) {
    sqlite3_stmt *statement;
    PARITY_TRY(history_prepare(history, sql, &statement));
    int rc = sqlite3_step(statement);
    *found = rc == SQLITE_ROW;
    out[0] = '\0';
    if (rc == SQLITE_ROW) history_column_text(statement, 0, out, size);
    sqlite3_finalize(statement);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? NULL : history_sqlite_error(history, rc, "reading the schema");
}

// The database's version: 0 for an empty database; DATA error when it is not a parity history.
static parity_error *read_version(parity_history *history, int *version) {
    char text[64];
    bool found;
    PARITY_TRY(query_text(history, "SELECT count(*) FROM sqlite_master", text, sizeof text, &found));
    if (strcmp(text, "0") == 0) {
        *version = 0;
        return NULL;
    }
    PARITY_TRY(query_text(history, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'meta'", text, sizeof text, &found));
    if (!found)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: not a parity history (a SQLite database without a meta table)", history->path);
    PARITY_TRY(query_text(history, "SELECT value FROM meta WHERE key = 'application'", text, sizeof text, &found));
    if (strcmp(text, APPLICATION) != 0)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: not a parity history (meta.application is '%s', not '" APPLICATION "')",
                            history->path, text);
    PARITY_TRY(query_text(history, "SELECT value FROM meta WHERE key = 'schema_version'", text, sizeof text, &found));
    char *end;
    long value = strtol(text, &end, 10);
    if (!found || !text[0] || *end || value < 1)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: meta.schema_version is '%s', not a version number", history->path, text);
    if (value > PARITY_HISTORY_SCHEMA_VERSION)
        return PARITY_ERROR(PARITY_ERROR_DATA,
                            "%s: history schema version %ld is newer than this parity's (%d): use the parity that wrote it, or a newer one",
                            history->path, value, PARITY_HISTORY_SCHEMA_VERSION);
    *version = (int)value;
    return NULL;
}

static parity_error *migrate(parity_history *history, bool create) {
    PARITY_TRY(history_begin(history));
    int version = 0;
    parity_error *error = read_version(history, &version);
    if (!error && version == 0 && !create)
        error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: not a parity history (an empty SQLite database)", history->path);
    for (int step = version; !error && step < PARITY_HISTORY_SCHEMA_VERSION; step++) {
        error = history_exec(history, migrations[step]);
        if (!error) {
            char sql[128];
            snprintf(sql, sizeof sql, "UPDATE meta SET value = '%d' WHERE key = 'schema_version'", step + 1);
            error = history_exec(history, sql);
        }
    }
    if (!error) error = history_commit(history);
    if (error) {
        history_rollback(history);
        return error;
    }
    history->schema_version = PARITY_HISTORY_SCHEMA_VERSION;
    return NULL;
}

parity_error *parity_history_open(const char *path, bool create, parity_history **out) {
    *out = NULL;
    if (!path || !path[0]) return PARITY_ERROR(PARITY_ERROR_USAGE, "history: no database path");
    struct stat info;
    if (!create && stat(path, &info) != 0)
        return PARITY_ERROR(PARITY_ERROR_IO, "%s: no history database there (%s; `parity history add` creates one)", path, strerror(errno));
    if (stat(path, &info) == 0 && !S_ISREG(info.st_mode))
        return PARITY_ERROR(PARITY_ERROR_IO, "%s: not a regular file (a history database is one file)", path);
    parity_history *history = calloc(1, sizeof *history);
    if (!history) return PARITY_ERROR(PARITY_ERROR_MEMORY, "history: opening %s", path);
    snprintf(history->path, sizeof history->path, "%s", path);
    int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
    int rc = sqlite3_open_v2(path, &history->db, flags, NULL);
    parity_error *error = rc == SQLITE_OK ? NULL : history_sqlite_error(history, rc, "opening");
    if (!error) {
        sqlite3_busy_timeout(history->db, PARITY_HISTORY_BUSY_TIMEOUT_MS);
        sqlite3_extended_result_codes(history->db, 1);
        error = history_exec(history, "PRAGMA foreign_keys = ON");
    }
    if (!error) {
        // WAL: readers never block the writer and a crash mid-write leaves the last commit intact.
        // Checked before anything is written, so a file that is no database is left as it was.
        char mode[32] = "";
        sqlite3_stmt *statement;
        error = history_prepare(history, "PRAGMA journal_mode = WAL", &statement);
        if (!error) {
            rc = sqlite3_step(statement);
            if (rc == SQLITE_ROW) history_column_text(statement, 0, mode, sizeof mode);
            else error = history_sqlite_error(history, rc, "setting WAL mode");
            sqlite3_finalize(statement);
        }
        if (!error && strcmp(mode, "wal") != 0)
            error = PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot use WAL mode (journal mode stays '%s'; a file system without shared memory?)",
                                 path, mode);
    }
    if (!error) error = migrate(history, create);
    if (error) {
        parity_history_close(history);
        return error;
    }
    *out = history;
    return NULL;
}

void parity_history_close(parity_history *history) {
    if (!history) return;
    if (history->db) sqlite3_close_v2(history->db);
    free(history);
}

int parity_history_schema_version(parity_history *history) { return history->schema_version; }
