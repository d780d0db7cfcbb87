// mlp_block.c: HF's SwiGLU MLP: down_proj(silu(gate_proj(x)) * up_proj(x)).
#include "models/families/blocks.h"

parity_error *block_mlp(family_context *context, const char *module, parity_variable *x, parity_variable **out) {
    bool bias = context->model->config.mlp_bias;
    parity_variable *gate, *up, *activated;
    PARITY_TRY(family_linear(context, x, bias, &gate, "%s.gate_proj", module));
    PARITY_TRY(family_linear(context, x, bias, &up, "%s.up_proj", module));
    const parity_backend *swiglu;
    PARITY_TRY(family_backend(context, PARITY_OP_ID_SWIGLU, &swiglu));
    PARITY_TRY(parity_node_swiglu(context->tape, swiglu, module, gate, up, &activated));
    return family_linear(context, activated, bias, out, "%s.down_proj", module);
}
