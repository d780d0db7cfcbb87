// test_dtype.c: the bf16/f16 conversions in ops/core/dtype.h are the ground every tolerance stands
// on, so they are checked three ways: (1) every one of the 65536 bit patterns of each 16-bit format
// decodes to the value an independent ldexp formula gives and survives the round trip through f32
// and f64; (2) a hand-computed table of ties, near-ties, overflow, subnormals, signed zeros and
// double-rounding traps; (3) a million random inputs against a reference rounder built a different
// way (binary search over the exhaustively verified decoder, then nearest-with-ties-to-even by
// comparing with the exact midpoint). Plus the dtype name/size/parse tables.
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ops/core/dtype.h"

// ---- helpers -------------------------------------------------------------------------------

static bool bf16_is_nan(uint16_t bits) { return (bits & 0x7fffu) > 0x7f80u; }
static bool f16_is_nan(uint16_t bits) { return (bits & 0x7fffu) > 0x7c00u; }

// Independent decoders: the IEEE-style formula with ldexp, no bit tricks shared with dtype.h.
static double bf16_value_reference(uint16_t bits) {
    int exponent = (bits >> 7) & 0xff, fraction = bits & 0x7f;
    double value;
    if (exponent == 0xff) value = fraction ? NAN : INFINITY;
    else if (exponent == 0) value = ldexp(fraction, -133);
    else value = ldexp(128 + fraction, exponent - 134);
    return (bits & 0x8000u) ? -value : value;
}

static double f16_value_reference(uint16_t bits) {
    int exponent = (bits >> 10) & 0x1f, fraction = bits & 0x3ff;
    double value;
    if (exponent == 0x1f) value = fraction ? NAN : INFINITY;
    else if (exponent == 0) value = ldexp(fraction, -24);
    else value = ldexp(1024 + fraction, exponent - 25);
    return (bits & 0x8000u) ? -value : value;
}

// Same value, or both NaN; the sign must match either way (so -0 != +0 here).
static bool same_value(double got, double expected) {
    if (signbit(got) != signbit(expected)) return false;
    if (isnan(expected)) return isnan(got);
    return got == expected;
}

