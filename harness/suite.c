// suite.c: the suite YAML reader (suite.h). libyaml builds the document; this walks it, checking
// every key against the keys allowed where it stands, so a typo is an error with its line instead
// of a silently ignored setting. libyaml marks are 0-based; messages are 1-based.
#include "harness/suite.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "harness/yaml_limits.h"

// ---- problems: collected, then returned as one CONFIG error ----

typedef struct suite_reader {
    const char *path;
    char directory[1024];          // the suite file's folder, for relative paths
    yaml_document_t *document;
    char *problems;                // "\n  file:line: ..." lines
    size_t problems_used, problems_capacity, problem_count;
} suite_reader;

static void problem(suite_reader *reader, int line, const char *format, ...) __attribute__((format(printf, 3, 4)));
static void problem(suite_reader *reader, int line, const char *format, ...) {
    reader->problem_count++;
    char message[1536];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    char entry[1800];
    int length = line > 0 ? snprintf(entry, sizeof entry, "\n  %s:%d: %s", reader->path, line, message)
                          : snprintf(entry, sizeof entry, "\n  %s: %s", reader->path, message);
    if (length < 0) return;
    size_t needed = reader->problems_used + (size_t)length + 1;
    if (needed > reader->problems_capacity) {
        size_t capacity = needed * 2;
        char *grown = realloc(reader->problems, capacity);
        if (!grown) return;
        reader->problems = grown;
        reader->problems_capacity = capacity;
    }
    memcpy(reader->problems + reader->problems_used, entry, (size_t)length + 1);
    reader->problems_used += (size_t)length;
}

// ---- node helpers ----

static int line_of(const yaml_node_t *node) { return node ? (int)node->start_mark.line + 1 : 0; }

static const char *scalar_text(const yaml_node_t *node) {
    return node && node->type == YAML_SCALAR_NODE ? (const char *)node->data.scalar.value : NULL;
}

static const char *node_kind(const yaml_node_t *node) {
    switch (node->type) {
    case YAML_MAPPING_NODE: return "a mapping";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_SCALAR_NODE: return "a scalar";
    default: return "nothing";
    }
}

static yaml_node_t *node_at(suite_reader *reader, int index) { return yaml_document_get_node(reader->document, index); }

static bool expect_kind(suite_reader *reader, const yaml_node_t *node, yaml_node_type_t kind, const char *what) {
    if (node->type == kind) return true;
    const char *wanted = kind == YAML_MAPPING_NODE ? "a mapping" : kind == YAML_SEQUENCE_NODE ? "a list" : "a scalar";
    problem(reader, line_of(node), "%s must be %s, found %s", what, wanted, node_kind(node));
    return false;
}

// Checks a mapping's keys: scalars, each allowed, none twice. `allowed` is NULL-terminated.
static void check_keys(suite_reader *reader, const yaml_node_t *mapping, const char *const *allowed, const char *what) {
    size_t *first = NULL;
    parity_error *error = parity_yaml_first_keys(reader->document, mapping, &first);
    if (error) {
        problem(reader, line_of(mapping), "%s", parity_error_message(error));
        parity_error_free(error);
        return;
    }
    for (yaml_node_pair_t *pair = mapping->data.mapping.pairs.start; pair < mapping->data.mapping.pairs.top; pair++) {
        yaml_node_t *key = node_at(reader, pair->key);
        const char *text = scalar_text(key);
        if (!text) {
            problem(reader, line_of(key), "%s has a key that is %s; keys must be plain names", what, node_kind(key));
            continue;
        }
        bool known = false;
        for (size_t i = 0; allowed[i]; i++) known = known || strcmp(allowed[i], text) == 0;
        if (!known) {
            char list[512] = "";
            size_t used = 0;
            for (size_t i = 0; allowed[i] && used < sizeof list; i++)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", allowed[i]);
            problem(reader, line_of(key), "unknown key '%s' in %s (allowed: %s)", text, what, list);
        }
        size_t earlier = first[pair - mapping->data.mapping.pairs.start];
        if (mapping->data.mapping.pairs.start + earlier != pair)
            problem(reader, line_of(key), "duplicate key '%s' in %s (first at line %d)", text, what,
                    line_of(node_at(reader, mapping->data.mapping.pairs.start[earlier].key)));
    }
    free(first);
}

// The value of `key` in `mapping` (the first, if duplicated), or NULL.
static yaml_node_t *lookup(suite_reader *reader, const yaml_node_t *mapping, const char *key) {
    for (yaml_node_pair_t *pair = mapping->data.mapping.pairs.start; pair < mapping->data.mapping.pairs.top; pair++) {
        const char *text = scalar_text(node_at(reader, pair->key));
        if (text && strcmp(text, key) == 0) return node_at(reader, pair->value);
    }
    return NULL;
}

static bool read_string(suite_reader *reader, const yaml_node_t *node, const char *what, char *out, size_t size) {
    if (!expect_kind(reader, node, YAML_SCALAR_NODE, what)) return false;
    const char *text = scalar_text(node);
    if (!text[0]) {
        problem(reader, line_of(node), "%s is empty", what);
        return false;
    }
    if (strlen(text) >= size) {
        problem(reader, line_of(node), "%s is longer than %zu characters", what, size - 1);
        return false;
    }
    snprintf(out, size, "%s", text);
    return true;
}

