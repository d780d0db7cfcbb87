// layout.c: parsing, checking and naming a parallel layout (layout.h).
#include "models/parallel/layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int axis(int value) { return value > 0 ? value : 1; }

int parity_layout_ranks(const parity_layout *layout) { return axis(layout->dp) * axis(layout->sp); }

bool parity_layout_is_parallel(const parity_layout *layout) { return parity_layout_ranks(layout) > 1; }

// "N" in [1, 1024] after a prefix, or -1.
static int count_after(const char *item, size_t prefix) {
    char *end;
    long value = strtol(item + prefix, &end, 10);
    return end == item + prefix || *end || value < 1 || value > 1024 ? -1 : (int)value;
}

parity_error *parity_layout_parse(const char *text, parity_layout *out) {
    memset(out, 0, sizeof *out);
    char copy[256];
    PARITY_CHECK(text && strlen(text) < sizeof copy, PARITY_ERROR_USAGE, "a layout is at most %zu characters",
                 sizeof copy - 1);
    snprintf(copy, sizeof copy, "%s", text);
    bool seen_dp = false, seen_sp = false, seen_ep = false, seen_fsdp = false;
    char *saveptr = NULL;
    for (char *item = strtok_r(copy, ",", &saveptr); item; item = strtok_r(NULL, ",", &saveptr)) {
        struct {
            const char *prefix;
            int *value;
            bool *seen;
        } axes[] = {{"dp=", &out->dp, &seen_dp}, {"sp=", &out->sp, &seen_sp}, {"ep=", &out->ep, &seen_ep},
                    {"fsdp=", &out->dp, &seen_dp}};
        bool matched = false;
        for (size_t a = 0; a < sizeof axes / sizeof axes[0] && !matched; a++) {
            size_t length = strlen(axes[a].prefix);
            if (strncmp(item, axes[a].prefix, length) != 0) continue;
            matched = true;
            int value = count_after(item, length);
            PARITY_CHECK(value > 0, PARITY_ERROR_USAGE, "layout item '%s': expected %sN with N in [1, 1024]", item,
                         axes[a].prefix);
            PARITY_CHECK(!*axes[a].seen, PARITY_ERROR_USAGE, "layout item '%s': that axis is given twice", item);
            *axes[a].seen = true;
            *axes[a].value = value;
            if (a == 3) out->fsdp = seen_fsdp = true;
        }
        if (matched) continue;
        if (strcmp(item, "fsdp") == 0) {
            PARITY_CHECK(!seen_fsdp, PARITY_ERROR_USAGE, "layout item 'fsdp' is given twice");
            out->fsdp = seen_fsdp = true;
        } else if (strcmp(item, "test_wrong_group") == 0) {
            out->fault_wrong_group = true;
        } else if (strcmp(item, "test_skip_all_to_all") == 0) {
            out->fault_skip_all_to_all = true;
        } else if (strncmp(item, "test_stall_rank=", 16) == 0 || strncmp(item, "test_kill_rank=", 15) == 0) {
            const bool stall = item[5] == 's';
            const size_t prefix = stall ? 16 : 15;
            char *end;
            long rank = strtol(item + prefix, &end, 10);
            PARITY_CHECK(end != item + prefix && !*end && rank >= 0 && rank < 1024, PARITY_ERROR_USAGE,
                         "layout item '%s': expected %.*sR with R a rank", item, (int)prefix, item);
            *(stall ? &out->fault_stall_rank : &out->fault_kill_rank) = (int)rank + 1;
        } else {
            return PARITY_ERROR(PARITY_ERROR_USAGE,
                                "layout item '%s' is not one of dp=N, sp=N, ep=N, fsdp, fsdp=N (or a test fault)", item);
        }
    }
    out->dp = axis(out->dp), out->sp = axis(out->sp), out->ep = axis(out->ep);
    // ep carves its shards out of the dp x sp ranks (VeOmni: ep divides the world): "ep=4" alone, or
    // "sp=2,ep=4", means as many data-parallel copies as the experts need
    if (!seen_dp && out->ep > out->sp && out->ep % out->sp == 0) out->dp = out->ep / out->sp;
    return parity_layout_check(out);
}

parity_error *parity_layout_check(const parity_layout *layout) {
    const int ranks = parity_layout_ranks(layout), ep = axis(layout->ep);
    PARITY_CHECK(ranks <= 1024, PARITY_ERROR_USAGE, "layout dp=%d x sp=%d is %d ranks, more than 1024", axis(layout->dp),
                 axis(layout->sp), ranks);
    PARITY_CHECK(ranks % ep == 0, PARITY_ERROR_USAGE,
                 "layout ep=%d does not divide its %d ranks (dp=%d x sp=%d): experts are split over ep of the ranks", ep,
                 ranks, axis(layout->dp), axis(layout->sp));
    PARITY_CHECK(!layout->fault_wrong_group || ranks >= 2, PARITY_ERROR_USAGE,
                 "test_wrong_group needs a layout of at least 2 ranks");
    PARITY_CHECK(!layout->fault_skip_all_to_all || axis(layout->sp) >= 2, PARITY_ERROR_USAGE,
                 "test_skip_all_to_all needs sp=N with N >= 2");
    PARITY_CHECK(layout->fault_stall_rank <= ranks, PARITY_ERROR_USAGE,
                 "test_stall_rank=%d is not one of the layout's %d ranks", layout->fault_stall_rank - 1, ranks);
    PARITY_CHECK(!layout->fault_stall_rank || ranks >= 2, PARITY_ERROR_USAGE,
                 "test_stall_rank needs a layout of at least 2 ranks");
    PARITY_CHECK(layout->fault_kill_rank <= ranks, PARITY_ERROR_USAGE,
                 "test_kill_rank=%d is not one of the layout's %d ranks", layout->fault_kill_rank - 1, ranks);
    PARITY_CHECK(!layout->fault_kill_rank || ranks >= 2, PARITY_ERROR_USAGE,
                 "test_kill_rank needs a layout of at least 2 ranks");
    return NULL;
}

void parity_layout_name(const parity_layout *layout, char *out, size_t size) {
    int used = 0;
    out[0] = '\0';
#define APPEND(...)                                                                                                   \
    do {                                                                                                              \
        if (used >= 0 && (size_t)used < size) used += snprintf(out + used, size - (size_t)used, __VA_ARGS__);        \
    } while (0)
    if (layout->fsdp) APPEND("fsdp%d", axis(layout->dp));
    else if (axis(layout->dp) > 1) APPEND("dp%d", axis(layout->dp));
    if (axis(layout->sp) > 1) APPEND("sp%d", axis(layout->sp));
    if (axis(layout->ep) > 1) APPEND("ep%d", axis(layout->ep));
    if (layout->fault_wrong_group) APPEND("+wrong_group");
    if (layout->fault_skip_all_to_all) APPEND("+skip_all_to_all");
    if (layout->fault_stall_rank) APPEND("+stall%d", layout->fault_stall_rank - 1);
    if (layout->fault_kill_rank) APPEND("+kill%d", layout->fault_kill_rank - 1);
#undef APPEND
}
