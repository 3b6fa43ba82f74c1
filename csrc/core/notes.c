/* notes.c: the pending notes of tileops/notes.h - a small fixed table under a mutex, and
 * the texts of every note ever recorded (hashed) so that each is given once per process. */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tileops/notes.h"

#define SEEN_MAX 64

static pthread_mutex_t g_notes_mutex = PTHREAD_MUTEX_INITIALIZER;
static char g_pending[TILEOPS_NOTES_KEPT][TILEOPS_NOTE_MAX];
static int g_first, g_count;
static uint64_t g_seen[SEEN_MAX];
static int g_num_seen;

static uint64_t text_hash(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

void tileops_note(const char *fmt, ...) {
    char text[TILEOPS_NOTE_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    uint64_t h = text_hash(text);
    pthread_mutex_lock(&g_notes_mutex);
    int seen = 0;
    for (int i = 0; i < g_num_seen; i++)
        if (g_seen[i] == h)
            seen = 1;
    if (!seen && g_count < TILEOPS_NOTES_KEPT) {
        if (g_num_seen < SEEN_MAX)
            g_seen[g_num_seen++] = h;
        memcpy(g_pending[(g_first + g_count) % TILEOPS_NOTES_KEPT], text, sizeof text);
        g_count++;
    }
    pthread_mutex_unlock(&g_notes_mutex);
}

int tileops_take_note(char *buf, size_t size) {
    int got = 0;
    pthread_mutex_lock(&g_notes_mutex);
    if (g_count > 0) {
        if (buf && size)
            snprintf(buf, size, "%s", g_pending[g_first]);
        g_first = (g_first + 1) % TILEOPS_NOTES_KEPT;
        g_count--;
        got = 1;
    }
    pthread_mutex_unlock(&g_notes_mutex);
    return got;
}
