// compare.h: run-to-run comparison of two parity_results (`parity compare BASE NEW`). The inputs
// are plain results, wherever they came from (two results.json files, or a baseline a history
// database builds, e.g. the median of the last N runs), so the comparison never knows which.
//
// Per combo, matched by id: the status change (a new failure is NEW failing or erroring where BASE
// did not, a combo only in NEW that fails included; fixed is fail/error -> pass; to or from
// not_supported / excluded is a support change; fail <-> error is a failure change), combos in one
// run only, the drift of the worst tolerance ratio (flagged when it grows by more than `ratio_drift`
// or crosses 1; a NaN ratio is the worst), and the time verdict of compare_time.h (threshold and
// combined noise). The comparison fails (exit 1 in the CLI) on a new failure or a time regression;
// everything else is reported only.
#ifndef PARITY_REPORTS_COMPARE_H
#define PARITY_REPORTS_COMPARE_H

#include <stdbool.h>
#include <stddef.h>

#include "ops/core/error.h"
#include "reports/compare/compare_time.h"
#include "reports/results.h"

#define PARITY_COMPARE_DEFAULT_RATIO_DRIFT 0.25

typedef struct parity_compare_options {
    double threshold;    // relative time change a regression must exceed (0.10)
    double noise_factor; // k in max(threshold, k * combined noise) (3)
    double ratio_drift;  // absolute growth of the worst tolerance ratio that is flagged (0.25)
} parity_compare_options;

// The defaults above.
parity_compare_options parity_compare_default_options(void);

typedef enum parity_status_change {
    PARITY_STATUS_SAME = 0,
    PARITY_STATUS_NEW_FAILURE,     // NEW fail/error, BASE anything else or absent
    PARITY_STATUS_FIXED,           // BASE fail/error, NEW pass
    PARITY_STATUS_SUPPORT_CHANGED, // to or from not_supported / excluded (neither side failing in NEW)
    PARITY_STATUS_FAILURE_CHANGED, // fail <-> error
    PARITY_STATUS_ONLY_BASE,       // missing from NEW
    PARITY_STATUS_ONLY_NEW,        // new combo, not failing
} parity_status_change;

// "same", "new_failure", "fixed", "support_changed", "failure_changed", "only_base", "only_new"
const char *parity_status_change_name(parity_status_change change);

typedef struct parity_combo_comparison {
    char id[320];
    bool in_base, in_new;
    parity_combo_status base_status, new_status; // meaningful when in_base / in_new
    char reason[1024];                           // NEW's reason (BASE's for a combo only in BASE)
    parity_status_change status_change;
    double base_ratio, new_ratio;                // worst tolerance ratios (NaN: no metrics, or a NaN metric)
    bool base_has_metrics, new_has_metrics;
    char metric[192];                            // NEW's worst metric (BASE's when NEW has none)
    bool ratio_drift;                            // grew by more than ratio_drift, or crossed 1
    parity_time_comparison time;
} parity_combo_comparison;

typedef struct parity_comparison_counts {
    size_t combos;                               // entries (union of both runs' ids)
    size_t new_failures, fixed, support_changed, failure_changed, only_base, only_new;
    size_t regressions, speedups, timed, ratio_drifts;
    size_t unchanged;                            // entries with nothing to report
} parity_comparison_counts;

typedef struct parity_comparison {
    parity_compare_options options;
    parity_results_context base_context, new_context;
    parity_combo_comparison *combos;             // BASE's order, then combos only in NEW in NEW's order
    size_t combo_count;
    parity_comparison_counts counts;
    // The run's movement (compare_time.h): over `timed` combos timed in both runs, the median change
    // exp(shift) - 1 and the robust spread; `verdict` the run-wide time verdict of that median change
    // against the threshold (UNTIMED with fewer than PARITY_COMPARE_MIN_RUN_COMBOS combos).
    struct {
        size_t timed;
        double shift, spread, change;
        parity_time_verdict verdict;
    } run;
} parity_comparison;

// Compares `new_results` against `base`. A duplicate combo id in either run is a DATA error naming
// it; options outside their ranges (negative, NaN) are a USAGE error. *out is zeroed first and
// holds nothing on error.
parity_error *parity_compare_results(const parity_results *base, const parity_results *new_results,
                                     const parity_compare_options *options, parity_comparison *out);
void parity_comparison_release(parity_comparison *comparison);

// True when the comparison has something to report for the entry (any change or flag).
bool parity_combo_comparison_notable(const parity_combo_comparison *combo);
// Order of severity for listings: new failures, regressions, fixed, support / failure changes,
// one-run combos, speed-ups, ratio drift, then the rest (lower first).
int parity_combo_comparison_rank(const parity_combo_comparison *combo);
// True on a new failure or a time regression (the CLI's exit 1).
bool parity_comparison_failed(const parity_comparison *comparison);
// The one-line verdict every output starts or ends with: "REGRESSION: 1 new failure, 2 slower
// (of 12 combos)", "OK: 1 fixed, 3 faster (of 12 combos)", or "no change (12 combos)". Returns buffer.
const char *parity_comparison_verdict(const parity_comparison *comparison, char *buffer, size_t size);

#endif
