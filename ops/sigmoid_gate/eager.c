// eager.c: the reference sigmoid gate on the CPU (value "eager"), as HF computes x * torch.sigmoid(gate):
//   s = sigmoid(gate)    in the compute precision, stored: rounded to the storage dtype (a bf16 tensor)
//   y = x * s            rounded once to the storage dtype (s broadcast over D when gate is (N, 1))
// Backward (saves nothing; s is recomputed), as autograd runs mul and sigmoid backward in bf16:
//   dx    = dy * s                                    rounded to storage
//   ds    = sum over the broadcast group of dy * x    each product rounded to storage (mul's backward),
//                                                     the sum accumulated in the compute precision and
//                                                     rounded once (autograd's sum_to_size)
//   dgate = ds * (1 - s) * s                          sigmoid_backward, whose CUDA kernel computes in the
//                                                     storage type: (1 - s) and each product rounded to
//                                                     storage (f32 math rounded once differs by up to
//                                                     2 ulp; checked bit for bit against PyTorch 2.11)
#include <math.h>

#include "ops/core/cpu_math.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
#include "ops/sigmoid_gate/sigmoid_gate.h"

// One operation's result in the compute precision, then held in the storage dtype.
static double stored(double value, parity_dtype dtype) {
    return parity_round_storage(parity_round_compute(value, dtype), dtype);
}

// sigmoid(g) as a stored tensor of the run's dtype.
static double stored_sigmoid(double gate, parity_dtype dtype) { return stored(1.0 / (1.0 + exp(-gate)), dtype); }

static parity_error *sigmoid_gate_eager_forward(const parity_exec *exec, const parity_sigmoid_gate_args *args,
                                                parity_saved *saved) {
    int64_t rows, width, group;
    PARITY_TRY(parity_sigmoid_gate_check(args, &rows, &width, &group));
    PARITY_TRY(parity_check_cpu("sigmoid_gate", "input", args->input));
    parity_dtype dtype = args->input->dtype;

    parity_cpu_values x = {0}, gate = {0}, y = {0};
    parity_error *error = parity_cpu_values_load(args->input, "sigmoid_gate input", &x);
    if (!error) error = parity_cpu_values_load(args->gate, "sigmoid_gate gate", &gate);
    if (!error) error = parity_cpu_values_new(rows * width, &y);
    if (!error) {
        for (int64_t i = 0; i < rows * width; i++)
            y.data[i] = parity_round_compute(x.data[i] * stored_sigmoid(gate.data[i / group], dtype), dtype);
        parity_cpu_values_store(args->output, y.data);
    }
    parity_cpu_values_free(&x);
    parity_cpu_values_free(&gate);
    parity_cpu_values_free(&y);
    return error;
}

static parity_error *sigmoid_gate_eager_backward(const parity_exec *exec, const parity_sigmoid_gate_args *args,
                                                 const parity_saved *saved, const parity_sigmoid_gate_grads *grads) {
    int64_t rows, width, group;
    PARITY_TRY(parity_sigmoid_gate_check(args, &rows, &width, &group));
    PARITY_TRY(parity_sigmoid_gate_check_grads(args, grads));
    parity_dtype dtype = args->input->dtype;
    int64_t gates = rows * width / group;

    parity_cpu_values x = {0}, gate = {0}, dy = {0}, dx = {0}, dgate = {0};
    parity_error *error = parity_cpu_values_load(args->input, "sigmoid_gate input", &x);
    if (!error) error = parity_cpu_values_load(args->gate, "sigmoid_gate gate", &gate);
    if (!error) error = parity_cpu_values_load(grads->doutput, "sigmoid_gate doutput", &dy);
    if (!error) error = parity_cpu_values_new(rows * width, &dx);
    if (!error) error = parity_cpu_values_new(gates, &dgate);
    if (!error) {
        for (int64_t g = 0; g < gates; g++) {
            double s = stored_sigmoid(gate.data[g], dtype);
            double ds = 0;
            for (int64_t i = g * group; i < (g + 1) * group; i++) {
                dx.data[i] = parity_round_compute(dy.data[i] * s, dtype);
                ds = parity_round_compute(ds + stored(dy.data[i] * x.data[i], dtype), dtype);
            }
            ds = parity_round_storage(ds, dtype);
            double one_minus_s = stored(1.0 - s, dtype);
            dgate.data[g] = stored(stored(ds * one_minus_s, dtype) * s, dtype);
        }
        if (grads->dinput) parity_cpu_values_store(grads->dinput, dx.data);
        if (grads->dgate) parity_cpu_values_store(grads->dgate, dgate.data);
    }
    parity_cpu_values_free(&x);
    parity_cpu_values_free(&gate);
    parity_cpu_values_free(&dy);
    parity_cpu_values_free(&dx);
    parity_cpu_values_free(&dgate);
    return error;
}

static const parity_sigmoid_gate_kernels sigmoid_gate_eager_kernels = {sigmoid_gate_eager_forward,
                                                                       sigmoid_gate_eager_backward};

PARITY_BACKEND_REGISTRATION(sigmoid_gate, eager, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_SIGMOID_GATE,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC,
        .kernels = &sigmoid_gate_eager_kernels,
        .description = "reference x * sigmoid(gate), gate of x's shape or broadcast over the last dim, f64/f32/bf16",
    });
}
