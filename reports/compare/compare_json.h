// compare_json.h: a comparison as JSON for machines (CI bots, the dashboard):
//   {"verdict": "regression" | "ok" | "no_change", "summary": "<the verdict line>", "exit_status": 1,
//    "options": {threshold, noise_factor, ratio_drift}, "base": {label, suite, git_sha, host, device,
//    started}, "new": {...}, "counts": {...},
//    "combos": [{id, in_base, in_new, base_status, new_status, status_change, reason,
//                ratio: {base, new, metric, drift},
//                time: {verdict, base_ms, new_ms, change, base_noise, new_noise, combined, limit},
//                notable}]}
// one object per combo (both runs' ids), in the comparison's order. Absent or non-finite numbers
// (an untimed combo, a NaN ratio) are null; a status of a combo absent from a run is null.
#ifndef PARITY_REPORTS_COMPARE_JSON_H
#define PARITY_REPORTS_COMPARE_JSON_H

#include "ops/core/error.h"
#include "reports/compare/compare.h"

// The document as a malloc'ed NUL-terminated string in *out (free() it).
parity_error *parity_compare_json(const parity_comparison *comparison, const char *base_label, const char *new_label, char **out);
// Writes it to `path` atomically.
parity_error *parity_compare_write_json(const char *path, const parity_comparison *comparison, const char *base_label,
                                        const char *new_label);

#endif
