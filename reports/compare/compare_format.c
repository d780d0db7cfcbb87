// compare_format.c: the row cells of compare_format.h.
#include "reports/compare/compare_format.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "reports/report_analysis.h"

const char *parity_compare_format_status(const parity_combo_comparison *combo, char *buffer, size_t size) {
    const char *before = combo->in_base ? parity_report_status_label(combo->base_status) : "(absent)";
    const char *after = combo->in_new ? parity_report_status_label(combo->new_status) : "(absent)";
    if (combo->in_base && combo->in_new && combo->base_status == combo->new_status) snprintf(buffer, size, "%s", after);
    else snprintf(buffer, size, "%s -> %s", before, after);
    return buffer;
}

const char *parity_compare_format_time(const parity_combo_comparison *combo, char *buffer, size_t size) {
    const parity_time_comparison *time = &combo->time;
    if (isnan(time->base_ms) && isnan(time->new_ms)) return snprintf(buffer, size, "-"), buffer;
    char before[32], after[32];
    parity_report_format(before, sizeof before, "%.3g", time->base_ms);
    parity_report_format(after, sizeof after, "%.3g", time->new_ms);
    snprintf(buffer, size, "%s -> %s ms", isnan(time->base_ms) ? "-" : before, isnan(time->new_ms) ? "-" : after);
    return buffer;
}

const char *parity_compare_format_change(const parity_combo_comparison *combo, char *buffer, size_t size) {
    if (combo->time.verdict == PARITY_TIME_UNTIMED) snprintf(buffer, size, "-");
    else snprintf(buffer, size, "%+.1f%%", 100 * combo->time.change);
    return buffer;
}

const char *parity_compare_format_band(const parity_combo_comparison *combo, char *buffer, size_t size) {
    const parity_time_comparison *time = &combo->time;
    if (time->verdict == PARITY_TIME_UNTIMED) snprintf(buffer, size, "-");
    else
        snprintf(buffer, size, "%+.1f%%..%+.1f%% (noise %.1f%%, %.1f%%)", 100 * (1 / (1 + time->limit) - 1), 100 * time->limit,
                 100 * time->base_noise, 100 * time->new_noise);
    return buffer;
}

const char *parity_compare_format_ratio(const parity_combo_comparison *combo, char *buffer, size_t size) {
    if (!combo->base_has_metrics && !combo->new_has_metrics) return snprintf(buffer, size, "-"), buffer;
    char before[32] = "-", after[32] = "-";
    if (combo->base_has_metrics) parity_report_format(before, sizeof before, "%.2f", combo->base_ratio);
    if (combo->new_has_metrics) parity_report_format(after, sizeof after, "%.2f", combo->new_ratio);
    snprintf(buffer, size, "%s -> %s %s", before, after, combo->metric);
    return buffer;
}

static void add_word(char *buffer, size_t size, const char *word) {
    size_t used = strlen(buffer);
    if (used + 1 < size) snprintf(buffer + used, size - used, "%s%s", used ? ", " : "", word);
}

const char *parity_compare_format_verdict(const parity_combo_comparison *combo, char *buffer, size_t size) {
    if (size == 0) return buffer;
    buffer[0] = '\0';
    static const char *const status_words[] = {
        [PARITY_STATUS_NEW_FAILURE] = "NEW FAILURE",         [PARITY_STATUS_FIXED] = "fixed",
        [PARITY_STATUS_SUPPORT_CHANGED] = "support changed", [PARITY_STATUS_FAILURE_CHANGED] = "failure changed",
        [PARITY_STATUS_ONLY_BASE] = "missing from NEW",      [PARITY_STATUS_ONLY_NEW] = "only in NEW",
    };
    if (combo->status_change != PARITY_STATUS_SAME) add_word(buffer, size, status_words[combo->status_change]);
    if (combo->time.verdict == PARITY_TIME_REGRESSION) add_word(buffer, size, "SLOWER");
    if (combo->time.verdict == PARITY_TIME_SPEEDUP) add_word(buffer, size, "faster");
    if (combo->ratio_drift) add_word(buffer, size, "ratio drift");
    if (!buffer[0]) add_word(buffer, size, combo->time.verdict == PARITY_TIME_SAME ? "same" : "no change");
    return buffer;
}