// splitmix64: a tiny generator independent of the Philox code under test elsewhere.
static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float float_from_bits(uint32_t bits) {
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static double double_from_bits(uint64_t bits) {
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

// A 16-bit float format described by its (verified) decoder.
typedef struct format16 {
    const char *name;
    double (*decode)(uint16_t bits);
    uint16_t max_finite;   // largest finite positive pattern
    uint16_t infinity;     // == max_finite + 1
    double overflow_value; // where the next pattern would sit if the exponent range went on
} format16;

static double decode_bf16(uint16_t bits) { return parity_bf16_to_f64(bits); }
static double decode_f16(uint16_t bits) { return parity_f16_to_f64(bits); }

static const format16 format_bf16 = {"bf16", decode_bf16, 0x7f7f, 0x7f80, 0x1p128};
static const format16 format_f16 = {"f16", decode_f16, 0x7bff, 0x7c00, 0x1p16};

// Round-to-nearest-even by search: the largest pattern not above |x|, its successor, and the exact
// midpoint between them (both neighbours have at most 11 significant bits, so their sum and half
// are exact in f64). A non-NaN input only.
static uint16_t reference_round(const format16 *format, double x) {
    uint16_t sign = signbit(x) ? 0x8000u : 0;
    double magnitude = fabs(x);
    if (isinf(magnitude)) return (uint16_t)(sign | format->infinity);
    uint32_t low = 0, high = format->max_finite; // invariant: decode(low) <= magnitude
    while (low < high) {
        uint32_t middle = (low + high + 1) / 2;
        if (format->decode((uint16_t)middle) <= magnitude) low = middle;
        else high = middle - 1;
    }
    double below = format->decode((uint16_t)low);
    if (below == magnitude) return (uint16_t)(sign | low);
    double above = low == format->max_finite ? format->overflow_value : format->decode((uint16_t)(low + 1));
    double midpoint = (below + above) / 2;
    uint32_t chosen;
    if (magnitude < midpoint) chosen = low;
    else if (magnitude > midpoint) chosen = low + 1;
    else chosen = (low & 1u) ? low + 1 : low;
    return (uint16_t)(sign | chosen); // low + 1 past max_finite is the infinity pattern
}

// ---- 1. every bit pattern --------------------------------------------------------------------

typedef struct roundtrip_path {
    const char *what;
    bool is_bf16;                          // else f16
    double (*decode)(uint16_t bits);       // pattern -> value through the intermediate type
    uint16_t (*encode)(double value);      // value -> pattern from that intermediate type
} roundtrip_path;

static double bf16_through_f32(uint16_t bits) { return parity_bf16_to_f32(bits); }
static uint16_t bf16_from_f32(double value) { return parity_f32_to_bf16((float)value); } // exact: value is an f32
static double bf16_through_f64(uint16_t bits) { return parity_bf16_to_f64(bits); }
static uint16_t bf16_from_f64(double value) { return parity_f64_to_bf16(value); }
static double f16_through_f32(uint16_t bits) { return parity_f16_to_f32(bits); }
static uint16_t f16_from_f32(double value) { return parity_f32_to_f16((float)value); }
static double f16_through_f64(uint16_t bits) { return parity_f16_to_f64(bits); }
static uint16_t f16_from_f64(double value) { return parity_f64_to_f16(value); }

static const roundtrip_path roundtrip_paths[] = {
    {"bf16 -> f32 -> bf16", true, bf16_through_f32, bf16_from_f32},
    {"bf16 -> f64 -> bf16", true, bf16_through_f64, bf16_from_f64},
    {"f16 -> f32 -> f16", false, f16_through_f32, f16_from_f32},
    {"f16 -> f64 -> f16", false, f16_through_f64, f16_from_f64},
};

Test(dtype, every_16bit_pattern_decodes_and_round_trips) {
    for (size_t row = 0; row < sizeof roundtrip_paths / sizeof roundtrip_paths[0]; row++) {
        const roundtrip_path *path = &roundtrip_paths[row];
        long decode_failures = 0, roundtrip_failures = 0, nan_patterns = 0;
        int first_decode = -1, first_roundtrip = -1;
        for (uint32_t pattern = 0; pattern <= 0xffffu; pattern++) {
            uint16_t bits = (uint16_t)pattern;
            double value = path->decode(bits);
            double expected = path->is_bf16 ? bf16_value_reference(bits) : f16_value_reference(bits);
            if (!same_value(value, expected)) {
                decode_failures++;
                if (first_decode < 0) first_decode = (int)pattern;
            }
            uint16_t back = path->encode(value);
            bool is_nan = path->is_bf16 ? bf16_is_nan(bits) : f16_is_nan(bits);
            bool ok;
            if (is_nan) {
                nan_patterns++;
                ok = (path->is_bf16 ? bf16_is_nan(back) : f16_is_nan(back)) && (back & 0x8000u) == (bits & 0x8000u);
            } else {
                ok = back == bits;
            }
            if (!ok) {
                roundtrip_failures++;
                if (first_roundtrip < 0) first_roundtrip = (int)pattern;
            }
        }
        cr_expect_eq(nan_patterns, path->is_bf16 ? 2 * 127 : 2 * 1023, "%s: NaN pattern count", path->what);
        cr_expect_eq(decode_failures, 0, "%s: %ld patterns decode wrongly, first 0x%04x", path->what, decode_failures,
                     (unsigned)first_decode);
        cr_expect_eq(roundtrip_failures, 0, "%s: %ld patterns do not round-trip, first 0x%04x", path->what,
                     roundtrip_failures, (unsigned)first_roundtrip);
    }
}

// ---- 2. hand-computed rounding tables --------------------------------------------------------

typedef struct rounding_case {
    const char *what;
    double input;
    uint16_t expected;  // nearest, ties to even, rounded once from the input
    bool exact_in_f32;  // the f32 entry point is checked too, with (float)input
} rounding_case;

static const rounding_case bf16_cases[] = {
    {"1", 0x1p0, 0x3f80, true},
    {"pi to 8 bits (0x1.92p1)", 0x1.92p1, 0x4049, true},
    {"tie 1 + 2^-8 -> even 1", 0x1.01p0, 0x3f80, true},
    {"tie 1 + 3*2^-8 -> even 1 + 2^-6", 0x1.03p0, 0x3f82, true},
    {"tie 1 + 5*2^-8 -> even 1 + 2^-6", 0x1.05p0, 0x3f82, true},
    {"just above tie: 1 + 2^-8 + 2^-23", 0x1.010002p0, 0x3f81, true},
    {"just below tie: 1 + 2^-8 - 2^-23", 0x1.00fffep0, 0x3f80, true},
    {"just below odd tie: 1 + 3*2^-8 - 2^-23", 0x1.02fffep0, 0x3f81, true},
    {"just above tie by one f64 ulp: 1 + 2^-8 + 2^-52", 0x1.0100000000001p0, 0x3f81, false},
    {"just below tie by one f64 ulp: 1 + 2^-8 - 2^-52", 0x1.00fffffffffffp0, 0x3f80, false},
    {"negative tie -(1 + 2^-8) -> -1", -0x1.01p0, 0xbf80, true},
    {"negative tie -(1 + 3*2^-8) -> -(1 + 2^-6)", -0x1.03p0, 0xbf82, true},
    {"tie 2 - 2^-8 carries into the next binade -> 2", 0x1.ffp0, 0x4000, true},
    {"+0", 0.0, 0x0000, true},
    {"-0", -0.0, 0x8000, true},
    {"largest finite (2 - 2^-7) * 2^127", 0x1.fep127, 0x7f7f, true},
    {"just below the overflow tie", 0x1.fefffep127, 0x7f7f, true},
    {"overflow tie (2 - 2^-8) * 2^127 -> inf", 0x1.ffp127, 0x7f80, true},
    {"FLT_MAX -> inf", 0x1.fffffep127, 0x7f80, true},
    {"3.4e38 (above the overflow tie 3.396e38) -> inf", 3.4e38, 0x7f80, false},
    {"-3.4e38 -> -inf", -3.4e38, 0xff80, false},
    {"1e300 -> inf", 1e300, 0x7f80, false},
    {"+inf", INFINITY, 0x7f80, true},
    {"-inf", -INFINITY, 0xff80, true},
    {"smallest subnormal 2^-133", 0x1p-133, 0x0001, true},
    {"tie 2^-134 -> even +0", 0x1p-134, 0x0000, true},
    {"tie -2^-134 -> even -0", -0x1p-134, 0x8000, true},
    {"2^-134 + 2^-149 -> smallest subnormal", 0x1.0002p-134, 0x0001, true},
    {"2^-134 + 2^-186 -> smallest subnormal", 0x1.0000000000001p-134, 0x0001, false},
    {"2^-134 - 2^-187 -> +0", 0x1.fffffffffffffp-135, 0x0000, false},
    {"2^-135 -> +0", 0x1p-135, 0x0000, true},
    {"tie 1.5 * 2^-133 -> even 2 * 2^-133", 0x1.8p-133, 0x0002, true},
    {"largest subnormal 127 * 2^-133", 0x1.fcp-127, 0x007f, true},
    {"tie 127.5 * 2^-133 -> smallest normal", 0x1.fep-127, 0x0080, true},
    {"smallest normal 2^-126", 0x1p-126, 0x0080, true},
    {"f64 subnormal 2^-1074 -> +0", 0x1p-1074, 0x0000, false},
    {"f64 subnormal -2^-1074 -> -0", -0x1p-1074, 0x8000, false},
};

static const rounding_case f16_cases[] = {
    {"1", 0x1p0, 0x3c00, true},
    {"-1", -0x1p0, 0xbc00, true},
    {"0.1 -> 0x2e66", 0.1, 0x2e66, false},
    {"tie 1 + 2^-11 -> even 1", 0x1.002p0, 0x3c00, true},
    {"tie 1 + 3*2^-11 -> even 1 + 2^-9", 0x1.006p0, 0x3c02, true},
    {"just above tie: 1 + 2^-11 + 2^-23", 0x1.002002p0, 0x3c01, true},
    {"just below tie: 1 + 2^-11 - 2^-23", 0x1.001ffep0, 0x3c00, true},
    {"largest finite 65504", 65504.0, 0x7bff, true},
    {"65519 -> 65504", 65519.0, 0x7bff, true},
    {"65520 - 2^-9 -> 65504", 65519.998046875, 0x7bff, false},
    {"overflow tie 65520 -> inf", 65520.0, 0x7c00, true},
    {"-65520 -> -inf", -65520.0, 0xfc00, true},
    {"65536 -> inf", 65536.0, 0x7c00, true},
    {"1e10 -> inf", 1e10, 0x7c00, true},
    {"+inf", INFINITY, 0x7c00, true},
    {"-inf", -INFINITY, 0xfc00, true},
    {"+0", 0.0, 0x0000, true},
    {"-0", -0.0, 0x8000, true},
    {"smallest subnormal 2^-24", 0x1p-24, 0x0001, true},
    {"tie 2^-25 -> even +0", 0x1p-25, 0x0000, true},
    {"2^-25 + 2^-40 -> smallest subnormal", 0x1.0002p-25, 0x0001, true},
    {"tie 1.5 * 2^-24 -> even 2 * 2^-24", 0x1.8p-24, 0x0002, true},
    {"largest subnormal 1023 * 2^-24", 0x1.ff8p-15, 0x03ff, true},
    {"tie 1023.5 * 2^-24 -> smallest normal", 0x1.ffcp-15, 0x0400, true},
    {"smallest normal 2^-14", 0x1p-14, 0x0400, true},
    {"f64 subnormal 2^-1074 -> +0", 0x1p-1074, 0x0000, false},
};

static void check_rounding_table(const char *format, const rounding_case *cases, size_t count,
                                 uint16_t (*from_f64)(double), uint16_t (*from_f32)(float)) {
    for (size_t row = 0; row < count; row++) {
        const rounding_case *c = &cases[row];
        uint16_t got = from_f64(c->input);
        cr_expect_eq(got, c->expected, "%s from f64, %s (%a): got 0x%04x, expected 0x%04x", format, c->what, c->input,
                     got, c->expected);
        if (c->exact_in_f32) {
            cr_assert(same_value((double)(float)c->input, c->input), "table error: %s is not exact in f32", c->what);
            uint16_t got32 = from_f32((float)c->input);
            cr_expect_eq(got32, c->expected, "%s from f32, %s (%a): got 0x%04x, expected 0x%04x", format, c->what,
                         c->input, got32, c->expected);
        }
    }
}

static uint16_t f32_to_bf16_entry(float value) { return parity_f32_to_bf16(value); }
static uint16_t f64_to_bf16_entry(double value) { return parity_f64_to_bf16(value); }
static uint16_t f32_to_f16_entry(float value) { return parity_f32_to_f16(value); }
static uint16_t f64_to_f16_entry(double value) { return parity_f64_to_f16(value); }

Test(dtype, bf16_rounding_table) {
    check_rounding_table("bf16", bf16_cases, sizeof bf16_cases / sizeof bf16_cases[0], f64_to_bf16_entry,
                         f32_to_bf16_entry);
}

Test(dtype, f16_rounding_table) {
    check_rounding_table("f16", f16_cases, sizeof f16_cases / sizeof f16_cases[0], f64_to_f16_entry, f32_to_f16_entry);
}

Test(dtype, nan_converts_to_nan_with_its_sign) {
    static const struct {
        const char *what;
        uint64_t f64_bits;
    } nans[] = {
        {"+qNaN", 0x7ff8000000000000ull},
        {"-qNaN", 0xfff8000000000000ull},
        {"+sNaN with payload", 0x7ff0000000000001ull},
        {"-NaN with high payload", 0xfff4000000000000ull},
    };
    for (size_t row = 0; row < sizeof nans / sizeof nans[0]; row++) {
        double value = double_from_bits(nans[row].f64_bits);
        bool negative = (nans[row].f64_bits >> 63) != 0;
        uint16_t b64 = parity_f64_to_bf16(value), h64 = parity_f64_to_f16(value);
        cr_expect(bf16_is_nan(b64) && ((b64 >> 15) != 0) == negative, "f64->bf16 %s gave 0x%04x", nans[row].what, b64);
        cr_expect(f16_is_nan(h64) && ((h64 >> 15) != 0) == negative, "f64->f16 %s gave 0x%04x", nans[row].what, h64);
        float narrow = (float)value;
        if (isnan(narrow) && (signbit(narrow) != 0) == negative) { // the compiler's f64->f32 keeps the sign
            uint16_t b32 = parity_f32_to_bf16(narrow), h32 = parity_f32_to_f16(narrow);
            cr_expect(bf16_is_nan(b32) && ((b32 >> 15) != 0) == negative, "f32->bf16 %s gave 0x%04x", nans[row].what, b32);
            cr_expect(f16_is_nan(h32) && ((h32 >> 15) != 0) == negative, "f32->f16 %s gave 0x%04x", nans[row].what, h32);
        }
    }
    // An f32 NaN whose payload lives only in the low 16 bits must not truncate to infinity.
    uint16_t low_payload = parity_f32_to_bf16(float_from_bits(0x7f800001u));
    cr_expect(bf16_is_nan(low_payload), "f32 NaN 0x7f800001 -> bf16 0x%04x is not NaN", low_payload);
    uint16_t negative_low_payload = parity_f32_to_bf16(float_from_bits(0xff800001u));
    cr_expect(bf16_is_nan(negative_low_payload) && (negative_low_payload & 0x8000u),
              "f32 NaN 0xff800001 -> bf16 0x%04x", negative_low_payload);
}

// Rounding an f64 to f32 first and then to bf16/f16 rounds twice; these inputs sit just off a
// 16-bit tie by less than half an f32 ulp, so the f32 step lands exactly on the tie and the second
// step then breaks it the wrong way. The direct conversion must not.
typedef struct double_rounding_case {
    const char *what;
    double input;
    uint16_t direct;  // correct: one rounding from f64
    uint16_t via_f32; // what rounding through f32 gives (asserted, to prove the trap is real)
} double_rounding_case;

static const double_rounding_case bf16_double_rounding[] = {
    {"1 + 2^-8 + 2^-30 (above the tie) -> 1 + 2^-7", 0x1.01000004p0, 0x3f81, 0x3f80},
    {"1 + 3*2^-8 - 2^-30 (below the tie) -> 1 + 2^-7", 0x1.02fffffcp0, 0x3f81, 0x3f82},
    {"-(1 + 2^-8 + 2^-30)", -0x1.01000004p0, 0xbf81, 0xbf80},
    {"(1 + 2^-8 + 2^-30) * 2^100", 0x1.01000004p100, 0x7181, 0x7180},
};

static const double_rounding_case f16_double_rounding[] = {
    {"1 + 2^-11 + 2^-40 (above the tie) -> 1 + 2^-10", 0x1.0020000001p0, 0x3c01, 0x3c00},
    {"1 + 3*2^-11 - 2^-40 (below the tie) -> 1 + 2^-10", 0x1.005fffffffp0, 0x3c01, 0x3c02},
};

Test(dtype, f64_rounds_once_not_twice_through_f32) {
    for (size_t row = 0; row < sizeof bf16_double_rounding / sizeof bf16_double_rounding[0]; row++) {
        const double_rounding_case *c = &bf16_double_rounding[row];
        cr_expect_eq(parity_f64_to_bf16(c->input), c->direct, "bf16 %s: direct gave 0x%04x", c->what,
                     parity_f64_to_bf16(c->input));
        cr_expect_eq(parity_f32_to_bf16((float)c->input), c->via_f32, "bf16 %s: via f32 gave 0x%04x", c->what,
                     parity_f32_to_bf16((float)c->input));
        cr_expect_eq(parity_round_to_dtype(c->input, PARITY_BF16), parity_bf16_to_f64(c->direct),
                     "parity_round_to_dtype(bf16) %s", c->what);
    }
    for (size_t row = 0; row < sizeof f16_double_rounding / sizeof f16_double_rounding[0]; row++) {
        const double_rounding_case *c = &f16_double_rounding[row];
        cr_expect_eq(parity_f64_to_f16(c->input), c->direct, "f16 %s: direct gave 0x%04x", c->what,
                     parity_f64_to_f16(c->input));
        cr_expect_eq(parity_f32_to_f16((float)c->input), c->via_f32, "f16 %s: via f32 gave 0x%04x", c->what,
                     parity_f32_to_f16((float)c->input));
        cr_expect_eq(parity_round_to_dtype(c->input, PARITY_F16), parity_f16_to_f64(c->direct),
                     "parity_round_to_dtype(f16) %s", c->what);
    }
}

// ---- 3. brute force against the reference rounder ----------------------------------------------

enum { RANDOM_SAMPLES = 1000000 };

// Inputs are drawn so that most land where the format is interesting: one in four is an arbitrary bit
// pattern (NaN, inf, anything); the rest have an exponent inside [exponent_min, exponent_max] and the
// bits below the format's rounding position forced to a tie, one step below it, or one step above it.
typedef struct brute_force_case {
    const char *what;
    const format16 *format;
    bool from_f32;      // inputs are f32 values, else f64 values
    int kept_bits;      // significand bits of the format, hidden bit included (8 bf16, 11 f16)
    int exponent_min, exponent_max;
    uint16_t (*convert)(double value);
} brute_force_case;

static double random_input(const brute_force_case *c, uint64_t *state, long i) {
    uint64_t r = splitmix64(state);
    if (c->from_f32) {
        uint32_t bits = (uint32_t)r;
        if (i % 4 == 0) return (double)float_from_bits(bits);
        int span = c->exponent_max - c->exponent_min + 1;
        int exponent = c->exponent_min + (int)((r >> 32) % (uint64_t)span) + 127; // biased; 0 = subnormal
        if (exponent < 0) exponent = 0;
        if (exponent > 254) exponent = 254;
        int drop = 23 - (c->kept_bits - 1);
        uint32_t mantissa = bits & 0x7fffffu, tie = 1u << (drop - 1);
        uint32_t low = i % 4 == 1 ? tie : i % 4 == 2 ? tie - 1 : tie + 1;
        mantissa = (mantissa & ~((1u << drop) - 1)) | low;
        return (double)float_from_bits((bits & 0x80000000u) | ((uint32_t)exponent << 23) | mantissa);
    }
    if (i % 4 == 0) {
        double value = double_from_bits(r);
        return isnan(value) ? 1.0 : value; // NaN handling is covered elsewhere for f64
    }
    int span = c->exponent_max - c->exponent_min + 1;
    int exponent = c->exponent_min + (int)(splitmix64(state) % (uint64_t)span);
    int drop = 52 - (c->kept_bits - 1);
    uint64_t mantissa = r & 0x000fffffffffffffull, tie = 1ull << (drop - 1);
    uint64_t low = i % 4 == 1 ? tie : i % 4 == 2 ? tie - 1 : tie + 1;
    mantissa = (mantissa & ~((1ull << drop) - 1)) | low;
    double value = ldexp(1.0 + ldexp((double)mantissa, -52), exponent);
    return (r >> 63) ? -value : value;
}

static uint16_t convert_f32_to_bf16(double value) { return parity_f32_to_bf16((float)value); }
static uint16_t convert_f32_to_f16(double value) { return parity_f32_to_f16((float)value); }

static const brute_force_case brute_force_cases[] = {
    {"f32 -> bf16", &format_bf16, true, 8, -150, 128, convert_f32_to_bf16},
    {"f64 -> bf16", &format_bf16, false, 8, -140, 130, f64_to_bf16_entry},
    {"f32 -> f16", &format_f16, true, 11, -28, 17, convert_f32_to_f16},
    {"f64 -> f16", &format_f16, false, 11, -28, 17, f64_to_f16_entry},
};

Test(dtype, random_inputs_match_reference_rounding) {
    for (size_t row = 0; row < sizeof brute_force_cases / sizeof brute_force_cases[0]; row++) {
        const brute_force_case *c = &brute_force_cases[row];
        uint64_t state = 0x5eed0000u + row;
        long mismatches = 0, nans = 0, ties = 0;
        double first_bad = 0;
        uint16_t first_got = 0, first_expected = 0;
        for (long i = 0; i < RANDOM_SAMPLES; i++) {
            double input = random_input(c, &state, i);
            uint16_t got = c->convert(input);
            bool ok;
            if (isnan(input)) {
                nans++;
                ok = (c->format == &format_bf16 ? bf16_is_nan(got) : f16_is_nan(got)) &&
                     ((got & 0x8000u) != 0) == (signbit(input) != 0);
            } else {
                uint16_t expected = reference_round(c->format, input);
                ok = got == expected;
                if (!ok && mismatches == 0) {
                    first_bad = input;
                    first_got = got;
                    first_expected = expected;
                }
                // Count exact ties seen, to prove the generator reaches them.
                uint16_t rounded = expected & 0x7fffu;
                if (rounded > 0 && rounded < c->format->infinity) {
                    double value = c->format->decode(rounded);
                    double next = rounded == c->format->max_finite ? c->format->overflow_value
                                                                   : c->format->decode((uint16_t)(rounded + 1));
                    double previous = c->format->decode((uint16_t)(rounded - 1));
                    double magnitude = fabs(input);
                    if (magnitude == (value + next) / 2 || magnitude == (previous + value) / 2) ties++;
                }
            }
            if (!ok) mismatches++;
        }
        cr_log_info("dtype %s: %d random inputs, %ld exact ties, %ld NaNs, %ld mismatches", c->what, RANDOM_SAMPLES,
                    ties, nans, mismatches);
        cr_expect_eq(mismatches, 0, "%s: %ld of %d random inputs differ from the reference; first %a: got 0x%04x, "
                     "expected 0x%04x", c->what, mismatches, RANDOM_SAMPLES, first_bad, first_got, first_expected);
        cr_expect_gt(ties, RANDOM_SAMPLES / 10, "%s: the generator reached only %ld exact ties", c->what, ties);
        if (c->from_f32) cr_expect_gt(nans, 0, "%s: the random f32 patterns should include NaNs", c->what);
    }
}

// The reference rounder itself must agree with the hand table, or the brute force proves nothing.
Test(dtype, reference_rounder_agrees_with_tables) {
    for (size_t row = 0; row < sizeof bf16_cases / sizeof bf16_cases[0]; row++)
        cr_expect_eq(reference_round(&format_bf16, bf16_cases[row].input), bf16_cases[row].expected, "bf16 %s",
                     bf16_cases[row].what);
    for (size_t row = 0; row < sizeof f16_cases / sizeof f16_cases[0]; row++)
        cr_expect_eq(reference_round(&format_f16, f16_cases[row].input), f16_cases[row].expected, "f16 %s",
                     f16_cases[row].what);
}

// ---- dtype names, sizes, parsing ---------------------------------------------------------------

Test(dtype, names_sizes_and_kinds) {
    static const struct {
        parity_dtype dtype;
        const char *name;
        size_t size;
        bool is_float;
    } rows[] = {
        {PARITY_F64, "fp64", 8, true},   {PARITY_F32, "fp32", 4, true},   {PARITY_BF16, "bf16", 2, true},
        {PARITY_F16, "fp16", 2, true},   {PARITY_I64, "int64", 8, false}, {PARITY_I32, "int32", 4, false},
        {PARITY_U8, "uint8", 1, false},  {PARITY_DTYPE_COUNT, "unknown", 0, false},
    };
    for (size_t row = 0; row < sizeof rows / sizeof rows[0]; row++) {
        cr_expect_str_eq(parity_dtype_name(rows[row].dtype), rows[row].name);
        cr_expect_eq(parity_dtype_size(rows[row].dtype), rows[row].size, "size of %s", rows[row].name);
        cr_expect_eq(parity_dtype_is_float(rows[row].dtype), rows[row].is_float, "is_float of %s", rows[row].name);
        parity_dtype parsed = PARITY_DTYPE_COUNT;
        if (rows[row].dtype != PARITY_DTYPE_COUNT) {
            cr_expect(parity_dtype_parse(rows[row].name, &parsed), "own name %s does not parse", rows[row].name);
            cr_expect_eq(parsed, rows[row].dtype, "own name %s parses to %d", rows[row].name, (int)parsed);
        }
    }
}

Test(dtype, parse_spellings) {
    static const struct {
        const char *text;
        bool ok;
        parity_dtype expected;
    } rows[] = {
        {"fp64", true, PARITY_F64},      {"f64", true, PARITY_F64},       {"float64", true, PARITY_F64},
        {"double", true, PARITY_F64},    {"F64", true, PARITY_F64},       {"fp32", true, PARITY_F32},
        {"float32", true, PARITY_F32},   {"float", true, PARITY_F32},     {"F32", true, PARITY_F32},
        {"bf16", true, PARITY_BF16},     {"BF16", true, PARITY_BF16},     {"bfloat16", true, PARITY_BF16},
        {"fp16", true, PARITY_F16},      {"F16", true, PARITY_F16},       {"float16", true, PARITY_F16},
        {"half", true, PARITY_F16},      {"int64", true, PARITY_I64},     {"I64", true, PARITY_I64},
        {"int32", true, PARITY_I32},     {"I32", true, PARITY_I32},       {"uint8", true, PARITY_U8},
        {"U8", true, PARITY_U8},         {"fp8", false, 0},               {"F8_E4M3", false, 0},
        {"BOOL", false, 0},              {"", false, 0},                  {"bf16 ", false, 0},
        {"float128", false, 0},          {"b", false, 0},
    };
    for (size_t row = 0; row < sizeof rows / sizeof rows[0]; row++) {
        parity_dtype parsed = PARITY_DTYPE_COUNT;
        bool ok = parity_dtype_parse(rows[row].text, &parsed);
        cr_expect_eq(ok, rows[row].ok, "parse \"%s\" returned %d", rows[row].text, ok);
        if (rows[row].ok) cr_expect_eq(parsed, rows[row].expected, "parse \"%s\" gave %d", rows[row].text, (int)parsed);
        else cr_expect_eq(parsed, PARITY_DTYPE_COUNT, "failed parse of \"%s\" wrote its output", rows[row].text);
    }
    parity_dtype untouched = PARITY_DTYPE_COUNT;
    cr_expect_not(parity_dtype_parse(NULL, &untouched), "NULL name parses");
}