static bool read_integer(suite_reader *reader, const yaml_node_t *node, const char *what, long long minimum,
                         long long maximum, long long *out) {
    if (!expect_kind(reader, node, YAML_SCALAR_NODE, what)) return false;
    const char *text = scalar_text(node);
    char *end = NULL;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (!text[0] || *end || errno) {
        problem(reader, line_of(node), "%s '%s' is not an integer", what, text);
        return false;
    }
    if (value < minimum || value > maximum) {
        problem(reader, line_of(node), "%s %lld is outside %lld..%lld", what, value, minimum, maximum);
        return false;
    }
    *out = value;
    return true;
}

static bool read_seed(suite_reader *reader, const yaml_node_t *node, const char *what, uint64_t *out) {
    if (!expect_kind(reader, node, YAML_SCALAR_NODE, what)) return false;
    const char *text = scalar_text(node);
    char *end = NULL;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (!text[0] || *end || errno || text[0] == '-') {
        problem(reader, line_of(node), "%s '%s' is not a non-negative integer", what, text);
        return false;
    }
    *out = value;
    return true;
}

static bool read_positive_number(suite_reader *reader, const yaml_node_t *node, const char *what, double *out) {
    if (!expect_kind(reader, node, YAML_SCALAR_NODE, what)) return false;
    const char *text = scalar_text(node);
    char *end = NULL;
    double value = strtod(text, &end);
    if (!text[0] || *end || !isfinite(value) || value <= 0) {
        problem(reader, line_of(node), "%s '%s' is not a positive number", what, text);
        return false;
    }
    *out = value;
    return true;
}

// A list of scalars, or one scalar standing for a list of one. Calls `each` per item.
typedef void (*item_reader)(suite_reader *reader, const yaml_node_t *item, void *context);
static void read_scalar_list(suite_reader *reader, const yaml_node_t *node, const char *what, item_reader each,
                             void *context) {
    if (node->type == YAML_SCALAR_NODE) {
        each(reader, node, context);
        return;
    }
    if (!expect_kind(reader, node, YAML_SEQUENCE_NODE, what)) return;
    if (node->data.sequence.items.start == node->data.sequence.items.top)
        problem(reader, line_of(node), "%s is an empty list", what);
    for (yaml_node_item_t *item = node->data.sequence.items.start; item < node->data.sequence.items.top; item++) {
        yaml_node_t *value = node_at(reader, *item);
        if (expect_kind(reader, value, YAML_SCALAR_NODE, what)) each(reader, value, context);
    }
}

// Removes "x/.." pairs and "./" lexically ("suites/../golden/a" -> "golden/a"), so paths recorded
// in goldens and reports read the way a user would write them.
static void normalize_path(char *path) {
    char *parts[256];
    size_t count = 0;
    bool absolute = path[0] == '/';
    char copy[2048];
    snprintf(copy, sizeof copy, "%s", path);
    char *save = NULL;
    for (char *part = strtok_r(copy, "/", &save); part && count < 256; part = strtok_r(NULL, "/", &save)) {
        if (strcmp(part, ".") == 0) continue;
        if (strcmp(part, "..") == 0 && count > 0 && strcmp(parts[count - 1], "..") != 0) {
            count--;
            continue;
        }
        parts[count++] = part;
    }
    char normalized[2048] = "";
    size_t used = 0;
    if (absolute) normalized[used++] = '/';
    normalized[used] = '\0';
    for (size_t i = 0; i < count && used < sizeof normalized; i++)
        used += (size_t)snprintf(normalized + used, sizeof normalized - used, "%s%s", i ? "/" : "", parts[i]);
    if (!normalized[0]) snprintf(normalized, sizeof normalized, ".");
    strcpy(path, normalized);
}

// A path relative to the suite file's folder (absolute paths stay as they are).
static void resolve_path(const suite_reader *reader, const char *text, char *out, size_t size) {
    int written = text[0] == '/' || !reader->directory[0] ? snprintf(out, size, "%s", text)
                                                          : snprintf(out, size, "%s/%s", reader->directory, text);
    if (written < 0 || (size_t)written >= size) {
        out[0] = '\0'; // too long: reported as a missing path
        return;
    }
    normalize_path(out);
}

static bool path_is(const char *path, bool directory) {
    struct stat info;
    return stat(path, &info) == 0 && (directory ? S_ISDIR(info.st_mode) : S_ISREG(info.st_mode));
}

// ---- sections ----

