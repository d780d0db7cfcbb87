// results_json.c: results.json, the one file every report is rendered from (`parity report DIR`).
// Google Benchmark style: {"context": {...}, "combos": [{id, suite, model, ..., metrics: [...],
// timing: {...}}]}. Numbers are written in the shortest form that reads back to the same double;
// JSON has no NaN or Infinity, so those are the strings "nan", "inf" and "-inf". Reading validates
// schema_version and the type of every field; a malformed file is a DATA error naming the file and
// the field ("combos[2].metrics[0].value").
#include "reports/results.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/core/file.h"
#include "reports/report_analysis.h"

// ---- writing ----

static cJSON *number_item(double value) {
    if (isnan(value)) return cJSON_CreateString("nan");
    if (isinf(value)) return cJSON_CreateString(value > 0 ? "inf" : "-inf");
    char text[40];
    return cJSON_CreateRaw(parity_report_format_exact(text, sizeof text, value));
}

static cJSON *integer_item(long long value) {
    char text[32];
    snprintf(text, sizeof text, "%lld", value);
    return cJSON_CreateRaw(text);
}

static void add_number(cJSON *object, const char *name, double value) { cJSON_AddItemToObject(object, name, number_item(value)); }
static void add_integer(cJSON *object, const char *name, long long value) { cJSON_AddItemToObject(object, name, integer_item(value)); }

static cJSON *context_json(const parity_results_context *context) {
    cJSON *object = cJSON_CreateObject();
    add_integer(object, "schema_version", PARITY_RESULTS_SCHEMA_VERSION);
    cJSON_AddStringToObject(object, "suite", context->suite);
    cJSON_AddStringToObject(object, "git_sha", context->git_sha);
    cJSON_AddStringToObject(object, "host", context->host);
    cJSON_AddStringToObject(object, "device", context->device);
    cJSON_AddStringToObject(object, "driver_version", context->driver_version);
    cJSON_AddStringToObject(object, "cuda_version", context->cuda_version);
    cJSON_AddStringToObject(object, "libraries", context->libraries);
    cJSON_AddStringToObject(object, "command", context->command);
    cJSON_AddStringToObject(object, "plugins", context->plugins);
    cJSON_AddStringToObject(object, "started", context->started);
    cJSON_AddStringToObject(object, "finished", context->finished);
    cJSON_AddStringToObject(object, "tolerance_rule", context->tolerance_rule);
    cJSON_AddStringToObject(object, "timing_method", context->timing_method);
    cJSON_AddStringToObject(object, "interrupted", context->interrupted);
    cJSON_AddStringToObject(object, "stopped", context->stopped);
    add_integer(object, "combos_selected", (long long)context->combos_selected);
    return object;
}

static cJSON *metric_json(const parity_metric *metric) {
    cJSON *object = cJSON_CreateObject();
    cJSON_AddStringToObject(object, "name", metric->name);
    add_number(object, "value", metric->value);
    add_number(object, "golden", metric->golden);
    add_number(object, "error", metric->error);
    add_number(object, "tolerance", metric->tolerance);
    add_number(object, "ratio", metric->ratio);
    cJSON_AddBoolToObject(object, "pass", metric->pass);
    cJSON_AddStringToObject(object, "basis", metric->basis);
    return object;
}

static cJSON *combo_json(const parity_combo_result *combo) {
    cJSON *object = cJSON_CreateObject();
    cJSON_AddStringToObject(object, "id", combo->id);
    cJSON_AddStringToObject(object, "suite", combo->suite);
    cJSON_AddStringToObject(object, "model", combo->model);
    cJSON_AddStringToObject(object, "batch", combo->batch);
    cJSON_AddStringToObject(object, "dtype", combo->dtype);
    cJSON_AddStringToObject(object, "device", combo->device);
    cJSON *fields = cJSON_AddObjectToObject(object, "fields");
    for (size_t i = 0; i < combo->field_count && i < PARITY_COMBO_MAX_FIELDS; i++)
        cJSON_AddStringToObject(fields, combo->fields[i].field, combo->fields[i].value);
    cJSON_AddBoolToObject(object, "is_eager_baseline", combo->is_eager_baseline);
    cJSON_AddStringToObject(object, "status", parity_combo_status_name(combo->status));
    cJSON_AddStringToObject(object, "reason", combo->reason);
    cJSON *metrics = cJSON_AddArrayToObject(object, "metrics");
    for (size_t i = 0; i < combo->metric_count; i++) cJSON_AddItemToArray(metrics, metric_json(&combo->metrics[i]));
    cJSON *timing = cJSON_AddObjectToObject(object, "timing");
    cJSON *samples = cJSON_AddArrayToObject(timing, "samples_ms");
    for (size_t i = 0; i < combo->sample_count; i++) cJSON_AddItemToArray(samples, number_item(combo->samples_ms[i]));
    add_integer(timing, "warmup", (long long)combo->warmup_count);
    add_number(timing, "median_ms", combo->median_ms);
    add_number(timing, "noise", combo->noise);
    add_integer(timing, "peak_memory_bytes", (long long)combo->peak_memory_bytes);
    add_integer(timing, "tokens", (long long)combo->tokens);
    return object;
}

