// expert_converter.c: the buffering per-expert -> fused converter behind expert_converter.h.
#include "models/checkpoint/expert_converter.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PROJECTION_GATE, PROJECTION_UP, PROJECTION_DOWN, PROJECTION_COUNT };
static const char *const projection_names[PROJECTION_COUNT] = {"gate_proj", "up_proj", "down_proj"};

typedef struct pending_layer {
    char prefix[256];                 // "model.layers.3.mlp"
    parity_tensor *pieces;            // [PROJECTION_COUNT * E], empty = not arrived
    int64_t arrived;
} pending_layer;

struct parity_expert_converter {
    int64_t num_experts, hidden_size, intermediate_size;
    pending_layer *layers;
    size_t layer_count, layer_capacity;
};

parity_error *parity_expert_converter_new(int64_t num_experts, int64_t hidden_size, int64_t intermediate_size,
                                          parity_expert_converter **out) {
    *out = calloc(1, sizeof **out);
    if (!*out) return PARITY_ERROR(PARITY_ERROR_MEMORY, "allocating the expert converter");
    (*out)->num_experts = num_experts;
    (*out)->hidden_size = hidden_size;
    (*out)->intermediate_size = intermediate_size;
    return NULL;
}

static void release_layer(pending_layer *layer, int64_t num_experts) {
    if (layer->pieces)
        for (int64_t i = 0; i < PROJECTION_COUNT * num_experts; i++) parity_tensor_release(&layer->pieces[i]);
    free(layer->pieces);
    memset(layer, 0, sizeof *layer);
}

void parity_expert_converter_free(parity_expert_converter *converter) {
    if (!converter) return;
    for (size_t i = 0; i < converter->layer_count; i++) release_layer(&converter->layers[i], converter->num_experts);
    free(converter->layers);
    free(converter);
}

// Splits "<prefix>.experts.<j>.<projection>.weight"; false when the name is not a per-expert key.
static bool parse_per_expert(const char *name, char *prefix, size_t prefix_size, int64_t *expert, int *projection) {
    const char *marker = strstr(name, ".experts.");
    if (!marker || !isdigit((unsigned char)marker[9])) return false;
    char *end = NULL;
    long long index = strtoll(marker + 9, &end, 10);
    if (*end != '.') return false;
    for (int p = 0; p < PROJECTION_COUNT; p++) {
        size_t length = strlen(projection_names[p]);
        if (strncmp(end + 1, projection_names[p], length) == 0 && strcmp(end + 1 + length, ".weight") == 0) {
            size_t prefix_length = (size_t)(marker - name);
            if (prefix_length >= prefix_size) return false;
            memcpy(prefix, name, prefix_length);
            prefix[prefix_length] = '\0';
            *expert = index;
            *projection = p;
            return true;
        }
    }
    return false;
}

static parity_error *find_or_add_layer(parity_expert_converter *converter, const char *prefix, pending_layer **out) {
    for (size_t i = 0; i < converter->layer_count; i++)
        if (strcmp(converter->layers[i].prefix, prefix) == 0) {
            *out = &converter->layers[i];
            return NULL;
        }
    if (converter->layer_count == converter->layer_capacity) {
        size_t capacity = converter->layer_capacity ? converter->layer_capacity * 2 : 16;
        pending_layer *grown = realloc(converter->layers, capacity * sizeof *grown);
        if (!grown) return PARITY_ERROR(PARITY_ERROR_MEMORY, "buffering experts");
        converter->layers = grown;
        converter->layer_capacity = capacity;
    }
    pending_layer *layer = &converter->layers[converter->layer_count];
    memset(layer, 0, sizeof *layer);
    snprintf(layer->prefix, sizeof layer->prefix, "%s", prefix);
    layer->pieces = calloc((size_t)(PROJECTION_COUNT * converter->num_experts), sizeof *layer->pieces);
    if (!layer->pieces) return PARITY_ERROR(PARITY_ERROR_MEMORY, "buffering experts of %s", prefix);
    converter->layer_count++;
    *out = layer;
    return NULL;
}

