// rope_description.h: how a model applies rotary position embeddings, mirroring HF transformers'
// `rope_parameters` (rope_type, rope_theta, partial_rotary_factor, scaling fields) plus DeepSeek-V3's
// `rope_interleave`. The model fills one of these from its config; the rotary op and the frequency
// computation (frequencies.h) read it. Zero in an optional field means HF's default for it.
#ifndef PARITY_ROPE_DESCRIPTION_H
#define PARITY_ROPE_DESCRIPTION_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum parity_rope_type {
    PARITY_ROPE_DEFAULT = 0, // inv_freq = 1 / theta^(2i / rotary_dim)
    PARITY_ROPE_LINEAR,      // default / factor
    PARITY_ROPE_LLAMA3,      // Llama 3.1 wavelength-dependent smoothing
    PARITY_ROPE_YARN,        // YaRN ramp between interpolation and extrapolation, cos/sin scaled
} parity_rope_type;

typedef enum parity_rotary_layout {
    PARITY_ROTARY_HALF_SPLIT = 0, // HF apply_rotary_pos_emb: pairs (j, j + rotary_dim / 2)
    PARITY_ROTARY_INTERLEAVED,    // HF apply_rotary_pos_emb_interleave (DeepSeek-V3 rope_interleave):
                                  // pairs (2j, 2j + 1), output left in half-split order
} parity_rotary_layout;

typedef struct parity_rope_description {
    parity_rope_type type;
    parity_rotary_layout layout;
    double theta;                             // rope_theta, > 0
    double partial_rotary_factor;             // rotary_dim = int(head_dim * factor); 0 means 1 (full)
    double factor;                            // linear, llama3, yarn: the scaling factor, > 0
    double low_freq_factor;                   // llama3
    double high_freq_factor;                  // llama3, > low_freq_factor
    int64_t original_max_position_embeddings; // llama3, yarn: the pre-training context length, > 0
    double beta_fast;                         // yarn; 0 means 32
    double beta_slow;                         // yarn; 0 means 1
    double mscale;                            // yarn; 0 = unset
    double mscale_all_dim;                    // yarn; 0 = unset
    double attention_factor;                  // yarn; 0 = derived from factor, mscale and mscale_all_dim
    bool yarn_no_truncate;                    // yarn: HF truncate=False (gpt-oss) keeps the correction
                                              // range fractional; false (HF default) floors/ceils it
} parity_rope_description;

#ifdef __cplusplus
}
#endif
#endif
