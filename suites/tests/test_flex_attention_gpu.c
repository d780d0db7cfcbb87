// test_flex_attention_gpu.c: flex_attention on cuda when a block mask leaves query rows with nothing
// to see (issue 13: "NaN/Inf never produced on fully masked rows"). A model's mask, built from its
// visibility, never does that (every query sees itself), so the mask here is the builder's for one
// causal document of 256 tokens (blocks 128 x 128) with query block 0 taken out of every list by
// hand: its forward lists emptied, and it removed from key block 0's backward list. Expected, in
// every dtype flex_attention claims on cuda (bf16 on the tensor-core engine, f32 and f64 on the
// CUDA-core kernels: the same lists drive both), with inputs drawn from the Philox stream:
//   rows 0..127 (they see nothing): output exactly 0, dquery exactly 0;
//   rows 128..255: output bitwise that of the unedited mask (their lists did not change);
//   every output, dquery, dkey and dvalue element finite.
// Skips visibly without a GPU (gpu_skip.h).
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "assert_ok.h"
#include "exec_fixture.h"
#include "gpu_skip.h"
#include "ops/attention/attention.h"
#include "ops/attention/block_mask.h"
#include "ops/core/rng.h"
#include "ops/registry.h"

enum { TOKENS = 256, QUERY_HEADS = 2, KV_HEADS = 1, HEAD_DIM = 64, BLOCK = 128 };

// A `dtype` tensor on cuda:0 from the Philox stream `name`, values in about [-1, 1].
static void random_on_gpu(parity_tensor *out, parity_dtype dtype, int64_t n, int64_t heads, int64_t width,
                          const char *name) {
    assert_ok(parity_tensor_alloc(out, dtype, PARITY_CUDA(0), PARITY_SHAPE(n, heads, width)), name);
    assert_ok(parity_rng_fill(NULL, out, parity_rng_stream_named(7, name), PARITY_RNG_UNIFORM, -1.0, 1.0), name);
}

// Uninitialized: the backend overwrites outputs and gradients.
static void empty_on_gpu(parity_tensor *out, parity_dtype dtype, int64_t n, int64_t heads, int64_t width) {
    assert_ok(parity_tensor_alloc(out, dtype, PARITY_CUDA(0), PARITY_SHAPE(n, heads, width)), "output");
}

static parity_tensor to_host(const parity_tensor *tensor) {
    parity_tensor host;
    assert_ok(parity_tensor_to(&host, tensor, PARITY_CPU, PARITY_F64), "to the host");
    return host;
}

// Every tensor of a CPU-built mask copied to cuda:0 (the same struct, device tensors).
static void mask_to_gpu(const parity_block_mask *cpu, parity_block_mask *gpu) {
    *gpu = *cpu;
    const parity_tensor *from[] = {&cpu->kv_num_blocks, &cpu->kv_indices, &cpu->full_kv_num_blocks, &cpu->full_kv_indices,
                                   &cpu->q_num_blocks,  &cpu->q_indices,  &cpu->full_q_num_blocks,  &cpu->full_q_indices,
                                   &cpu->mask_mod.document_ids};
    parity_tensor *to[] = {&gpu->kv_num_blocks, &gpu->kv_indices, &gpu->full_kv_num_blocks, &gpu->full_kv_indices,
                           &gpu->q_num_blocks,  &gpu->q_indices,  &gpu->full_q_num_blocks,  &gpu->full_q_indices,
                           &gpu->mask_mod.document_ids};
    for (size_t i = 0; i < sizeof from / sizeof from[0]; i++) {
        memset(to[i], 0, sizeof *to[i]);
        assert_ok(parity_tensor_to(to[i], from[i], PARITY_CUDA(0), PARITY_I32), "mask to cuda:0");
    }
}

