// fields.h: the kernel-selection vocabulary, field for field as VeOmni's Quick Reference lists it
// (seeds/000: "if a field is not in this table, it is not a kernel selection knob"). Each field
// names the registry op it selects, its GPU default, its --ops alias, its Ascend NPU
// normalization target, and every value the seed names with the devices that value targets.
// The vocabulary is data: adding a value is adding a row in fields.c. Registry-aware questions
// (third-party values, availability) live in value_support.h.
#ifndef PARITY_CONFIG_FIELDS_H
#define PARITY_CONFIG_FIELDS_H

#include <stdbool.h>
#include <stddef.h>

#include "ops/core/device.h"

#ifdef __cplusplus
extern "C" {
#endif

// Bit of a device type in a value's target mask.
#define PARITY_TARGET(device_type) (1u << (device_type))
#define PARITY_TARGET_CPU PARITY_TARGET(PARITY_DEVICE_CPU)
#define PARITY_TARGET_CUDA PARITY_TARGET(PARITY_DEVICE_CUDA)
#define PARITY_TARGET_NPU PARITY_TARGET(PARITY_DEVICE_NPU)

typedef struct parity_kernel_value {
    const char *name;                     // VeOmni value, e.g. "flash_attention_3"
    unsigned targets;                     // PARITY_TARGET_* mask of the device types it is written for
    int min_compute_capability;           // CUDA, where the seed says (90 = SM90+); 0 = any
    bool sequence_parallel;               // attention only: safe under Ulysses SP (seed's attention table)
    const char *sequence_parallel_facade; // attention only: VeOmni's SP-aware name, or NULL
    const char *model_restriction;        // e.g. "DeepSeek-V3, per-model"; NULL = any model
    const char *description;              // one line from the seed
} parity_kernel_value;

typedef struct parity_kernel_field {
    const char *name;          // OpsImplementationConfig field, e.g. "rms_norm_implementation"
    const char *alias;         // short name accepted by --ops, e.g. "rms_norm"
    const char *op;            // registry op it selects (PARITY_OP_* in ops/registry.h)
    const char *default_value; // the dataclass default (GPU-oriented)
    // Value a default becomes on Ascend NPU; NULL when the seed does not auto-resolve this field.
    const char *npu_target;
    // True for the Qwen3.5 GatedDeltaNet fields: never auto-resolved, NPU users set npu explicitly
    // because the eager fallbacks have no dynamic-batch cu_seqlens path.
    bool npu_needs_explicit_value;
    const parity_kernel_value *values;
    size_t value_count;
} parity_kernel_field;

enum { PARITY_KERNEL_FIELD_COUNT = 14 };
extern const parity_kernel_field parity_kernel_fields[PARITY_KERNEL_FIELD_COUNT];

// The field with this full name, or (when `accept_alias`) this --ops alias; NULL when unknown.
const parity_kernel_field *parity_kernel_field_find(const char *name, bool accept_alias);
// The field that selects registry op `op`; NULL when the op has no kernel-selection field.
const parity_kernel_field *parity_kernel_field_for_op(const char *op);
// Index of `field` in parity_kernel_fields.
size_t parity_kernel_field_index(const parity_kernel_field *field);
// The seed's entry for `value` in `field`, or NULL when the seed does not name it.
const parity_kernel_value *parity_kernel_field_value(const parity_kernel_field *field, const char *value);
bool parity_kernel_value_targets(const parity_kernel_value *value, parity_device_type device);

#ifdef __cplusplus
}
#endif
#endif
