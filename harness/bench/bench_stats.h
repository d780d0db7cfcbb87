// bench_stats.h: the statistics of a set of timed runs (nvbench's habit: report noise next to
// every time). Median, minimum, maximum and the relative noise = median absolute deviation / median.
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

// Summarizes `count` run times (milliseconds; the array is sorted in place).
parity_bench_timing parity_bench_summarize(double *milliseconds, int count);

#ifdef __cplusplus
}
#endif
#endif
