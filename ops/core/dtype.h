// dtype.h: element types and exact conversions. bf16 and f16 are stored as uint16_t bit patterns;
// every conversion into them rounds to nearest, ties to even, directly from the source precision
// (f64 -> bf16 does not round twice through f32). Callable from host and device code.
#ifndef PARITY_DTYPE_H
#define PARITY_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define PARITY_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define PARITY_HOST_DEVICE static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum parity_dtype {
    PARITY_F64 = 0,
    PARITY_F32,
    PARITY_BF16,
    PARITY_F16,
    PARITY_I64,
    PARITY_I32,
    PARITY_U8,
    PARITY_DTYPE_COUNT
} parity_dtype;

// Bit masks of dtypes, for backend capability flags.
#define PARITY_DTYPE_BIT(dtype) (1u << (dtype))
#define PARITY_FLOAT_DTYPES (PARITY_DTYPE_BIT(PARITY_F64) | PARITY_DTYPE_BIT(PARITY_F32) | PARITY_DTYPE_BIT(PARITY_BF16))

size_t parity_dtype_size(parity_dtype dtype);
// "fp64", "fp32", "bf16", "fp16", "int64", "int32", "uint8".
const char *parity_dtype_name(parity_dtype dtype);
// Accepts the names above and the spellings "f64", "float64", "float32", "bfloat16", "float16", "F32"
// (safetensors), ...; returns false when the name is unknown.
bool parity_dtype_parse(const char *name, parity_dtype *out);
bool parity_dtype_is_float(parity_dtype dtype);

// ---- exact conversions (bit-level, no reliance on hardware rounding modes) ----

