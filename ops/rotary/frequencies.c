// frequencies.c: HF modeling_rope_utils.py's _compute_{default,linear_scaling,llama3,yarn}_parameters
// (transformers 5.x), one readable function per rope type. `round` is the identity for f64 and rounds
// to f32 otherwise, placed where torch stores an f32 tensor (see frequencies.h).
#include "ops/rotary/frequencies.h"

#include <math.h>

#include "ops/core/cpu_math.h"

static const double pi = 3.14159265358979323846; // Python's math.pi

static double round_to(double value, parity_dtype precision) { return parity_round_compute(value, precision); }

parity_error *parity_rope_rotary_dim(const parity_rope_description *rope, int64_t head_dim, int64_t *rotary_dim) {
    double factor = rope->partial_rotary_factor == 0 ? 1.0 : rope->partial_rotary_factor;
    PARITY_CHECK(factor > 0 && factor <= 1, PARITY_ERROR_SHAPE, "rotary: partial_rotary_factor %g is outside (0, 1]",
                 rope->partial_rotary_factor);
    *rotary_dim = (int64_t)((double)head_dim * factor); // Python int() truncates
    PARITY_CHECK(*rotary_dim >= 2 && *rotary_dim % 2 == 0, PARITY_ERROR_SHAPE,
                 "rotary: rotary_dim %lld (head_dim %lld x partial_rotary_factor %g) must be even and >= 2",
                 (long long)*rotary_dim, (long long)head_dim, factor);
    return NULL;
}

static parity_error *check_description(const parity_rope_description *rope) {
    PARITY_CHECK(rope->theta > 0 && isfinite(rope->theta), PARITY_ERROR_SHAPE, "rotary: rope_theta %g must be > 0", rope->theta);
    switch (rope->type) {
    case PARITY_ROPE_DEFAULT: return NULL;
    case PARITY_ROPE_LINEAR:
        PARITY_CHECK(rope->factor > 0, PARITY_ERROR_SHAPE, "rotary: linear rope factor %g must be > 0", rope->factor);
        return NULL;
    case PARITY_ROPE_LLAMA3:
        PARITY_CHECK(rope->factor > 0, PARITY_ERROR_SHAPE, "rotary: llama3 rope factor %g must be > 0", rope->factor);
        PARITY_CHECK(rope->low_freq_factor > 0 && rope->high_freq_factor > rope->low_freq_factor, PARITY_ERROR_SHAPE,
                     "rotary: llama3 needs 0 < low_freq_factor < high_freq_factor, got %g and %g", rope->low_freq_factor,
                     rope->high_freq_factor);
        PARITY_CHECK(rope->original_max_position_embeddings > 0, PARITY_ERROR_SHAPE,
                     "rotary: llama3 original_max_position_embeddings %lld must be > 0",
                     (long long)rope->original_max_position_embeddings);
        return NULL;
    case PARITY_ROPE_YARN:
        PARITY_CHECK(rope->factor > 0, PARITY_ERROR_SHAPE, "rotary: yarn rope factor %g must be > 0", rope->factor);
        PARITY_CHECK(rope->original_max_position_embeddings > 0, PARITY_ERROR_SHAPE,
                     "rotary: yarn original_max_position_embeddings %lld must be > 0",
                     (long long)rope->original_max_position_embeddings);
        PARITY_CHECK(rope->beta_fast >= 0 && rope->beta_slow >= 0 && rope->attention_factor >= 0, PARITY_ERROR_SHAPE,
                     "rotary: yarn beta_fast %g, beta_slow %g and attention_factor %g must not be negative",
                     rope->beta_fast, rope->beta_slow, rope->attention_factor);
        return NULL;
    }
    return PARITY_ERROR(PARITY_ERROR_SHAPE, "rotary: unknown rope type %d", (int)rope->type);
}

// pos_freqs = theta ** (arange(0, dim, 2).float() / dim)
static double position_frequency(double theta, int64_t index, int64_t rotary_dim, parity_dtype precision) {
    double exponent = round_to((double)(2 * index) / (double)rotary_dim, precision);
    return round_to(pow(round_to(theta, precision), exponent), precision);
}

