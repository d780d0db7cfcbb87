// text.h: bounded formatting into fixed buffers for the harness's records (ids, reasons, paths).
// Truncation is accepted and deliberate: these are display strings with generous sizes.
#ifndef PARITY_HARNESS_TEXT_H
#define PARITY_HARNESS_TEXT_H

#include <stddef.h>

// snprintf into `buffer` (always terminated); returns buffer.
char *parity_text_format(char *buffer, size_t size, const char *format, ...) __attribute__((format(printf, 3, 4)));
// Appends to the text already in `buffer`.
char *parity_text_extend(char *buffer, size_t size, const char *format, ...) __attribute__((format(printf, 3, 4)));

#endif