// Takes query block 0 out of the mask: no key blocks for it, and out of key block 0's query lists.
static void blind_query_block_0(parity_block_mask *mask) {
    int32_t *kv_num = mask->kv_num_blocks.data, *full_kv_num = mask->full_kv_num_blocks.data;
    kv_num[0] = 0;
    full_kv_num[0] = 0;
    int32_t *q_num = mask->q_num_blocks.data, *q_index = mask->q_indices.data;
    int32_t *full_q_num = mask->full_q_num_blocks.data, *full_q_index = mask->full_q_indices.data;
    struct {
        int32_t *num, *index;
    } lists[] = {{q_num, q_index}, {full_q_num, full_q_index}};
    for (size_t l = 0; l < 2; l++) { // key block 0's row: drop entry 0 where it is query block 0
        int32_t *row = lists[l].index; // (heads = 1, kv_blocks, q_blocks): key block 0 is the first row
        if (lists[l].num[0] > 0 && row[0] == 0) {
            memmove(row, row + 1, (size_t)(lists[l].num[0] - 1) * sizeof *row);
            lists[l].num[0]--;
        }
    }
}

// Forward + backward of flex_attention on `mask`; fills output and the three gradients.
static void run_flex(const parity_backend *backend, const parity_block_mask *mask, parity_tensor *q, parity_tensor *k,
                     parity_tensor *v, parity_tensor *cu, parity_tensor *dout, parity_tensor *out, parity_tensor *dq,
                     parity_tensor *dk, parity_tensor *dv) {
    const parity_attention_kernels *kernels = backend->kernels;
    parity_attention_args args = {q, k, v, cu, 0.125, true, 0, out, mask};
    parity_attention_grads grads = {dout, dq, dk, dv};
    parity_saved saved = {0};
    const parity_exec *exec = parity_test_exec(PARITY_CUDA(0));
    assert_ok(kernels->forward(exec, &args, &saved), "flex_attention forward");
    assert_ok(kernels->backward(exec, &args, &saved, &grads), "flex_attention backward");
    assert_ok(parity_exec_synchronize(exec), "synchronize");
    parity_saved_release(&saved);
}

// The test in one dtype, on the unedited mask (`whole`) and the blinded one, both on cuda:0.
static void check_dtype(const parity_backend *backend, parity_dtype dtype, const parity_block_mask *whole,
                        const parity_block_mask *blinded, parity_tensor *cu) {
    const char *name = parity_dtype_name(dtype);
    parity_tensor q, k, v, dout;
    random_on_gpu(&q, dtype, TOKENS, QUERY_HEADS, HEAD_DIM, "q");
    random_on_gpu(&k, dtype, TOKENS, KV_HEADS, HEAD_DIM, "k");
    random_on_gpu(&v, dtype, TOKENS, KV_HEADS, HEAD_DIM, "v");
    random_on_gpu(&dout, dtype, TOKENS, QUERY_HEADS, HEAD_DIM, "dout");

    parity_tensor out[2], dq[2], dk[2], dv[2];
    const parity_block_mask *masks[2] = {whole, blinded};
    for (int m = 0; m < 2; m++) {
        empty_on_gpu(&out[m], dtype, TOKENS, QUERY_HEADS, HEAD_DIM);
        empty_on_gpu(&dq[m], dtype, TOKENS, QUERY_HEADS, HEAD_DIM);
        empty_on_gpu(&dk[m], dtype, TOKENS, KV_HEADS, HEAD_DIM);
        empty_on_gpu(&dv[m], dtype, TOKENS, KV_HEADS, HEAD_DIM);
        run_flex(backend, masks[m], &q, &k, &v, cu, &dout, &out[m], &dq[m], &dk[m], &dv[m]);
    }
    parity_tensor o_whole = to_host(&out[0]), o = to_host(&out[1]), g_q = to_host(&dq[1]), g_k = to_host(&dk[1]),
                  g_v = to_host(&dv[1]);
    const int64_t row = QUERY_HEADS * HEAD_DIM; // values of one token
    int64_t non_finite = 0, nonzero_blind = 0, changed_seen = 0;
    const parity_tensor *all[] = {&o, &g_q, &g_k, &g_v};
    for (size_t t = 0; t < 4; t++)
        for (int64_t i = 0; i < all[t]->numel; i++) non_finite += !isfinite(((const double *)all[t]->data)[i]);
    for (int64_t i = 0; i < BLOCK * row; i++)
        nonzero_blind += ((const double *)o.data)[i] != 0.0 || ((const double *)g_q.data)[i] != 0.0;
    for (int64_t i = BLOCK * row; i < TOKENS * row; i++)
        changed_seen += ((const double *)o.data)[i] != ((const double *)o_whole.data)[i];
    cr_expect_eq(non_finite, 0, "%s: %lld non-finite values in output / dq / dk / dv", name, (long long)non_finite);
    cr_expect_eq(nonzero_blind, 0, "%s: %lld output or dq values of the rows that see nothing are not 0", name,
                 (long long)nonzero_blind);
    cr_expect_eq(changed_seen, 0, "%s: %lld output values of rows 128..255 differ from the unedited mask's", name,
                 (long long)changed_seen);

    parity_tensor *release[] = {&q, &k, &v, &dout, &o_whole, &o, &g_q, &g_k, &g_v};
    for (size_t i = 0; i < sizeof release / sizeof release[0]; i++) parity_tensor_release(release[i]);
    for (int m = 0; m < 2; m++) {
        parity_tensor_release(&out[m]);
        parity_tensor_release(&dq[m]);
        parity_tensor_release(&dk[m]);
        parity_tensor_release(&dv[m]);
    }
}

