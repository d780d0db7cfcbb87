// bench_stats.c: see bench_stats.h.
#include "harness/bench/bench_stats.h"

#include <math.h>

#include "reports/timing_stats.h"

parity_bench_timing parity_bench_summarize(const double *milliseconds, int count) {
    parity_bench_timing timing = {NAN, NAN, NAN, NAN, count};
    if (count <= 0) return timing;
    parity_timing_summary(milliseconds, (size_t)count, &timing.median_ms, &timing.noise);
    timing.min_ms = timing.max_ms = milliseconds[0];
    for (int i = 1; i < count; i++) {
        timing.min_ms = fmin(timing.min_ms, milliseconds[i]);
        timing.max_ms = fmax(timing.max_ms, milliseconds[i]);
    }
    return timing;
}