static void add_layout(suite_reader *reader, const yaml_node_t *item, void *context) {
    parity_suite *suite = context;
    parity_layout layout;
    const char *text = scalar_text(item);
    parity_error *error = parity_layout_parse(text ? text : "", &layout);
    if (error) {
        problem(reader, line_of(item), "parallel layout '%s': %s", text ? text : "", parity_error_message(error));
        parity_error_free(error);
        return;
    }
    char name[64], other[64];
    parity_layout_name(&layout, name, sizeof name);
    for (size_t i = 0; i < suite->layout_count; i++) {
        parity_layout_name(&suite->layouts[i], other, sizeof other);
        if (strcmp(name, other) == 0) {
            problem(reader, line_of(item), "parallel layout '%s' is listed twice", text);
            return;
        }
    }
    if (suite->layout_count == PARITY_SUITE_MAX_LAYOUTS) {
        problem(reader, line_of(item), "parallel: more than %d layouts", PARITY_SUITE_MAX_LAYOUTS);
        return;
    }
    suite->layouts[suite->layout_count++] = layout;
}

static void add_dtype(suite_reader *reader, const yaml_node_t *item, void *context) {
    parity_suite *suite = context;
    parity_dtype dtype;
    const char *text = scalar_text(item);
    if (!parity_dtype_parse(text, &dtype) || (dtype != PARITY_F64 && dtype != PARITY_F32 && dtype != PARITY_BF16)) {
        problem(reader, line_of(item), "dtype '%s' is not one of fp64, fp32, bf16", text);
        return;
    }
    for (size_t i = 0; i < suite->dtype_count; i++)
        if (suite->dtypes[i] == dtype) {
            problem(reader, line_of(item), "dtype '%s' is listed twice", text);
            return;
        }
    if (suite->dtype_count == PARITY_SUITE_MAX_DTYPES) return;
    suite->dtypes[suite->dtype_count++] = dtype;
}

static void add_device(suite_reader *reader, const yaml_node_t *item, void *context) {
    parity_suite *suite = context;
    const char *text = scalar_text(item);
    if (strcmp(text, "cpu") != 0 && strcmp(text, "cuda") != 0 && strcmp(text, "best") != 0) {
        problem(reader, line_of(item), "device '%s' is not one of cpu, cuda, best", text);
        return;
    }
    for (size_t i = 0; i < suite->device_count; i++)
        if (strcmp(suite->devices[i], text) == 0) {
            problem(reader, line_of(item), "device '%s' is listed twice", text);
            return;
        }
    if (suite->device_count == PARITY_SUITE_MAX_DEVICES) return;
    snprintf(suite->devices[suite->device_count++], sizeof suite->devices[0], "%s", text);
}

static void add_sweep_field(suite_reader *reader, const yaml_node_t *item, void *context) {
    parity_suite *suite = context;
    const char *text = scalar_text(item);
    const parity_kernel_field *field = parity_kernel_field_find(text, true);
    if (!field) {
        problem(reader, line_of(item), "sweep: '%s' is not a kernel-selection field (see parity list ops)", text);
        return;
    }
    for (size_t i = 0; i < suite->sweep_count; i++)
        if (suite->sweep[i] == field) {
            problem(reader, line_of(item), "sweep: field '%s' is listed twice", field->name);
            return;
        }
    suite->sweep[suite->sweep_count++] = field;
}

static void add_document(suite_reader *reader, const yaml_node_t *item, void *context) {
    parity_suite_batch *batch = context;
    long long length;
    if (!read_integer(reader, item, "a packed document length", 2, 1 << 24, &length)) return;
    if (batch->document_count == PARITY_SUITE_MAX_DOCUMENTS) {
        problem(reader, line_of(item), "a packed row holds at most %d documents", PARITY_SUITE_MAX_DOCUMENTS);
        return;
    }
    batch->documents[batch->document_count++] = length;
}

static void read_batch(suite_reader *reader, const yaml_node_t *node, parity_suite_batch *batch) {
    memset(batch, 0, sizeof *batch);
    batch->line = line_of(node);
    if (!expect_kind(reader, node, YAML_MAPPING_NODE, "a batch")) return;
    static const char *const keys[] = {"name", "file", "plain", "packed", NULL};
    check_keys(reader, node, keys, "a batch");
    yaml_node_t *name = lookup(reader, node, "name");
    if (!name) problem(reader, line_of(node), "a batch needs a name (the golden's case name)");
    else read_string(reader, name, "batch name", batch->name, sizeof batch->name);
    yaml_node_t *file = lookup(reader, node, "file"), *plain = lookup(reader, node, "plain"),
                *packed = lookup(reader, node, "packed");
    int kinds = !!file + !!plain + !!packed;
    if (kinds != 1) {
        problem(reader, line_of(node), "batch '%s' needs exactly one of file, plain, packed (found %d)",
                batch->name[0] ? batch->name : "?", kinds);
        return;
    }
    if (file) {
        batch->kind = PARITY_SUITE_BATCH_FILE;
        char text[1024];
        if (!read_string(reader, file, "batch file", text, sizeof text)) return;
        resolve_path(reader, text, batch->file, sizeof batch->file);
        if (!path_is(batch->file, false)) problem(reader, line_of(file), "batch file %s does not exist", batch->file);
        return;
    }
    const yaml_node_t *shape = plain ? plain : packed;
    batch->kind = plain ? PARITY_SUITE_BATCH_PLAIN : PARITY_SUITE_BATCH_PACKED;
    const char *what = plain ? "plain batch" : "packed batch";
    if (!expect_kind(reader, shape, YAML_MAPPING_NODE, what)) return;
    static const char *const plain_keys[] = {"rows", "length", "seed", NULL};
    static const char *const packed_keys[] = {"documents", "rows", "seed", NULL};
    check_keys(reader, shape, plain ? plain_keys : packed_keys, what);
    long long value;
    yaml_node_t *rows = lookup(reader, shape, "rows"), *seed = lookup(reader, shape, "seed");
    batch->rows = 1;
    if (rows && read_integer(reader, rows, "rows", 1, 1 << 20, &value)) batch->rows = value;
    else if (!rows && plain) problem(reader, line_of(shape), "plain batch needs rows");
    if (!seed) problem(reader, line_of(shape), "%s needs a seed", what);
    else read_seed(reader, seed, "seed", &batch->seed);
    if (plain) {
        yaml_node_t *length = lookup(reader, shape, "length");
        if (!length) problem(reader, line_of(shape), "plain batch needs length");
        else if (read_integer(reader, length, "length", 2, 1 << 24, &value)) batch->length = value;
    } else {
        yaml_node_t *documents = lookup(reader, shape, "documents");
        if (!documents) problem(reader, line_of(shape), "packed batch needs documents: [length, ...]");
        else read_scalar_list(reader, documents, "documents", add_document, batch);
        for (size_t i = 0; i < batch->document_count; i++) batch->length += batch->documents[i];
    }
}

