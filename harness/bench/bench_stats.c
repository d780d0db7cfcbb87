// bench_stats.c: see bench_stats.h.
#include "harness/bench/bench_stats.h"

#include <math.h>
#include <stdlib.h>

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of_sorted(const double *values, int count) {
    if (count <= 0) return NAN;
    return count % 2 ? values[count / 2] : 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

parity_bench_timing parity_bench_summarize(double *milliseconds, int count) {
    parity_bench_timing timing = {NAN, NAN, NAN, NAN, count};
    if (count <= 0) return timing;
    qsort(milliseconds, (size_t)count, sizeof *milliseconds, compare_doubles);
    timing.median_ms = median_of_sorted(milliseconds, count);
    timing.min_ms = milliseconds[0];
    timing.max_ms = milliseconds[count - 1];
    double *deviations = malloc((size_t)count * sizeof *deviations);
    if (!deviations) return timing;
    for (int i = 0; i < count; i++) deviations[i] = fabs(milliseconds[i] - timing.median_ms);
    qsort(deviations, (size_t)count, sizeof *deviations, compare_doubles);
    timing.noise = timing.median_ms > 0 ? median_of_sorted(deviations, count) / timing.median_ms : NAN;
    free(deviations);
    return timing;
}
