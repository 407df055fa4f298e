/* Whole-file reading for every reader of a user file (configs, vocabularies, task files, datasets' small files).
 * One implementation: a regular file is read in one call of its stat size, a pipe or process substitution
 * (--deepspeed_config <(...)) by growing the buffer until EOF. The caller names its flag and the path in its
 * own error, from errno. */
#ifndef ZT_FILE_H
#define ZT_FILE_H

#include <stddef.h>

/* The whole file at path in a malloc'd buffer with a NUL after the last byte (text parsers may treat it as a
 * string; embedded NULs are the caller's to check); *len (when not NULL) gets the byte count. NULL with errno set
 * when the file cannot be opened or read (ENOMEM when the buffer cannot grow). */
char *zt_read_file(const char *path, size_t *len);

#endif
