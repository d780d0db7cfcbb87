// compare_time.c: the noise-aware time verdict of compare_time.h (the rule and why are there).
#include "reports/compare/compare_time.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/report_analysis.h"
#include "reports/timing_stats.h"

const char *parity_time_verdict_name(parity_time_verdict verdict) {
    switch (verdict) {
    case PARITY_TIME_SAME: return "same";
    case PARITY_TIME_REGRESSION: return "regression";
    case PARITY_TIME_SPEEDUP: return "speedup";
    case PARITY_TIME_UNTIMED: break;
    }
    return "untimed";
}

// MAD / median of the combo's finite samples (>= 2 of them), else 0.
static double noise_from_samples(const parity_combo_result *combo) {
    size_t count = 0;
    double *values = malloc((combo->sample_count ? combo->sample_count : 1) * sizeof *values);
    if (!values) return 0;
    for (size_t i = 0; i < combo->sample_count; i++)
        if (isfinite(combo->samples_ms[i])) values[count++] = combo->samples_ms[i];
    double median = NAN, noise = NAN;
    if (count >= 2) parity_timing_summary(values, count, &median, &noise);
    free(values);
    return isfinite(noise) ? noise : 0;
}

double parity_compare_noise(const parity_combo_result *combo) {
    if (isfinite(combo->noise) && combo->noise >= 0) return combo->noise;
    return noise_from_samples(combo);
}

void parity_compare_time(const parity_combo_result *base, const parity_combo_result *new_combo, double threshold,
                         double noise_factor, double run_shift, double run_spread, parity_time_comparison *out) {
    memset(out, 0, sizeof *out);
    out->verdict = PARITY_TIME_UNTIMED;
    out->base_ms = base && parity_report_is_timed(base) ? base->median_ms : NAN;
    out->new_ms = new_combo && parity_report_is_timed(new_combo) ? new_combo->median_ms : NAN;
    out->change = out->base_noise = out->new_noise = out->combined = out->limit = out->own_change = NAN;
    if (isnan(out->base_ms) || isnan(out->new_ms)) return;
    out->base_noise = parity_compare_noise(base);
    out->new_noise = parity_compare_noise(new_combo);
    out->combined =
        sqrt(out->base_noise * out->base_noise + out->new_noise * out->new_noise + run_spread * run_spread);
    double band = noise_factor * out->combined;
    out->limit = band > threshold ? band : threshold;
    double ratio = out->new_ms / out->base_ms, own = ratio / exp(run_shift);
    out->change = ratio - 1;
    out->own_change = own - 1;
    if (own - 1 > out->limit) out->verdict = PARITY_TIME_REGRESSION;
    else if (1 / own - 1 > out->limit) out->verdict = PARITY_TIME_SPEEDUP;
    else out->verdict = PARITY_TIME_SAME;
}

void parity_compare_run_movement(double *log_ratios, size_t count, double *shift, double *spread) {
    *shift = *spread = 0;
    if (count < PARITY_COMPARE_MIN_RUN_COMBOS) return;
    double median = parity_median_in_place(log_ratios, count);
    for (size_t i = 0; i < count; i++) log_ratios[i] = fabs(log_ratios[i] - median);
    *shift = median;
    *spread = 1.4826 * parity_median_in_place(log_ratios, count);
}
