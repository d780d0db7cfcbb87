// checkpoint.c: checkpoint directories -> config + parameters.
#include "models/checkpoint/checkpoint.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/checkpoint/expert_converter.h"
#include "models/checkpoint/safetensors.h"

static char *join_path(const char *directory, const char *name) {
    size_t length = strlen(directory) + strlen(name) + 2;
    char *path = malloc(length);
    if (path) snprintf(path, length, "%s/%s", directory, name);
    return path;
}

static char *read_text_file(const char *path, parity_error **error) {
    FILE *stream = fopen(path, "rb");
    if (!stream) {
        *error = PARITY_ERROR(PARITY_ERROR_IO, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    fseek(stream, 0, SEEK_END);
    long size = ftell(stream);
    fseek(stream, 0, SEEK_SET);
    char *text = size >= 0 ? malloc((size_t)size + 1) : NULL;
    if (!text || fread(text, 1, (size_t)size, stream) != (size_t)size) {
        free(text);
        fclose(stream);
        *error = PARITY_ERROR(PARITY_ERROR_IO, "%s: read failed", path);
        return NULL;
    }
    text[size] = '\0';
    fclose(stream);
    return text;
}

static bool contains(char **files, size_t count, const char *name) {
    for (size_t i = 0; i < count; i++)
        if (strcmp(files[i], name) == 0) return true;
    return false;
}

parity_error *parity_checkpoint_files(const char *directory, char ***files, size_t *count) {
    *files = NULL;
    *count = 0;
    char *single = join_path(directory, "model.safetensors");
    char *index = join_path(directory, "model.safetensors.index.json");
    parity_error *error = NULL;
    if (!single || !index) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "building paths");
    else if (access(single, R_OK) == 0) {
        *files = malloc(sizeof **files);
        if (!*files) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "listing files");
        else {
            (*files)[0] = single;
            single = NULL;
            *count = 1;
        }
    } else if (access(index, R_OK) == 0) {
        char *text = read_text_file(index, &error);
        cJSON *root = text ? cJSON_Parse(text) : NULL;
        const cJSON *map = root ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
        if (!error && !cJSON_IsObject(map))
            error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: %s", index, root ? "no 'weight_map' object" : "not valid JSON");
        size_t entries = map ? (size_t)cJSON_GetArraySize(map) : 0;
        if (!error) {
            *files = calloc(entries ? entries : 1, sizeof **files);
            if (!*files) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "listing shards");
        }
        for (const cJSON *item = map ? map->child : NULL; item && !error; item = item->next) {
            if (!cJSON_IsString(item) || strchr(item->valuestring, '/'))
                error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: weight_map['%s'] must name a shard file in the directory", index,
                                     item->string);
            else if (!contains(*files, *count, item->valuestring)) {
                (*files)[*count] = strdup(item->valuestring);
                if (!(*files)[(*count)++]) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "listing shards");
            }
        }
        for (size_t i = 0; i < *count && !error; i++) { // relative shard names -> paths
            char *path = join_path(directory, (*files)[i]);
            free((*files)[i]);
            (*files)[i] = path;
            if (!path) error = PARITY_ERROR(PARITY_ERROR_MEMORY, "building shard paths");
        }
        cJSON_Delete(root);
        free(text);
    } else {
        error = PARITY_ERROR(PARITY_ERROR_IO, "%s: no model.safetensors and no model.safetensors.index.json", directory);
    }
    free(single);
    free(index);
    if (error) {
        for (size_t i = 0; i < *count; i++) free((*files)[i]);
        free(*files);
        *files = NULL;
        *count = 0;
    }
    return error;
}

// DATA error naming the file and the tensor at its first NaN/Inf: a damaged weight is reported where
// it is, not at the first gradient it spoils.
static parity_error *check_finite_weight(const char *path, const char *name, const parity_tensor *tensor) {
    for (int64_t i = 0; i < tensor->numel; i++) {
        double value = parity_tensor_get(tensor, i);
        if (isfinite(value)) continue;
        char shape[160];
        return PARITY_ERROR(PARITY_ERROR_DATA, "%s: tensor '%s' %s has %s at flat index %lld", path, name,
                            parity_tensor_shape_string(tensor, shape, sizeof shape),
                            isnan(value) ? "NaN" : value > 0 ? "+Inf" : "-Inf", (long long)i);
    }
    return NULL;
}

parity_error *parity_checkpoint_load(const char *directory, parity_dtype dtype, parity_model_config *config,
                                     parity_parameters *parameters) {
    char *config_path = join_path(directory, "config.json");
    if (!config_path) return PARITY_ERROR(PARITY_ERROR_MEMORY, "building paths");
    parity_error *error = parity_model_config_read(config_path, config);
    free(config_path);
    if (error) return error;
    char **files = NULL;
    size_t file_count = 0;
    PARITY_TRY(parity_checkpoint_files(directory, &files, &file_count));
    // A tensor the model needs but no file has is reported against the file, or the shards' index.
    if (file_count == 1) snprintf(parameters->source, sizeof parameters->source, "%s", files[0]);
    else snprintf(parameters->source, sizeof parameters->source, "%s/model.safetensors.index.json", directory);
    parity_expert_converter *converter = NULL;
    error = parity_expert_converter_new(config->num_experts, config->hidden_size, config->moe_intermediate_size, &converter);
    for (size_t f = 0; f < file_count && !error; f++) {
        parity_safetensors_file file;
        error = parity_safetensors_open(files[f], &file);
        for (size_t i = 0; !error && i < file.entry_count; i++) {
            parity_tensor tensor;
            const char *name = file.entries[i].name;
            if (!parity_dtype_is_float(file.entries[i].dtype)) {
                error = PARITY_ERROR(PARITY_ERROR_DATA, "%s: tensor '%s' is %s; model weights must be floating point", files[f],
                                     name, parity_safetensors_dtype_name(file.entries[i].dtype));
                break;
            }
            error = parity_safetensors_load(&file, name, dtype, &tensor);
            if (error) break;
            error = check_finite_weight(files[f], name, &tensor);
            if (!error) {
                error = parity_expert_converter_feed(converter, name, &tensor, parameters);
                if (error) error = parity_error_wrap(error, __FILE__, __LINE__, "%s", files[f]);
            }
            parity_tensor_release(&tensor);
        }
        if (!error || file.path) parity_safetensors_close(&file);
    }
    if (!error) {
        error = parity_expert_converter_finish(converter);
        if (error) error = parity_error_wrap(error, __FILE__, __LINE__, "%s", directory);
    }
    parity_expert_converter_free(converter);
    for (size_t f = 0; f < file_count; f++) free(files[f]);
    free(files);
    return error;
}
