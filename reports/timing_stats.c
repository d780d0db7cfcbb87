// timing_stats.c: median and median absolute deviation (timing_stats.h).
#include "reports/timing_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double parity_median_in_place(double *values, size_t count) {
    qsort(values, count, sizeof *values, compare_doubles);
    return count % 2 ? values[count / 2] : 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

void parity_timing_summary(const double *samples, size_t count, double *median, double *noise) {
    *median = NAN;
    *noise = NAN;
    if (count == 0) return;
    double *scratch = malloc(count * sizeof *scratch);
    if (!scratch) return;
    memcpy(scratch, samples, count * sizeof *scratch);
    *median = parity_median_in_place(scratch, count);
    for (size_t i = 0; i < count; i++) scratch[i] = fabs(samples[i] - *median);
    double deviation = parity_median_in_place(scratch, count);
    *noise = *median > 0 ? deviation / *median : NAN;
    free(scratch);
}
