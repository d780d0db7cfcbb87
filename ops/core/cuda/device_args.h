// device_args.h: host-side argument handling every CUDA backend shares, plain C (no CUDA headers):
// checking that a call's tensors are contiguous CUDA tensors on one device, and copying a small
// index array (ids, targets, positions, cu_seqlens) to the host when a launch or a validation needs
// its values.
#ifndef PARITY_CUDA_DEVICE_ARGS_H
#define PARITY_CUDA_DEVICE_ARGS_H

#include <stdint.h>

#include "ops/core/error.h"
#include "ops/core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

// The one check of the tensors of a CUDA call (every CUDA backend, the device-side tensor helpers):
// USAGE error "<op>: <name> is on cpu, the CUDA backend needs it on cuda:0" when `tensor` is not on
// `device` (cuda:index), SHAPE error when it is not contiguous or has no data. NULL passes.
parity_error *parity_cuda_check_tensor(const char *op, const char *name, const parity_tensor *tensor,
                                       parity_device device);
// A device (or host) int64/int32 tensor's values as a host int64 array (caller frees with free()).
parity_error *parity_cuda_indices_to_host(const parity_tensor *tensor, const char *name, int64_t **out);

#ifdef __cplusplus
}
#endif
#endif