Test(flex_attention_gpu, rows_that_see_nothing_give_zeros_never_nan) {
    parity_test_require_gpu();
    assert_ok(parity_registry_register_builtins(), "registering built-in backends");
    const parity_backend *backend;
    assert_ok(parity_registry_resolve(PARITY_OP_ATTENTION, "flex_attention", PARITY_CUDA(0), &backend), "flex_attention");
    int64_t offsets[2] = {0, TOKENS};
    parity_block_mask built, blinded_cpu, blinded, whole;
    assert_ok(parity_block_mask_build(PARITY_CPU, offsets, 2, TOKENS, true, 0, BLOCK, BLOCK, &built), "mask");
    assert_ok(parity_block_mask_build(PARITY_CPU, offsets, 2, TOKENS, true, 0, BLOCK, BLOCK, &blinded_cpu), "mask");
    cr_assert_eq(((int32_t *)built.kv_num_blocks.data)[0] + ((int32_t *)built.full_kv_num_blocks.data)[0], 1,
                 "query block 0 of a causal document sees key block 0 only");
    blind_query_block_0(&blinded_cpu);
    mask_to_gpu(&built, &whole);
    mask_to_gpu(&blinded_cpu, &blinded);
    parity_tensor cu, host_cu;
    assert_ok(parity_tensor_alloc(&host_cu, PARITY_I64, PARITY_CPU, PARITY_SHAPE(2)), "cu_seqlens");
    memcpy(host_cu.data, offsets, sizeof offsets);
    assert_ok(parity_tensor_to(&cu, &host_cu, PARITY_CUDA(0), PARITY_I64), "cu_seqlens");

    const parity_dtype dtypes[] = {PARITY_BF16, PARITY_F32, PARITY_F64};
    int checked = 0;
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
        if (!(backend->dtypes & PARITY_DTYPE_BIT(dtypes[d]))) continue;
        check_dtype(backend, dtypes[d], &whole, &blinded, &cu);
        checked++;
    }
    cr_expect(checked > 0, "flex_attention on cuda claims none of bf16, f32, f64");

    parity_tensor_release(&cu);
    parity_tensor_release(&host_cu);
    parity_block_mask *masks_owned[] = {&built, &blinded_cpu, &whole, &blinded};
    for (size_t i = 0; i < 4; i++) parity_block_mask_free(masks_owned[i]);
}
