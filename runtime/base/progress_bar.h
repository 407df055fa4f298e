/* A one-line progress bar for the long-running tools (preprocess_data, evaluate_zeroshot): percent, counts, rate
 * and time left, redrawn in place on stderr at most 5 times a second. It is drawn only where a person watches:
 * when stderr is a terminal, or when ZT_PROGRESS_BAR=1 (ZT_PROGRESS_BAR=0 turns it off); logs and pipes keep the
 * tools' Megatron-style progress lines unchanged. Also the H:MM:SS duration format shared with the training
 * log's ETA (train/progress.c). */
#ifndef ZT_PROGRESS_BAR_H
#define ZT_PROGRESS_BAR_H

#include <stddef.h>

typedef struct zt_progress_bar zt_progress_bar;

/* Starts a bar for `what` (e.g. "preprocess_data") over `total` units (<= 0: unknown; the bar then shows the
 * count and rate only). `unit` "B" formats counts as bytes (KB/MB/GB, powers of 1024), anything else as plain
 * numbers followed by that word. NULL when the bar is off (every call accepts NULL). */
zt_progress_bar *zt_progress_bar_start(const char *what, double total, const char *unit);
/* `done` units so far (monotone); redraws when 0.2 s have passed since the last drawing. */
void zt_progress_bar_update(zt_progress_bar *b, double done);
/* Draws the final state, ends the line and frees the bar. */
void zt_progress_bar_finish(zt_progress_bar *b, double done);
/* The bar's text for these numbers (for tests): out must hold 160 bytes. */
void zt_progress_bar_format(char *out, size_t cap, const char *what, double done, double total, const char *unit,
                            double elapsed);
/* Python's str(datetime.timedelta(seconds=int(s))): "0:12:03", "1 day, 2:03:04". */
void zt_progress_hms(char *out, size_t cap, double seconds);

#endif
