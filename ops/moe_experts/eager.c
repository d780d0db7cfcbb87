// eager.c: the reference MoE experts on the CPU (value "eager"): HF's loop over the experts hit
// (see moe_experts.h), with bf16 rounding at every tensor HF stores. f32 arithmetic as the CUDA
// kernels do it: silu(x) = x / (1 + exp(-x)); matmuls through parity_cpu_gemm (sgemm on f32 copies,
// f32 accumulation, rounded to the storage dtype). Saves nothing: backward recomputes each expert's
// activations, bit-identical to the forward's.
//
// Backward per expert e and row r = (token t, slot k), with g = doutput[t] and w = weights[t, k]:
//   dw[t, k] = sum_h g * y         (products rounded to w's dtype, f32 sum)   dy = g * w
//   dh = dy D_e    dD_e = dy^T h    da = dh * up    dup = dh * silu(gate)
//   dgate = da * s * (1 + gate * (1 - s)), s = sigmoid(gate)    (torch's silu_backward)
//   dW_e = [dgate, dup]^T x          dx = [dgate, dup] W_e
//   dhidden[t] += dx, experts in descending order: autograd runs the later experts' backward
//   first, so hidden's gradient buffer adds them in that order (each add rounded in bf16).
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "ops/core/cpu_gemm.h"
#include "ops/core/cpu_math.h"
#include "ops/moe_experts/moe_experts.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

// C (M, N) = op(A) op(B) rounded to `dtype`; A is (M, K) (stored (K, M) when transposed), B is (K, N)
// (stored (N, K) when transposed). The GEMM is parity_cpu_gemm (f32 accumulation below f64).
static parity_error *matmul(parity_dtype dtype, bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k,
                            const double *a, const double *b, double *c) {
    parity_cpu_gemm_shape shape = {.batch = 1, .m = m, .n = n, .k = k, .transpose_a = transpose_a, .transpose_b = transpose_b};
    PARITY_TRY_CONTEXT(parity_cpu_gemm(dtype, shape, a, b, false, c), "moe_experts: matmul of (%lld, %lld) x (%lld, %lld)",
                       (long long)m, (long long)k, (long long)k, (long long)n);
    if (dtype != PARITY_F64)
        for (int64_t i = 0; i < m * n; i++) c[i] = parity_round_storage(c[i], dtype);
    return NULL;
}

static double sigmoid_compute(double x, parity_dtype dtype) {
    return parity_round_compute(1.0 / parity_round_compute(1.0 + parity_round_compute(exp(-x), dtype), dtype), dtype);
}

static double silu_compute(double x, parity_dtype dtype) {
    return parity_round_compute(x / parity_round_compute(1.0 + parity_round_compute(exp(-x), dtype), dtype), dtype);
}

// dy * s * (1 + x * (1 - s)), left to right, as torch's silu_backward
static double silu_backward_compute(double dy, double x, parity_dtype dtype) {
    double s = sigmoid_compute(x, dtype);
    double inner = parity_round_compute(1.0 + parity_round_compute(x * parity_round_compute(1.0 - s, dtype), dtype), dtype);
    return parity_round_compute(parity_round_compute(dy * s, dtype) * inner, dtype);
}

// Everything one expert computes for its rows (R <= N * K rows, buffers sized for N * K).
typedef struct expert_work {
    int64_t rows;
    int64_t *tokens, *slots; // (R)
    double *x;               // (R, H) hidden rows
    double *gate_up;         // (R, 2I)
    double *activated;       // (R, I) silu(gate)
    double *product;         // (R, I) silu(gate) * up
    double *y;               // (R, H) down projection
    double *dy, *dproduct, *dgate_up, *dx; // backward only
} expert_work;

static void work_free(expert_work *work) {
    free(work->tokens);
    free(work->slots);
    free(work->x);
    free(work->gate_up);
    free(work->activated);
    free(work->product);
    free(work->y);
    free(work->dy);
    free(work->dproduct);
    free(work->dgate_up);
    free(work->dx);
}

