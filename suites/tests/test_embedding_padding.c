// test_embedding_padding.c: HF nn.Embedding(padding_idx=pad_token_id): the padding row is still
// looked up in the forward, but receives no gradient; every other row gets the usual scatter-add.
#include <criterion/criterion.h>

#include "ops/embedding/embedding.h"
#include "ops/registry.h"
#include "suites/tests/exec_fixture.h"

Test(embedding, padding_row_gets_no_gradient) {
    cr_assert_null(parity_registry_register_builtins());
    const parity_backend *backend;
    cr_assert_null(parity_registry_resolve(PARITY_OP_EMBEDDING, "eager", PARITY_CPU, &backend));
    const parity_embedding_kernels *kernels = backend->kernels;
    int64_t id_values[] = {1, 3, 3, 0};
    parity_tensor ids = parity_tensor_wrap(id_values, PARITY_I64, PARITY_CPU, PARITY_SHAPE(4));
    parity_tensor weight, output, doutput, dweight;
    cr_assert_null(parity_tensor_alloc(&weight, PARITY_F64, PARITY_CPU, PARITY_SHAPE(5, 2)));
    cr_assert_null(parity_tensor_alloc(&output, PARITY_F64, PARITY_CPU, PARITY_SHAPE(4, 2)));
    cr_assert_null(parity_tensor_alloc(&doutput, PARITY_F64, PARITY_CPU, PARITY_SHAPE(4, 2)));
    cr_assert_null(parity_tensor_alloc(&dweight, PARITY_F64, PARITY_CPU, PARITY_SHAPE(5, 2)));
    for (int64_t i = 0; i < 10; i++) parity_tensor_set(&weight, i, (double)i);
    for (int64_t i = 0; i < 8; i++) parity_tensor_set(&doutput, i, 1.0 + (double)i);
    parity_saved saved = {0};
    parity_embedding_args args = {.ids = &ids, .weight = &weight, .output = &output, .has_padding_idx = true, .padding_idx = 3};
    cr_assert_null(kernels->forward(parity_test_exec(PARITY_CPU), &args, &saved));
    cr_expect_eq(parity_tensor_get(&output, 2), 6.0); // the padding row is looked up as usual
    parity_embedding_grads grads = {&doutput, &dweight};
    cr_assert_null(kernels->backward(parity_test_exec(PARITY_CPU), &args, &saved, &grads));
    cr_expect_eq(parity_tensor_get(&dweight, 6), 0.0); // row 3 stays zero
    cr_expect_eq(parity_tensor_get(&dweight, 7), 0.0);
    cr_expect_eq(parity_tensor_get(&dweight, 2), 1.0); // row 1 <- position 0
    cr_expect_eq(parity_tensor_get(&dweight, 0), 7.0); // row 0 <- position 3
    args.has_padding_idx = false;                      // without padding_idx row 3 sums positions 1 and 2
    cr_assert_null(kernels->backward(parity_test_exec(PARITY_CPU), &args, &saved, &grads));
    cr_expect_eq(parity_tensor_get(&dweight, 6), 3.0 + 5.0);
    parity_saved_release(&saved);
    parity_tensor_release(&weight);
    parity_tensor_release(&output);
    parity_tensor_release(&doutput);
    parity_tensor_release(&dweight);
}
