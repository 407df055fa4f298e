/* Levenshtein distance, for the "did you mean" suggestions of every command-line and config parser. */
#ifndef ZT_EDIT_DISTANCE_H
#define ZT_EDIT_DISTANCE_H

int zt_edit_distance(const char *a, const char *b);

#endif
