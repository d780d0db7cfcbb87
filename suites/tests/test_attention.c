// test_attention.c: the attention semantics, checked against a naive reference written here
// independently of ops/attention (its own mask rule, a direct softmax, one document at a time).
// The table-driven rows (cases_attention.c) prove backward against forward and sdpa against eager;
// this proves the forward means what attention.h says: document boundaries, causal masks, HF
// sliding windows, GQA head mapping, the scale, and D != Dv.
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "ops/attention/attention.h"
#include "ops/attention/flash_attention_4.h"
#include "ops/registry.h"
#include "suites/tests/exec_fixture.h"
#include "ops/testing/worst_error.h"

typedef struct naive_case {
    int64_t lengths[4]; // 0-terminated
    int64_t query_heads, kv_heads, head_dim, value_dim;
    bool causal;
    int64_t window;
    double scale;
} naive_case;

static double input_value(int64_t index, double salt) { return sin(0.37 * (double)index + salt) * 1.3; }

static void fill(parity_tensor *tensor, double salt) {
    for (int64_t i = 0; i < tensor->numel; i++) parity_tensor_set(tensor, i, input_value(i, salt));
}

// out[t, h, :] for every token of the document [start, start + length).
static void naive_attention(const naive_case *c, int64_t start, int64_t length, const parity_tensor *q,
                            const parity_tensor *k, const parity_tensor *v, double *out) {
    int64_t hq = c->query_heads, hk = c->kv_heads, d = c->head_dim, dv = c->value_dim;
    for (int64_t h = 0; h < hq; h++) {
        int64_t g = h / (hq / hk);
        for (int64_t i = 0; i < length; i++) {
            double weights[64], maximum = -INFINITY, total = 0;
            for (int64_t j = 0; j < length; j++) {
                bool allowed = !c->causal || (j <= i && (c->window == 0 || j > i - c->window));
                double dot = 0;
                for (int64_t e = 0; e < d; e++)
                    dot += parity_tensor_get(q, ((start + i) * hq + h) * d + e) *
                           parity_tensor_get(k, ((start + j) * hk + g) * d + e);
                weights[j] = allowed ? dot * c->scale : -INFINITY;
                if (weights[j] > maximum) maximum = weights[j];
            }
            for (int64_t j = 0; j < length; j++) total += weights[j] = exp(weights[j] - maximum);
            for (int64_t e = 0; e < dv; e++) {
                double sum = 0;
                for (int64_t j = 0; j < length; j++)
                    sum += weights[j] / total * parity_tensor_get(v, ((start + j) * hk + g) * dv + e);
                out[((start + i) * hq + h) * dv + e] = sum;
            }
        }
    }
}

static void check_against_naive(const naive_case *c, const char *backend_name) {
    int64_t cu_values[5] = {0}, documents = 0;
    while (documents < 4 && c->lengths[documents] > 0) {
        cu_values[documents + 1] = cu_values[documents] + c->lengths[documents];
        documents++;
    }
    int64_t n = cu_values[documents];
    parity_tensor q, k, v, y, cu;
    cr_assert_null(parity_tensor_alloc(&q, PARITY_F64, PARITY_CPU, PARITY_SHAPE(n, c->query_heads, c->head_dim)));
    cr_assert_null(parity_tensor_alloc(&k, PARITY_F64, PARITY_CPU, PARITY_SHAPE(n, c->kv_heads, c->head_dim)));
    cr_assert_null(parity_tensor_alloc(&v, PARITY_F64, PARITY_CPU, PARITY_SHAPE(n, c->kv_heads, c->value_dim)));
    cr_assert_null(parity_tensor_alloc(&y, PARITY_F64, PARITY_CPU, PARITY_SHAPE(n, c->query_heads, c->value_dim)));
    cr_assert_null(parity_tensor_alloc(&cu, PARITY_I64, PARITY_CPU, PARITY_SHAPE(documents + 1)));
    for (int64_t s = 0; s <= documents; s++) ((int64_t *)cu.data)[s] = cu_values[s];
    fill(&q, 0.1);
    fill(&k, 1.7);
    fill(&v, 2.9);
    double *expected = calloc((size_t)y.numel, sizeof *expected);
    cr_assert_not_null(expected);
    for (int64_t s = 0; s < documents; s++) naive_attention(c, cu_values[s], c->lengths[s], &q, &k, &v, expected);

    const parity_backend *backend;
    cr_assert_null(parity_registry_register_builtins());
    cr_assert_null(parity_registry_resolve(PARITY_OP_ATTENTION, backend_name, PARITY_CPU, &backend));
    const parity_attention_kernels *kernels = backend->kernels;
    parity_saved saved = {0};
    parity_attention_args args = {&q, &k, &v, &cu, c->scale, c->causal, c->window, &y, NULL};
    cr_assert_null(kernels->forward(parity_test_exec(PARITY_CPU), &args, &saved));
    double worst = 0;
    for (int64_t i = 0; i < y.numel; i++) worst = parity_test_max(worst, fabs(parity_tensor_get(&y, i) - expected[i]));
    cr_log_info("attention %-5s N=%lld Hq=%lld Hk=%lld causal=%d window=%lld: max |output - naive| %.2e", backend_name,
                (long long)n, (long long)c->query_heads, (long long)c->kv_heads, c->causal, (long long)c->window,
                worst);
    cr_expect(worst <= 1e-13, "%s differs from the naive reference by %.3e", backend_name, worst);
    parity_saved_release(&saved);
    free(expected);
    parity_tensor *all[] = {&q, &k, &v, &y, &cu};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) parity_tensor_release(all[i]);
}

