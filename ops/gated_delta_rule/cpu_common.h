// cpu_common.h: what every CPU gated_delta_rule backend (eager = recurrent, fla = chunked) shares
// around its core recurrence: validation and loading of a call, the q/k preparation HF does before
// the loop (repeat_interleave to the value heads, cast to the compute precision, optional L2 norm
// with eps 1e-6, q * scale), and the way back for the gradients (scale, L2-norm backward per value
// head, cast back to the input dtype, sum over the value heads of each key head).
#ifndef PARITY_GATED_DELTA_RULE_CPU_COMMON_H
#define PARITY_GATED_DELTA_RULE_CPU_COMMON_H

#include "ops/core/cpu_math.h"
#include "ops/core/cu_seqlens.h"
#include "ops/gated_delta_rule/gated_delta_rule.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parity_gated_delta_rule_cpu_call {
    parity_gated_delta_rule_sizes sizes;
    parity_documents documents;
    parity_dtype dtype;          // the call's (storage) dtype
    parity_dtype compute;        // f64 for f64 calls, f32 otherwise
    double scale;                // the effective scale, rounded to the compute precision
    int64_t group;               // Hv / Hk: value heads per key head
    parity_cpu_values query, key;     // (N, Hk, Dk) as given
    parity_cpu_values value;          // (N, Hv, Dv)
    parity_cpu_values g, beta;        // (N, Hv)
    double *prepared_query;      // (N, Hk, Dk): l2norm(q) * scale (or q * scale), compute precision
    double *prepared_key;        // (N, Hk, Dk): l2norm(k) (or k)
    double *query_inverse_norm;  // (N, Hk) when use_qk_l2norm, else NULL
    double *key_inverse_norm;    // (N, Hk) when use_qk_l2norm, else NULL
} parity_gated_delta_rule_cpu_call;

// Validates (parity_gated_delta_rule_check, CPU tensors, cu_seqlens values), loads and prepares.
// On error nothing is left allocated.
parity_error *parity_gated_delta_rule_cpu_load(const parity_gated_delta_rule_args *args,
                                               parity_gated_delta_rule_cpu_call *call);
void parity_gated_delta_rule_cpu_free(parity_gated_delta_rule_cpu_call *call);

// The key head that value head `value_head` reads (repeat_interleave: consecutive value heads share one).
static inline int64_t parity_gated_delta_rule_key_head(const parity_gated_delta_rule_cpu_call *call, int64_t value_head) {
    return value_head / call->group;
}

// Turns the gradients of the prepared q and k of every value head, (N, Hv, Dk) in the compute
// precision, into dquery and dkey (N, Hk, Dk) and stores them (either may be NULL in `grads`).
parity_error *parity_gated_delta_rule_cpu_store_qk_grads(const parity_gated_delta_rule_args *args,
                                                         const parity_gated_delta_rule_grads *grads,
                                                         const parity_gated_delta_rule_cpu_call *call,
                                                         const double *dprepared_query, const double *dprepared_key);

#ifdef __cplusplus
}
#endif
#endif