PARITY_HOST_DEVICE uint32_t parity_f32_bits(float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

PARITY_HOST_DEVICE float parity_f32_from_bits(uint32_t bits) {
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

PARITY_HOST_DEVICE uint64_t parity_f64_bits(double value) {
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

PARITY_HOST_DEVICE float parity_bf16_to_f32(uint16_t bf16) { return parity_f32_from_bits((uint32_t)bf16 << 16); }

PARITY_HOST_DEVICE uint16_t parity_f32_to_bf16(float value) {
    uint32_t bits = parity_f32_bits(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x0040u); // quiet NaN, keep sign
    uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);                                // ties to even
    return (uint16_t)((bits + rounding) >> 16);                                         // overflow -> inf
}

// f64 -> bf16 in one rounding step: bf16 keeps the top 16 bits of the f32 layout, i.e. an 8-bit
// significand; we round the f64 significand directly to 8 bits (with subnormals and overflow).
PARITY_HOST_DEVICE uint16_t parity_f64_to_bf16(double value) {
    uint64_t bits = parity_f64_bits(value);
    uint16_t sign = (uint16_t)((bits >> 48) & 0x8000u);
    uint64_t magnitude = bits & 0x7fffffffffffffffull;
    if (magnitude > 0x7ff0000000000000ull) return (uint16_t)(sign | 0x7fc0u);
    if (magnitude == 0x7ff0000000000000ull) return (uint16_t)(sign | 0x7f80u);
    int exponent = (int)(magnitude >> 52) - 1023;                  // unbiased
    uint64_t significand = magnitude & 0x000fffffffffffffull;
    if ((magnitude >> 52) == 0) return sign;                        // f64 subnormal: far below bf16 range
    significand |= 1ull << 52;                                      // 53-bit significand
    // bf16: normal exponents -126..127, 7 stored bits; subnormals down to 2^-133.
    int shift;                                                      // bits of the 53-bit significand to drop
    int result_exponent;
    if (exponent >= -126) {
        shift = 52 - 7;
        result_exponent = exponent + 127;
    } else {
        shift = 52 - 7 + (-126 - exponent);
        result_exponent = 0;
        if (shift > 54) return sign;                                // rounds to zero
    }
    uint64_t kept = significand >> shift;
    uint64_t remainder = significand & ((1ull << shift) - 1);
    uint64_t half = 1ull << (shift - 1);
    if (remainder > half || (remainder == half && (kept & 1u))) kept += 1;
    uint32_t result;
    if (result_exponent == 0) {
        result = (uint32_t)kept;                                    // may carry into the smallest normal: correct
    } else {
        if (kept >> 8) { kept >>= 1; result_exponent += 1; }        // carry out of the significand
        if (result_exponent >= 255) return (uint16_t)(sign | 0x7f80u);
        result = ((uint32_t)result_exponent << 7) | ((uint32_t)kept & 0x7fu);
    }
    return (uint16_t)(sign | result);
}

PARITY_HOST_DEVICE double parity_bf16_to_f64(uint16_t bf16) { return (double)parity_bf16_to_f32(bf16); }

// f16 (IEEE binary16): exponent bias 15, 10 stored bits, subnormals down to 2^-24.
PARITY_HOST_DEVICE double parity_f16_to_f64(uint16_t half) {
    int sign = half >> 15;
    int exponent = (half >> 10) & 0x1f;
    int fraction = half & 0x3ff;
    double magnitude;
    if (exponent == 0) {
        magnitude = (double)fraction * (1.0 / 16777216.0); // 2^-24
    } else if (exponent == 31) {
        uint64_t bits = fraction ? 0x7ff8000000000000ull : 0x7ff0000000000000ull;
        memcpy(&magnitude, &bits, sizeof magnitude);
    } else {
        magnitude = (double)(fraction | 0x400);
        int power = exponent - 25;
        while (power > 0) { magnitude *= 2.0; power--; }
        while (power < 0) { magnitude *= 0.5; power++; }
    }
    return sign ? -magnitude : magnitude;
}

PARITY_HOST_DEVICE float parity_f16_to_f32(uint16_t half) { return (float)parity_f16_to_f64(half); }

PARITY_HOST_DEVICE uint16_t parity_f64_to_f16(double value) {
    uint64_t bits = parity_f64_bits(value);
    uint16_t sign = (uint16_t)((bits >> 48) & 0x8000u);
    uint64_t magnitude = bits & 0x7fffffffffffffffull;
    if (magnitude > 0x7ff0000000000000ull) return (uint16_t)(sign | 0x7e00u);
    if (magnitude == 0x7ff0000000000000ull) return (uint16_t)(sign | 0x7c00u);
    if ((magnitude >> 52) == 0) return sign;
    int exponent = (int)(magnitude >> 52) - 1023;
    uint64_t significand = (magnitude & 0x000fffffffffffffull) | (1ull << 52);
    int shift, result_exponent;
    if (exponent >= -14) {
        shift = 52 - 10;
        result_exponent = exponent + 15;
    } else {
        shift = 52 - 10 + (-14 - exponent);
        result_exponent = 0;
        if (shift > 54) return sign;
    }
    if (result_exponent >= 31) return (uint16_t)(sign | 0x7c00u);
    uint64_t kept = significand >> shift;
    uint64_t remainder = significand & ((1ull << shift) - 1);
    uint64_t half = 1ull << (shift - 1);
    if (remainder > half || (remainder == half && (kept & 1u))) kept += 1;
    uint32_t result;
    if (result_exponent == 0) {
        result = (uint32_t)kept;
    } else {
        if (kept >> 11) { kept >>= 1; result_exponent += 1; }
        if (result_exponent >= 31) return (uint16_t)(sign | 0x7c00u);
        result = ((uint32_t)result_exponent << 10) | ((uint32_t)kept & 0x3ffu);
    }
    return (uint16_t)(sign | result);
}

// f32 -> f16 is exact through f64 (f32 -> f64 is exact, then one rounding).
PARITY_HOST_DEVICE uint16_t parity_f32_to_f16(float value) { return parity_f64_to_f16((double)value); }

// Rounds a value to what the dtype can hold and back (for emulating storage precision).
PARITY_HOST_DEVICE double parity_round_to_dtype(double value, parity_dtype dtype) {
    switch (dtype) {
    case PARITY_F32: return (double)(float)value;
    case PARITY_BF16: return parity_bf16_to_f64(parity_f64_to_bf16(value));
    case PARITY_F16: return parity_f16_to_f64(parity_f64_to_f16(value));
    default: return value;
    }
}

#ifdef __cplusplus
}
#endif
#endif
