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
// Whole runs move. Two runs of the same code on a shared machine differ by more than either run's
// own samples spread (measured on the 2-core CPU machine: within-run noise ~1%, run-to-run 8.6%
// MAD of the log ratio over 136 smoke combos, the median ratio 1.04): what another process, the
// clocks or the cache left behind moves every combo of a run. So the comparison first measures the
// run's movement over the combos timed in both runs (compare.c, at least
// PARITY_COMPARE_MIN_RUN_COMBOS of them): the shift m = median of ln(new / base) and the spread
// s = 1.4826 MAD of those logs (a robust sigma: a minority of real regressions moves neither). A
// combo is then judged on its own movement, r' = r / exp(m), against the band
//     limit = max(threshold, k * sqrt(n_base^2 + n_new^2 + s^2)),
// and the shift is judged once, for the whole run (parity_comparison.run: exp(m) - 1 beyond the
// threshold is a run-wide regression or speed-up). A bug that slows one backend stands out of its
// run; one that slows everything moves the median; a busy machine moves both a little and widens s.
// With fewer combos m = s = 0 and r' = r.
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
#define PARITY_COMPARE_MIN_RUN_COMBOS 8 // combos timed in both runs before the run's movement is estimated

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
    double combined;              // sqrt(base_noise^2 + new_noise^2 + run_spread^2)
    double limit;                 // max(threshold, noise_factor * combined): the band a change must leave
    double own_change;            // (new / base) / exp(run_shift) - 1: the change the verdict judges
} parity_time_comparison;

// The relative noise the rule uses for `combo`: its recorded noise when finite and >= 0, else MAD /
// median of its samples (>= 2 samples), else 0.
double parity_compare_noise(const parity_combo_result *combo);

// The verdict for one combo; `threshold` (relative, >= 0) and `noise_factor` (k, >= 0) as above;
// run_shift (m, a log) and run_spread (s, relative) of the run's movement, 0 and 0 for none.
void parity_compare_time(const parity_combo_result *base, const parity_combo_result *new_combo, double threshold,
                         double noise_factor, double run_shift, double run_spread, parity_time_comparison *out);

// The run's movement over `count` log ratios ln(new / base) (reordered): *shift the median, *spread
// 1.4826 MAD; both 0 when count < PARITY_COMPARE_MIN_RUN_COMBOS.
void parity_compare_run_movement(double *log_ratios, size_t count, double *shift, double *spread);

#endif
