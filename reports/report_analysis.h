// report_analysis.h: what the Markdown, HTML and chart writers derive from results alone, in one
// place so every report agrees: the eager baseline a combo is timed against (same model, batch,
// dtype and device), time relative to it, tokens/s, the worst metric of a combo (a NaN ratio is
// the worst of all), the heatmap's metric columns, combos grouped by reason, and number formatting
// that prints NaN and Inf.
#ifndef PARITY_REPORTS_ANALYSIS_H
#define PARITY_REPORTS_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>

#include "reports/results.h"

// Combos are compared for speed within a group: same model, batch, dtype and device.
bool parity_report_same_group(const parity_combo_result *a, const parity_combo_result *b);
// The eager baseline of `combo`'s group, or NULL when the run has none.
const parity_combo_result *parity_report_baseline(const parity_results *results, const parity_combo_result *combo);
// True when the combo has a finite positive median time.
bool parity_report_is_timed(const parity_combo_result *combo);
// median_ms / baseline median_ms; NaN when either is untimed or there is no baseline.
double parity_report_relative_time(const parity_results *results, const parity_combo_result *combo);
// tokens / median seconds; NaN when untimed or tokens is 0.
double parity_report_tokens_per_second(const parity_combo_result *combo);

// Timing noise. A combo's noise is relative (its spread / median); the noise of a ratio of two
// medians is their combined noise, sqrt(noise_a^2 + noise_b^2) (an unknown noise counts as 0).
double parity_report_combined_noise(const parity_combo_result *a, const parity_combo_result *b);
// True when a relative time (a ratio of medians) is indistinguishable from 1: |relative - 1| is at
// most the combined noise. Such a time is shown as "same", and no speed claim is made from it.
bool parity_report_within_noise(double relative, double combined_noise);
// The fastest passing timed combo of `member`'s group and whether that claim holds: it is faster
// than the runner-up (the next fastest passing timed combo) by more than their combined noise.
// `tied` counts the other passing timed combos within noise of the fastest.
typedef struct parity_report_fastest {
    const parity_combo_result *fastest, *runner_up; // NULL when none
    bool significant;                               // true also when there is no runner-up
    size_t tied;
} parity_report_fastest;
parity_report_fastest parity_report_fastest_in_group(const parity_results *results, const parity_combo_result *member);

// A ratio for ordering: NaN (a NaN value or error) ranks above every number.
double parity_report_ratio_rank(double ratio);
// The metric with the largest ratio whose name starts with `prefix` (NULL: any); NULL if none.
const parity_metric *parity_report_worst_metric(const parity_combo_result *combo, const char *prefix);
const parity_metric *parity_report_find_metric(const parity_combo_result *combo, const char *name);

// Heatmap columns: loss, aux_loss, grad_norm, and the per-gradient metrics grouped as the worst of
// each family: per-parameter gradient norm, sketch component, sketch cosine.
enum { PARITY_REPORT_HEATMAP_COLUMNS = 6 };
const char *parity_report_heatmap_column(int column);
const parity_metric *parity_report_heatmap_metric(const parity_combo_result *combo, int column);
// Per-gradient metrics (a parameter, or the loss input): "grad_norm:<name>", "grad_sketch:<name>[j]"
// for each sketch component j, "grad_cosine:<name>" (harness/run/run_internal.h).
#define PARITY_REPORT_PARAMETER_PREFIX "grad_norm:"
#define PARITY_REPORT_SKETCH_PREFIX "grad_sketch:"
#define PARITY_REPORT_COSINE_PREFIX "grad_cosine:"
// The metrics of one gradient's sketch are consecutive: the length of the run of "grad_sketch:<name>[j]"
// metrics starting at metrics[index] (1 for any other metric, 0 past the end).
size_t parity_report_sketch_run(const parity_combo_result *combo, size_t index);

// Reason groups: the combos of one status with the same reason, in order of first appearance. A
// group is named by its leader, its first combo. Walk them with
//   for (size_t i = parity_report_next_reason_group(results, status, 0); i < results->combo_count;
//        i = parity_report_next_reason_group(results, status, i + 1))
// and a group's members are the combos from the leader on with parity_report_same_reason.
bool parity_report_same_reason(const parity_combo_result *a, const parity_combo_result *b);
// The first leader at index `from` or later; results->combo_count when there is none.
size_t parity_report_next_reason_group(const parity_results *results, parity_combo_status status, size_t from);
// How many combos the group led by results->combos[leader] has.
size_t parity_report_reason_group_size(const parity_results *results, size_t leader);

// A short name for a combo where its id is too long (chart labels, the verdict line): its non-eager
// field choices as the id spells them ("attn=sdpa,ce=chunk_loss"); for the eager baseline its group,
// "model/batch/dtype/device: eager"; the id when every choice is eager.
void parity_report_short_label(const parity_combo_result *combo, char *label, size_t size);
// printf-formats a double; NaN and Inf print as "NaN", "inf", "-inf". Returns buffer.
const char *parity_report_format(char *buffer, size_t size, const char *format, double value);
// The shortest of %.15g, %.16g, %.17g that reads back to exactly `value` (a finite double): how
// results.json and the comparison JSON write numbers. Returns buffer (at least 32 bytes).
const char *parity_report_format_exact(char *buffer, size_t size, double value);
// "512 B", "1.5 MiB", "2.0 GiB"; "-" when bytes <= 0 (not measured).
const char *parity_report_format_bytes(char *buffer, size_t size, int64_t bytes);
// For people: "pass", "FAIL", "not supported", "error", "excluded".
const char *parity_report_status_label(parity_combo_status status);

#endif
