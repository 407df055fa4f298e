/* Checkpoint files' HDF5 structures read in a child process before the reader trusts them (see h5io.h,
 * zt_h5_in_child): the HDF5 library (1.10) reads out of bounds, crashes or spins on some damaged object headers,
 * heaps and B-trees, and a file whose manifest was rewritten after the damage passes every checksum. The child
 * does the reader's own metadata reads (ckpt_reader.c) and walks every object, attribute and string dataset and
 * the whole of every chunked dataset (zt_h5_walk); a child that dies (a signal, or a sanitizer's exit) or runs
 * past the time limit makes the file refused with its name. A refusal in the child that means damage
 * (zt_h5_child_forward_refusals: the reader's reads, a read the walk cannot do) reaches the parent through a second
 * pipe, which refuses with the same words without doing those reads itself (HDF5 may allocate gigabytes for what
 * damaged metadata claims before it fails); any other refusal in the child is left to the parent. The child's
 * address space has a budget (limit_memory), so such an allocation fails there at once. Before any of this, the
 * manifest's crc32c pass checks the files' global heap collections (zt_h5_heap_scan, at the end). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "checkpoints/h5io.h"
#include "runtime/base/error.h"
#include "runtime/base/memplan.h"

static int g_note_fd = -1;   /* in a child of zt_h5_in_child: the pipe to the parent */
static int g_refuse_fd = -1; /* ... and the one for a refusal the parent adopts */
static int g_forward = 0;    /* refusals go to g_refuse_fd (zt_h5_child_forward_refusals) */

static void (*g_exit_hook)(void) = NULL; /* zt_h5_set_child_exit_hook */
static uint64_t g_budget_mb;             /* the child's memory budget (limit_memory), for its messages */

void zt_h5_child_forward_refusals(int on) { g_forward = on; }
void zt_h5_set_child_exit_hook(void (*fn)(void)) { g_exit_hook = fn; }

static void child_exit(int status) {
  if (g_exit_hook) g_exit_hook();
  _exit(status); /* no atexit handlers: the parent's (MPI, HDF5) are not the child's to run */
}

void zt_h5_child_note(const char *path) {
  if (g_note_fd < 0) return;
  char line[4200];
  const int n = snprintf(line, sizeof line, "%s\n", path);
  if (n > 0 && write(g_note_fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) < 0) g_note_fd = -1;
}

/* A variable-length string memory type in the file type's character set (HDF5 converts no string between
 * ASCII and UTF-8: a read in the other set would fail before touching the heap). */
static hid_t str_type(hid_t file_type) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5Tget_cset(file_type));
  return t;
}

static const char *g_walk_file; /* the file zt_h5_walk is on, for its refusals */

/* A read the walk could not do (what: e.g. "attribute 'dtype' of module/x"): the file is damaged, or the read
 * needs more than the child's budget. */
