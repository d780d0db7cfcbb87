// value_support.h: the vocabulary (fields.h) joined with the backend registry. A field's values are
// the seed's values plus any name a third party registered for the field's op (VeOmni's
// extra_backends); these functions answer "is this value known", "is it written for this device",
// "which values are allowed", and "can it run here, and if not, why" — the same answers for
// `parity config check`, `parity list backends` and the combo enumeration (harness/combos.h).
#ifndef PARITY_CONFIG_VALUE_SUPPORT_H
#define PARITY_CONFIG_VALUE_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "harness/config/fields.h"
#include "ops/core/device.h"
#include "ops/registry.h"

#ifdef __cplusplus
extern "C" {
#endif

// True when the seed names `value` for `field` or a backend of that name is registered for its op.
bool parity_kernel_value_known(const parity_kernel_field *field, const char *value);
// True when `value` is written for `device`: the seed's target list, or a registry entry there.
bool parity_kernel_value_supported_on(const parity_kernel_field *field, const char *value, parity_device_type device);
// True when `value` may run under Ulysses sequence parallelism: the seed's attention table, or a
// registration carrying PARITY_CAP_SEQUENCE_PARALLEL.
bool parity_kernel_value_sequence_parallel(const parity_kernel_field *field, const char *value);

// Third-party values of `field`: registered names the seed does not list, in registration order,
// each once. Writes up to `capacity` pointers (owned by the registry) and returns how many exist.
size_t parity_kernel_field_extra_values(const parity_kernel_field *field, const char **names, size_t capacity);

// "eager, liger_kernel, chunk_loss, npu": every value of `field` (seed, then third-party).
const char *parity_kernel_field_allowed_values(const parity_kernel_field *field, char *buffer, size_t size);
// The same, restricted to values written for `device`; "none" when there are none.
const char *parity_kernel_field_allowed_values_on(const parity_kernel_field *field, parity_device_type device,
                                                  char *buffer, size_t size);

typedef enum parity_value_status {
    PARITY_VALUE_AVAILABLE = 0,
    PARITY_VALUE_NOT_SUPPORTED, // not written for this device type: "not supported on cpu"
    PARITY_VALUE_NOT_BUILT,     // in the vocabulary, no registry entry: "not built yet" / "needs an Ascend NPU build"
    PARITY_VALUE_UNAVAILABLE,   // registered but unusable here: the registry's reason
} parity_value_status;

// Whether `value` of `field` can run on `device` in this build on this machine, for calls needing
// `need` (NULL: availability only): the vocabulary first (not written for the device, not built),
// then the registry's checker (parity_registry_check). `check->reason` receives "available" or why
// not ("not built yet", "needs SM90+, device is SM80", "does not support bf16"); check->verdict is
// the registry's verdict (PARITY_NOT_REGISTERED for the vocabulary's two answers).
parity_value_status parity_kernel_value_check(const parity_kernel_field *field, const char *value, parity_device device,
                                              const parity_backend_need *need, parity_backend_check *check);
// parity_kernel_value_check without a need, its reason copied into `reason`.
parity_value_status parity_kernel_value_status(const parity_kernel_field *field, const char *value,
                                               parity_device device, char *reason, size_t reason_size);

#ifdef __cplusplus
}
#endif
#endif