static size_t read_batches(suite_reader *reader, const yaml_node_t *node, parity_suite_batch *batches) {
    if (!expect_kind(reader, node, YAML_SEQUENCE_NODE, "batches")) return 0;
    size_t count = 0;
    if (node->data.sequence.items.start == node->data.sequence.items.top)
        problem(reader, line_of(node), "batches is an empty list");
    for (yaml_node_item_t *item = node->data.sequence.items.start; item < node->data.sequence.items.top; item++) {
        if (count == PARITY_SUITE_MAX_BATCHES) {
            problem(reader, line_of(node_at(reader, *item)), "at most %d batches", PARITY_SUITE_MAX_BATCHES);
            break;
        }
        read_batch(reader, node_at(reader, *item), &batches[count]);
        for (size_t i = 0; i < count; i++)
            if (batches[count].name[0] && strcmp(batches[i].name, batches[count].name) == 0)
                problem(reader, batches[count].line, "batch name '%s' is used twice (first at line %d)", batches[i].name,
                        batches[i].line);
        count++;
    }
    return count;
}

// "attn=sdpa,dtype=bf16" -> conditions; keys are fields (name or alias) or dtype/device/batch/backend.
static void parse_match(suite_reader *reader, int line, parity_suite_exclusion *exclusion) {
    char copy[256];
    snprintf(copy, sizeof copy, "%s", exclusion->match);
    char *save = NULL;
    for (char *term = strtok_r(copy, ",", &save); term; term = strtok_r(NULL, ",", &save)) {
        while (*term == ' ') term++;
        char *equals = strchr(term, '=');
        if (!equals || equals == term || !equals[1] || strchr(equals + 1, '=')) {
            problem(reader, line, "exclusion term '%s' is not key=value", term);
            continue;
        }
        *equals = '\0';
        char *key = term, *pattern = equals + 1;
        for (char *end = key + strlen(key); end > key && end[-1] == ' '; end--) end[-1] = '\0';
        while (*pattern == ' ') pattern++;
        const parity_kernel_field *field = parity_kernel_field_find(key, true);
        bool pseudo = strcmp(key, "dtype") == 0 || strcmp(key, "device") == 0 || strcmp(key, "batch") == 0 ||
                      strcmp(key, "backend") == 0;
        if (!field && !pseudo) {
            problem(reader, line, "exclusion key '%s' is neither a kernel-selection field nor dtype, device, batch, backend",
                    key);
            continue;
        }
        if (exclusion->condition_count == PARITY_SUITE_MAX_CONDITIONS) {
            problem(reader, line, "an exclusion has at most %d terms", PARITY_SUITE_MAX_CONDITIONS);
            break;
        }
        parity_suite_condition *condition = &exclusion->conditions[exclusion->condition_count++];
        snprintf(condition->key, sizeof condition->key, "%s", field ? field->name : key);
        snprintf(condition->pattern, sizeof condition->pattern, "%s", pattern);
    }
    if (exclusion->condition_count == 0) problem(reader, line, "exclusion match '%s' has no key=value term", exclusion->match);
}

