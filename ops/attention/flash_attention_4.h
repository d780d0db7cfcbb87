// flash_attention_4.h: the reason parity's cuda `flash_attention_4` is refused (issue 13, deliverable
// 4). FlashAttention-4 (flash-attn.cute) is written for Blackwell (SM100: tcgen05 MMA, tensor memory);
// parity has no such kernels, so the backend is registered only as a probe that refuses every device
// with this reason, and nothing ever runs in its place (never eager, never silently replaced).
#ifndef PARITY_ATTENTION_FLASH_ATTENTION_4_H
#define PARITY_ATTENTION_FLASH_ATTENTION_4_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// The SM FlashAttention-4 needs: 100 (Blackwell).
#define PARITY_FLASH_ATTENTION_4_MIN_SM 100

// Why flash_attention_4 cannot run on a device of `compute_capability` (90 = SM90) into `buffer`:
// "needs SM100 (Blackwell); device is SM90" below SM100, else "not built yet: ..." (no kernels for
// SM100 in parity). Returns buffer.
const char *parity_flash_attention_4_reason(int compute_capability, char *buffer, size_t size);

#ifdef __cplusplus
}
#endif
#endif
