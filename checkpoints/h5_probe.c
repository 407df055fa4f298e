/* Checkpoint files' HDF5 structures read in a child process before the reader trusts them (see h5io.h,
 * zt_h5_in_child): the HDF5 library (1.10) reads out of bounds, crashes or spins on some damaged object headers,
 * heaps and B-trees, and a file whose manifest was rewritten after the damage passes every checksum. The child
 * does the reader's own metadata reads (ckpt_reader.c) and walks every object, attribute and string dataset and
 * the whole of every chunked dataset (zt_h5_walk); a child that dies (a signal, or a sanitizer's exit) or runs
 * past the time limit makes the file refused with its name. A refusal in the child is left to the parent. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "checkpoints/h5io.h"
#include "runtime/base/error.h"

static int g_note_fd = -1; /* in a child of zt_h5_in_child: the pipe to the parent */

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

/* Reads attribute `name` of obj whatever it holds (numbers as int64/double, strings as variable-length ones). */
static herr_t read_attr(hid_t obj, const char *name, const H5A_info_t *info, void *op) {
  (void)info;
  (void)op;
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  if (a < 0) return 0;
  hid_t s = H5Aget_space(a), t = H5Aget_type(a);
  const hssize_t n = H5Sget_simple_extent_npoints(s);
  const H5T_class_t c = H5Tget_class(t);
  if (n > 0 && n < (1 << 20)) {
    if (c == H5T_INTEGER || c == H5T_FLOAT) {
      double *v = malloc((size_t)n * sizeof(double));
      H5Aread(a, c == H5T_INTEGER ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE, v);
      free(v);
    } else if (c == H5T_STRING && H5Tis_variable_str(t) > 0) {
      hid_t mt = str_type(t);
      char **v = calloc((size_t)n, sizeof(char *));
      if (H5Aread(a, mt, v) >= 0)
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

static void read_dataset(hid_t d) {
  hid_t s = H5Dget_space(d), t = H5Dget_type(d), p = H5Dget_create_plist(d);
  const hssize_t n = H5Sget_simple_extent_npoints(s);
  const H5T_class_t c = H5Tget_class(t);
  H5Dget_storage_size(d);
  if (n > 0 && n < ((hssize_t)1 << 28)) {
    if (c == H5T_STRING && H5Tis_variable_str(t) > 0) {
      hid_t mt = str_type(t);
      char **v = calloc((size_t)n, sizeof(char *));
      hid_t dx = zt_h5_capped_string_xfer(); /* strings capped as the readers cap them */
      if (v && H5Dread(d, mt, H5S_ALL, H5S_ALL, dx, v) >= 0)
        for (hssize_t i = 0; i < n; i++) free(v[i]);
      H5Pclose(dx);
      free(v);
      H5Tclose(mt);
    } else if ((c == H5T_INTEGER || c == H5T_FLOAT) && H5Pget_layout(p) == H5D_CHUNKED) {
      double *v = malloc((size_t)n * sizeof(double));
      if (v) H5Dread(d, c == H5T_INTEGER ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
      free(v);
    }
  }
  H5Pclose(p);
  H5Tclose(t);
  H5Sclose(s);
}

static herr_t visit(hid_t root, const char *name, const H5O_info_t *info, void *op) {
  (void)op;
  hid_t o = H5Oopen(root, name, H5P_DEFAULT);
  if (o < 0) return 0;
  hsize_t idx = 0;
  H5Aiterate2(o, H5_INDEX_NAME, H5_ITER_INC, &idx, read_attr, NULL);
  if (info->type == H5O_TYPE_DATASET) read_dataset(o);
  H5Oclose(o);
  return 0;
}

void zt_h5_walk(const char *path) {
  zt_h5_child_note(path);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f >= 0) {
    H5Ovisit2(f, H5_INDEX_NAME, H5_ITER_INC, visit, NULL, H5O_INFO_BASIC);
    H5Fclose(f);
  }
}

static void exit_quietly(int code) {
  (void)code;
  _exit(0); /* a refusal in the child is no crash: the parent meets it again and reports it */
}

void zt_h5_in_child(const char *path, void (*fn)(void *), void *arg) {
  zt_h5_init();
  fflush(NULL);
  int pipefd[2]; /* the child holds the write end: its exit (or death) closes it, which wakes the parent */
  zt_check(pipe(pipefd) == 0, "checkpoint", "%s: cannot create a pipe to check the file: %s", path, strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) { /* e.g. strict overcommit with a large process: read without the safety net, saying so */
    zt_warn("checkpoint %s: cannot fork to try the HDF5 reads in a child process first (%s); reading directly",
            path, strerror(errno));
    close(pipefd[0]);
    close(pipefd[1]);
    return;
  }
  if (pid == 0) {
    close(pipefd[0]);
    g_note_fd = pipefd[1];
    const int null = open("/dev/null", O_WRONLY); /* the parent prints what there is to say */
    if (null >= 0) {
      dup2(null, 1);
      dup2(null, 2);
    }
    zt_set_fatal_hook(exit_quietly);
    fn(arg);
    _exit(0); /* no atexit handlers: the parent's (MPI, HDF5) are not the child's to run */
  }
  close(pipefd[1]);
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
    zt_fatal("checkpoint", "%s: reading its HDF5 structures did not finish in %g s (ZT_CKPT_PROBE_TIMEOUT): the "
             "file is corrupted; refusing to load it", where, limit);
  }
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  zt_check(!WIFSIGNALED(status), "checkpoint", "%s: the HDF5 library crashed (signal %d) reading the file's internal "
           "structures: the file is corrupted (changed after its manifest was written, or the manifest rewritten); "
           "refusing to load it", where, WTERMSIG(status));
  zt_check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "checkpoint", "%s: the HDF5 library failed (exit status "
           "%d) reading the file's internal structures: the file is corrupted; refusing to load it", where,
           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void walk_one(void *path) { zt_h5_walk((const char *)path); }

void zt_h5_probe(const char *path) { zt_h5_in_child(path, walk_one, (void *)path); }