static size_t read_exclusions(suite_reader *reader, const yaml_node_t *node, parity_suite_exclusion *exclusions) {
    if (!expect_kind(reader, node, YAML_SEQUENCE_NODE, "exclude")) return 0;
    size_t count = 0;
    for (yaml_node_item_t *item = node->data.sequence.items.start; item < node->data.sequence.items.top; item++) {
        yaml_node_t *entry = node_at(reader, *item);
        if (count == PARITY_SUITE_MAX_EXCLUSIONS) {
            problem(reader, line_of(entry), "at most %d exclusions", PARITY_SUITE_MAX_EXCLUSIONS);
            break;
        }
        if (!expect_kind(reader, entry, YAML_MAPPING_NODE, "an exclusion")) continue;
        static const char *const keys[] = {"match", "reason", NULL};
        check_keys(reader, entry, keys, "an exclusion");
        parity_suite_exclusion *exclusion = &exclusions[count++];
        memset(exclusion, 0, sizeof *exclusion);
        exclusion->line = line_of(entry);
        yaml_node_t *match = lookup(reader, entry, "match"), *reason = lookup(reader, entry, "reason");
        if (!match) problem(reader, exclusion->line, "an exclusion needs match: field=value[,field=value]");
        else if (read_string(reader, match, "exclusion match", exclusion->match, sizeof exclusion->match))
            parse_match(reader, line_of(match), exclusion);
        if (!reason) problem(reader, exclusion->line, "exclusion '%s' needs a reason", exclusion->match);
        else read_string(reader, reason, "exclusion reason", exclusion->reason, sizeof exclusion->reason);
    }
    return count;
}

static void add_required_field(suite_reader *reader, const yaml_node_t *item, void *context) {
    parity_suite_mode *mode = context;
    const char *text = scalar_text(item);
    const parity_kernel_field *field = parity_kernel_field_find(text, true);
    if (!field) {
        problem(reader, line_of(item), "mode requires: '%s' is not a kernel-selection field", text);
        return;
    }
    // Each field once: so the list never holds more than the PARITY_KERNEL_FIELD_COUNT fields.
    for (size_t i = 0; i < mode->require_count; i++)
        if (mode->requires[i] == field) {
            problem(reader, line_of(item), "mode requires: field '%s' is listed twice", field->name);
            return;
        }
    mode->requires[mode->require_count++] = field;
}

static void read_mode(suite_reader *reader, const yaml_node_t *node, parity_suite_mode *mode) {
    memset(mode, 0, sizeof *mode);
    mode->line = line_of(node);
    if (!expect_kind(reader, node, YAML_MAPPING_NODE, "a mode")) return;
    static const char *const keys[] = {"name", "backend", "ops", "requires", NULL};
    check_keys(reader, node, keys, "a mode");
    yaml_node_t *name = lookup(reader, node, "name"), *backend = lookup(reader, node, "backend"),
                *ops = lookup(reader, node, "ops"), *requires = lookup(reader, node, "requires");
    if (requires) read_scalar_list(reader, requires, "mode requires", add_required_field, mode);
    if (!name) problem(reader, mode->line, "a mode needs a name");
    else read_string(reader, name, "mode name", mode->name, sizeof mode->name);
    if (backend && read_string(reader, backend, "mode backend", mode->backend, sizeof mode->backend) &&
        strcmp(mode->backend, "hf") != 0 && strcmp(mode->backend, "veomni") != 0)
        problem(reader, line_of(backend), "mode backend '%s' is not hf or veomni", mode->backend);
    if (!ops) {
        problem(reader, mode->line, "mode '%s' needs ops: {field: value, ...}", mode->name);
        return;
    }
    if (!expect_kind(reader, ops, YAML_MAPPING_NODE, "mode ops")) return;
    for (yaml_node_pair_t *pair = ops->data.mapping.pairs.start; pair < ops->data.mapping.pairs.top; pair++) {
        yaml_node_t *key = node_at(reader, pair->key), *value = node_at(reader, pair->value);
        const char *text = scalar_text(key);
        const parity_kernel_field *field = text ? parity_kernel_field_find(text, true) : NULL;
        if (!field) {
            problem(reader, line_of(key), "mode '%s': '%s' is not a kernel-selection field", mode->name, text ? text : "?");
            continue;
        }
        bool twice = false;
        for (size_t i = 0; i < mode->choice_count; i++) twice = twice || mode->fields[i] == field;
        if (twice) {
            problem(reader, line_of(key), "mode '%s' sets %s twice", mode->name, field->name);
            continue;
        }
        char buffer[64];
        if (!read_string(reader, value, "mode value", buffer, sizeof buffer)) continue;
        mode->fields[mode->choice_count] = field;
        snprintf(mode->values[mode->choice_count++], sizeof mode->values[0], "%s", buffer);
    }
}

