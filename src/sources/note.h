/*
 * note: the sentences a source's reason and note are made of (struct source's reason and note
 * buffers in source.h): each appended after "; ", cut short when the buffer is full.
 */
#ifndef CARMA_SOURCES_NOTE_H
#define CARMA_SOURCES_NOTE_H

#include <stddef.h>

/* Appends a sentence to buf (cap bytes, NUL-terminated), after "; " when buf is not empty,
 * truncating when full. */
void note_add(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
