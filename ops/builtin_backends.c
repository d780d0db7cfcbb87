// builtin_backends.c: every backend family built into parity registers itself from this table.
// Values of the kernel-selection vocabulary without a row here are reported "not built yet".
#include "ops/builtin_backends.h"

#include "ops/add/add.h"
#include "ops/broadcast_heads/broadcast_heads.h"
#include "ops/concat/concat.h"
#include "ops/embedding/embedding.h"
#include "ops/linear/linear.h"
#include "ops/matmul/matmul.h"
#include "ops/rms_norm/rms_norm.h"
#include "ops/sigmoid_gate/sigmoid_gate.h"
#include "ops/split/split.h"

const parity_builtin_backend_family parity_builtin_backends[] = {
    {"rms_norm cpu", parity_rms_norm_register_cpu},
    {"linear cpu", parity_linear_register_cpu},
    {"matmul cpu", parity_matmul_register_cpu},
    {"embedding cpu", parity_embedding_register_cpu},
    {"add cpu", parity_add_register_cpu},
    {"sigmoid_gate cpu", parity_sigmoid_gate_register_cpu},
    {"concat cpu", parity_concat_register_cpu},
    {"split cpu", parity_split_register_cpu},
    {"broadcast_heads cpu", parity_broadcast_heads_register_cpu},
};
const size_t parity_builtin_backend_count = sizeof parity_builtin_backends / sizeof parity_builtin_backends[0];