static parity_error *work_alloc(expert_work *work, const parity_moe_experts_sizes *sizes, bool backward) {
    *work = (expert_work){0};
    size_t rows = (size_t)(sizes->tokens * sizes->top_k > 0 ? sizes->tokens * sizes->top_k : 1);
    size_t hidden = (size_t)sizes->hidden, intermediate = (size_t)sizes->intermediate;
    work->tokens = malloc(rows * sizeof(int64_t));
    work->slots = malloc(rows * sizeof(int64_t));
    work->x = malloc(rows * hidden * sizeof(double));
    work->gate_up = malloc(rows * 2 * intermediate * sizeof(double));
    work->activated = malloc(rows * intermediate * sizeof(double));
    work->product = malloc(rows * intermediate * sizeof(double));
    work->y = malloc(rows * hidden * sizeof(double));
    bool ok = work->tokens && work->slots && work->x && work->gate_up && work->activated && work->product && work->y;
    if (backward) {
        work->dy = malloc(rows * hidden * sizeof(double));
        work->dproduct = malloc(rows * intermediate * sizeof(double));
        work->dgate_up = malloc(rows * 2 * intermediate * sizeof(double));
        work->dx = malloc(rows * hidden * sizeof(double));
        ok = ok && work->dy && work->dproduct && work->dgate_up && work->dx;
    }
    if (ok) return NULL;
    work_free(work);
    return PARITY_ERROR(PARITY_ERROR_MEMORY, "moe_experts: scratch for %zu rows", rows);
}

// Rows of expert `e` in torch.where order over the (K, N) mask: slot-major, then token.
static void collect_rows(const int64_t *indices, const parity_moe_experts_sizes *sizes, int64_t expert, expert_work *work) {
    work->rows = 0;
    for (int64_t k = 0; k < sizes->top_k; k++)
        for (int64_t t = 0; t < sizes->tokens; t++)
            if (indices[t * sizes->top_k + k] == expert) {
                work->tokens[work->rows] = t;
                work->slots[work->rows] = k;
                work->rows++;
            }
}

// x, gate_up, activated, product, y of the collected rows.
static parity_error *expert_forward(parity_dtype dtype, const parity_moe_experts_sizes *sizes, const double *hidden,
                                    const double *gate_up_proj, const double *down_proj, expert_work *work) {
    int64_t rows = work->rows, H = sizes->hidden, intermediate = sizes->intermediate;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t h = 0; h < H; h++) work->x[r * H + h] = hidden[work->tokens[r] * H + h];
    PARITY_TRY(matmul(dtype, false, true, rows, 2 * intermediate, H, work->x, gate_up_proj, work->gate_up));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < intermediate; i++) {
            const double *gate_up = work->gate_up + r * 2 * intermediate;
            double gate = gate_up[i], up = gate_up[intermediate + i];
            double activated = parity_round_storage(silu_compute(gate, dtype), dtype);
            work->activated[r * intermediate + i] = activated;
            work->product[r * intermediate + i] = parity_round_storage(parity_round_compute(activated * up, dtype), dtype);
        }
    return matmul(dtype, false, true, rows, H, intermediate, work->product, down_proj, work->y);
}

typedef struct experts_inputs {
    parity_cpu_values hidden, gate_up_proj, down_proj, weights;
    int64_t *indices;
} experts_inputs;

static void inputs_free(experts_inputs *inputs) {
    parity_cpu_values_free(&inputs->hidden);
    parity_cpu_values_free(&inputs->gate_up_proj);
    parity_cpu_values_free(&inputs->down_proj);
    parity_cpu_values_free(&inputs->weights);
    free(inputs->indices);
}

static parity_error *inputs_load(const parity_moe_experts_args *args, experts_inputs *inputs) {
    *inputs = (experts_inputs){0};
    PARITY_TRY(parity_check_cpu("moe_experts", "hidden", args->hidden));
    PARITY_TRY(parity_check_cpu("moe_experts", "gate_up_proj", args->gate_up_proj));
    PARITY_TRY(parity_check_cpu("moe_experts", "down_proj", args->down_proj));
    PARITY_TRY(parity_check_cpu("moe_experts", "expert_indices", args->expert_indices));
    PARITY_TRY(parity_check_cpu("moe_experts", "routing_weights", args->routing_weights));
    parity_error *error = parity_cpu_values_load(args->hidden, "moe_experts hidden", &inputs->hidden);
    if (!error) error = parity_cpu_values_load(args->gate_up_proj, "moe_experts gate_up_proj", &inputs->gate_up_proj);
    if (!error) error = parity_cpu_values_load(args->down_proj, "moe_experts down_proj", &inputs->down_proj);
    if (!error) error = parity_cpu_values_load(args->routing_weights, "moe_experts routing_weights", &inputs->weights);
    if (!error) error = parity_cpu_indices_load(args->expert_indices, "moe_experts expert_indices", &inputs->indices);
    if (error) inputs_free(inputs);
    return error;
}