static void __attribute__((noreturn, format(printf, 1, 2))) unreadable(const char *fmt, ...) {
  char what[4400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  zt_fatal("checkpoint", "%s: %s cannot be read (or needs more than the %llu MiB the check allows, "
           "ZT_CKPT_PROBE_MEMORY_MB): the file is corrupted; refusing to load it", g_walk_file, what,
           (unsigned long long)g_budget_mb);
}

/* Reads attribute `name` of the object named *op whatever it holds (numbers as int64/double, strings as
 * variable-length ones); refuses the file when that fails. */
static herr_t read_attr(hid_t obj, const char *name, const H5A_info_t *info, void *op) {
  (void)info;
  const char *objname = op;
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  if (a < 0) unreadable("attribute '%s' of %s", name, objname);
  hid_t s = H5Aget_space(a), t = H5Aget_type(a);
  const hssize_t n = H5Sget_simple_extent_npoints(s);
  const H5T_class_t c = H5Tget_class(t);
  if (n > 0 && n < (1 << 20)) {
    if (c == H5T_INTEGER || c == H5T_FLOAT) {
      double *v = malloc((size_t)n * sizeof(double));
      if (!v || H5Aread(a, c == H5T_INTEGER ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE, v) < 0)
        unreadable("attribute '%s' of %s", name, objname);
      free(v);
    } else if (c == H5T_STRING && H5Tis_variable_str(t) > 0) {
      hid_t mt = str_type(t);
      char **v = calloc((size_t)n, sizeof(char *));
      if (!v || H5Aread(a, mt, v) < 0) unreadable("attribute '%s' of %s", name, objname);
      for (hssize_t i = 0; i < n; i++) H5free_memory(v[i]);
      free(v);
      H5Tclose(mt);
    }
  }
  H5Tclose(t);
  H5Sclose(s);
  H5Aclose(a);
  return 0;
}

/* The whole of a chunked numeric dataset, in slabs of whole chunk rows of about 1M elements (bounded memory). */
static void read_chunked(hid_t d, hid_t s, hid_t p, int integer, const char *name) {
  hsize_t dims[32], cdims[32];
  const int nd = H5Sget_simple_extent_ndims(s);
  if (nd < 1 || nd > 32) unreadable("dataset %s", name);
  H5Sget_simple_extent_dims(s, dims, NULL);
  hsize_t row = 1;
  for (int i = 1; i < nd; i++) row *= dims[i];
  hsize_t rows = row >= ((hsize_t)1 << 20) ? 1 : ((hsize_t)1 << 20) / row;
  if (H5Pget_chunk(p, 32, cdims) == nd && cdims[0] > 0) rows = (rows + cdims[0] - 1) / cdims[0] * cdims[0];
  if (rows > dims[0]) rows = dims[0];
  double *v = malloc((size_t)(rows * row) * sizeof(double));
  if (!v) unreadable("dataset %s", name);
  hsize_t start[32] = {0}, count[32];
  for (int i = 1; i < nd; i++) count[i] = dims[i];
  for (hsize_t r0 = 0; r0 < dims[0]; r0 += rows) {
    start[0] = r0;
    count[0] = rows < dims[0] - r0 ? rows : dims[0] - r0;
    const hsize_t m = count[0] * row;
    hid_t ms = H5Screate_simple(1, &m, NULL);
    if (H5Sselect_hyperslab(s, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
        H5Dread(d, integer ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE, ms, s, H5P_DEFAULT, v) < 0)
      unreadable("dataset %s", name);
    H5Sclose(ms);
  }
  free(v);
}

static void read_dataset(hid_t d, const char *name) {
  hid_t s = H5Dget_space(d), t = H5Dget_type(d), p = H5Dget_create_plist(d);
  const hssize_t n = H5Sget_simple_extent_npoints(s);
  const H5T_class_t c = H5Tget_class(t);
  H5Dget_storage_size(d);
  if (n > 0 && n < ((hssize_t)1 << 28)) {
    if (c == H5T_STRING && H5Tis_variable_str(t) > 0) {
      hid_t mt = str_type(t);
      char **v = calloc((size_t)n, sizeof(char *));
      hid_t dx = zt_h5_capped_string_xfer(); /* strings capped as the readers cap them */
      if (!v || H5Dread(d, mt, H5S_ALL, H5S_ALL, dx, v) < 0) unreadable("dataset %s", name);
      for (hssize_t i = 0; i < n; i++) free(v[i]);
      H5Pclose(dx);
      free(v);
      H5Tclose(mt);
    } else if ((c == H5T_INTEGER || c == H5T_FLOAT) && H5Pget_layout(p) == H5D_CHUNKED) {
      read_chunked(d, s, p, c == H5T_INTEGER, name);
    }
  }
  H5Pclose(p);
  H5Tclose(t);
  H5Sclose(s);
}

static herr_t visit(hid_t root, const char *name, const H5O_info_t *info, void *op) {
  (void)op;
  hid_t o = H5Oopen(root, name, H5P_DEFAULT);
  if (o < 0) unreadable("object %s", name);
  hsize_t idx = 0;
  if (H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_INC, &idx, read_attr, (void *)name) < 0)
    unreadable("the list of attributes of %s", name);
  if (info->type == H5O_TYPE_DATASET) read_dataset(o, name);
  H5Oclose(o);
  return 0;
}

void zt_h5_walk(const char *path) {
  zt_h5_child_note(path);
  zt_h5_child_forward_refusals(1); /* what it cannot read is damage the parent refuses at once */
  g_walk_file = path;
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) unreadable("the file's superblock");
  if (H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_INC, visit, NULL, H5O_INFO_BASIC) < 0) unreadable("the tree of objects");
  H5Fclose(f);
}