parity_error *parity_results_write_json(const char *path, const parity_results *results) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: out of memory", path);
    cJSON_AddItemToObject(root, "context", context_json(&results->context));
    cJSON *combos = cJSON_AddArrayToObject(root, "combos");
    for (size_t i = 0; i < results->combo_count; i++) cJSON_AddItemToArray(combos, combo_json(&results->combos[i]));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: out of memory printing the JSON", path);
    size_t length = strlen(text);
    text[length] = '\n'; // replaces the NUL: the file ends with a newline
    parity_error *error = parity_write_file_atomic(path, text, length + 1, true);
    free(text);
    return error;
}

// ---- reading ----

// Where a value sits in the file, for messages: "combos[2].metrics[0]".
typedef struct json_place {
    const char *path;  // the file
    char where[96];
} json_place;

static const char *type_name(const cJSON *item) {
    if (cJSON_IsString(item)) return "a string";
    if (cJSON_IsNumber(item)) return "a number";
    if (cJSON_IsBool(item)) return "a boolean";
    if (cJSON_IsNull(item)) return "null";
    if (cJSON_IsArray(item)) return "an array";
    if (cJSON_IsObject(item)) return "an object";
    return "an unknown value";
}

// inner = outer + suffix (+ "[index]", then index++); a too-deep place is cut, never overflowed.
static void nest(json_place *inner, const json_place *outer, const char *suffix, size_t *index) {
    char subscript[32] = "";
    if (index) snprintf(subscript, sizeof subscript, "[%zu]", (*index)++);
    inner->path = outer->path;
    size_t used = 0;
    const char *parts[3] = {outer->where, suffix, subscript};
    for (int part = 0; part < 3; part++)
        for (const char *c = parts[part]; *c && used + 1 < sizeof inner->where; c++) inner->where[used++] = *c;
    inner->where[used] = '\0';
}

static const char *joiner(const json_place *place) { return place->where[0] ? "." : ""; }

static parity_error *member(const json_place *place, const cJSON *object, const char *key, const cJSON **out) {
    *out = cJSON_GetObjectItemCaseSensitive(object, key);
    if (!*out) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field '%s%s%s' is missing", place->path, place->where, joiner(place), key);
    return NULL;
}

static parity_error *wrong_type(const json_place *place, const char *key, const char *expected, const cJSON *item) {
    return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field '%s%s%s' must be %s, not %s", place->path, place->where, joiner(place), key,
                        expected, type_name(item));
}

static parity_error *read_string(const json_place *place, const cJSON *object, const char *key, char *out, size_t size) {
    const cJSON *item;
    PARITY_TRY(member(place, object, key, &item));
    if (!cJSON_IsString(item)) return wrong_type(place, key, "a string", item);
    if (strlen(item->valuestring) >= size)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field '%s%s%s' is longer than %zu characters", place->path, place->where,
                            joiner(place), key, size - 1);
    memcpy(out, item->valuestring, strlen(item->valuestring) + 1);
    return NULL;
}