static parity_error *moe_experts_eager_forward(const parity_exec *exec, const parity_moe_experts_args *args,
                                               parity_saved *saved) {
    parity_moe_experts_sizes sizes;
    PARITY_TRY(parity_moe_experts_check(args, &sizes));
    parity_dtype dtype = args->hidden->dtype;
    int64_t H = sizes.hidden, intermediate = sizes.intermediate, K = sizes.top_k;
    experts_inputs in;
    PARITY_TRY(inputs_load(args, &in));
    expert_work work;
    parity_cpu_values output;
    parity_error *error = work_alloc(&work, &sizes, false);
    if (error) {
        inputs_free(&in);
        return error;
    }
    error = parity_cpu_values_new(sizes.tokens * H, &output);
    for (int64_t e = 0; !error && e < sizes.experts; e++) {
        collect_rows(in.indices, &sizes, e, &work);
        if (work.rows == 0) continue;
        error = expert_forward(dtype, &sizes, in.hidden.data, in.gate_up_proj.data + e * 2 * intermediate * H,
                               in.down_proj.data + e * H * intermediate, &work);
        for (int64_t r = 0; !error && r < work.rows; r++) {
            int64_t t = work.tokens[r];
            double weight = in.weights.data[t * K + work.slots[r]];
            for (int64_t h = 0; h < H; h++) {
                double contribution = parity_round_storage(parity_round_compute(work.y[r * H + h] * weight, dtype), dtype);
                double *out = &output.data[t * H + h];
                *out = parity_round_storage(parity_round_compute(*out + contribution, dtype), dtype);
            }
        }
    }
    if (!error) parity_cpu_values_store(args->output, output.data);
    parity_cpu_values_free(&output);
    work_free(&work);
    inputs_free(&in);
    return error;
}

typedef struct experts_gradients {
    parity_cpu_values doutput, dhidden, dgate_up_proj, ddown_proj, dweights;
} experts_gradients;

static void gradients_free(experts_gradients *gradients) {
    parity_cpu_values_free(&gradients->doutput);
    parity_cpu_values_free(&gradients->dhidden);
    parity_cpu_values_free(&gradients->dgate_up_proj);
    parity_cpu_values_free(&gradients->ddown_proj);
    parity_cpu_values_free(&gradients->dweights);
}

// One expert's backward: accumulates into dhidden and writes its slices of the weight gradients.
static parity_error *expert_backward(parity_dtype dtype, parity_dtype weights_dtype, const parity_moe_experts_sizes *sizes,
                                     const experts_inputs *in, int64_t expert, expert_work *work,
                                     experts_gradients *gradients) {
    int64_t rows = work->rows, H = sizes->hidden, intermediate = sizes->intermediate, K = sizes->top_k;
    const double *gate_up_proj = in->gate_up_proj.data + expert * 2 * intermediate * H;
    const double *down_proj = in->down_proj.data + expert * H * intermediate;
    PARITY_TRY(expert_forward(dtype, sizes, in->hidden.data, gate_up_proj, down_proj, work));
    for (int64_t r = 0; r < rows; r++) {
        int64_t t = work->tokens[r], slot = work->slots[r];
        double weight = in->weights.data[t * K + slot], dweight = 0;
        const double *g = gradients->doutput.data + t * H;
        for (int64_t h = 0; h < H; h++) {
            double product = parity_round_storage(parity_round_compute(g[h] * work->y[r * H + h], dtype), weights_dtype);
            dweight = parity_round_compute(dweight + product, dtype);
            work->dy[r * H + h] = parity_round_storage(parity_round_compute(g[h] * weight, dtype), dtype);
        }
        gradients->dweights.data[t * K + slot] = dweight;
    }
    PARITY_TRY(matmul(dtype, false, false, rows, intermediate, H, work->dy, down_proj, work->dproduct));
    PARITY_TRY(matmul(dtype, true, false, H, intermediate, rows, work->dy, work->product,
                      gradients->ddown_proj.data + expert * H * intermediate));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < intermediate; i++) {
            double dproduct = work->dproduct[r * intermediate + i];
            const double *gate_up = work->gate_up + r * 2 * intermediate;
            double gate = gate_up[i], up = gate_up[intermediate + i];
            double dactivated = parity_round_storage(parity_round_compute(dproduct * up, dtype), dtype);
            double activated = work->activated[r * intermediate + i];
            double dup = parity_round_storage(parity_round_compute(dproduct * activated, dtype), dtype);
            double *dgate_up = work->dgate_up + r * 2 * intermediate;
            dgate_up[i] = parity_round_storage(silu_backward_compute(dactivated, gate, dtype), dtype);
            dgate_up[intermediate + i] = dup;
        }
    PARITY_TRY(matmul(dtype, true, false, 2 * intermediate, H, rows, work->dgate_up, work->x,
                      gradients->dgate_up_proj.data + expert * 2 * intermediate * H));
    PARITY_TRY(matmul(dtype, false, false, rows, H, 2 * intermediate, work->dgate_up, gate_up_proj, work->dx));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t h = 0; h < H; h++) {
            double *dhidden = &gradients->dhidden.data[work->tokens[r] * H + h];
            *dhidden = parity_round_storage(parity_round_compute(*dhidden + work->dx[r * H + h], dtype), dtype);
        }
    return NULL;
}

