// eager.cu: the reference gdn_gating on CUDA (value "eager"), eager.c's operations on one thread per
// (token, head):
//   x = a.float() + dt_bias;  sp = (x > 20 ? x : log1p(exp(x)));  g = -exp(A_log.float()) * sp   (compute dtype)
//   beta = sigmoid(b) = 1 / (1 + exp(-b))   computed in f32, stored in the call's dtype
// Backward: da and db per element; dA_log and ddt_bias are sums over the tokens in token order (eager.c's
// order, deterministic) by ordered_column_sum.cuh: the terms dg * softplus(x) and softplus'(x) dg (-A)
// of every (token, head) in parallel as the 2 Hv columns of one sum, then dA_log = -sum * A and
// ddt_bias = sum per head. (One thread a head walking the tokens took 1.6 ms a call at 2048 x 32.)
#include "ops/core/cuda/eager_support.cuh"
#include "ops/core/cuda/exec_stream.cuh"
#include "ops/core/cuda/kernel_math.cuh"
#include "ops/core/cuda/ordered_column_sum.cuh"

extern "C" {
#include "ops/gdn_gating/gdn_gating.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"
}

using namespace parity_cuda;

namespace {

const double softplus_threshold = 20.0; // F.softplus(beta=1, threshold=20)

__device__ __forceinline__ double precise_log1p(double x) { return log1p(x); }
__device__ __forceinline__ float precise_log1p(float x) { return __double2float_rn(log1p((double)x)); }

template <typename C> __device__ C softplus(C x) {
    if (x > (C)softplus_threshold) return x;
    return precise_log1p(precise_exp(x));
}

template <typename C> __device__ C softplus_backward(C gradient, C x) {
    if (x > (C)softplus_threshold) return gradient;
    C z = precise_exp(x);
    return (gradient * z) / (z + C(1));
}

struct gating_shape {
    int64_t tokens, heads;
};

template <parity_dtype D>
__global__ void gating_forward(gating_shape shape, const typename scalar<D>::storage *a, const typename scalar<D>::storage *b,
                               const typename scalar<D>::storage *A_log, const typename scalar<D>::storage *dt_bias,
                               typename scalar<D>::compute *g, typename scalar<D>::storage *beta) {
    using S = scalar<D>;
    using C = typename S::compute;
    PARITY_CUDA_FOR_EACH(i, shape.tokens * shape.heads) {
        int64_t h = i % shape.heads;
        C negative_rate = -precise_exp(S::load(A_log[h]));
        C x = S::load(a[i]) + S::load(dt_bias[h]);
        g[i] = negative_rate * softplus(x);
        beta[i] = S::store(C(1) / (C(1) + precise_exp(-S::load(b[i]))));
    }
}

template <parity_dtype D>
__global__ void gating_backward_elements(gating_shape shape, const typename scalar<D>::storage *a,
                                         const typename scalar<D>::storage *A_log, const typename scalar<D>::storage *dt_bias,
                                         const typename scalar<D>::storage *beta, const typename scalar<D>::compute *dg,
                                         const typename scalar<D>::storage *dbeta, typename scalar<D>::storage *da,
                                         typename scalar<D>::storage *db) {
    using S = scalar<D>;
    using C = typename S::compute;
    PARITY_CUDA_FOR_EACH(i, shape.tokens * shape.heads) {
        int64_t h = i % shape.heads;
        if (da) {
            C rate = precise_exp(S::load(A_log[h]));
            C x = S::load(a[i]) + S::load(dt_bias[h]);
            C dsoftplus = dg[i] * -rate;
            da[i] = S::store(softplus_backward(dsoftplus, x));
        }
        if (db) {
            C value = S::load(beta[i]);
            db[i] = S::store(S::load(dbeta[i]) * (C(1) - value) * value);
        }
    }
}

// The per-head sums' terms for tokens row0 .. row0 + count - 1 (phase 1 of ordered_column_sum.cuh):
// column h = dg * softplus(x) (dA_log's, before the factor -A), column Hv + h = softplus'(x) dg (-A)
// (ddt_bias's), x = a + dt_bias, each product rounded once as eager.c's.
template <parity_dtype D>
__global__ void gating_head_terms(gating_shape shape, const typename scalar<D>::storage *a,        // (N, Hv)
                                  const typename scalar<D>::storage *A_log,                         // (Hv)
                                  const typename scalar<D>::storage *dt_bias,                       // (Hv)
                                  const typename scalar<D>::compute *dg,                            // (N, Hv)
                                  int64_t row0, int64_t count, int64_t ld,
                                  typename scalar<D>::compute *terms) {                             // (count, ld)
    using S = scalar<D>;
    using C = typename S::compute;
    const int64_t H = shape.heads;
    ordered_sum_terms<C>(
        row0, count, 2 * H, ld,
        [&](int64_t n, int64_t column) {
            const int64_t h = column < H ? column : column - H, i = n * H + h;
            const C x = S::load(a[i]) + S::load(dt_bias[h]);
            if (column < H) return mul_rn(dg[i], softplus(x));
            return softplus_backward(mul_rn(dg[i], -precise_exp(S::load(A_log[h]))), x);
        },
        terms);
}

// dA_log = -sum * A, ddt_bias = sum, per head, from the 2 Hv sums.
template <parity_dtype D>
__global__ void gating_head_gradients(gating_shape shape, const typename scalar<D>::storage *A_log,  // (Hv)
                                      const typename scalar<D>::compute *sums,                       // (2 Hv)
                                      typename scalar<D>::storage *dA_log,                           // (Hv) or NULL
                                      typename scalar<D>::storage *ddt_bias) {                       // (Hv) or NULL
    using S = scalar<D>;
    PARITY_CUDA_FOR_EACH(h, shape.heads) {
        if (dA_log) dA_log[h] = S::store(mul_rn(-sums[h], precise_exp(S::load(A_log[h]))));
        if (ddt_bias) ddt_bias[h] = S::store(sums[shape.heads + h]);
    }
}

parity_error *check_devices(const parity_gdn_gating_args *args) {
    parity_device device = args->a->device;
    if (device.type != PARITY_DEVICE_CUDA) return parity_cuda_check_tensor("gdn_gating", "a", args->a, cuda_device(0));
    const parity_tensor *tensors[] = {args->a, args->b, args->A_log, args->dt_bias, args->g, args->beta};
    const char *names[] = {"a", "b", "A_log", "dt_bias", "g", "beta"};
    for (int i = 0; i < 6; i++) PARITY_TRY(parity_cuda_check_tensor("gdn_gating", names[i], tensors[i], device));
    PARITY_CUDA_TRY(cudaSetDevice(device.index));
    return NULL;
}

template <typename T> T *data_of(const parity_tensor *tensor) { return tensor ? static_cast<T *>(tensor->data) : nullptr; }

parity_error *gdn_gating_cuda_eager_forward(const parity_exec *exec, const parity_gdn_gating_args *args,
                                            parity_saved *saved) {
    gating_shape shape;
    PARITY_TRY(parity_gdn_gating_check(args, &shape.tokens, &shape.heads));
    PARITY_TRY(check_devices(args));
    return dispatch_float(args->a->dtype, "gdn_gating", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using storage = typename scalar<D>::storage;
        using C = typename scalar<D>::compute;
        gating_forward<D><<<grid_for(shape.tokens * shape.heads), 256, 0, parity_cuda_stream(exec)>>>(
            shape, data_of<const storage>(args->a), data_of<const storage>(args->b),
            data_of<const storage>(args->A_log), data_of<const storage>(args->dt_bias), data_of<C>(args->g),
            data_of<storage>(args->beta));
        PARITY_CUDA_TRY_LAUNCH("gating_forward");
        return NULL;
    });
}