// A number, or one of the strings "nan", "inf", "-inf".
static parity_error *number_value(const json_place *place, const char *key, const cJSON *item, double *out) {
    if (cJSON_IsNumber(item)) {
        *out = item->valuedouble;
        return NULL;
    }
    if (cJSON_IsString(item)) {
        if (strcmp(item->valuestring, "nan") == 0) *out = NAN;
        else if (strcmp(item->valuestring, "inf") == 0) *out = INFINITY;
        else if (strcmp(item->valuestring, "-inf") == 0) *out = -INFINITY;
        else
            return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field '%s%s%s' must be a number or \"nan\", \"inf\", \"-inf\", not the string \"%.40s\"",
                                place->path, place->where, joiner(place), key, item->valuestring);
        return NULL;
    }
    return wrong_type(place, key, "a number (or \"nan\", \"inf\", \"-inf\")", item);
}

static parity_error *read_number(const json_place *place, const cJSON *object, const char *key, double *out) {
    const cJSON *item;
    PARITY_TRY(member(place, object, key, &item));
    return number_value(place, key, item, out);
}

// An integer in [minimum, 2^53] (doubles hold those exactly).
static parity_error *read_integer(const json_place *place, const cJSON *object, const char *key, long long minimum, long long *out) {
    const cJSON *item;
    PARITY_TRY(member(place, object, key, &item));
    if (!cJSON_IsNumber(item)) return wrong_type(place, key, "an integer", item);
    double value = item->valuedouble;
    if (value != floor(value) || value < (double)minimum || value > 9007199254740992.0)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field '%s%s%s' must be an integer >= %lld, not %g", place->path, place->where,
                            joiner(place), key, minimum, value);
    *out = (long long)value;
    return NULL;
}

static parity_error *read_bool(const json_place *place, const cJSON *object, const char *key, bool *out) {
    const cJSON *item;
    PARITY_TRY(member(place, object, key, &item));
    if (!cJSON_IsBool(item)) return wrong_type(place, key, "true or false", item);
    *out = cJSON_IsTrue(item);
    return NULL;
}

static parity_error *read_typed(const json_place *place, const cJSON *object, const char *key, bool array, const cJSON **out) {
    PARITY_TRY(member(place, object, key, out));
    if (array ? !cJSON_IsArray(*out) : !cJSON_IsObject(*out)) return wrong_type(place, key, array ? "an array" : "an object", *out);
    return NULL;
}

static parity_error *read_context(const char *path, const cJSON *root, parity_results_context *context) {
    json_place top = {path, ""}, place = {path, "context"};
    const cJSON *object;
    PARITY_TRY(read_typed(&top, root, "context", false, &object));
    long long version;
    PARITY_TRY(read_integer(&place, object, "schema_version", 0, &version));
    if (version != PARITY_RESULTS_SCHEMA_VERSION)
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field 'context.schema_version' is %lld; this parity reads schema_version %d", path,
                            version, PARITY_RESULTS_SCHEMA_VERSION);
    context->schema_version = (int)version;
    PARITY_TRY(read_string(&place, object, "suite", context->suite, sizeof context->suite));
    PARITY_TRY(read_string(&place, object, "git_sha", context->git_sha, sizeof context->git_sha));
    PARITY_TRY(read_string(&place, object, "host", context->host, sizeof context->host));
    PARITY_TRY(read_string(&place, object, "device", context->device, sizeof context->device));
    PARITY_TRY(read_string(&place, object, "driver_version", context->driver_version, sizeof context->driver_version));
    PARITY_TRY(read_string(&place, object, "cuda_version", context->cuda_version, sizeof context->cuda_version));
    PARITY_TRY(read_string(&place, object, "libraries", context->libraries, sizeof context->libraries));
    PARITY_TRY(read_string(&place, object, "command", context->command, sizeof context->command));
    PARITY_TRY(read_string(&place, object, "started", context->started, sizeof context->started));
    PARITY_TRY(read_string(&place, object, "finished", context->finished, sizeof context->finished));
    PARITY_TRY(read_string(&place, object, "tolerance_rule", context->tolerance_rule, sizeof context->tolerance_rule));
    PARITY_TRY(read_string(&place, object, "timing_method", context->timing_method, sizeof context->timing_method));
    // Optional: results.json files written before these fields lack them (a run that went to its end).
    context->interrupted[0] = '\0';
    context->stopped[0] = '\0';
    context->plugins[0] = '\0';
    context->combos_selected = 0;
    if (cJSON_GetObjectItemCaseSensitive(object, "plugins"))
        PARITY_TRY(read_string(&place, object, "plugins", context->plugins, sizeof context->plugins));
    if (cJSON_GetObjectItemCaseSensitive(object, "interrupted"))
        PARITY_TRY(read_string(&place, object, "interrupted", context->interrupted, sizeof context->interrupted));
    if (cJSON_GetObjectItemCaseSensitive(object, "stopped"))
        PARITY_TRY(read_string(&place, object, "stopped", context->stopped, sizeof context->stopped));
    if (cJSON_GetObjectItemCaseSensitive(object, "combos_selected")) {
        long long selected;
        PARITY_TRY(read_integer(&place, object, "combos_selected", 0, &selected));
        context->combos_selected = (size_t)selected;
    }
    return NULL;
}