static double llama3_inverse_frequency(const parity_rope_description *rope, double inv_freq, parity_dtype precision) {
    double factor = round_to(rope->factor, precision);
    double context = (double)rope->original_max_position_embeddings;
    double low_freq_wavelen = round_to(context / rope->low_freq_factor, precision);
    double high_freq_wavelen = round_to(context / rope->high_freq_factor, precision);
    // wavelen = 2 * math.pi / inv_freq, i.e. reciprocal(inv_freq) * (2 pi)
    double wavelen = round_to(round_to(1.0 / inv_freq, precision) * round_to(2 * pi, precision), precision);
    double scaled = wavelen > low_freq_wavelen ? round_to(inv_freq / factor, precision) : inv_freq;
    if (wavelen < high_freq_wavelen || wavelen > low_freq_wavelen) return scaled;
    // medium band: smooth = (context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    double ratio = round_to(round_to(1.0 / wavelen, precision) * round_to(context, precision), precision);
    double smooth = round_to(round_to(ratio - round_to(rope->low_freq_factor, precision), precision) /
                                 round_to(rope->high_freq_factor - rope->low_freq_factor, precision),
                             precision);
    // (1 - smooth) * inv / factor + smooth * inv
    double interpolated = round_to(round_to(round_to(1.0 - smooth, precision) * scaled, precision) / factor, precision);
    return round_to(interpolated + round_to(smooth * scaled, precision), precision);
}

static double yarn_mscale(double scale, double mscale) { return scale <= 1 ? 1.0 : 0.1 * mscale * log(scale) + 1.0; }

// find_correction_dim: the dimension whose wavelength makes `rotations` turns over the context.
static double yarn_correction_dim(double rotations, int64_t rotary_dim, double theta, double context) {
    return ((double)rotary_dim * log(context / (rotations * 2 * pi))) / (2 * log(theta));
}

static void yarn_frequencies(const parity_rope_description *rope, int64_t rotary_dim, parity_dtype precision,
                             double *inv_freq, double *attention_scaling) {
    double factor = rope->factor;
    if (rope->attention_factor > 0) *attention_scaling = rope->attention_factor;
    else if (rope->mscale != 0 && rope->mscale_all_dim != 0)
        *attention_scaling = yarn_mscale(factor, rope->mscale) / yarn_mscale(factor, rope->mscale_all_dim);
    else *attention_scaling = yarn_mscale(factor, 1.0);
    double beta_fast = rope->beta_fast != 0 ? rope->beta_fast : 32;
    double beta_slow = rope->beta_slow != 0 ? rope->beta_slow : 1;
    double context = (double)rope->original_max_position_embeddings;
    double low = yarn_correction_dim(beta_fast, rotary_dim, rope->theta, context);
    double high = yarn_correction_dim(beta_slow, rotary_dim, rope->theta, context);
    if (!rope->yarn_no_truncate) {
        low = floor(low);
        high = ceil(high);
    }
    low = fmax(low, 0);
    high = fmin(high, (double)(rotary_dim - 1));
    if (low == high) high += 0.001; // HF: prevent singularity
    double low_f = round_to(low, precision), span = round_to(high - low, precision);
    for (int64_t i = 0; i < rotary_dim / 2; i++) {
        double power = position_frequency(rope->theta, i, rotary_dim, precision);
        double extrapolation = round_to(1.0 / power, precision); // 1.0 / pos_freqs
        double interpolation = round_to(1.0 / round_to(round_to(factor, precision) * power, precision), precision);
        double ramp = round_to(round_to((double)i - low_f, precision) / span, precision);
        ramp = fmin(fmax(ramp, 0.0), 1.0);
        double extrapolation_factor = round_to(1.0 - ramp, precision);
        double interpolation_part =
            round_to(interpolation * round_to(1.0 - extrapolation_factor, precision), precision);
        inv_freq[i] = round_to(interpolation_part + round_to(extrapolation * extrapolation_factor, precision), precision);
    }
}

parity_error *parity_rotary_frequencies(const parity_rope_description *rope, int64_t rotary_dim, parity_dtype precision,
                                        double *inv_freq, double *attention_scaling) {
    PARITY_TRY(check_description(rope));
    PARITY_CHECK(rotary_dim >= 2 && rotary_dim % 2 == 0, PARITY_ERROR_SHAPE,
                 "rotary: rotary_dim %lld must be even and >= 2", (long long)rotary_dim);
    precision = parity_compute_dtype(precision);
    *attention_scaling = 1.0;
    if (rope->type == PARITY_ROPE_YARN) {
        yarn_frequencies(rope, rotary_dim, precision, inv_freq, attention_scaling);
        return NULL;
    }
    for (int64_t i = 0; i < rotary_dim / 2; i++) {
        // inv_freq = 1.0 / pos_freqs (torch: reciprocal(pos_freqs) * 1.0)
        double base = round_to(1.0 / position_frequency(rope->theta, i, rotary_dim, precision), precision);
        if (rope->type == PARITY_ROPE_LINEAR) inv_freq[i] = round_to(base / round_to(rope->factor, precision), precision);
        else if (rope->type == PARITY_ROPE_LLAMA3) inv_freq[i] = llama3_inverse_frequency(rope, base, precision);
        else inv_freq[i] = base;
    }
    return NULL;
}
