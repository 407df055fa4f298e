/* DeepNVMe in C: an asynchronous file I/O handle on Linux libaio with O_DIRECT, with DeepSpeed's
 * aio_handle semantics (block_size, queue_depth, single_submit, overlap_events, intra_op_parallelism
 * worker threads that each own an io context and transfer an equal byte range of every request),
 * synchronous and asynchronous pread/pwrite, wait() returning the number of completed requests, and
 * page-aligned, optionally mlock()ed buffers. Errors are returned (-1) with a message that names the file,
 * offset, size and alignment involved (zt_aio_error); nothing here exits the process. docs/aio.md. */
#ifndef ZT_AIO_H
#define ZT_AIO_H

#include <stddef.h>
#include <stdint.h>

/* The ds_config "aio" block (deepspeed/runtime/swap_tensor/aio_config.py) plus lock_memory. */
typedef struct {
  int64_t block_size;       /* bytes per libaio request (iocb); default 1048576 */
  int queue_depth;          /* iocbs in flight per worker thread; default 8 */
  int single_submit;        /* 1: one io_submit call per iocb; 0 (default): one call per batch */
  int overlap_events;       /* 1 (default): keep the queue full, reap >= 1 event at a time;
                               0: submit a batch of queue_depth iocbs, reap all of them, repeat */
  int intra_op_parallelism; /* worker threads; each request is split into this many equal byte ranges; default 1 */
  int lock_memory;          /* zt_aio_alloc buffers are mlock()ed (DeepSpeed's pinned CPU tensors); default 0 */
} zt_aio_config;

/* DeepSpeed's ds_config "aio" defaults: block_size 1048576, queue_depth 8, intra_op_parallelism 1,
 * single_submit false, overlap_events true (use_gds false: zerotron has no GDS path). Note that DeepSpeed's
 * Python aio_handle() constructor has other defaults (queue_depth 128, overlap_events false). */
void zt_aio_config_defaults(zt_aio_config *cfg);

/* Checks the values; returns 0, or -1 with a message naming the key and value in err (n bytes). */
int zt_aio_config_check(const zt_aio_config *cfg, char *err, size_t n);

typedef struct zt_aio_handle zt_aio_handle;

/* Starts intra_op_parallelism worker threads, each with its own io context of queue_depth entries.
 * Returns NULL with a message in err when the configuration is invalid or io_setup fails. */
zt_aio_handle *zt_aio_handle_create(const zt_aio_config *cfg, char *err, size_t n);
/* Waits for pending requests (their errors are dropped), stops the workers, frees the handle. */
void zt_aio_handle_destroy(zt_aio_handle *h);

/* Getters, as DeepSpeed's get_block_size() etc. */
int64_t zt_aio_get_block_size(const zt_aio_handle *h);
int zt_aio_get_queue_depth(const zt_aio_handle *h);
int zt_aio_get_single_submit(const zt_aio_handle *h);
int zt_aio_get_overlap_events(const zt_aio_handle *h);
int zt_aio_get_intra_op_parallelism(const zt_aio_handle *h);

/* The message of the last failed call on this handle ("" if none). */
const char *zt_aio_error(const zt_aio_handle *h);

/* Requests. Requirements (O_DIRECT), each checked before anything is submitted:
 *  - nbytes > 0 and a multiple of intra_op_parallelism (DeepSpeed's check), and each thread's share
 *    nbytes / intra_op_parallelism a multiple of the file's O_DIRECT alignment A;
 *  - file_offset >= 0 and a multiple of A; buf aligned to the file's O_DIRECT memory alignment;
 *  A comes from statx(STATX_DIOALIGN) of the opened file (512 where the file system does not say,
 *  e.g. tmpfs). zt_aio_padded_size rounds a size up to what every handle accepts.
 * Writes open the file O_WRONLY|O_CREAT|O_DIRECT (mode 0600, no truncation: bytes outside
 * [file_offset, file_offset + nbytes) of an existing file are kept), as DeepSpeed does, and first extend a
 * shorter file to file_offset + nbytes with ftruncate (a hole; ext4/xfs serialize O_DIRECT writes that
 * extend a file but run writes inside it concurrently). A failed write can leave the file at that size. A size that is
 * not a multiple of block_size is fine: the last iocb of each thread's range is short. Sizes that are
 * not a multiple of A are refused, not padded: callers pad their tensors (zt_aio_padded_size), as
 * DeepSpeed's swapper pads every swapped tensor to 1024 x intra_op_parallelism bytes.
 * Reads need the file to hold [file_offset, file_offset + nbytes); a shorter file is refused up front,
 * and a read that returns fewer bytes than asked is an error naming the file and both counts.
 * async = 0: the request completes before the call returns; returns 1 (completed requests) or -1.
 * async = 1: returns 0 once queued (or -1 if refused); zt_aio_wait completes it. buf must stay valid and
 * untouched until then. */
int zt_aio_pread(zt_aio_handle *h, void *buf, size_t nbytes, const char *path, int64_t file_offset, int async);
int zt_aio_pwrite(zt_aio_handle *h, const void *buf, size_t nbytes, const char *path, int64_t file_offset,
                  int async);
/* DeepSpeed's sync_pread/sync_pwrite/async_pread/async_pwrite. */
int zt_aio_sync_pread(zt_aio_handle *h, void *buf, size_t nbytes, const char *path, int64_t file_offset);
int zt_aio_sync_pwrite(zt_aio_handle *h, const void *buf, size_t nbytes, const char *path, int64_t file_offset);
int zt_aio_async_pread(zt_aio_handle *h, void *buf, size_t nbytes, const char *path, int64_t file_offset);
int zt_aio_async_pwrite(zt_aio_handle *h, const void *buf, size_t nbytes, const char *path, int64_t file_offset);

/* Waits for every queued request; closes their files. Returns the number of requests completed
 * (DeepSpeed's handle.wait()), or -1 if any of them failed (the first failure's message in
 * zt_aio_error; the others completed or failed too, nothing stays in flight). */
int zt_aio_wait(zt_aio_handle *h);

/* Smallest size >= nbytes that the handle accepts on any file system with O_DIRECT alignment <= 4096:
 * a multiple of 4096 x intra_op_parallelism. */
size_t zt_aio_padded_size(const zt_aio_handle *h, size_t nbytes);

/* Page-aligned buffer of `bytes` (rounded up to whole pages, zeroed), mlock()ed when lock is set
 * (DeepSpeed's new_cpu_locked_tensor). Returns NULL with a message in err on failure (an mlock failure
 * names RLIMIT_MEMLOCK). Free with zt_aio_free and the same size and lock flag. */
void *zt_aio_alloc(size_t bytes, int lock, char *err, size_t n);
void zt_aio_free(void *p, size_t bytes, int lock);

/* "1M" / "400M" / "8K" / "1G" / "1048576" as DeepSpeed's tools read sizes (K, M, G = powers of 1024,
 * also lower case and with a trailing B). Returns 0 or -1 when s is not such a size. */
int zt_aio_parse_size(const char *s, int64_t *out);

#endif
