// comm_table.c: see comm_table.h.
#include "comm_table.h"

#include <stdio.h>
#include <string.h>

void comm_table_count(const char *output, const char *collective, int *rows, int *wrong_rows) {
    *rows = *wrong_rows = 0;
    const char *line = output;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        size_t length = end ? (size_t)(end - line) : strlen(line);
        char text[256];
        snprintf(text, sizeof text, "%.*s", (int)(length < sizeof text ? length : sizeof text - 1), line);
        long long size, count, wrong;
        char type[16], name[64];
        double time, algbw, busbw;
        if (text[0] != '#' && sscanf(text, "%lld %lld %15s %63s %lf %lf %lf %lld", &size, &count, type, name, &time, &algbw,
                                     &busbw, &wrong) == 8 &&
            (!collective || strcmp(name, collective) == 0)) {
            (*rows)++;
            if (wrong != 0) (*wrong_rows)++;
        }
        line = end ? end + 1 : NULL;
    }
}
