// test_rotary_frequencies.c: parity_rotary_frequencies against values worked out by hand from HF's
// formulas (modeling_rope_utils.py), one row per rope type and per branch of each type: llama3's
// three wavelength bands, yarn's ramp, mscale and explicit attention_factor, truncate=False.
// f64 must match to round-off; f32 (HF's precision) must be f32 values within a few ulps.
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <string.h>

#include "ops/core/dtype.h"
#include "ops/rotary/frequencies.h"
#include "ops/testing/worst_error.h"

#define MAX_FREQUENCIES 8

typedef struct frequency_row {
    const char *label;
    parity_rope_description rope;
    int64_t rotary_dim;
    double expected[MAX_FREQUENCIES];
    double expected_scaling;
} frequency_row;

static const double pi = 3.14159265358979323846;

// Filled at run time so the expectations can be written as the formulas they came from.
static int build_rows(frequency_row *rows) {
    int count = 0;
    // theta^(-2i/8) for theta = 1e4 is 10^(-i).
    rows[count++] = (frequency_row){"default theta=1e4 dim=8", {.theta = 1e4}, 8, {1, 0.1, 0.01, 0.001}, 1};
    rows[count++] = (frequency_row){"linear factor=4", {.type = PARITY_ROPE_LINEAR, .theta = 1e4, .factor = 4}, 8,
                                    {0.25, 0.025, 0.0025, 0.00025}, 1};
    // llama3_tiny (hf reference): context 32 -> low_freq_wavelen 32, high_freq_wavelen 8. Wavelengths
    // 2 pi * 500000^(i/8) = 6.28, 32.4, 167, ...: i = 0 keeps its frequency, every other i is / 8.
    frequency_row tiny = {"llama3 tiny (context 32)",
                          {.type = PARITY_ROPE_LLAMA3, .theta = 5e5, .factor = 8, .low_freq_factor = 1,
                           .high_freq_factor = 4, .original_max_position_embeddings = 32},
                          16, {1}, 1};
    for (int i = 1; i < 8; i++) tiny.expected[i] = pow(5e5, -i / 8.0) / 8;
    rows[count++] = tiny;
    // theta 1e6, dim 8, context 8192: wavelengths 6.28, 198.7 (high band, kept), 6283 (medium band:
    // smooth s = (8192 / 6283 - 1) / 3 = 0.10127), 198692 (low band, / 8).
    double s = (8192 / (2000 * pi) - 1) / 3;
    rows[count++] = (frequency_row){"llama3 three bands",
                                    {.type = PARITY_ROPE_LLAMA3, .theta = 1e6, .factor = 8, .low_freq_factor = 1,
                                     .high_freq_factor = 4, .original_max_position_embeddings = 8192},
                                    8, {1, pow(1e6, -0.25), 1e-3 * ((1 - s) / 8 + s), pow(1e6, -0.75) / 8}, 1};
    // yarn theta 1e4, dim 8, factor 4, context 64: correction dims -0.497 (beta_fast 32) and 1.008
    // (beta_slow 1) -> truncated range [0, 2], ramp (0, 0.5, 1, 1): i = 0 extrapolates (1), i = 1 is
    // half of each (0.1 / 4 and 0.1), i >= 2 interpolate (/ 4). attention_factor = 0.1 ln 4 + 1.
    parity_rope_description yarn = {.type = PARITY_ROPE_YARN, .theta = 1e4, .factor = 4,
                                    .original_max_position_embeddings = 64};
    double yarn_expected[4] = {1, 0.5 * 0.1 / 4 + 0.5 * 0.1, 0.01 / 4, 0.001 / 4};
    frequency_row row = {"yarn ramp, default attention_factor", yarn, 8, {0}, 0.1 * log(4) + 1};
    for (int i = 0; i < 4; i++) row.expected[i] = yarn_expected[i];
    rows[count++] = row;
    row.label = "yarn mscale=1 mscale_all_dim=0.5";
    row.rope.mscale = 1;
    row.rope.mscale_all_dim = 0.5;
    row.expected_scaling = (0.1 * log(4) + 1) / (0.05 * log(4) + 1);
    rows[count++] = row;
    row.label = "yarn explicit attention_factor";
    row.rope.attention_factor = 0.75;
    row.expected_scaling = 0.75;
    rows[count++] = row;
    // truncate = False: range [0, 1.008] -> ramp (0, 1 / 1.008, 1, 1).
    double high = 8 * log(64 / (2 * pi)) / (2 * log(1e4)), ramp = 1 / high;
    row = (frequency_row){"yarn no truncate", yarn, 8, {1, ramp * 0.1 / 4 + (1 - ramp) * 0.1, 0.01 / 4, 0.001 / 4},
                          0.1 * log(4) + 1};
    row.rope.yarn_no_truncate = true;
    rows[count++] = row;
    return count;
}