static void read_model(suite_reader *reader, const yaml_node_t *node, parity_suite_model *model) {
    memset(model, 0, sizeof *model);
    model->warmup = model->repeats = -1;
    model->line = line_of(node);
    if (!expect_kind(reader, node, YAML_MAPPING_NODE, "a model")) return;
    static const char *const keys[] = {"name", "checkpoint", "config", "seed", "initializer_range", "batches", "exclude",
                                       "warmup", "repeats", NULL};
    check_keys(reader, node, keys, "a model");
    yaml_node_t *name = lookup(reader, node, "name"), *checkpoint = lookup(reader, node, "checkpoint"),
                *config = lookup(reader, node, "config"), *seed = lookup(reader, node, "seed"),
                *range = lookup(reader, node, "initializer_range"), *batches = lookup(reader, node, "batches"),
                *exclude = lookup(reader, node, "exclude");
    if (!name) problem(reader, model->line, "a model needs a name");
    else if (read_string(reader, name, "model name", model->name, sizeof model->name) && strchr(model->name, '/'))
        problem(reader, line_of(name), "model name '%s' contains '/', which combo ids use as a separator", model->name);
    if (!!checkpoint == !!config)
        problem(reader, model->line, "model '%s' needs exactly one of checkpoint (a directory) and config (a config.json "
                "with a seed)", model->name);
    char text[1024];
    if (checkpoint && read_string(reader, checkpoint, "checkpoint", text, sizeof text)) {
        resolve_path(reader, text, model->checkpoint, sizeof model->checkpoint);
        if (!path_is(model->checkpoint, true))
            problem(reader, line_of(checkpoint), "checkpoint directory %s does not exist", model->checkpoint);
        if (seed) problem(reader, line_of(seed), "model '%s': seed is for drawn weights (config), not a checkpoint", model->name);
    }
    if (config && read_string(reader, config, "config", text, sizeof text)) {
        resolve_path(reader, text, model->config, sizeof model->config);
        if (!path_is(model->config, false)) problem(reader, line_of(config), "config file %s does not exist", model->config);
        if (!seed) problem(reader, line_of(config), "model '%s' draws its weights from config: it needs a seed", model->name);
    }
    if (seed) read_seed(reader, seed, "seed", &model->seed);
    if (range) read_positive_number(reader, range, "initializer_range", &model->initializer_range);
    if (batches) model->batch_count = read_batches(reader, batches, model->batches);
    if (exclude) model->exclusion_count = read_exclusions(reader, exclude, model->exclusions);
    long long value;
    yaml_node_t *warmup = lookup(reader, node, "warmup"), *repeats = lookup(reader, node, "repeats");
    if (warmup && read_integer(reader, warmup, "warmup", 0, 1000, &value)) model->warmup = (int)value;
    if (repeats && read_integer(reader, repeats, "repeats", 1, 100000, &value)) model->repeats = (int)value;
}

int parity_suite_model_warmup(const parity_suite *suite, const parity_suite_model *model) {
    return model && model->warmup >= 0 ? model->warmup : suite->warmup;
}

int parity_suite_model_repeats(const parity_suite *suite, const parity_suite_model *model) {
    return model && model->repeats >= 1 ? model->repeats : suite->repeats;
}

// adaptive_repeats: {noise: 0.03, max: 15, seconds: 1}: after `repeats` timed steps, more while
// the samples' noise is above `noise` (a fraction, or a percentage "3%"), up to `max` samples and
// about `seconds` of timed steps a combo. noise is required; max defaults to 4 x repeats, seconds
// to 2.
static void read_adaptive(suite_reader *reader, const yaml_node_t *node, parity_suite *suite) {
    if (!expect_kind(reader, node, YAML_MAPPING_NODE, "adaptive_repeats")) return;
    static const char *const keys[] = {"noise", "max", "seconds", NULL};
    check_keys(reader, node, keys, "adaptive_repeats");
    yaml_node_t *noise = lookup(reader, node, "noise"), *most = lookup(reader, node, "max"),
                *seconds = lookup(reader, node, "seconds");
    if (!noise) {
        problem(reader, line_of(node), "adaptive_repeats needs noise (the target, e.g. 3%%)");
        return;
    }
    const char *text = noise->type == YAML_SCALAR_NODE ? scalar_text(noise) : "";
    char *end = NULL;
    double target = strtod(text, &end);
    if (end && *end == '%') {
        target /= 100;
        end++;
    }
    if (!text[0] || !end || *end || !isfinite(target) || target <= 0 || target >= 1) {
        problem(reader, line_of(noise), "adaptive_repeats noise '%s' is not a fraction in (0, 1) or a percentage like 3%%", text);
        return;
    }
    long long value = 0;
    suite->adaptive.noise_target = target;
    suite->adaptive.max_steps = 0;
    if (most && read_integer(reader, most, "adaptive_repeats max", 1, 100000, &value)) suite->adaptive.max_steps = (int)value;
    double limit = 2;
    if (seconds) read_positive_number(reader, seconds, "adaptive_repeats seconds", &limit);
    suite->adaptive.time_cap_ms = limit * 1e3;
}

