// bench_stats.h: the statistics of a set of timed bench runs: median and relative noise = median
// absolute deviation / median (computed by reports/timing_stats.h, as `parity run`'s are), minimum
// and maximum.
#ifndef PARITY_BENCH_STATS_H
#define PARITY_BENCH_STATS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_bench_timing {
    double median_ms, min_ms, max_ms;
    double noise; // median(|t - median|) / median
    int runs;
} parity_bench_timing;

// Summarizes `count` run times (milliseconds; left as they are).
parity_bench_timing parity_bench_summarize(const double *milliseconds, int count);

#ifdef __cplusplus
}
#endif
#endif
