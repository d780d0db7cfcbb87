// text.c: bounded formatting (text.h).
#include "harness/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

char *parity_text_format(char *buffer, size_t size, const char *format, ...) {
    if (!buffer || size == 0) return buffer;
    va_list args;
    va_start(args, format);
    vsnprintf(buffer, size, format, args);
    va_end(args);
    return buffer;
}

char *parity_text_extend(char *buffer, size_t size, const char *format, ...) {
    if (!buffer || size == 0) return buffer;
    size_t used = strnlen(buffer, size);
    if (used >= size - 1) return buffer;
    va_list args;
    va_start(args, format);
    vsnprintf(buffer + used, size - used, format, args);
    va_end(args);
    return buffer;
}
