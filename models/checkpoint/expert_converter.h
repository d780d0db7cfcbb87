// expert_converter.h: HF MoE checkpoints -> parity's fused runtime expert layout, following VeOmni's
// checkpoint-tensor-converter rules (seeds/003, Phase 3):
//   - per-expert keys  <layer>.mlp.experts.<j>.{gate,up,down}_proj.weight  are buffered until every
//     expert of that layer arrived, then emitted as  <layer>.mlp.experts.gate_up_proj (E, 2I, H)
//     (gate rows first, then up) and  <layer>.mlp.experts.down_proj (E, H, I);
//   - fused keys already in the v5 layout pass through untouched;
//   - fused keys in the transposed HF layout ((E, H, 2I) / (E, I, H)) are transposed, dispatching on
//     dim 1 (gate_up: H vs 2I; down: I vs H); a shape that matches neither, or both, is an error;
//   - parity_expert_converter_finish fails on any layer left incomplete (a missing expert or a
//     gate without its up projection), naming the layer and what is missing.
#ifndef PARITY_EXPERT_CONVERTER_H
#define PARITY_EXPERT_CONVERTER_H

#include "models/parameters.h"

typedef struct parity_expert_converter parity_expert_converter;

parity_error *parity_expert_converter_new(int64_t num_experts, int64_t hidden_size, int64_t intermediate_size,
                                          parity_expert_converter **out);
// Offers one checkpoint tensor (ownership is taken). Non-expert tensors and converted expert
// tensors are added to `parameters`; per-expert pieces are buffered.
parity_error *parity_expert_converter_feed(parity_expert_converter *converter, const char *name, parity_tensor *tensor,
                                           parity_parameters *parameters);
parity_error *parity_expert_converter_finish(parity_expert_converter *converter);
void parity_expert_converter_free(parity_expert_converter *converter);

#endif
