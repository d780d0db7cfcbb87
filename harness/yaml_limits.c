// yaml_limits.c: the depth walk and the sorted duplicate-key search behind yaml_limits.h.
#include "harness/yaml_limits.h"

#include <stdlib.h>
#include <string.h>

bool parity_yaml_too_deep(const char *text, size_t length, size_t *line, size_t *column) {
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) return false;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, length);
    int depth = 0;
    bool deep = false, done = false;
    while (!deep && !done) {
        yaml_event_t event;
        if (!yaml_parser_parse(&parser, &event)) break; // malformed: the loader says where
        switch (event.type) {
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (++depth > PARITY_YAML_MAX_DEPTH) {
                deep = true;
                *line = event.start_mark.line + 1;
                *column = event.start_mark.column + 1;
            }
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: depth--; break;
        case YAML_STREAM_END_EVENT: done = true; break;
        default: break;
        }
        yaml_event_delete(&event);
    }
    yaml_parser_delete(&parser);
    return deep;
}

typedef struct key_entry {
    const char *text;
    size_t index;
} key_entry;

// By key text, then by position: equal keys end up adjacent, the first occurrence first.
static int compare_keys(const void *a, const void *b) {
    const key_entry *x = a, *y = b;
    int order = strcmp(x->text, y->text);
    return order ? order : (x->index > y->index) - (x->index < y->index);
}

parity_error *parity_yaml_first_keys(yaml_document_t *document, const yaml_node_t *mapping, size_t **first) {
    size_t count = (size_t)(mapping->data.mapping.pairs.top - mapping->data.mapping.pairs.start);
    *first = malloc((count ? count : 1) * sizeof **first);
    key_entry *keys = malloc((count ? count : 1) * sizeof *keys);
    if (!*first || !keys) {
        free(*first);
        free(keys);
        *first = NULL;
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "checking the %zu keys of a YAML mapping for duplicates", count);
    }
    size_t scalars = 0;
    for (size_t i = 0; i < count; i++) {
        (*first)[i] = i;
        const yaml_node_t *key = yaml_document_get_node(document, mapping->data.mapping.pairs.start[i].key);
        if (key && key->type == YAML_SCALAR_NODE) keys[scalars++] = (key_entry){(const char *)key->data.scalar.value, i};
    }
    qsort(keys, scalars, sizeof *keys, compare_keys);
    for (size_t i = 1; i < scalars; i++)
        if (strcmp(keys[i].text, keys[i - 1].text) == 0) (*first)[keys[i].index] = (*first)[keys[i - 1].index];
    free(keys);
    return NULL;
}