enum { k_child_refused = 3 }; /* the child's exit status when it sent the parent a refusal */

static void exit_quietly(int code) {
  (void)code;
  if (g_forward && g_refuse_fd >= 0) { /* "<what>\0<detail>": the parent refuses with these words */
    const char *what = zt_last_fatal_what(), *detail = zt_last_fatal_detail();
    char msg[8400];
    const size_t nw = strlen(what) + 1, nd = strlen(detail);
    if (nw + nd <= sizeof msg) {
      memcpy(msg, what, nw);
      memcpy(msg + nw, detail, nd);
      if (write(g_refuse_fd, msg, nw + nd) == (ssize_t)(nw + nd)) child_exit(k_child_refused);
    }
  }
  child_exit(0); /* a refusal in the child is no crash: the parent meets it again and reports it */
}

/* Bytes of path: a file's size, or the sum of a directory's files. */
static uint64_t bytes_of(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return 0;
  if (!S_ISDIR(st.st_mode)) return (uint64_t)st.st_size;
  uint64_t sum = 0;
  DIR *d = opendir(path);
  struct dirent *e;
  char p[8400];
  while (d && (e = readdir(d))) {
    snprintf(p, sizeof p, "%s/%s", path, e->d_name);
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) sum += (uint64_t)st.st_size;
  }
  if (d) closedir(d);
  return sum;
}

/* In the child: an address-space limit of what it has now plus budget bytes, so that an allocation HDF5 makes for
 * what damaged metadata claims (a variable-length string of up to 4 GiB, zeroed) fails there at once, and the
 * read with it, instead of taking the memory (the parent then never does that read). */
static void limit_memory(uint64_t budget) {
  g_budget_mb = budget >> 20;
  const long kb = zt_proc_status_kib("VmSize");
  struct rlimit r;
  if (kb <= 0 || getrlimit(RLIMIT_AS, &r) != 0) return;
  const rlim_t want = (rlim_t)(((uint64_t)kb << 10) + budget);
  if (r.rlim_cur == RLIM_INFINITY || want < r.rlim_cur) {
    r.rlim_cur = r.rlim_max != RLIM_INFINITY && want > r.rlim_max ? r.rlim_max : want;
    setrlimit(RLIMIT_AS, &r);
  }
}

