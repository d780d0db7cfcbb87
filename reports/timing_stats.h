// timing_stats.h: the statistics of a set of timed runs, one implementation for `parity run` (the
// runner's per-combo step times), `parity bench` (harness/bench/bench_stats.h adds min and max),
// `parity compare` (a noise a record lacks, the run's movement) and the history's baselines:
// the median, and the relative noise = median absolute deviation / median (nvbench's habit: report
// the noise next to every time; the MAD ignores a stray outlier as the median does).
#ifndef PARITY_TIMING_STATS_H
#define PARITY_TIMING_STATS_H

#include <stddef.h>

// Median and relative noise of `count` samples (milliseconds; left as they are). Both NAN when
// count is 0 or no scratch memory could be had; the noise is NAN when the median is not positive.
void parity_timing_summary(const double *samples, size_t count, double *median, double *noise);
// The median of values[0..count) (count >= 1; the mean of the two middle values for an even count),
// sorting them in place.
double parity_median_in_place(double *values, size_t count);

#endif
