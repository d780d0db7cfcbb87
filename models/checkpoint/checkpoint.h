// checkpoint.h: loads an HF checkpoint directory (config.json plus model.safetensors, or shards
// listed by model.safetensors.index.json) into named parameters in the run's dtype, converting
// per-expert MoE tensors to the fused layout on the way (expert_converter.h).
#ifndef PARITY_CHECKPOINT_H
#define PARITY_CHECKPOINT_H

#include "models/checkpoint/model_config.h"
#include "models/parameters.h"

// Reads DIR/config.json into `config` and every tensor into `parameters` (CPU, `dtype`).
parity_error *parity_checkpoint_load(const char *directory, parity_dtype dtype, parity_model_config *config,
                                     parity_parameters *parameters);
// The safetensors files of a checkpoint directory (1 for a single file, N for shards). The caller frees
// each string and the array.
parity_error *parity_checkpoint_files(const char *directory, char ***files, size_t *count);

#endif
