// flash_attention_2.c: value "flash_attention_2" on the CPU: the FlashAttention-2 algorithm (tiled
// online softmax, lse saved, a backward that recomputes the probabilities block by block), which is
// what the CPU's sdpa kernels already compute (sdpa.c, tiled_cpu.h): the two values share them. It
// exists because the seed's table makes flash_attention_2 a sequence-parallel value and sdpa not one,
// so the Ulysses layouts on the CPU (models/parallel/ulysses.c) have a value of the seed's to run.
// Under sequence parallelism the kernel sees whole sequences of its rank's heads (the all-to-all is
// the model's), so it needs nothing of its own to be SP-safe; test_parallel_layouts.c proves the
// claim against the single-device goldens.
#include "ops/attention/tiled_cpu.h"
#include "ops/builtin_backends.h"
#include "ops/registry.h"

PARITY_BACKEND_REGISTRATION(attention, flash_attention_2, cpu) {
    return parity_registry_add(&(parity_backend){
        .op = PARITY_OP_ATTENTION,
        .name = "flash_attention_2",
        .device = PARITY_DEVICE_CPU,
        .dtypes = PARITY_FLOAT_DTYPES,
        .capabilities = PARITY_CAP_VARLEN | PARITY_CAP_GQA | PARITY_CAP_SLIDING_WINDOW | PARITY_CAP_BATCH_INVARIANT |
                        PARITY_CAP_DETERMINISTIC | PARITY_CAP_SEQUENCE_PARALLEL,
        .kernels = &parity_attention_tiled_cpu_kernels,
        .description = "FlashAttention-2 on the CPU: sdpa's tiled online-softmax kernels (16 x 16 tiles, lse saved, "
                       "recomputing backward); the seed's sequence-parallel value for the CPU's Ulysses layouts",
    });
}
