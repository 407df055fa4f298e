/* Driver for the comms_logger tests (check_commslog.py judges its output).
 *   test_commslog unit            : no MPI; synthetic records with n = 4, verbose lines and the summary table.
 *   test_commslog mpi all|filter|off : under mpirun; known collectives with known sizes and counts on the
 *     world group, then the summary. all: prof_all + verbose; filter: prof_all false, prof_ops [all_reduce],
 *     verbose; off: logger disabled. Every rank checks its own record counts and that latencies are positive. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/error.h"
#include "runtime/comm/comm.h"
#include "runtime/comm/comms_logger.h"

static void expect_count(const char *op, size_t size, long want) {
  double total = 0;
  long got = zt_comms_logger_count(op, size, &total);
  zt_check(got == want, "test_commslog", "rank %d: %s of %zu bytes recorded %ld times, expected %ld", zt_comm_rank(),
           op, size, got, want);
  zt_check(want == 0 || total > 0, "test_commslog", "rank %d: %s of %zu bytes: total latency %g ms, expected > 0",
           zt_comm_rank(), op, size, total);
}

static int run_unit(void) {
  zt_comms_logger_config c = {.enabled = true, .verbose = true, .prof_all = true};
  zt_comms_logger_configure(&c);
  /* fixed (op, size, latency ms) triples; the oracle recomputes every number from them */
  struct { const char *op; size_t size; double ms; } recs[] = {
    {"all_reduce", 4096, 1.0}, {"broadcast", 1536, 0.5}, {"all_reduce", 4096, 2.0}, {"all_reduce", 1024, 0.25},
    {"all_gather", 1234567, 3.5}, {"barrier", 0, 0.125}, {"all_reduce", 4096, 3.0}, {"reduce_scatter", 1048576, 1.75},
    {"send", 400, 0.01}, {"recv", 3u << 30, 700.0}, {"all_reduce", 4096, 40.0}, {"all_to_all_single", 65536, 0.5},
    {"all_to_all_single", 65536, 1.5},
  };
  for (size_t i = 0; i < sizeof recs / sizeof recs[0]; i++) zt_comms_logger_record(recs[i].op, recs[i].size,
                                                                                     recs[i].ms, 4);
  zt_comms_logger_log_summary();
  c.prof_all = false;
  c.n_prof_ops = 1;
  strcpy(c.prof_ops[0], "send");
  zt_comms_logger_configure(&c);
  zt_check(!zt_comms_logger_wants("all_reduce") && zt_comms_logger_wants("send"), "test_commslog", "prof_ops filter");
  c.enabled = false;
  zt_comms_logger_configure(&c);
  zt_check(!zt_comms_logger_wants("send") && !zt_comms_logger_on, "test_commslog", "disabled logger wants an op");
  return 0;
}

static int run_mpi(const char *mode) {
  zt_comms_logger_config c = {.enabled = true, .verbose = true, .prof_all = true};
  if (strcmp(mode, "filter") == 0) {
    c.prof_all = false;
    c.n_prof_ops = 1;
    strcpy(c.prof_ops[0], "all_reduce");
  } else if (strcmp(mode, "off") == 0) {
    c.enabled = false;
  } else {
    zt_check(strcmp(mode, "all") == 0, "test_commslog", "mode %s: expected all, filter or off", mode);
  }
  zt_comms_logger_configure(&c);
  const zt_group *w = zt_comm_world();
  int p = zt_comm_size(), r = zt_comm_rank();
  float *f = calloc(1 << 20, sizeof(float)), *g = calloc(1 << 20, sizeof(float));
  double *d = calloc(1 << 18, sizeof(double));
  for (int i = 0; i < 3; i++) zt_allreduce_sum_f32(w, f, 1024);       /* 4096 B */
  for (int i = 0; i < 2; i++) zt_allreduce_sum_f64(w, d, 1 << 18);    /* 2 MiB */
  for (int i = 0; i < 4; i++) zt_allgather_f32(w, f, 256, g);         /* 1 KiB per rank */
  for (int i = 0; i < 2; i++) zt_reduce_scatter_sum_f32(w, f, 256, g); /* 1 KiB * p input */
  for (int i = 0; i < 3; i++) zt_alltoall(w, ZT_DTYPE_FP32, f, 256, g); /* 1 KiB * p input */
  for (int i = 0; i < 5; i++) zt_broadcast(w, f, 1536, 0);
  for (int i = 0; i < 2; i++) {                                      /* ping-pong of 400 B between ranks 0, 1 */
    if (r == 0) { zt_send_f32(w, f, 100, 1); zt_recv_f32(w, f, 100, 1); }
    if (r == 1) { zt_recv_f32(w, f, 100, 0); zt_send_f32(w, f, 100, 0); }
  }
  for (int i = 0; i < 3; i++) zt_barrier(w);
  int on = c.enabled, all = on && c.prof_all;
  expect_count("all_reduce", 4096, on ? 3 : 0);
  expect_count("all_reduce", 2097152, on ? 2 : 0);
  expect_count("all_gather", 1024, all ? 4 : 0);
  expect_count("reduce_scatter", 1024 * (size_t)p, all ? 2 : 0);
  expect_count("all_to_all_single", 1024 * (size_t)p, all ? 3 : 0);
  expect_count("broadcast", 1536, all ? 5 : 0);
  expect_count("send", 400, all && r < 2 ? 2 : 0);
  expect_count("recv", 400, all && r < 2 ? 2 : 0);
  expect_count("barrier", 0, all ? 3 : 0);
  zt_comms_logger_log_summary();
  free(f);
  free(g);
  free(d);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "unit") == 0) return run_unit();
  zt_check(argc >= 3 && strcmp(argv[1], "mpi") == 0, "test_commslog", "usage: test_commslog unit | mpi all|filter|off");
  zt_comm_init(&argc, &argv);
  int rc = run_mpi(argv[2]);
  zt_comm_finalize();
  return rc;
}
