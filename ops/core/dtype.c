// dtype.c: dtype sizes and names (the conversions themselves are inline in dtype.h).
#include "ops/core/dtype.h"

#include <strings.h>

static const struct {
    const char *name;
    size_t size;
} dtype_table[PARITY_DTYPE_COUNT] = {
    [PARITY_F64] = {"fp64", 8}, [PARITY_F32] = {"fp32", 4}, [PARITY_BF16] = {"bf16", 2},
    [PARITY_F16] = {"fp16", 2}, [PARITY_I64] = {"int64", 8}, [PARITY_I32] = {"int32", 4},
    [PARITY_U8] = {"uint8", 1},
};

size_t parity_dtype_size(parity_dtype dtype) {
    return (unsigned)dtype < PARITY_DTYPE_COUNT ? dtype_table[dtype].size : 0;
}

const char *parity_dtype_name(parity_dtype dtype) {
    return (unsigned)dtype < PARITY_DTYPE_COUNT ? dtype_table[dtype].name : "unknown";
}

bool parity_dtype_is_float(parity_dtype dtype) {
    return dtype == PARITY_F64 || dtype == PARITY_F32 || dtype == PARITY_BF16 || dtype == PARITY_F16;
}

bool parity_dtype_parse(const char *name, parity_dtype *out) {
    static const struct {
        const char *spelling;
        parity_dtype dtype;
    } spellings[] = {
        {"fp64", PARITY_F64},  {"f64", PARITY_F64},   {"float64", PARITY_F64}, {"double", PARITY_F64},
        {"fp32", PARITY_F32},  {"f32", PARITY_F32},   {"float32", PARITY_F32}, {"float", PARITY_F32},
        {"bf16", PARITY_BF16}, {"bfloat16", PARITY_BF16},
        {"fp16", PARITY_F16},  {"f16", PARITY_F16},   {"float16", PARITY_F16}, {"half", PARITY_F16},
        {"int64", PARITY_I64}, {"i64", PARITY_I64},
        {"int32", PARITY_I32}, {"i32", PARITY_I32},
        {"uint8", PARITY_U8},  {"u8", PARITY_U8},
    };
    if (!name) return false;
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
        if (strcasecmp(name, spellings[i].spelling) == 0) {
            *out = spellings[i].dtype;
            return true;
        }
    }
    return false;
}
