/* Start-up agreement on the index caches (GPT doc/sample/shuffle arrays, BERT samples mappings): rank 0 builds a
 * missing cache, every other rank loads it. zt_cache_sync makes that wait end on every rank: under MPI the ranks
 * meet once rank 0 has written (or found) the cache, each looks for it for at most the timeout, and all of them
 * compare what they saw, so a rank that cannot see the cache (per-rank paths on node-local disks) ends the job
 * naming itself, its path and the seconds it waited; without MPI (separate processes) the poll alone is bounded.
 * The meeting waits at most --distributed-timeout-minutes (zt_comm_startup_timeout: rank 0's build must finish
 * within it, as for Megatron's barrier after building the indices); the look for the file after it at most
 * ZT_DATA_CACHE_TIMEOUT seconds (default 600). */
#ifndef ZT_CACHE_SYNC_H
#define ZT_CACHE_SYNC_H

#define ZT_CACHE_DEFAULT_TIMEOUT_S 600.0

/* ZT_DATA_CACHE_TIMEOUT (seconds, > 0), or the default; a malformed value dies naming the variable. */
double zt_cache_wait_timeout(void);

/* Called by every rank at the same point, after rank 0 wrote or found the cache. `file` is the file whose presence
 * marks this rank's cache complete (the .dsc, or the BERT mapping); `found` says whether this rank saw it before
 * rank 0 built; complete(ctx) looks again. Returns when every rank sees its cache; otherwise ends the job. */
void zt_cache_sync(const char *what, const char *file, int found, int (*complete)(const void *ctx), const void *ctx);

#endif