static parity_error *read_metric(const json_place *place, const cJSON *object, parity_metric *metric) {
    if (!cJSON_IsObject(object)) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: '%s' must be an object, not %s", place->path, place->where, type_name(object));
    PARITY_TRY(read_string(place, object, "name", metric->name, sizeof metric->name));
    PARITY_TRY(read_number(place, object, "value", &metric->value));
    PARITY_TRY(read_number(place, object, "golden", &metric->golden));
    PARITY_TRY(read_number(place, object, "error", &metric->error));
    PARITY_TRY(read_number(place, object, "tolerance", &metric->tolerance));
    PARITY_TRY(read_number(place, object, "ratio", &metric->ratio));
    PARITY_TRY(read_bool(place, object, "pass", &metric->pass));
    metric->basis[0] = '\0'; // optional: results.json files written before the field lack it
    if (cJSON_GetObjectItemCaseSensitive(object, "basis")) PARITY_TRY(read_string(place, object, "basis", metric->basis, sizeof metric->basis));
    return NULL;
}

static parity_error *read_fields(const json_place *place, const cJSON *object, parity_combo_result *combo) {
    const cJSON *fields;
    PARITY_TRY(read_typed(place, object, "fields", false, &fields));
    const cJSON *item;
    cJSON_ArrayForEach(item, fields) {
        if (combo->field_count == PARITY_COMBO_MAX_FIELDS)
            return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field '%s.fields' has more than %d entries", place->path, place->where,
                                PARITY_COMBO_MAX_FIELDS);
        parity_field_choice *choice = &combo->fields[combo->field_count];
        if (strlen(item->string) >= sizeof choice->field)
            return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field '%s.fields': name '%.40s...' is too long", place->path, place->where, item->string);
        strcpy(choice->field, item->string);
        json_place inner = *place;
        nest(&inner, place, ".fields", NULL);
        if (!cJSON_IsString(item)) return wrong_type(&inner, item->string, "a string", item);
        if (strlen(item->valuestring) >= sizeof choice->value)
            return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field '%s.%s' is longer than %zu characters", place->path, inner.where,
                                item->string, sizeof choice->value - 1);
        strcpy(choice->value, item->valuestring);
        combo->field_count++;
    }
    return NULL;
}

static parity_error *read_timing(const json_place *place, const cJSON *object, parity_combo_result *combo) {
    const cJSON *timing, *samples;
    PARITY_TRY(read_typed(place, object, "timing", false, &timing));
    json_place inner = *place;
    nest(&inner, place, ".timing", NULL);
    PARITY_TRY(read_typed(&inner, timing, "samples_ms", true, &samples));
    size_t count = (size_t)cJSON_GetArraySize(samples);
    double *values = count ? malloc(count * sizeof *values) : NULL;
    if (count && !values) return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: out of memory", place->path);
    size_t index = 0;
    const cJSON *sample;
    parity_error *error = NULL;
    cJSON_ArrayForEach(sample, samples) {
        char key[32];
        snprintf(key, sizeof key, "samples_ms[%zu]", index);
        if ((error = number_value(&inner, key, sample, &values[index++]))) break;
    }
    if (!error) error = parity_combo_set_samples(combo, values, count);
    free(values);
    if (error) return error;
    long long warmup, peak, tokens;
    PARITY_TRY(read_integer(&inner, timing, "warmup", 0, &warmup));
    PARITY_TRY(read_number(&inner, timing, "median_ms", &combo->median_ms));
    PARITY_TRY(read_number(&inner, timing, "noise", &combo->noise));
    PARITY_TRY(read_integer(&inner, timing, "peak_memory_bytes", -1, &peak));
    PARITY_TRY(read_integer(&inner, timing, "tokens", 0, &tokens));
    combo->warmup_count = (size_t)warmup;
    combo->peak_memory_bytes = peak;
    combo->tokens = tokens;
    return NULL;
}