void zt_h5_in_child(const char *path, void (*fn)(void *), void *arg) {
  zt_h5_init();
  /* the child's memory budget: ZT_CKPT_PROBE_MEMORY_MB, or 256 MiB and twice the bytes of what it reads (a string
   * HDF5 reads is at most the file's size, and its conversion holds it twice) */
  const char *mb = getenv("ZT_CKPT_PROBE_MEMORY_MB");
  uint64_t budget = ((uint64_t)256 << 20) + 2 * bytes_of(path);
  if (mb && *mb) {
    char *end;
    const unsigned long long v = strtoull(mb, &end, 10);
    zt_check(*end == '\0' && v >= 1 && v <= ((uint64_t)1 << 30) && mb[0] != '-', "checkpoint",
             "ZT_CKPT_PROBE_MEMORY_MB='%s': wants a whole number of MiB, 1 to 1073741824", mb);
    budget = (uint64_t)v << 20;
  }
  fflush(NULL);
  int pipefd[2]; /* the child holds the write end: its exit (or death) closes it, which wakes the parent */
  int refusefd[2]; /* a refusal the parent adopts (written once, under the pipe's capacity, before the exit) */
  zt_check(pipe(pipefd) == 0, "checkpoint", "%s: cannot create a pipe to check the file: %s", path, strerror(errno));
  if (pipe(refusefd) != 0) {
    close(pipefd[0]);
    close(pipefd[1]);
    zt_fatal("checkpoint", "%s: cannot create a pipe to check the file: %s", path, strerror(errno));
  }
  const pid_t pid = fork();
  if (pid < 0) { /* e.g. strict overcommit with a large process: read without the safety net, saying so */
    zt_warn("checkpoint %s: cannot fork to try the HDF5 reads in a child process first (%s); reading directly",
            path, strerror(errno));
    for (int i = 0; i < 2; i++) {
      close(pipefd[i]);
      close(refusefd[i]);
    }
    return;
  }
  if (pid == 0) {
    close(pipefd[0]);
    close(refusefd[0]);
    g_note_fd = pipefd[1];
    g_refuse_fd = refusefd[1];
    g_forward = 0; /* until fn turns it on (zt_h5_child_forward_refusals) */
    const int null = open("/dev/null", O_WRONLY); /* the parent prints what there is to say */
    if (null >= 0) {
      dup2(null, 1);
      dup2(null, 2);
    }
    zt_set_fatal_hook(exit_quietly);
    limit_memory(budget);
    fn(arg);
    child_exit(0);
  }
  close(pipefd[1]);
  close(refusefd[1]);
  const char *lim = getenv("ZT_CKPT_PROBE_TIMEOUT");
  const double limit = lim && *lim ? atof(lim) : 300.0;
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  char notes[8192] = "";
  size_t have = 0;
  int done = 0;
  for (;;) { /* the child's notes (the file it is on) until it exits and the pipe closes */
    clock_gettime(CLOCK_MONOTONIC, &now);
    const double left = limit - ((double)(now.tv_sec - t0.tv_sec) + 1e-9 * (double)(now.tv_nsec - t0.tv_nsec));
    struct pollfd pfd = {.fd = pipefd[0], .events = POLLIN};
    const int ready = left > 0 ? poll(&pfd, 1, (int)(left * 1000) + 1) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    if (have + 1 >= sizeof notes) have = 0; /* only the last note matters */
    const ssize_t k = read(pipefd[0], notes + have, sizeof notes - 1 - have);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      done = 1;
      break;
    }
    have += (size_t)k;
    notes[have] = '\0';
  }
  close(pipefd[0]);
  if (have && notes[have - 1] == '\n') notes[--have] = '\0';
  const char *last = strrchr(notes, '\n');
  const char *where = have ? (last ? last + 1 : notes) : path;
  int status = 0;
  if (!done) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    close(refusefd[0]);
    zt_fatal("checkpoint", "%s: reading its HDF5 structures did not finish in %g s (ZT_CKPT_PROBE_TIMEOUT): the "
             "file is corrupted; refusing to load it", where, limit);
  }
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  char refusal[8401];
  size_t got = 0;
  if (WIFEXITED(status) && WEXITSTATUS(status) == k_child_refused) /* the child has exited: its words are all in */
    while (got < sizeof refusal - 1) {
      const ssize_t k = read(refusefd[0], refusal + got, sizeof refusal - 1 - got);
      if (k > 0) got += (size_t)k;
      else if (k == 0 || errno != EINTR) break;
    }
  close(refusefd[0]);
  refusal[got] = '\0';
  const size_t nw = strnlen(refusal, got);
  if (nw < got) zt_fatal(refusal, "%s", refusal + nw + 1);
  zt_check(!WIFSIGNALED(status), "checkpoint", "%s: the HDF5 library crashed (signal %d) reading the file's internal "
           "structures: the file is corrupted (changed after its manifest was written, or the manifest rewritten); "
           "refusing to load it", where, WTERMSIG(status));
  zt_check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "checkpoint", "%s: the HDF5 library failed (exit status "
           "%d) reading the file's internal structures: the file is corrupted; refusing to load it", where,
           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void walk_one(void *path) { zt_h5_walk((const char *)path); }

void zt_h5_probe(const char *path) { zt_h5_in_child(path, walk_one, (void *)path); }

/* ---- global heap collections ---------------------------------------------------------------------- */

static const uint8_t k_gcol[8] = {'G', 'C', 'O', 'L', 1, 0, 0, 0}; /* signature, version 1, 3 reserved bytes */

static void heap_found(zt_h5_heap_scan *s, uint64_t at) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 16;
    s->found = realloc(s->found, (size_t)s->cap * sizeof(uint64_t));
    zt_check(s->found, "out of memory", "the global heap collections' offsets (%d)", s->cap);
  }
  s->found[s->n++] = at;
}