static const naive_case naive_cases[] = {
    {{1, 5, 1, 7}, 4, 2, 16, 16, true, 0, 0.25},
    {{1, 5, 1, 7}, 4, 2, 16, 16, false, 0, 0.25},
    {{6, 3}, 3, 1, 24, 16, true, 3, 0.2},
    {{37}, 2, 1, 8, 5, true, 3, 0.35},
    {{37}, 2, 2, 8, 8, true, 20, 0.35},
    {{40}, 2, 1, 8, 8, false, 0, 0.35},
    {{1}, 1, 1, 4, 4, true, 0, 0.5},
};

Test(attention, eager_and_sdpa_match_a_naive_reference) {
    for (size_t i = 0; i < sizeof naive_cases / sizeof naive_cases[0]; i++) {
        check_against_naive(&naive_cases[i], "eager");
        check_against_naive(&naive_cases[i], "sdpa");
    }
}

// flash_attention_4's refusal names the SM it needs and the device's own (issue 13, deliverable 4); the
// GPU test ops_fused_gpu/flash_attention_4_is_refused_with_the_devices_sm checks it on the real device.
Test(attention, flash_attention_4_reason_names_sm100_and_the_devices_sm) {
    static const struct {
        int sm;
        const char *reason;
    } rows[] = {
        {90, "needs SM100 (Blackwell); device is SM90"},
        {80, "needs SM100 (Blackwell); device is SM80"},
        {89, "needs SM100 (Blackwell); device is SM89"},
        {100, "not built yet: parity has no FlashAttention-4 (SM100) kernels; device is SM100"},
        {120, "not built yet: parity has no FlashAttention-4 (SM100) kernels; device is SM120"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char reason[128];
        cr_expect_str_eq(parity_flash_attention_4_reason(rows[i].sm, reason, sizeof reason), rows[i].reason);
    }
    // registered on cuda as a refusing probe that claims nothing (never eager, never replaced)
    cr_assert_null(parity_registry_register_builtins());
    const parity_backend *backend = parity_registry_find(PARITY_OP_ATTENTION, "flash_attention_4", PARITY_DEVICE_CUDA);
    cr_assert_not_null(backend, "flash_attention_4 has a cuda registry entry");
    cr_expect_not_null(backend->probe);
    cr_expect_eq(backend->dtypes, 0u);
    cr_expect_eq(backend->capabilities, 0u);
    parity_device_info sm90 = {.compute_capability = 90};
    char reason[128] = "";
    cr_expect(!backend->probe(backend, &sm90, reason, sizeof reason));
    cr_expect_str_eq(reason, "needs SM100 (Blackwell); device is SM90");
    parity_device_info sm100 = {.compute_capability = 100};
    cr_expect(!backend->probe(backend, &sm100, reason, sizeof reason), "no kernels: refused on SM100 too");
    cr_expect(parity_registry_find(PARITY_OP_ATTENTION, "flash_attention_4", PARITY_DEVICE_CPU) == NULL);
}