static parity_error *read_combo(const json_place *place, const cJSON *object, parity_combo_result *combo) {
    if (!cJSON_IsObject(object)) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: '%s' must be an object, not %s", place->path, place->where, type_name(object));
    PARITY_TRY(read_string(place, object, "id", combo->id, sizeof combo->id));
    PARITY_TRY(read_string(place, object, "suite", combo->suite, sizeof combo->suite));
    PARITY_TRY(read_string(place, object, "model", combo->model, sizeof combo->model));
    PARITY_TRY(read_string(place, object, "batch", combo->batch, sizeof combo->batch));
    PARITY_TRY(read_string(place, object, "dtype", combo->dtype, sizeof combo->dtype));
    PARITY_TRY(read_string(place, object, "device", combo->device, sizeof combo->device));
    PARITY_TRY(read_fields(place, object, combo));
    PARITY_TRY(read_bool(place, object, "is_eager_baseline", &combo->is_eager_baseline));
    char status[32];
    PARITY_TRY(read_string(place, object, "status", status, sizeof status));
    if (!parity_combo_status_parse(status, &combo->status))
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: field '%s.status' is '%s'; expected pass, fail, not_supported, error or excluded",
                            place->path, place->where, status);
    PARITY_TRY(read_string(place, object, "reason", combo->reason, sizeof combo->reason));
    const cJSON *metrics, *item;
    PARITY_TRY(read_typed(place, object, "metrics", true, &metrics));
    size_t index = 0;
    cJSON_ArrayForEach(item, metrics) {
        json_place inner = *place;
        nest(&inner, place, ".metrics", &index);
        parity_metric metric = {0};
        PARITY_TRY(read_metric(&inner, item, &metric));
        PARITY_TRY(parity_metric_add(combo, &metric));
    }
    return read_timing(place, object, combo);
}

static parity_error *read_results(const char *path, const cJSON *root, parity_results *out) {
    if (!cJSON_IsObject(root)) return PARITY_ERROR(PARITY_ERROR_DATA, "%s: the top level must be an object, not %s", path, type_name(root));
    PARITY_TRY(read_context(path, root, &out->context));
    json_place top = {path, ""};
    const cJSON *combos, *item;
    PARITY_TRY(read_typed(&top, root, "combos", true, &combos));
    size_t index = 0;
    cJSON_ArrayForEach(item, combos) {
        json_place place = {path, ""};
        snprintf(place.where, sizeof place.where, "combos[%zu]", index++);
        parity_combo_result *combo = parity_results_add_combo(out);
        if (!combo) return PARITY_ERROR(PARITY_ERROR_MEMORY, "%s: out of memory", path);
        PARITY_TRY(read_combo(&place, item, combo));
    }
    return NULL;
}

// The 1-based line of byte `offset` in `text`.
static size_t line_of(const char *text, size_t offset) {
    size_t line = 1;
    for (size_t i = 0; i < offset && text[i]; i++) line += text[i] == '\n';
    return line;
}

// True when the text stops inside a string or with brackets left open: a cut-off file.
static bool ends_early(const char *text, size_t size) {
    long depth = 0;
    bool in_string = false, escaped = false;
    for (size_t i = 0; i < size; i++) {
        char c = text[i];
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return in_string || depth > 0;
}

parity_error *parity_results_read_json(const char *path, parity_results *out) {
    memset(out, 0, sizeof *out);
    char *text;
    size_t size;
    PARITY_TRY(parity_read_file(path, &text, &size));
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, size + 1, &end, true); // + 1: the NUL cJSON requires after the value
    if (!root) {
        size_t offset = end && end >= text ? (size_t)(end - text) : size;
        parity_error *error = ends_early(text, size)
                                  ? PARITY_ERROR(PARITY_ERROR_DATA, "%s: not valid JSON: it ends before its last value is complete (truncated?)", path)
                                  : PARITY_ERROR(PARITY_ERROR_DATA, "%s: not valid JSON at line %zu (byte %zu)", path, line_of(text, offset), offset);
        free(text);
        return error;
    }
    free(text);
    parity_error *error = read_results(path, root, out);
    cJSON_Delete(root);
    if (error) parity_results_release(out);
    return error;
}
