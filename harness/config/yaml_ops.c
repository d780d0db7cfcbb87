// yaml_ops.c: libyaml document walk down to model.ops_implementation (see yaml_ops.h). libyaml
// does not reject duplicate keys, so duplicates are found here; marks are 0-based, messages 1-based.
#include "harness/config/yaml_ops.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "harness/yaml_limits.h"
#include "ops/core/file.h"

#define OPS_PATH "model.ops_implementation"

// Problems found while walking the document, joined into one message.
typedef struct problem_list {
    char text[900];
    size_t used, count;
} problem_list;

static void add_problem(problem_list *problems, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void add_problem(problem_list *problems, const char *format, ...) {
    problems->count++;
    if (problems->used >= sizeof problems->text - 1) return;
    if (problems->used) problems->used += (size_t)snprintf(problems->text + problems->used,
                                                            sizeof problems->text - problems->used, "; ");
    if (problems->used >= sizeof problems->text - 1) return;
    va_list args;
    va_start(args, format);
    int written = vsnprintf(problems->text + problems->used, sizeof problems->text - problems->used, format, args);
    va_end(args);
    if (written > 0) problems->used += (size_t)written;
}

static const char *scalar_text(const yaml_node_t *node) {
    return node && node->type == YAML_SCALAR_NODE ? (const char *)node->data.scalar.value : NULL;
}

// An empty plain scalar or a YAML null spelling: a key written with no value.
static bool is_null_scalar(const yaml_node_t *node) {
    if (!node || node->type != YAML_SCALAR_NODE || node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return false;
    const char *text = scalar_text(node);
    return !text[0] || strcmp(text, "~") == 0 || strcmp(text, "null") == 0 || strcmp(text, "Null") == 0 ||
           strcmp(text, "NULL") == 0;
}

static const char *node_kind(const yaml_node_t *node) {
    switch (node->type) {
    case YAML_MAPPING_NODE: return "a mapping";
    case YAML_SEQUENCE_NODE: return "a sequence";
    case YAML_SCALAR_NODE: return "a scalar";
    default: return "nothing";
    }
}

static int line_of(const yaml_node_t *node) { return (int)node->start_mark.line + 1; }

// Finds the value of scalar key `key` in mapping `mapping`; reports a duplicate of that key.
static yaml_node_t *mapping_lookup(yaml_document_t *document, yaml_node_t *mapping, const char *key,
                                   const char *where, const char *name, problem_list *problems) {
    yaml_node_t *found = NULL, *found_key = NULL;
    for (yaml_node_pair_t *pair = mapping->data.mapping.pairs.start; pair < mapping->data.mapping.pairs.top; pair++) {
        yaml_node_t *key_node = yaml_document_get_node(document, pair->key);
        const char *text = scalar_text(key_node);
        if (!text || strcmp(text, key) != 0) continue;
        if (found) {
            add_problem(problems, "%s:%d: duplicate key '%s' in %s (first at line %d)", name, line_of(key_node), key,
                        where, line_of(found_key));
            continue;
        }
        found = yaml_document_get_node(document, pair->value);
        found_key = key_node;
    }
    return found;
}

// Reads the ops mapping into `settings`, reporting every bad entry.
static void read_ops_block(yaml_document_t *document, yaml_node_t *block, const char *name,
                           parity_ops_settings *settings, problem_list *problems, parity_error **error) {
    size_t *first = NULL;
    *error = parity_yaml_first_keys(document, block, &first);
    if (*error) return;
    for (yaml_node_pair_t *pair = block->data.mapping.pairs.start; pair < block->data.mapping.pairs.top; pair++) {
        yaml_node_t *key_node = yaml_document_get_node(document, pair->key);
        yaml_node_t *value_node = yaml_document_get_node(document, pair->value);
        const char *key = scalar_text(key_node);
        if (!key) {
            add_problem(problems, "%s:%d: a key in " OPS_PATH " is %s, expected a field name", name,
                        line_of(key_node), node_kind(key_node));
            continue;
        }
        yaml_node_pair_t *earlier = block->data.mapping.pairs.start + first[pair - block->data.mapping.pairs.start];
        if (earlier != pair) {
            add_problem(problems, "%s:%d: duplicate key '%s' in " OPS_PATH " (first at line %d)", name, line_of(key_node),
                        key, line_of(yaml_document_get_node(document, earlier->key)));
            continue;
        }
        if (value_node->type != YAML_SCALAR_NODE) {
            add_problem(problems, "%s:%d: " OPS_PATH ".%s is %s, expected a scalar value", name, line_of(value_node),
                        key, node_kind(value_node));
            continue;
        }
        if (is_null_scalar(value_node)) {
            add_problem(problems, "%s:%d: " OPS_PATH ".%s has no value", name, line_of(key_node), key);
            continue;
        }
        if (!*error) {
            parity_ops_source source = {.kind = PARITY_OPS_FROM_YAML, .line = line_of(key_node)};
            snprintf(source.file, sizeof source.file, "%s", name);
            *error = parity_ops_settings_add(settings, key, scalar_text(value_node), &source);
        }
    }
    free(first);
}

// Walks root -> model -> ops_implementation of a loaded document.
static parity_error *read_document(yaml_document_t *document, const char *name, parity_ops_settings *settings) {
    yaml_node_t *root = yaml_document_get_root_node(document);
    if (!root || is_null_scalar(root)) return NULL; // empty file: all defaults
    if (root->type != YAML_MAPPING_NODE)
        return PARITY_ERROR(PARITY_ERROR_CONFIG, "%s:%d: the top level is %s, expected a mapping with a 'model' key",
                            name, line_of(root), node_kind(root));
    problem_list problems = {.used = 0};
    yaml_node_t *model = mapping_lookup(document, root, "model", "the top level", name, &problems);
    yaml_node_t *block = NULL;
    if (model && !is_null_scalar(model)) {
        if (model->type != YAML_MAPPING_NODE)
            add_problem(&problems, "%s:%d: 'model' is %s, expected a mapping", name, line_of(model), node_kind(model));
        else block = mapping_lookup(document, model, "ops_implementation", "model", name, &problems);
    }
    if (block && is_null_scalar(block)) block = NULL;
    if (block && block->type != YAML_MAPPING_NODE) {
        add_problem(&problems, "%s:%d: " OPS_PATH " is %s, expected a mapping of field: value", name, line_of(block),
                    node_kind(block));
        block = NULL;
    }
    size_t count_before = settings->count;
    parity_error *error = NULL;
    if (block) read_ops_block(document, block, name, settings, &problems, &error);
    if (!error && problems.count)
        error = PARITY_ERROR(PARITY_ERROR_CONFIG, "%s%s", problems.text,
                             problems.used >= sizeof problems.text - 1 ? " ..." : "");
    if (error) {
        while (settings->count > count_before) { // nothing appended on error
            settings->count--;
            free(settings->items[settings->count].key);
            free(settings->items[settings->count].value);
        }
    }
    return error;
}

static parity_error *parser_error(const yaml_parser_t *parser, const char *name) {
    const char *problem = parser->problem ? parser->problem : "unknown YAML error";
    switch (parser->error) {
    case YAML_MEMORY_ERROR: return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: out of memory while parsing YAML", name);
    case YAML_READER_ERROR:
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: byte %zu: %s", name, parser->problem_offset, problem);
    default: break;
    }
    if (parser->context)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s:%zu:%zu: %s (%s, started at %s:%zu:%zu)", name,
                            parser->problem_mark.line + 1, parser->problem_mark.column + 1, problem, parser->context,
                            name, parser->context_mark.line + 1, parser->context_mark.column + 1);
    return PARITY_ERROR(PARITY_ERROR_DATA, "%s:%zu:%zu: %s", name, parser->problem_mark.line + 1,
                        parser->problem_mark.column + 1, problem);
}

parity_error *parity_yaml_ops_read_text(const char *text, size_t length, const char *name,
                                        parity_ops_settings *settings) {
    if (!text || !settings) return PARITY_ERROR(PARITY_ERROR_USAGE, "parity_yaml_ops_read_text needs text and settings");
    if (!name) name = "<yaml>";
    size_t deep_line, deep_column; // checked first: libyaml takes minutes over a very deep file
    if (parity_yaml_too_deep(text, length, &deep_line, &deep_column))
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s:%zu:%zu: the YAML nests deeper than %d levels", name, deep_line,
                            deep_column, PARITY_YAML_MAX_DEPTH);
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: initializing libyaml", name);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, length);
    yaml_document_t document; // the first document
    parity_error *error = NULL;
    if (!yaml_parser_load(&parser, &document)) {
        error = parser_error(&parser, name);
    } else {
        error = read_document(&document, name, settings);
        yaml_document_delete(&document);
    }
    yaml_parser_delete(&parser);
    return error;
}

parity_error *parity_yaml_ops_read_file(const char *path, parity_ops_settings *settings) {
    if (!path || !settings) return PARITY_ERROR(PARITY_ERROR_USAGE, "parity_yaml_ops_read_file needs a path and settings");
    struct stat file_status;
    if (stat(path, &file_status) != 0) return PARITY_ERROR(PARITY_ERROR_IO, "cannot read %s: %s", path, strerror(errno));
    if (S_ISDIR(file_status.st_mode)) return PARITY_ERROR(PARITY_ERROR_IO, "cannot read %s: it is a directory", path);
    char *text;
    size_t length;
    PARITY_TRY(parity_read_file(path, &text, &length)); // whole, for the depth check before libyaml
    parity_error *error = parity_yaml_ops_read_text(text, length, path, settings);
    free(text);
    return error;
}
