// eager.c: the reference SwiGLU on the CPU (value "eager"), as HF's MLP computes it:
//   s = act_fn(gate)   silu in f32, stored in the activation dtype
//   y = s * up         product rounded to the activation dtype
// Backward follows autograd: dup = dy * s and ds = dy * up, each stored in the activation dtype,
// then dgate = silu_backward(ds, gate) (f32 math, stored once). f64 is pure f64. Nothing is saved:
// s is recomputed from gate.
#include "ops/core/cpu_math.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
#include "ops/swiglu/silu.h"
#include "ops/swiglu/swiglu.h"

// A product or activation as a tensor of the dtype holds it.
static double stored(double value, parity_dtype dtype) {
    return parity_round_storage(parity_round_compute(value, dtype), dtype);
}

static parity_error *check_cpu_tensors(const parity_swiglu_args *args) {
    PARITY_TRY(parity_check_cpu("swiglu", "gate", args->gate));
    PARITY_TRY(parity_check_cpu("swiglu", "up", args->up));
    PARITY_TRY(parity_check_cpu("swiglu", "output", args->output));
    return NULL;
}

static parity_error *swiglu_eager_forward(const parity_exec *exec, const parity_swiglu_args *args,
                                          parity_saved *saved) {
    PARITY_TRY(parity_swiglu_check(args));
    PARITY_TRY(check_cpu_tensors(args));
    parity_dtype dtype = args->gate->dtype;
    int64_t count = args->gate->numel;
    parity_cpu_values gate, up, y;
    PARITY_TRY(parity_cpu_values_load(args->gate, "swiglu gate", &gate));
    PARITY_TRY(parity_cpu_values_load(args->up, "swiglu up", &up));
    PARITY_TRY(parity_cpu_values_new(count, &y));
    for (int64_t i = 0; i < count; i++) {
        double activation = stored(parity_silu(gate.data[i], dtype), dtype);
        y.data[i] = stored(activation * up.data[i], dtype);
    }
    parity_cpu_values_store(args->output, y.data);
    parity_cpu_values_free(&gate);
    parity_cpu_values_free(&up);
    parity_cpu_values_free(&y);
    return NULL;
}

static parity_error *swiglu_eager_backward(const parity_exec *exec, const parity_swiglu_args *args,
                                           const parity_saved *saved, const parity_swiglu_grads *grads) {
    PARITY_TRY(parity_swiglu_check(args));
    PARITY_TRY(parity_swiglu_check_grads(args, grads));
    parity_dtype dtype = args->gate->dtype;
    int64_t count = args->gate->numel;
    parity_cpu_values gate, up, dy, dgate, dup;
    PARITY_TRY(parity_cpu_values_load(args->gate, "swiglu gate", &gate));
    PARITY_TRY(parity_cpu_values_load(args->up, "swiglu up", &up));
    PARITY_TRY(parity_cpu_values_load(grads->doutput, "swiglu doutput", &dy));
    PARITY_TRY(parity_cpu_values_new(count, &dgate));
    PARITY_TRY(parity_cpu_values_new(count, &dup));
    for (int64_t i = 0; i < count; i++) {
        double activation = stored(parity_silu(gate.data[i], dtype), dtype);
        dup.data[i] = stored(dy.data[i] * activation, dtype);
        double dactivation = stored(dy.data[i] * up.data[i], dtype);
        dgate.data[i] = stored(parity_silu_backward(dactivation, gate.data[i], dtype), dtype);
    }
    if (grads->dgate) parity_cpu_values_store(grads->dgate, dgate.data);
    if (grads->dup) parity_cpu_values_store(grads->dup, dup.data);
    parity_cpu_values_free(&gate);
    parity_cpu_values_free(&up);
    parity_cpu_values_free(&dy);
    parity_cpu_values_free(&dgate);
    parity_cpu_values_free(&dup);
    return NULL;
}

static const parity_swiglu_kernels swiglu_eager_kernels = {swiglu_eager_forward, swiglu_eager_backward};

PARITY_BACKEND_REGISTRATION(swiglu, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_SWIGLU,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC,
        .kernels = &swiglu_eager_kernels,
        .description = "reference SwiGLU silu(gate) * up, f64/f32/bf16",
    });
}