static void read_suite(suite_reader *reader, const yaml_node_t *root, parity_suite *suite) {
    if (!root) {
        problem(reader, 0, "the file is empty");
        return;
    }
    if (!expect_kind(reader, root, YAML_MAPPING_NODE, "a suite")) return;
    static const char *const keys[] = {"suite", "description", "models", "batches", "dtypes", "devices", "sweep", "modes",
                                       "exclude", "tolerance", "warmup", "repeats", "jitter_runs", "adaptive_repeats",
                                       "ranks", "parallel", NULL};
    check_keys(reader, root, keys, "the suite");
    yaml_node_t *node;
    if ((node = lookup(reader, root, "suite"))) {
        if (read_string(reader, node, "suite", suite->name, sizeof suite->name) && strpbrk(suite->name, "/ "))
            problem(reader, line_of(node), "suite name '%s' must not contain '/' or spaces", suite->name);
    }
    if ((node = lookup(reader, root, "description"))) read_string(reader, node, "description", suite->description, sizeof suite->description);
    if ((node = lookup(reader, root, "dtypes"))) read_scalar_list(reader, node, "dtypes", add_dtype, suite);
    else problem(reader, line_of(root), "the suite needs dtypes: [fp32, bf16, ...]");
    if ((node = lookup(reader, root, "devices"))) read_scalar_list(reader, node, "devices", add_device, suite);
    else problem(reader, line_of(root), "the suite needs devices: [cpu | cuda | best, ...]");
    if ((node = lookup(reader, root, "sweep"))) {
        suite->sweep_given = true;
        read_scalar_list(reader, node, "sweep", add_sweep_field, suite);
    }
    if ((node = lookup(reader, root, "tolerance"))) {
        const char *text = scalar_text(node);
        if (!text || !parity_tolerance_rule_parse(text, &suite->tolerance))
            problem(reader, line_of(node), "tolerance must be parity or veomni");
    }
    long long value;
    if ((node = lookup(reader, root, "warmup")) && read_integer(reader, node, "warmup", 0, 1000, &value)) suite->warmup = (int)value;
    if ((node = lookup(reader, root, "repeats")) && read_integer(reader, node, "repeats", 1, 100000, &value)) suite->repeats = (int)value;
    if ((node = lookup(reader, root, "jitter_runs")) &&
        read_integer(reader, node, "jitter_runs", 1, PARITY_MAX_JITTER_RUNS, &value))
        suite->jitter_runs = (int)value;
    if ((node = lookup(reader, root, "adaptive_repeats"))) read_adaptive(reader, node, suite);
    if ((node = lookup(reader, root, "ranks"))) {
        suite->ranks_line = line_of(node);
        if (read_integer(reader, node, "ranks", 1, 1 << 16, &value)) suite->ranks = (int)value;
    }
    if ((node = lookup(reader, root, "parallel"))) read_scalar_list(reader, node, "parallel", add_layout, suite);
    if ((node = lookup(reader, root, "batches"))) suite->batch_count = read_batches(reader, node, suite->batches);
    if ((node = lookup(reader, root, "exclude"))) suite->exclusion_count = read_exclusions(reader, node, suite->exclusions);
    if ((node = lookup(reader, root, "modes")) && expect_kind(reader, node, YAML_SEQUENCE_NODE, "modes")) {
        for (yaml_node_item_t *item = node->data.sequence.items.start; item < node->data.sequence.items.top; item++) {
            if (suite->mode_count == PARITY_SUITE_MAX_MODES) {
                problem(reader, line_of(node_at(reader, *item)), "at most %d modes", PARITY_SUITE_MAX_MODES);
                break;
            }
            parity_suite_mode *mode = &suite->modes[suite->mode_count];
            read_mode(reader, node_at(reader, *item), mode);
            for (size_t i = 0; i < suite->mode_count; i++)
                if (mode->name[0] && strcmp(suite->modes[i].name, mode->name) == 0)
                    problem(reader, mode->line, "mode name '%s' is used twice (first at line %d)", mode->name, suite->modes[i].line);
            suite->mode_count++;
        }
        if (suite->mode_count == 0) problem(reader, line_of(node), "modes is an empty list");
        if (suite->sweep_given) problem(reader, line_of(node), "give either modes or sweep, not both");
    }
    node = lookup(reader, root, "models");
    if (!node) {
        problem(reader, line_of(root), "the suite needs models: [...]");
        return;
    }
    if (!expect_kind(reader, node, YAML_SEQUENCE_NODE, "models")) return;
    for (yaml_node_item_t *item = node->data.sequence.items.start; item < node->data.sequence.items.top; item++) {
        if (suite->model_count == PARITY_SUITE_MAX_MODELS) {
            problem(reader, line_of(node_at(reader, *item)), "at most %d models", PARITY_SUITE_MAX_MODELS);
            break;
        }
        parity_suite_model *model = &suite->models[suite->model_count];
        read_model(reader, node_at(reader, *item), model);
        for (size_t i = 0; i < suite->model_count; i++)
            if (model->name[0] && strcmp(suite->models[i].name, model->name) == 0)
                problem(reader, model->line, "model name '%s' is used twice (first at line %d)", model->name, suite->models[i].line);
        if (model->batch_count == 0 && suite->batch_count == 0 && model->line)
            problem(reader, model->line, "model '%s' has no batches and the suite gives no default batches", model->name);
        suite->model_count++;
    }
    if (suite->model_count == 0) problem(reader, line_of(node), "models is an empty list");
}

// ---- entry points ----

void parity_suite_free(parity_suite *suite) { free(suite); }

// "suites/smoke.yaml" -> "smoke".
static void default_name(const char *path, char *name, size_t size) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(name, size, "%s", base);
    char *dot = strrchr(name, '.');
    if (dot && (strcmp(dot, ".yaml") == 0 || strcmp(dot, ".yml") == 0)) *dot = '\0';
}

