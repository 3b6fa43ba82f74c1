/* tileops/notes.h: things the core was asked for and could not honour - a setting it
 * ignored or clamped, a disk cache folder it refused - kept for the binding to show.
 *
 * The core never prints. A note is recorded once per process (the same text a second
 * time is dropped) and held until tileops_take_notes() hands it over; the Python layer
 * turns each into one warnings.warn (tileops.runtime.warn_core_notes). */
#ifndef TILEOPS_NOTES_H
#define TILEOPS_NOTES_H

#include <stddef.h>

#define TILEOPS_NOTE_MAX 1024 /* bytes of one note, NUL included (longer ones are cut) */
#define TILEOPS_NOTES_KEPT 16 /* notes held at once; more are dropped until taken */

/* Records a note (printf format). Thread-safe; never allocates. */
void tileops_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Moves the oldest pending note into buf and returns 1, or returns 0 when there is none. */
int tileops_take_note(char *buf, size_t size);

#endif /* TILEOPS_NOTES_H */