// Stacks the buffered pieces of a complete layer into gate_up_proj (E, 2I, H) and down_proj (E, H, I).
static parity_error *emit_layer(parity_expert_converter *converter, pending_layer *layer, parity_parameters *parameters) {
    int64_t experts = converter->num_experts, hidden = converter->hidden_size, intermediate = converter->intermediate_size;
    parity_dtype dtype = layer->pieces[0].dtype;
    parity_tensor gate_up, down;
    PARITY_TRY(parity_tensor_alloc(&gate_up, dtype, PARITY_CPU, PARITY_SHAPE(experts, 2 * intermediate, hidden)));
    parity_error *error = parity_tensor_alloc(&down, dtype, PARITY_CPU, PARITY_SHAPE(experts, hidden, intermediate));
    if (error) {
        parity_tensor_release(&gate_up);
        return error;
    }
    size_t element = parity_dtype_size(dtype), block = (size_t)(intermediate * hidden) * element;
    for (int64_t e = 0; e < experts; e++) {
        memcpy((char *)gate_up.data + (size_t)(2 * e) * block, layer->pieces[PROJECTION_GATE * experts + e].data, block);
        memcpy((char *)gate_up.data + (size_t)(2 * e + 1) * block, layer->pieces[PROJECTION_UP * experts + e].data, block);
        memcpy((char *)down.data + (size_t)e * block, layer->pieces[PROJECTION_DOWN * experts + e].data, block);
    }
    char name[320];
    snprintf(name, sizeof name, "%s.experts.gate_up_proj", layer->prefix);
    error = parity_parameters_add(parameters, name, &gate_up);
    snprintf(name, sizeof name, "%s.experts.down_proj", layer->prefix);
    if (!error) error = parity_parameters_add(parameters, name, &down);
    parity_tensor_release(&gate_up);
    parity_tensor_release(&down);
    return error;
}

static parity_error *feed_per_expert(parity_expert_converter *converter, const char *name, const char *prefix,
                                     int64_t expert, int projection, parity_tensor *tensor, parity_parameters *parameters) {
    int64_t hidden = converter->hidden_size, intermediate = converter->intermediate_size;
    if (expert < 0 || expert >= converter->num_experts)
        return PARITY_ERROR(PARITY_ERROR_DATA, "tensor '%s': expert %lld outside 0..%lld (num_experts %lld)", name,
                            (long long)expert, (long long)converter->num_experts - 1, (long long)converter->num_experts);
    int64_t rows = projection == PROJECTION_DOWN ? hidden : intermediate, columns = projection == PROJECTION_DOWN ? intermediate : hidden;
    if (tensor->ndim != 2 || tensor->shape[0] != rows || tensor->shape[1] != columns) {
        char shape[160];
        return PARITY_ERROR(PARITY_ERROR_DATA, "tensor '%s' has shape %s, expected (%lld, %lld)", name,
                            parity_tensor_shape_string(tensor, shape, sizeof shape), (long long)rows, (long long)columns);
    }
    pending_layer *layer = NULL;
    PARITY_TRY(find_or_add_layer(converter, prefix, &layer));
    parity_tensor *slot = &layer->pieces[projection * converter->num_experts + expert];
    if (slot->data) return PARITY_ERROR(PARITY_ERROR_DATA, "tensor '%s' appears twice", name);
    if (layer->arrived > 0 && tensor->dtype != layer->pieces[0].dtype && layer->pieces[0].data)
        return PARITY_ERROR(PARITY_ERROR_DATA, "tensor '%s' is %s, other experts of %s are %s", name,
                            parity_dtype_name(tensor->dtype), prefix, parity_dtype_name(layer->pieces[0].dtype));
    *slot = *tensor;
    memset(tensor, 0, sizeof *tensor);
    layer->arrived++;
    if (layer->arrived < PROJECTION_COUNT * converter->num_experts) return NULL;
    // every piece arrived: check dtypes agree, then stack
    for (int64_t i = 1; i < PROJECTION_COUNT * converter->num_experts; i++)
        if (layer->pieces[i].dtype != layer->pieces[0].dtype)
            return PARITY_ERROR(PARITY_ERROR_DATA, "experts of %s mix dtypes", prefix);
    parity_error *error = emit_layer(converter, layer, parameters);
    release_layer(layer, converter->num_experts);
    *layer = converter->layers[--converter->layer_count]; // keep the array dense
    return error;
}

