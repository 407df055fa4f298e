/* DeepNVMe handle on libaio + O_DIRECT (see aio.h). One request is split into intra_op_parallelism equal,
 * contiguous byte ranges; worker thread t owns an io context and moves range t as block_size iocbs with
 * DeepSpeed's two engines: "overlap" keeps queue_depth iocbs in flight and reaps at least one completion
 * at a time, "sequential" submits queue_depth iocbs, reaps all of them, then submits the next batch.
 * Requests are queued FIFO on the handle; every worker takes its range of each request in order and the
 * caller's zt_aio_wait blocks until every range of every queued request is done. */
#define _GNU_SOURCE
#include "runtime/aio/aio.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <linux/stat.h> /* struct statx with the STATX_DIOALIGN fields (glibc 2.36's copy lacks them) */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ZT_AIO_FALLBACK_ALIGN 512 /* logical sector size, when statx does not report the file's */
#define ZT_AIO_PAD_ALIGN 4096

typedef struct {
  int is_read;
  int fd;
  char *path;
  char *buf;
  size_t nbytes;
  int64_t offset;
  int parts_left;          /* worker ranges not finished yet */
  size_t bytes_done;       /* bytes transferred over all ranges */
  int err_no;              /* first failure: errno (0 none), or -1 for a short transfer */
  int64_t err_offset;      /* file offset and size of the failed iocb */
  size_t err_len, err_got; /* bytes asked and moved by that iocb */
} zt_aio_op;

typedef struct {
  zt_aio_handle *h;
  int tid;
  io_context_t ctx;
  struct iocb *cbs;        /* queue_depth control blocks */
  struct iocb **free_cbs;  /* stack of unused ones */
  struct io_event *events;
} zt_aio_worker;

struct zt_aio_handle {
  zt_aio_config cfg;
  int nthreads;
  zt_aio_worker *workers;
  pthread_t *threads;
  int started;
  pthread_mutex_t mu;
  pthread_cond_t work_cv, done_cv;
  zt_aio_op **ops;
  int nops, cap;
  int *next;               /* per worker: index of the next op to work on */
  int stop;
  char err[1024];
};

void zt_aio_config_defaults(zt_aio_config *cfg) {
  cfg->block_size = 1048576;
  cfg->queue_depth = 8;
  cfg->single_submit = 0;
  cfg->overlap_events = 1;
  cfg->intra_op_parallelism = 1;
  cfg->lock_memory = 0;
}

int zt_aio_config_check(const zt_aio_config *c, char *err, size_t n) {
  if (c->block_size < 512 || c->block_size % 512 != 0 || c->block_size > ((int64_t)1 << 30)) {
    snprintf(err, n, "aio block_size %lld must be a positive multiple of 512 bytes (O_DIRECT) up to 1 GiB",
             (long long)c->block_size);
    return -1;
  }
  if (c->queue_depth < 1 || c->queue_depth > 4096) {
    snprintf(err, n, "aio queue_depth %d must be in [1, 4096]", c->queue_depth);
    return -1;
  }
  if (c->intra_op_parallelism < 1 || c->intra_op_parallelism > 256) {
    snprintf(err, n, "aio intra_op_parallelism %d must be in [1, 256]", c->intra_op_parallelism);
    return -1;
  }
  if ((c->single_submit != 0 && c->single_submit != 1) || (c->overlap_events != 0 && c->overlap_events != 1)) {
    snprintf(err, n, "aio single_submit %d and overlap_events %d must be 0 or 1", c->single_submit,
             c->overlap_events);
    return -1;
  }
  return 0;
}

