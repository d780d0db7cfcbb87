// register_cpu.c: the gated_delta_rule family's CPU backends: "eager" (recurrent, eager.c) and
// "fla" (chunked WY/UT form, chunked.c).
#include "ops/gated_delta_rule/cpu_common.h"

parity_error *parity_gated_delta_rule_register_cpu(void) {
    PARITY_TRY(parity_gated_delta_rule_register_eager_cpu());
    return parity_gated_delta_rule_register_chunked_cpu();
}