parity_error *parity_suite_parse(const char *text, size_t length, const char *path, parity_suite **out) {
    *out = NULL;
    parity_suite *suite = calloc(1, sizeof *suite);
    if (!suite) return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: allocating the suite", path);
    snprintf(suite->path, sizeof suite->path, "%s", path);
    default_name(path, suite->name, sizeof suite->name);
    suite->tolerance = PARITY_RULE_PARITY;
    suite->warmup = 1;
    suite->repeats = 3;
    suite->jitter_runs = PARITY_JITTER_RUNS;
    suite->ranks = 1;

    suite_reader reader = {.path = path};
    const char *slash = strrchr(path, '/');
    if (slash) snprintf(reader.directory, sizeof reader.directory, "%.*s", (int)(slash - path), path);

    size_t deep_line, deep_column;
    if (parity_yaml_too_deep(text, length, &deep_line, &deep_column)) {
        free(suite);
        return PARITY_ERROR(PARITY_ERROR_CONFIG, "%s:%zu:%zu: the YAML nests deeper than %d levels (a suite needs 7)", path,
                            deep_line, deep_column, PARITY_YAML_MAX_DEPTH);
    }
    yaml_parser_t parser;
    yaml_document_t document;
    if (!yaml_parser_initialize(&parser)) {
        free(suite);
        return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: cannot initialise the YAML parser", path);
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, length);
    if (!yaml_parser_load(&parser, &document)) {
        parity_error *error = PARITY_ERROR(PARITY_ERROR_CONFIG, "%s:%zu:%zu: malformed YAML: %s", path,
                                           parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                                           parser.problem ? parser.problem : "parse error");
        yaml_parser_delete(&parser);
        free(suite);
        return error;
    }
    reader.document = &document;
    read_suite(&reader, yaml_document_get_root_node(&document), suite);
    if (suite->adaptive.noise_target > 0 && suite->adaptive.max_steps == 0) suite->adaptive.max_steps = 4 * suite->repeats;
    yaml_document_delete(&document);
    yaml_parser_delete(&parser);
    if (reader.problem_count) {
        parity_error *error = PARITY_ERROR(PARITY_ERROR_CONFIG, "suite %s has %zu problem%s:%s", path, reader.problem_count,
                                           reader.problem_count == 1 ? "" : "s",
                                           reader.problems ? reader.problems : " (out of memory listing them)");
        free(reader.problems);
        free(suite);
        return error;
    }
    *out = suite;
    return NULL;
}

parity_error *parity_suite_load(const char *path, parity_suite **out) {
    *out = NULL;
    FILE *file = fopen(path, "rb");
    if (!file) return PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot open the suite: %s", path, strerror(errno));
    size_t capacity = 1 << 14, used = 0;
    char *text = malloc(capacity);
    size_t got;
    while (text && (got = fread(text + used, 1, capacity - used, file)) > 0) {
        used += got;
        if (used == capacity) {
            char *grown = realloc(text, capacity *= 2);
            if (!grown) free(text);
            text = grown;
        }
    }
    bool failed = ferror(file) != 0;
    fclose(file);
    if (!text) return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: reading the suite", path);
    if (failed) {
        free(text);
        return PARITY_ERROR(PARITY_ERROR_IO, "%s: read error", path);
    }
    parity_error *error = parity_suite_parse(text, used, path, out);
    free(text);
    return error;
}

parity_error *parity_suite_locate(const char *name_or_path, const char *suites_dir, char *path, size_t size) {
    size_t length = strlen(name_or_path);
    bool is_path = strchr(name_or_path, '/') || (length > 5 && strcmp(name_or_path + length - 5, ".yaml") == 0);
    if (is_path) snprintf(path, size, "%s", name_or_path);
    else snprintf(path, size, "%s/%s.yaml", suites_dir, name_or_path);
    if (path_is(path, false)) return NULL;
    return PARITY_ERROR(PARITY_ERROR_USAGE, "no suite '%s' (%s does not exist)", name_or_path, path);
}

const parity_suite_batch *parity_suite_model_batches(const parity_suite *suite, const parity_suite_model *model,
                                                     size_t *count) {
    if (model->batch_count) {
        *count = model->batch_count;
        return model->batches;
    }
    *count = suite->batch_count;
    return suite->batches;
}

const parity_suite_model *parity_suite_find_model(const parity_suite *suite, const char *name) {
    for (size_t i = 0; i < suite->model_count; i++)
        if (strcmp(suite->models[i].name, name) == 0) return &suite->models[i];
    return NULL;
}

parity_error *parity_suite_check_ranks(const parity_suite *suite) {
    if (suite->ranks <= 1) return NULL;
    return PARITY_ERROR(PARITY_ERROR_CONFIG,
                        "%s:%d: ranks: %d: the ranks come from the layouts: name them under parallel: [dp=2, "
                        "\"sp=2,ep=2\", ...] (or parity run --parallel)",
                        suite->path, suite->ranks_line, suite->ranks);
}
