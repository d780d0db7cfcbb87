// attention_cuda.h: the host-side checks every CUDA attention backend makes before a launch, in one
// place (eager.cu, sdpa.cu): the call's arguments (attention.h's check, every tensor on the query's
// CUDA device) with the document boundaries read to the host and checked as the CPU backends check
// them, and the gradients of a backward call.
#ifndef PARITY_ATTENTION_CUDA_H
#define PARITY_ATTENTION_CUDA_H

#include "ops/attention/attention.h"

#ifdef __cplusplus
extern "C" {
#endif

// parity_attention_check, then query, key, value and output on the query's CUDA device (a query on
// the CPU is named as not on cuda:0), then cu_seqlens' S + 1 values on the host, checked; *offsets is
// malloc'ed (free it), NULL on error.
parity_error *parity_attention_cuda_check(const parity_attention_args *args, parity_attention_dims *dims,
                                          int64_t **offsets);
// parity_attention_check_grads, then doutput, dquery, dkey and dvalue (each may be NULL but doutput)
// on the query's device.
parity_error *parity_attention_cuda_check_grads(const parity_attention_args *args, const parity_attention_grads *grads);

#ifdef __cplusplus
}
#endif
#endif