// A fused key: pass the v5 layout through, transpose the HF layout, reject anything ambiguous.
static parity_error *feed_fused(parity_expert_converter *converter, const char *name, bool gate_up, parity_tensor *tensor,
                                parity_parameters *parameters) {
    int64_t experts = converter->num_experts, hidden = converter->hidden_size, intermediate = converter->intermediate_size;
    int64_t v5_rows = gate_up ? 2 * intermediate : hidden, v5_columns = gate_up ? hidden : intermediate;
    char shape[160];
    parity_tensor_shape_string(tensor, shape, sizeof shape);
    if (tensor->ndim != 3 || tensor->shape[0] != experts)
        return PARITY_ERROR(PARITY_ERROR_DATA, "tensor '%s' has shape %s, expected (%lld, ., .)", name, shape, (long long)experts);
    bool is_v5 = tensor->shape[1] == v5_rows && tensor->shape[2] == v5_columns;
    bool is_transposed = tensor->shape[1] == v5_columns && tensor->shape[2] == v5_rows;
    if (is_v5 && is_transposed)
        return PARITY_ERROR(PARITY_ERROR_DATA, "tensor '%s' has shape %s: square per-expert blocks make the layout ambiguous "
                            "(fused v5 or transposed HF); refusing to guess", name, shape);
    if (!is_v5 && !is_transposed)
        return PARITY_ERROR(PARITY_ERROR_DATA, "tensor '%s' has shape %s, expected (%lld, %lld, %lld) or its transpose", name, shape,
                            (long long)experts, (long long)v5_rows, (long long)v5_columns);
    if (is_v5) return parity_parameters_add(parameters, name, tensor);
    parity_tensor transposed_view, converted;
    PARITY_TRY(parity_tensor_transpose(&transposed_view, tensor, 1, 2));
    PARITY_TRY(parity_tensor_alloc(&converted, tensor->dtype, PARITY_CPU, PARITY_SHAPE(experts, v5_rows, v5_columns)));
    parity_error *error = parity_tensor_copy(&converted, &transposed_view);
    if (!error) error = parity_parameters_add(parameters, name, &converted);
    parity_tensor_release(&converted);
    parity_tensor_release(tensor);
    return error;
}

parity_error *parity_expert_converter_feed(parity_expert_converter *converter, const char *name, parity_tensor *tensor,
                                           parity_parameters *parameters) {
    char prefix[256];
    int64_t expert;
    int projection;
    if (converter->num_experts > 0 && parse_per_expert(name, prefix, sizeof prefix, &expert, &projection))
        return feed_per_expert(converter, name, prefix, expert, projection, tensor, parameters);
    size_t length = strlen(name);
    static const char gate_up_suffix[] = ".experts.gate_up_proj", down_suffix[] = ".experts.down_proj";
    if (converter->num_experts > 0 && length > sizeof gate_up_suffix &&
        strcmp(name + length - (sizeof gate_up_suffix - 1), gate_up_suffix) == 0)
        return feed_fused(converter, name, true, tensor, parameters);
    if (converter->num_experts > 0 && length > sizeof down_suffix && strcmp(name + length - (sizeof down_suffix - 1), down_suffix) == 0)
        return feed_fused(converter, name, false, tensor, parameters);
    return parity_parameters_add(parameters, name, tensor);
}

parity_error *parity_expert_converter_finish(parity_expert_converter *converter) {
    if (converter->layer_count == 0) return NULL;
    // Report every problem of the first incomplete layer: missing experts, then unpaired pieces.
    pending_layer *layer = &converter->layers[0];
    int64_t experts = converter->num_experts;
    char problems[1024] = "";
    size_t used = 0;
    for (int64_t e = 0; e < experts && used < sizeof problems; e++) {
        bool gate = layer->pieces[PROJECTION_GATE * experts + e].data != NULL;
        bool up = layer->pieces[PROJECTION_UP * experts + e].data != NULL;
        bool down = layer->pieces[PROJECTION_DOWN * experts + e].data != NULL;
        const char *separator = used ? "; " : "";
        int written = 0;
        if (!gate && !up && !down) written = snprintf(problems + used, sizeof problems - used, "%sexpert %lld is missing", separator, (long long)e);
        else if (gate != up)
            written = snprintf(problems + used, sizeof problems - used, "%sexpert %lld has %s without its %s", separator, (long long)e,
                               gate ? "gate_proj" : "up_proj", gate ? "up_proj" : "gate_proj");
        else if (!down) written = snprintf(problems + used, sizeof problems - used, "%sexpert %lld has no down_proj", separator, (long long)e);
        if (written > 0) used += (size_t)written;
    }
    return PARITY_ERROR(PARITY_ERROR_DATA, "%s.experts: incomplete at the end of the checkpoint (%lld of %lld expert tensors): %s",
                        layer->prefix, (long long)layer->arrived, (long long)(PROJECTION_COUNT * experts), problems);
}
