// compare_time.h: the time verdict of one combo between two runs, noise-aware.
//
// The rule. Let r = new median / base median, and each run's noise n = its recorded relative noise
// (median absolute deviation / median, results.json's "noise"; computed from the samples when the
// record has none; 0 when there are fewer than two samples). The runs' combined noise is
//     combined = sqrt(n_base^2 + n_new^2)
// (independent spreads add in quadrature) and the band a change must leave is
//     limit = max(threshold, k * combined)        threshold = 10%, k = 3 by default.
// A slowdown r - 1 > limit is a regression; a speed-up 1/r - 1 > limit is a speed-up (the same rule
// with the runs swapped, so swapping BASE and NEW turns every regression into a speed-up and back).
// Anything else is "same". A combo untimed in either run has no time verdict.
//
// Why k = 3: the noise is a MAD, and for normal samples sigma ~= 1.4826 MAD, so k * combined with
// k = 3 is about 2 sigma of the difference of two single samples. The median of several samples
// moves less than one sample, but whole runs drift more than their own samples spread (another host
// state, clocks, thermals), so the within-run spread is a floor for run-to-run noise, not a ceiling;
// 2 sigma keeps a nightly job from crying wolf while a 20% slowdown over 2% noise per run (limit
// max(10%, 8.5%)) still counts and one over 15% noise per run (limit 63.6%) does not. docs/compare.md gives worked examples.
#ifndef PARITY_REPORTS_COMPARE_TIME_H
#define PARITY_REPORTS_COMPARE_TIME_H

#include <stdbool.h>

#include "reports/results.h"

#define PARITY_COMPARE_DEFAULT_THRESHOLD 0.10
#define PARITY_COMPARE_DEFAULT_NOISE_FACTOR 3.0

typedef enum parity_time_verdict {
    PARITY_TIME_UNTIMED = 0, // either run has no finite positive median (or the combo is in one run only)
    PARITY_TIME_SAME,        // within the band
    PARITY_TIME_REGRESSION,  // slower beyond the band
    PARITY_TIME_SPEEDUP,     // faster beyond the band
} parity_time_verdict;

// "untimed", "same", "regression", "speedup"
const char *parity_time_verdict_name(parity_time_verdict verdict);

typedef struct parity_time_comparison {
    parity_time_verdict verdict;
    double base_ms, new_ms;       // medians (NaN when untimed)
    double change;                // new / base - 1: +0.20 is 20% slower (NaN when untimed)
    double base_noise, new_noise; // the relative noise each run contributes
    double combined;              // sqrt(base_noise^2 + new_noise^2)
    double limit;                 // max(threshold, noise_factor * combined): the band a change must leave
} parity_time_comparison;

// The relative noise the rule uses for `combo`: its recorded noise when finite and >= 0, else MAD /
// median of its samples (>= 2 samples), else 0.
double parity_compare_noise(const parity_combo_result *combo);

// The verdict for one combo; `threshold` (relative, >= 0) and `noise_factor` (k, >= 0) as above.
void parity_compare_time(const parity_combo_result *base, const parity_combo_result *new_combo, double threshold,
                         double noise_factor, parity_time_comparison *out);

#endif