void zt_h5_heap_scan_bytes(zt_h5_heap_scan *s, const uint8_t *buf, size_t n) {
  uint8_t joint[14]; /* the kept tail (< 8 bytes before buf) and buf's first bytes: signatures across the edge */
  const size_t head = n < 7 ? n : 7, nj = s->ntail + head;
  memcpy(joint, s->tail, s->ntail);
  memcpy(joint + s->ntail, buf, head);
  for (size_t i = 0; i < s->ntail && i + 8 <= nj; i++)
    if (memcmp(joint + i, k_gcol, 8) == 0) heap_found(s, s->at - s->ntail + i);
  for (size_t j = 0; j + 8 <= n;) {
    const uint8_t *g = memmem(buf + j, n - j, k_gcol, 8);
    if (!g) break;
    j = (size_t)(g - buf);
    heap_found(s, s->at + j);
    j++;
  }
  const size_t keep = nj < 7 ? nj : 7; /* the last 7 bytes seen */
  memmove(s->tail, joint + nj - keep, keep);
  if (n > 7) memcpy(s->tail, buf + n - 7, 7);
  s->ntail = keep;
  s->at += n;
}

/* Reads n bytes at off; bytes past the end of the file read as zeros (as HDF5 1.10 reads them within the address
 * space the superblock allows). Returns 0 on a read error. */
static int read_at(int fd, uint64_t off, void *buf, size_t n) {
  memset(buf, 0, n);
  for (size_t got = 0; got < n;) {
    const ssize_t k = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
    if (k == 0) return 1;
    if (k < 0 && errno != EINTR) return 0;
    if (k > 0) got += (size_t)k;
  }
  return 1;
}

int zt_h5_heap_scan_check(zt_h5_heap_scan *s, const char *path, uint64_t file_bytes, char *why, size_t whyn) {
  const int fd = s->n ? open(path, O_RDONLY) : -1;
  uint8_t sb[16];
  /* the superblock (at byte 0 in the files zerotron writes) gives the size of lengths: byte 14 (version 0, 1)
   * or 10 (version 2, 3) */
  int len_size = 0, ok = 1;
  if (fd >= 0 && read_at(fd, 0, sb, sizeof sb) && memcmp(sb, "\211HDF\r\n\032\n", 8) == 0)
    len_size = sb[8] < 2 ? sb[14] : sb[10];
  for (int c = 0; ok && fd >= 0 && (len_size == 2 || len_size == 4 || len_size == 8) && c < s->n; c++) {
    const uint64_t at = s->found[c];
    uint8_t h[16];
    if (!read_at(fd, at + 8, h, (size_t)len_size)) break;
    uint64_t size = 0;
    for (int b = len_size - 1; b >= 0; b--) size = size << 8 | h[b];
    const uint64_t hdr = (8 + (uint64_t)len_size + 7) / 8 * 8, objhdr = 8 + (uint64_t)len_size;
    if (size > file_bytes - at) {
      snprintf(why, whyn, "the global heap collection at byte %llu claims %llu bytes, past the end of the file (%llu "
               "bytes)", (unsigned long long)at, (unsigned long long)size, (unsigned long long)file_bytes);
      ok = 0;
    }
    /* HDF5 1.10's decoding of the collection's objects (H5HG__cache_heap_deserialize): a free-space object (index
     * 0) of 0 bytes never advances (HDF5 loops forever), and an object past the collection's end makes it read
     * out of bounds */
    for (uint64_t p = hdr; ok && p < size && p + objhdr <= size;) {
      if (!read_at(fd, at + p, h, (size_t)objhdr)) break;
      const unsigned idx = (unsigned)h[0] | (unsigned)h[1] << 8;
      uint64_t osize = 0;
      for (int b = len_size - 1; b >= 0; b--) osize = osize << 8 | h[8 + b];
      const uint64_t need = idx == 0 ? osize : osize > size ? UINT64_MAX : objhdr + (osize + 7) / 8 * 8;
      if (need == 0 || need > size - p) {
        snprintf(why, whyn, "the global heap collection at byte %llu (%llu bytes) holds %s at byte %llu",
                 (unsigned long long)at, (unsigned long long)size,
                 need == 0 ? "a free-space object of 0 bytes (HDF5 1.10 would decode it forever)"
                           : "an object running past the collection's end",
                 (unsigned long long)(at + p));
        ok = 0;
      }
      p += need;
    }
  }
  if (fd >= 0) close(fd);
  free(s->found);
  memset(s, 0, sizeof *s);
  return ok;
}