parity_error *gdn_gating_cuda_eager_backward(const parity_exec *exec, const parity_gdn_gating_args *args,
                                             const parity_saved *saved, const parity_gdn_gating_grads *grads) {
    gating_shape shape;
    PARITY_TRY(parity_gdn_gating_check(args, &shape.tokens, &shape.heads));
    PARITY_TRY(parity_gdn_gating_check_grads(args, grads));
    PARITY_TRY(check_devices(args));
    parity_device device = args->a->device;
    const parity_tensor *tensors[] = {grads->dg, grads->dbeta, grads->da, grads->db, grads->dA_log, grads->ddt_bias};
    const char *names[] = {"dg", "dbeta", "da", "db", "dA_log", "ddt_bias"};
    for (int i = 0; i < 6; i++) PARITY_TRY(parity_cuda_check_tensor("gdn_gating", names[i], tensors[i], device));
    return dispatch_float(args->a->dtype, "gdn_gating", [&](auto tag) -> parity_error * {
        constexpr parity_dtype D = decltype(tag)::value;
        using storage = typename scalar<D>::storage;
        using C = typename scalar<D>::compute;
        if (grads->da || grads->db) {
            gating_backward_elements<D><<<grid_for(shape.tokens * shape.heads), 256, 0, parity_cuda_stream(exec)>>>(
                shape, data_of<const storage>(args->a), data_of<const storage>(args->A_log),
                data_of<const storage>(args->dt_bias), data_of<const storage>(args->beta), data_of<const C>(grads->dg),
                data_of<const storage>(grads->dbeta), data_of<storage>(grads->da), data_of<storage>(grads->db));
            PARITY_CUDA_TRY_LAUNCH("gating_backward_elements");
        }
        if (grads->dA_log || grads->ddt_bias) {
            const storage *a = data_of<const storage>(args->a), *A_log = data_of<const storage>(args->A_log);
            const storage *dt_bias = data_of<const storage>(args->dt_bias);
            const C *dg = data_of<const C>(grads->dg);
            scoped_tensor sums; // (2 Hv) the token sums in the compute type
            PARITY_TRY(sums.alloc_1d(parity_compute_dtype(D), device, 2 * shape.heads));
            auto make_terms = [&](int64_t row0, int64_t count, C *terms, int64_t ld) -> parity_error * {
                gating_head_terms<D><<<ordered_sum_term_grid(count, 2 * shape.heads), ordered_sum_term_threads, 0,
                                       parity_cuda_stream(exec)>>>(shape, a, A_log, dt_bias, dg, row0, count, ld, terms);
                PARITY_CUDA_TRY_LAUNCH("gating_head_terms");
                return NULL;
            };
            PARITY_TRY(ordered_column_sum<D>(exec, device, shape.tokens, 2 * shape.heads, make_terms, NULL, sums.data<C>()));
            gating_head_gradients<D><<<grid_for(shape.heads), 256, 0, parity_cuda_stream(exec)>>>(
                shape, A_log, sums.data<C>(), data_of<storage>(grads->dA_log), data_of<storage>(grads->ddt_bias));
            PARITY_CUDA_TRY_LAUNCH("gating_head_gradients");
        }
        return NULL;
    });
}

const parity_gdn_gating_kernels gdn_gating_cuda_eager_kernels = {gdn_gating_cuda_eager_forward, gdn_gating_cuda_eager_backward};

} // namespace

PARITY_BACKEND_REGISTRATION(gdn_gating, eager, cuda) {
    parity_backend backend = {};
    backend.op = PARITY_OP_GDN_GATING;
    backend.name = "eager";
    backend.device = PARITY_DEVICE_CUDA;
    backend.dtypes = PARITY_FLOAT_DTYPES;
    backend.capabilities = PARITY_CAP_VARLEN | PARITY_CAP_BATCH_INVARIANT | PARITY_CAP_DETERMINISTIC |
                           PARITY_CAP_SEQUENCE_PARALLEL | PARITY_CAP_EXPERT_PARALLEL;
    backend.kernels = &gdn_gating_cuda_eager_kernels;
    backend.description = "reference GatedDeltaNet gating on CUDA: g = -exp(A_log) * softplus(a + dt_bias) in f32, "
                          "beta = sigmoid(b)";
    return parity_registry_add(&backend);
}