static void set_err(zt_aio_handle *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(zt_aio_handle *h, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(h->err, sizeof h->err, fmt, ap);
  va_end(ap);
}

const char *zt_aio_error(const zt_aio_handle *h) { return h->err; }
int64_t zt_aio_get_block_size(const zt_aio_handle *h) { return h->cfg.block_size; }
int zt_aio_get_queue_depth(const zt_aio_handle *h) { return h->cfg.queue_depth; }
int zt_aio_get_single_submit(const zt_aio_handle *h) { return h->cfg.single_submit; }
int zt_aio_get_overlap_events(const zt_aio_handle *h) { return h->cfg.overlap_events; }
int zt_aio_get_intra_op_parallelism(const zt_aio_handle *h) { return h->cfg.intra_op_parallelism; }

size_t zt_aio_padded_size(const zt_aio_handle *h, size_t nbytes) {
  size_t unit = (size_t)ZT_AIO_PAD_ALIGN * (size_t)h->cfg.intra_op_parallelism;
  if (nbytes == 0) return unit;
  return (nbytes + unit - 1) / unit * unit;
}

/* ---- the worker side ----------------------------------------------------------------------------- */

/* Records the first failure of op (caller holds no lock). */
static void op_fail(zt_aio_handle *h, zt_aio_op *op, int err_no, int64_t off, size_t len, size_t got) {
  pthread_mutex_lock(&h->mu);
  if (op->err_no == 0) {
    op->err_no = err_no;
    op->err_offset = off;
    op->err_len = len;
    op->err_got = got;
  }
  pthread_mutex_unlock(&h->mu);
}

/* Checks one completion; returns the bytes it moved. A short write is retried once with pwrite() for the
 * rest so that its errno (ENOSPC, typically) is known. */
static size_t reap_one(zt_aio_handle *h, zt_aio_op *op, const struct io_event *ev, int *failed) {
  struct iocb *cb = ev->obj;
  size_t want = cb->u.c.nbytes;
  int64_t off = cb->u.c.offset;
  long res = (long)ev->res;
  if (res < 0) {
    op_fail(h, op, (int)-res, off, want, 0);
    *failed = 1;
    return 0;
  }
  size_t got = (size_t)res;
  if (got < want && !op->is_read) {
    ssize_t r = pwrite(op->fd, (char *)cb->u.c.buf + got, want - got, off + (int64_t)got);
    if (r == (ssize_t)(want - got)) return want;
    int e = r < 0 ? errno : -1;
    if (r > 0) got += (size_t)r;
    op_fail(h, op, e, off, want, got);
    *failed = 1;
    return got;
  }
  if (got < want) {
    op_fail(h, op, -1, off, want, got);
    *failed = 1;
  }
  return got;
}

static int submit_cbs(zt_aio_worker *w, zt_aio_op *op, struct iocb **cbs, int k, int64_t *first_off) {
  int done = 0;
  while (done < k) {
    int m = w->h->cfg.single_submit ? 1 : k - done;
    int r = io_submit(w->ctx, m, cbs + done);
    if (r == -EAGAIN || r == -EINTR) continue;
    if (r <= 0) {
      op_fail(w->h, op, r < 0 ? -r : EIO, (int64_t)cbs[done]->u.c.offset, cbs[done]->u.c.nbytes, 0);
      *first_off = (int64_t)cbs[done]->u.c.offset;
      return done;
    }
    done += r;
  }
  return done;
}

static int get_events(zt_aio_worker *w, int min, int max) {
  for (;;) {
    int r = io_getevents(w->ctx, min, max, w->events, NULL);
    if (r == -EINTR) continue;
    return r;
  }
}

/* Moves worker w's byte range of op. Returns the bytes transferred. */
static size_t run_part(zt_aio_worker *w, zt_aio_op *op) {
  zt_aio_handle *h = w->h;
  size_t share = op->nbytes / (size_t)h->nthreads;
  size_t start = share * (size_t)w->tid;
  char *ptr = op->buf + start;
  int64_t foff = op->offset + (int64_t)start;
  size_t bs = (size_t)h->cfg.block_size;
  size_t nblocks = (share + bs - 1) / bs, next = 0, moved = 0;
  int qd = h->cfg.queue_depth, pending = 0, failed = 0;
  int nfree = qd;
  for (int i = 0; i < qd; i++) w->free_cbs[i] = &w->cbs[i];
  struct iocb *batch[4096];
  while ((next < nblocks && !failed) || pending > 0) {
    /* overlap: refill every free slot; sequential: only when the previous batch is fully reaped */
    int k = 0;
    if (!failed && next < nblocks && (h->cfg.overlap_events || pending == 0)) {
      while (nfree > 0 && next < nblocks) {
        struct iocb *cb = w->free_cbs[--nfree];
        size_t len = next + 1 == nblocks ? share - next * bs : bs;
        if (op->is_read) io_prep_pread(cb, op->fd, ptr + next * bs, len, foff + (int64_t)(next * bs));
        else io_prep_pwrite(cb, op->fd, ptr + next * bs, len, foff + (int64_t)(next * bs));
        batch[k++] = cb;
        next++;
      }
      int64_t bad_off = 0;
      int s = submit_cbs(w, op, batch, k, &bad_off);
      pending += s;
      if (s < k) {
        failed = 1;
        for (int i = s; i < k; i++) w->free_cbs[nfree++] = batch[i];
      }
    }
    if (pending == 0) continue;
    int min = h->cfg.overlap_events ? 1 : pending;
    int r = get_events(w, min, pending);
    if (r < 0) { /* the context itself failed: nothing more can be reaped */
      op_fail(h, op, -r, foff, share, moved);
      failed = 1;
      break;
    }
    for (int i = 0; i < r; i++) {
      moved += reap_one(h, op, &w->events[i], &failed);
      w->free_cbs[nfree++] = w->events[i].obj;
    }
    pending -= r;
  }
  return moved;
}

static void *worker_main(void *arg) {
  zt_aio_worker *w = arg;
  zt_aio_handle *h = w->h;
  pthread_mutex_lock(&h->mu);
  for (;;) {
    while (!h->stop && h->next[w->tid] >= h->nops) pthread_cond_wait(&h->work_cv, &h->mu);
    if (h->next[w->tid] >= h->nops && h->stop) break;
    zt_aio_op *op = h->ops[h->next[w->tid]++];
    pthread_mutex_unlock(&h->mu);
    size_t moved = run_part(w, op);
    pthread_mutex_lock(&h->mu);
    op->bytes_done += moved;
    if (--op->parts_left == 0) pthread_cond_broadcast(&h->done_cv);
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* ---- the caller side ----------------------------------------------------------------------------- */

zt_aio_handle *zt_aio_handle_create(const zt_aio_config *cfg, char *err, size_t n) {
  if (zt_aio_config_check(cfg, err, n) != 0) return NULL;
  zt_aio_handle *h = calloc(1, sizeof *h);
  if (!h) {
    snprintf(err, n, "out of memory allocating the aio handle");
    return NULL;
  }
  h->cfg = *cfg;
  h->nthreads = cfg->intra_op_parallelism;
  h->workers = calloc((size_t)h->nthreads, sizeof *h->workers);
  h->threads = calloc((size_t)h->nthreads, sizeof *h->threads);
  h->next = calloc((size_t)h->nthreads, sizeof *h->next);
  pthread_mutex_init(&h->mu, NULL);
  pthread_cond_init(&h->work_cv, NULL);
  pthread_cond_init(&h->done_cv, NULL);
  for (int t = 0; t < h->nthreads; t++) {
    zt_aio_worker *w = &h->workers[t];
    w->h = h;
    w->tid = t;
    w->cbs = calloc((size_t)cfg->queue_depth, sizeof *w->cbs);
    w->free_cbs = calloc((size_t)cfg->queue_depth, sizeof *w->free_cbs);
    w->events = calloc((size_t)cfg->queue_depth, sizeof *w->events);
    int r = io_setup((unsigned)cfg->queue_depth, &w->ctx);
    if (r != 0) {
      snprintf(err, n, "io_setup(queue_depth %d) for aio worker %d of %d failed: %s%s", cfg->queue_depth, t,
               h->nthreads, strerror(-r),
               -r == EAGAIN ? " (the system-wide limit /proc/sys/fs/aio-max-nr is reached: lower queue_depth x "
                              "intra_op_parallelism or raise the limit)" : "");
      w->ctx = 0;
      zt_aio_handle_destroy(h);
      return NULL;
    }
  }
  for (int t = 0; t < h->nthreads; t++) {
    if (pthread_create(&h->threads[t], NULL, worker_main, &h->workers[t]) != 0) {
      snprintf(err, n, "cannot start aio worker thread %d of %d: %s", t, h->nthreads, strerror(errno));
      zt_aio_handle_destroy(h);
      return NULL;
    }
    h->started = t + 1;
  }
  return h;
}

void zt_aio_handle_destroy(zt_aio_handle *h) {
  if (!h) return;
  if (h->nops > 0) zt_aio_wait(h);
  pthread_mutex_lock(&h->mu);
  h->stop = 1;
  pthread_cond_broadcast(&h->work_cv);
  pthread_mutex_unlock(&h->mu);
  for (int t = 0; t < h->started; t++) pthread_join(h->threads[t], NULL);
  for (int t = 0; t < h->nthreads; t++) {
    zt_aio_worker *w = &h->workers[t];
    if (w->ctx) io_destroy(w->ctx);
    free(w->cbs);
    free(w->free_cbs);
    free(w->events);
  }
  pthread_mutex_destroy(&h->mu);
  pthread_cond_destroy(&h->work_cv);
  pthread_cond_destroy(&h->done_cv);
  free(h->workers);
  free(h->threads);
  free(h->next);
  free(h->ops);
  free(h);
}

/* O_DIRECT alignment of an open file: (memory, offset), from statx STATX_DIOALIGN where reported. */
static void dio_align(int fd, size_t *mem, size_t *off) {
  struct statx sx;
  memset(&sx, 0, sizeof sx);
  *mem = *off = ZT_AIO_FALLBACK_ALIGN;
  if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN) &&
      sx.stx_dio_offset_align > 0) {
    *mem = sx.stx_dio_mem_align ? sx.stx_dio_mem_align : ZT_AIO_FALLBACK_ALIGN;
    *off = sx.stx_dio_offset_align;
  }
}

static int submit_op(zt_aio_handle *h, int is_read, void *buf, size_t nbytes, const char *path, int64_t offset,
                     int async) {
  const char *verb = is_read ? "read" : "write";
  const char *prep = is_read ? "from" : "to";
  int T = h->nthreads;
  h->err[0] = 0;
  if (nbytes == 0) {
    set_err(h, "aio %s of 0 bytes %s %s: the size must be positive", verb, prep, path);
    return -1;
  }
  if (nbytes % (size_t)T != 0) {
    set_err(h, "aio parallel %s %s %s: num_bytes = %zu is not divisible by intra_op_parallelism = %d", verb, prep,
            path, nbytes, T);
    return -1;
  }
  if (offset < 0) {
    set_err(h, "aio %s %s %s: negative file offset %lld", verb, prep, path, (long long)offset);
    return -1;
  }
  int fd = is_read ? open(path, O_RDONLY | O_DIRECT) : open(path, O_WRONLY | O_CREAT | O_DIRECT, 0600);
  if (fd < 0) {
    int e = errno;
    set_err(h, "aio cannot open %s for %s with O_DIRECT: %s%s", path, is_read ? "reading" : "writing", strerror(e),
            e == EINVAL ? " (the file system does not support O_DIRECT)" : "");
    return -1;
  }
  size_t mem_al, off_al;
  dio_align(fd, &mem_al, &off_al);
  size_t share = nbytes / (size_t)T;
  const char *why = NULL;
  if ((uint64_t)offset % off_al) why = "file offset";
  else if (share % off_al) why = "size";
  else if ((size_t)h->cfg.block_size % off_al) why = "block_size";
  if (why) {
    set_err(h, "aio %s of %zu bytes %s %s at file offset %lld: the %s is not O_DIRECT-aligned: file offset, "
            "block_size %lld and each thread's share (%zu bytes = %zu / intra_op_parallelism %d) must be multiples "
            "of %zu bytes (pad the buffer: zt_aio_padded_size gives %zu)", verb, nbytes, prep, path,
            (long long)offset, why, (long long)h->cfg.block_size, share, nbytes, T, off_al,
            zt_aio_padded_size(h, nbytes));
    close(fd);
    return -1;
  }
  if ((uintptr_t)buf % mem_al) {
    set_err(h, "aio %s of %zu bytes %s %s: buffer address %p is not aligned to %zu bytes (O_DIRECT); allocate it "
            "with zt_aio_alloc", verb, nbytes, prep, path, buf, mem_al);
    close(fd);
    return -1;
  }
  if (is_read) {
    off_t size = lseek(fd, 0, SEEK_END);
    if (size < 0 || (uint64_t)size < (uint64_t)offset + nbytes) {
      set_err(h, "aio short read: %s holds %lld bytes; cannot read %zu bytes at file offset %lld (needs %llu)",
              path, (long long)size, nbytes, (long long)offset, (unsigned long long)((uint64_t)offset + nbytes));
      close(fd);
      return -1;
    }
  }
  if (!is_read) {
    /* Extend the file to its final size first (a hole, as fio's default): ext4 and xfs serialize O_DIRECT
     * writes past the end of the file (each waits for the previous one), but run writes inside it in parallel. */
    off_t size = lseek(fd, 0, SEEK_END);
    uint64_t end = (uint64_t)offset + nbytes;
    if (size >= 0 && (uint64_t)size < end && ftruncate(fd, (off_t)end) != 0) {
      int e = errno;
      set_err(h, "aio write to %s: cannot extend the file from %lld to %llu bytes: %s", path, (long long)size,
              (unsigned long long)end, strerror(e));
      close(fd);
      return -1;
    }
  }
  zt_aio_op *op = calloc(1, sizeof *op);
  if (!op || !(op->path = strdup(path))) {
    free(op);
    close(fd);
    set_err(h, "out of memory queuing an aio %s of %s", verb, path);
    return -1;
  }
  op->is_read = is_read;
  op->fd = fd;
  op->buf = buf;
  op->nbytes = nbytes;
  op->offset = offset;
  op->parts_left = T;
  pthread_mutex_lock(&h->mu);
  if (h->nops == h->cap) {
    int cap = h->cap ? 2 * h->cap : 16;
    zt_aio_op **ops = realloc(h->ops, (size_t)cap * sizeof *ops);
    if (!ops) {
      pthread_mutex_unlock(&h->mu);
      close(fd);
      free(op->path);
      free(op);
      set_err(h, "out of memory queuing an aio %s of %s", verb, path);
      return -1;
    }
    h->ops = ops;
    h->cap = cap;
  }
  h->ops[h->nops++] = op;
  pthread_cond_broadcast(&h->work_cv);
  pthread_mutex_unlock(&h->mu);
  return async ? 0 : zt_aio_wait(h);
}

static void describe_failure(zt_aio_handle *h, const zt_aio_op *op) {
  const char *verb = op->is_read ? "read" : "write";
  if (op->err_no == ENOSPC || (op->err_no == -1 && !op->is_read)) {
    set_err(h, "aio write to %s: %s: %zu of %zu bytes written (request of %zu bytes at file offset %lld; the failing "
            "block: %zu bytes at offset %lld, %zu written)", op->path,
            op->err_no == ENOSPC ? "no space left on device (ENOSPC)" : "short write", op->bytes_done, op->nbytes,
            op->nbytes, (long long)op->offset, op->err_len, (long long)op->err_offset, op->err_got);
  } else if (op->err_no == -1) {
    set_err(h, "aio short read from %s: %zu of %zu bytes at file offset %lld (block at offset %lld returned %zu of "
            "%zu bytes: the file shrank?)", op->path, op->bytes_done, op->nbytes, (long long)op->offset,
            (long long)op->err_offset, op->err_got, op->err_len);
  } else {
    set_err(h, "aio %s of %s failed: %s (block of %zu bytes at file offset %lld; request of %zu bytes at offset %lld, "
            "%zu bytes done)", verb, op->path, strerror(op->err_no), op->err_len, (long long)op->err_offset,
            op->nbytes, (long long)op->offset, op->bytes_done);
  }
}

int zt_aio_wait(zt_aio_handle *h) {
  pthread_mutex_lock(&h->mu);
  for (;;) {
    int busy = 0;
    for (int i = 0; i < h->nops; i++) busy |= h->ops[i]->parts_left > 0;
    if (!busy) break;
    pthread_cond_wait(&h->done_cv, &h->mu);
  }
  int count = h->nops, failed = 0;
  for (int i = 0; i < h->nops; i++) {
    zt_aio_op *op = h->ops[i];
    if (op->err_no != 0 && !failed) {
      describe_failure(h, op);
      failed = 1;
    }
    if (close(op->fd) != 0 && !failed && !op->is_read) {
      set_err(h, "aio write to %s: closing the file failed: %s", op->path, strerror(errno));
      failed = 1;
    }
    free(op->path);
    free(op);
  }
  h->nops = 0;
  for (int t = 0; t < h->nthreads; t++) h->next[t] = 0;
  pthread_mutex_unlock(&h->mu);
  return failed ? -1 : count;
}

int zt_aio_pread(zt_aio_handle *h, void *buf, size_t nbytes, const char *path, int64_t file_offset, int async) {
  return submit_op(h, 1, buf, nbytes, path, file_offset, async);
}
int zt_aio_pwrite(zt_aio_handle *h, const void *buf, size_t nbytes, const char *path, int64_t file_offset,
                  int async) {
  return submit_op(h, 0, (void *)buf, nbytes, path, file_offset, async);
}
int zt_aio_sync_pread(zt_aio_handle *h, void *buf, size_t nbytes, const char *path, int64_t file_offset) {
  return submit_op(h, 1, buf, nbytes, path, file_offset, 0);
}
int zt_aio_sync_pwrite(zt_aio_handle *h, const void *buf, size_t nbytes, const char *path, int64_t file_offset) {
  return submit_op(h, 0, (void *)buf, nbytes, path, file_offset, 0);
}
int zt_aio_async_pread(zt_aio_handle *h, void *buf, size_t nbytes, const char *path, int64_t file_offset) {
  return submit_op(h, 1, buf, nbytes, path, file_offset, 1);
}
int zt_aio_async_pwrite(zt_aio_handle *h, const void *buf, size_t nbytes, const char *path, int64_t file_offset) {
  return submit_op(h, 0, (void *)buf, nbytes, path, file_offset, 1);
}

/* ---- buffers and sizes ----------------------------------------------------------------------------- */

void *zt_aio_alloc(size_t bytes, int lock, char *err, size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t rounded = bytes ? (bytes + page - 1) / page * page : page;
  /* Buffers of 2 MiB and more are 2 MiB-aligned and asked to be backed by transparent huge pages: every
   * O_DIRECT request pins its buffer pages, 512 times fewer of them with huge pages. */
  size_t align = rounded >= ((size_t)2 << 20) ? (size_t)2 << 20 : page;
  void *p = NULL;
  int r = posix_memalign(&p, align, rounded);
  if (r != 0) {
    snprintf(err, n, "cannot allocate a page-aligned aio buffer of %zu bytes: %s", bytes, strerror(r));
    return NULL;
  }
#ifdef MADV_HUGEPAGE
  if (align > page) madvise(p, rounded, MADV_HUGEPAGE); /* advice only: without THP the buffer works as well */
#endif
  memset(p, 0, rounded);
  if (lock && mlock(p, rounded) != 0) {
    int e = errno;
    struct rlimit rl = {0, 0};
    getrlimit(RLIMIT_MEMLOCK, &rl);
    char lim[32];
    if (rl.rlim_cur == RLIM_INFINITY) snprintf(lim, sizeof lim, "unlimited");
    else snprintf(lim, sizeof lim, "%llu bytes", (unsigned long long)rl.rlim_cur);
    snprintf(err, n, "cannot lock (mlock) an aio buffer of %zu bytes: %s (RLIMIT_MEMLOCK is %s; raise it with "
             "`ulimit -l` or set lock_memory off)", rounded, strerror(e), lim);
    free(p);
    return NULL;
  }
  return p;
}

void zt_aio_free(void *p, size_t bytes, int lock) {
  if (!p) return;
  if (lock) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    munlock(p, bytes ? (bytes + page - 1) / page * page : page);
  }
  free(p);
}

int zt_aio_parse_size(const char *s, int64_t *out) {
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || errno || v <= 0) return -1;
  int64_t mult = 1;
  if (*end) {
    switch (toupper((unsigned char)*end)) {
      case 'K': mult = 1024; break;
      case 'M': mult = 1024 * 1024; break;
      case 'G': mult = 1024 * 1024 * 1024; break;
      default: return -1;
    }
    end++;
    if (toupper((unsigned char)*end) == 'B') end++;
    if (*end) return -1;
  }
  if (v > INT64_MAX / mult) return -1;
  *out = (int64_t)v * mult;
  return 0;
}
