// unit_page.h: one unit's value at every byte of a text as an HTML page, the text coloured
// by the value (green positive, red negative), as in the sentiment-neuron post.
#pragma once
#include <stddef.h>
#include <stdint.h>

// val[t]: the unit after byte t. Valid UTF-8 characters are kept whole and coloured by the
// value after their last byte; an invalid byte shows as U+FFFD, a control byte as its
// control picture (U+2400 + byte). Returns the page (NUL-terminated), its length in *len.
char *unit_page_html(const uint8_t *text, size_t n, const float *val, const char *title, size_t *len);