static double relative_difference(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-300); }

Test(ops, rotary_frequencies_match_hand_computed_values) {
    frequency_row rows[16];
    int count = build_rows(rows);
    for (int r = 0; r < count; r++) {
        double inv_freq[MAX_FREQUENCIES], scaling, worst = 0;
        parity_error *error = parity_rotary_frequencies(&rows[r].rope, rows[r].rotary_dim, PARITY_F64, inv_freq, &scaling);
        cr_assert(error == NULL, "%s: %s", rows[r].label, error ? parity_error_message(error) : "");
        for (int i = 0; i < rows[r].rotary_dim / 2; i++) {
            double difference = relative_difference(inv_freq[i], rows[r].expected[i]);
            worst = parity_test_max(worst, difference);
            cr_expect(difference < 1e-13, "%s: inv_freq[%d] = %.17g, expected %.17g", rows[r].label, i, inv_freq[i],
                      rows[r].expected[i]);
        }
        cr_expect(relative_difference(scaling, rows[r].expected_scaling) < 1e-15, "%s: attention scaling %.17g, expected %.17g",
                  rows[r].label, scaling, rows[r].expected_scaling);
        cr_log_info("rotary frequencies %-40s f64 max relative error %.1e, scaling %.6f", rows[r].label, worst, scaling);
    }
}

// Spot values as literals, computed by hand from the formulas above (guards the formulas themselves).
Test(ops, rotary_frequencies_spot_values) {
    frequency_row rows[16];
    build_rows(rows);
    double inv_freq[MAX_FREQUENCIES], scaling;
    cr_assert(parity_rotary_frequencies(&rows[3].rope, 8, PARITY_F64, inv_freq, &scaling) == NULL);
    cr_expect(fabs(inv_freq[2] - 2.1360754402756862e-04) < 1e-18, "llama3 medium band: %.17g", inv_freq[2]);
    cr_assert(parity_rotary_frequencies(&rows[5].rope, 8, PARITY_F64, inv_freq, &scaling) == NULL);
    cr_expect(fabs(scaling - 1.0648216253695715) < 1e-15, "yarn mscale ratio: %.17g", scaling);
    cr_assert(parity_rotary_frequencies(&rows[7].rope, 8, PARITY_F64, inv_freq, &scaling) == NULL);
    cr_expect(fabs(inv_freq[1] - 0.02559524589192421) < 1e-16, "yarn no truncate: %.17g", inv_freq[1]);
}

// HF computes in f32: every value must be an f32 number within a few f32 ulps of the exact one.
Test(ops, rotary_frequencies_in_f32_are_f32_values_near_f64) {
    frequency_row rows[16];
    int count = build_rows(rows);
    for (int r = 0; r < count; r++) {
        double inv_freq[MAX_FREQUENCIES], scaling;
        cr_assert(parity_rotary_frequencies(&rows[r].rope, rows[r].rotary_dim, PARITY_F32, inv_freq, &scaling) == NULL);
        for (int i = 0; i < rows[r].rotary_dim / 2; i++) {
            cr_expect(inv_freq[i] == (double)(float)inv_freq[i], "%s: inv_freq[%d] is not an f32 value", rows[r].label, i);
            cr_expect(relative_difference(inv_freq[i], rows[r].expected[i]) < 1e-6, "%s f32: inv_freq[%d] = %.9g, expected %.9g",
                      rows[r].label, i, inv_freq[i], rows[r].expected[i]);
        }
    }
}

Test(ops, rotary_dim_follows_partial_rotary_factor) {
    int64_t rotary_dim;
    cr_assert(parity_rope_rotary_dim(&(parity_rope_description){.theta = 1e4}, 48, &rotary_dim) == NULL);
    cr_expect_eq(rotary_dim, 48);
    cr_assert(parity_rope_rotary_dim(&(parity_rope_description){.partial_rotary_factor = 0.25}, 256, &rotary_dim) == NULL);
    cr_expect_eq(rotary_dim, 64); // Qwen3.5
    cr_assert(parity_rope_rotary_dim(&(parity_rope_description){.partial_rotary_factor = 0.25}, 32, &rotary_dim) == NULL);
    cr_expect_eq(rotary_dim, 8);
    parity_error *error = parity_rope_rotary_dim(&(parity_rope_description){.partial_rotary_factor = 1.5}, 32, &rotary_dim);
    cr_expect(error != NULL && strstr(parity_error_message(error), "rotary: partial_rotary_factor 1.5") != NULL);
    parity_error_free(error);
}
