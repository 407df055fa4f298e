/* Levenshtein distance, for the "did you mean" suggestions of every command-line and config parser. */
#ifndef ZT_EDIT_DISTANCE_H
#define ZT_EDIT_DISTANCE_H

int zt_edit_distance(const char *a, const char *b);
/* The distance when it is at most max, else max + 1 (cheaper: strings whose lengths differ by more than max, or whose
 * table passes max, stop early). */
int zt_edit_distance_within(const char *a, const char *b, int max);

#endif