static parity_error *moe_experts_eager_backward(const parity_exec *exec, const parity_moe_experts_args *args,
                                                const parity_saved *saved, const parity_moe_experts_grads *grads) {
    parity_moe_experts_sizes sizes;
    PARITY_TRY(parity_moe_experts_check(args, &sizes));
    PARITY_TRY(parity_moe_experts_check_grads(args, grads));
    parity_dtype dtype = args->hidden->dtype;
    int64_t N = sizes.tokens, H = sizes.hidden, intermediate = sizes.intermediate, E = sizes.experts, K = sizes.top_k;
    experts_inputs in;
    PARITY_TRY(inputs_load(args, &in));
    experts_gradients gradients = {0};
    expert_work work;
    parity_error *error = work_alloc(&work, &sizes, true);
    if (error) {
        inputs_free(&in);
        return error;
    }
    error = parity_cpu_values_load(grads->doutput, "moe_experts doutput", &gradients.doutput);
    if (!error) error = parity_cpu_values_new(N * H, &gradients.dhidden);
    if (!error) error = parity_cpu_values_new(E * 2 * intermediate * H, &gradients.dgate_up_proj);
    if (!error) error = parity_cpu_values_new(E * H * intermediate, &gradients.ddown_proj);
    if (!error) error = parity_cpu_values_new(N * K, &gradients.dweights);
    for (int64_t e = E - 1; !error && e >= 0; e--) {
        collect_rows(in.indices, &sizes, e, &work);
        if (work.rows > 0) error = expert_backward(dtype, args->routing_weights->dtype, &sizes, &in, e, &work, &gradients);
    }
    if (!error) {
        if (grads->dhidden) parity_cpu_values_store(grads->dhidden, gradients.dhidden.data);
        if (grads->dgate_up_proj) parity_cpu_values_store(grads->dgate_up_proj, gradients.dgate_up_proj.data);
        if (grads->ddown_proj) parity_cpu_values_store(grads->ddown_proj, gradients.ddown_proj.data);
        if (grads->drouting_weights) parity_cpu_values_store(grads->drouting_weights, gradients.dweights.data);
    }
    gradients_free(&gradients);
    work_free(&work);
    inputs_free(&in);
    return error;
}

static const parity_moe_experts_kernels moe_experts_eager_kernels = {moe_experts_eager_forward, moe_experts_eager_backward,
                                                                   NULL};

PARITY_BACKEND_REGISTRATION(moe_experts, eager, cpu) {
    // PARITY_CAP_EXPERT_PARALLEL, as issue 16 asks and unlike the seed's table (VeOmni's eager loop has
    // no EP): in parity the dispatch and combine are the model's (models/parallel/expert_parallel.c),
    // and the kernel runs the rank's slice of experts on the tokens it received, so the eager
    // reference is what the ep layouts' baselines run (test_parallel_layouts.c proves it).
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_MOE_EXPERTS,
        .name = "eager",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_DETERMINISTIC | PARITY_CAP_EXPERT_PARALLEL,
        .kernels = &moe_experts_eager_kernels,
        .description = "reference MoE experts: HF's loop over experts, fused gate_up_proj layout, f64/f32/bf16",
    });
}
