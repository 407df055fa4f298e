/* zt_report: the environment report of a zerotron build, after DeepSpeed's ds_report. It prints which features
 * are compiled in and whether each is usable on this machine ([OKAY], [NO], [WARNING] with the reason), the
 * build options (CMake options, compilers, flags, build type), the library versions the build saw and the ones
 * loaded now (CUDA driver/runtime, NCCL, MPI, HDF5, libaio, OpenBLAS and its kernel, glibc), the GPUs and the
 * CPU. Every CUDA call may fail (no driver, no device): the failure is the report, never a crash. */
#define _GNU_SOURCE
#include <cblas.h>
#include <ctype.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <hdf5.h>
#include <libaio.h>
#include <limits.h>
#include <link.h>
#include <mpi.h>
#include <omp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "zt_report_build.h"
#if defined(ZT_HAVE_CUDA)
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#endif
#if defined(ZT_REPORT_NCCL)
#include <nccl.h>
#endif
#if __has_include(<openblas_config.h>)
#include <openblas_config.h>
#endif
#ifndef OPENBLAS_VERSION
#define OPENBLAS_VERSION "unknown (no openblas_config.h)"
#endif

#define DOTS 34

static int g_color;

static const char *tag_color(const char *tag) {
  if (!g_color) return "";
  if (!strcmp(tag, "[OKAY]") || !strcmp(tag, "[YES]")) return "\033[92m";
  if (!strcmp(tag, "[WARNING]")) return "\033[93m";
  return "\033[91m"; /* [NO] */
}

/* name ........ value (ds_report's layout) */
static void row(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void row(const char *name, const char *fmt, ...) {
  int n = (int)strlen(name);
  printf("%s ", name);
  for (int i = n; i < DOTS; i++) putchar('.');
  putchar(' ');
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
}

static void rule(void) { puts("--------------------------------------------------------------------------------"); }

/* feature ..... [YES] ..... [OKAY] reason */
static void feature(const char *name, int compiled, const char *verdict, const char *why) {
  int n = (int)strlen(name);
  const char *c = compiled ? "[YES]" : "[NO]";
  printf("%s ", name);
  for (int i = n; i < 18; i++) putchar('.');
  printf(" %s%s%s ", tag_color(c), c, g_color ? "\033[0m" : "");
  for (int i = (int)strlen(c); i < 12; i++) putchar('.');
  printf(" %s%s%s%s%s\n", tag_color(verdict), verdict, g_color ? "\033[0m" : "", why && *why ? " " : "", why ? why : "");
}

/* ---- facts about the running process ----------------------------------------------------------------------- */

typedef struct {
  const char *needle;
  char path[PATH_MAX];
} lib_probe;

static int find_lib_cb(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  lib_probe *p = data;
  const char *base = strrchr(info->dlpi_name, '/');
  base = base ? base + 1 : info->dlpi_name;
  if (!p->path[0] && strstr(base, p->needle)) {
    if (!realpath(info->dlpi_name, p->path)) snprintf(p->path, sizeof p->path, "%s", info->dlpi_name);
  }
  return 0;
}

/* The resolved file of the loaded shared library whose name contains needle ("" when none is loaded). */
static const char *loaded_lib(const char *needle, char *buf, size_t len) {
  lib_probe p = {.needle = needle, .path = ""};
  dl_iterate_phdr(find_lib_cb, &p);
  snprintf(buf, len, "%s", p.path);
  return buf;
}

/* The value of "key : value" in a /proc-style file (first match), trimmed; 0 when absent. */
static int proc_field(const char *file, const char *key, char *out, size_t len) {
  FILE *f = fopen(file, "r");
  if (!f) return 0;
  char line[1024];
  int found = 0;
  size_t kl = strlen(key);
  while (!found && fgets(line, sizeof line, f)) {
    if (strncmp(line, key, kl) || (line[kl] != ' ' && line[kl] != '\t' && line[kl] != ':' && line[kl] != '='))
      continue;
    char *v = line + kl;
    while (*v == ' ' || *v == '\t' || *v == ':' || *v == '=' || *v == '"') v++;
    size_t vl = strlen(v);
    while (vl && (v[vl - 1] == '\n' || v[vl - 1] == ' ' || v[vl - 1] == '"')) v[--vl] = 0;
    snprintf(out, len, "%s", v);
    found = 1;
  }
  fclose(f);
  return found;
}

static long read_long(const char *file) {
  FILE *f = fopen(file, "r");
  long v = -1;
  if (f) {
    if (fscanf(f, "%ld", &v) != 1) v = -1;
    fclose(f);
  }
  return v;
}

/* Physical cores: distinct (physical id, core id) pairs of /proc/cpuinfo; 0 when the file does not say. */
static int physical_cores(void) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return 0;
  int seen[1024][2], n = 0, phys = 0;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    int v;
    if (sscanf(line, "physical id : %d", &v) == 1) phys = v;
    if (sscanf(line, "core id : %d", &v) == 1) {
      int dup = 0;
      for (int i = 0; i < n; i++) dup |= seen[i][0] == phys && seen[i][1] == v;
      if (!dup && n < 1024) seen[n][0] = phys, seen[n][1] = v, n++;
    }
  }
  fclose(f);
  return n;
}

static int has_cpu_flag(const char *flag) {
  char flags[8192];
  if (!proc_field("/proc/cpuinfo", "flags", flags, sizeof flags)) return 0;
  size_t fl = strlen(flag);
  for (char *p = flags; (p = strstr(p, flag)); p += fl)
    if ((p == flags || p[-1] == ' ') && (p[fl] == ' ' || p[fl] == 0)) return 1;
  return 0;
}

static const char *or_none(const char *s) { return s && *s ? s : "(none)"; }

/* ---- the report ---------------------------------------------------------------------------------------------- */

typedef struct {
  int cuda_devices;    /* usable CUDA devices; -1 without CUDA */
  char cuda_why[256];  /* why none, when none */
  int cuda_driver, cuda_runtime;
} cuda_state;

static void probe_cuda(cuda_state *s) {
  s->cuda_devices = -1;
  s->cuda_why[0] = 0;
  s->cuda_driver = s->cuda_runtime = 0;
#if defined(ZT_HAVE_CUDA)
  cudaError_t e = cudaDriverGetVersion(&s->cuda_driver);
  if (e != cudaSuccess) s->cuda_driver = 0;
  if (cudaRuntimeGetVersion(&s->cuda_runtime) != cudaSuccess) s->cuda_runtime = 0;
  int n = 0;
  e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    snprintf(s->cuda_why, sizeof s->cuda_why, "%scudaGetDeviceCount: %s",
             s->cuda_driver ? "" : "no CUDA driver (libcuda.so.1): ", cudaGetErrorString(e));
    cudaGetLastError();
    n = 0;
  } else if (n == 0) {
    snprintf(s->cuda_why, sizeof s->cuda_why, "cudaGetDeviceCount found no device");
  }
  s->cuda_devices = n;
#endif
}

static void cuda_version_str(int v, char *buf, size_t len) {
  if (v <= 0) snprintf(buf, len, "none (no CUDA driver)");
  else snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
}

static void report_features(const cuda_state *cs) {
  char why[512];
  rule();
  puts("zerotron feature report: compiled into this build, and usable on this machine");
  rule();
  printf("feature .......... compiled in . usable here\n");
  rule();
  /* CUDA */
  if (cs->cuda_devices < 0)
    feature("CUDA", 0, "[NO]",
            strcmp(ZTB_OPT_ENABLE_CUDA, "OFF") ? "nvcc was not found at configure time" : "built with -DZT_ENABLE_CUDA=OFF");
  else if (cs->cuda_devices == 0)
    feature("CUDA", 1, "[NO]", cs->cuda_why);
  else if (cs->cuda_driver < cs->cuda_runtime) {
    char d[32], r[32];
    cuda_version_str(cs->cuda_driver, d, sizeof d);
    cuda_version_str(cs->cuda_runtime, r, sizeof r);
    snprintf(why, sizeof why, "the driver supports CUDA %s, older than the runtime's %s", d, r);
    feature("CUDA", 1, "[WARNING]", why);
  } else {
    snprintf(why, sizeof why, "%d device%s", cs->cuda_devices, cs->cuda_devices == 1 ? "" : "s");
    feature("CUDA", 1, "[OKAY]", why);
  }
  /* NCCL */
#if defined(ZT_REPORT_NCCL)
  if (cs->cuda_devices > 0) feature("NCCL", 1, "[OKAY]", "collectives on device buffers");
  else feature("NCCL", 1, "[NO]", "needs a CUDA device");
#else
  feature("NCCL", 0, "[NO]", cs->cuda_devices < 0 ? "needs the CUDA backend" : "nccl.h / libnccl not found at configure time");
#endif
  feature("cuDNN", 0, "[NO]", "not used by zerotron: attention is its own kernel (runtime/ops/cuda/attention.cu)");
  /* MPI: the library's major version must be the one the build's mpi.h declared */
  {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    MPI_Get_library_version(lib, &len);
#if defined(OMPI_MAJOR_VERSION)
    char want[32];
    snprintf(want, sizeof want, "Open MPI v%d.", OMPI_MAJOR_VERSION);
    if (strstr(lib, want)) feature("MPI", 1, "[OKAY]", "library matches the build's mpi.h");
    else {
      snprintf(why, sizeof why, "the build's mpi.h is Open MPI %d.%d.%d, the library says: %.80s", OMPI_MAJOR_VERSION,
               OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION, lib);
      feature("MPI", 1, "[WARNING]", why);
    }
#else
    feature("MPI", 1, len > 0 ? "[OKAY]" : "[WARNING]", len > 0 ? "" : "MPI_Get_library_version returned nothing");
#endif
  }
  /* HDF5 */
  {
    unsigned maj = 0, min = 0, rel = 0;
    H5get_libversion(&maj, &min, &rel);
    if (maj == H5_VERS_MAJOR && min == H5_VERS_MINOR) feature("HDF5", 1, "[OKAY]", "");
    else {
      snprintf(why, sizeof why, "built against %d.%d.%d, running %u.%u.%u", H5_VERS_MAJOR, H5_VERS_MINOR,
               H5_VERS_RELEASE, maj, min, rel);
      feature("HDF5", 1, "[WARNING]", why);
    }
  }
  /* libaio: can this process get an AIO context (fails when /proc/sys/fs/aio-max-nr is exhausted)? */
  {
    io_context_t ctx = 0;
    int rc = io_setup(1, &ctx);
    if (rc == 0) {
      io_destroy(ctx);
      feature("libaio", 1, "[OKAY]", "io_setup works");
    } else {
      snprintf(why, sizeof why, "io_setup: %s (fs.aio-nr %ld of fs.aio-max-nr %ld)", strerror(-rc),
               read_long("/proc/sys/fs/aio-nr"), read_long("/proc/sys/fs/aio-max-nr"));
      feature("libaio", 1, "[NO]", why);
    }
  }
  /* OpenMP */
  snprintf(why, sizeof why, "%d threads (omp_get_max_threads)", omp_get_max_threads());
  feature("OpenMP", 1, "[OKAY]", why);
  /* OpenBLAS: its threading must be OpenMP's, or it spins its own threads against ours */
  {
    int par = openblas_get_parallel();
    if (par == 2) feature("OpenBLAS", 1, "[OKAY]", "OpenMP build (shares the OpenMP thread pool)");
    else if (par == 1)
      feature("OpenBLAS", 1, "[WARNING]",
              "pthread build: its threads compete with OpenMP's (apt-get install libopenblas-openmp-dev)");
    else feature("OpenBLAS", 1, "[WARNING]", "sequential build: one thread per GEMM");
  }
  rule();
}

static void report_build(void) {
  puts("build (what CMake configured)");
  rule();
  row("zerotron version", "%s", ZTB_VERSION);
  row("build directory", "%s", ZTB_BUILD_DIR);
  row("source directory", "%s", ZTB_SOURCE_DIR);
  row("CMAKE_BUILD_TYPE", "%s", ZTB_BUILD_TYPE);
  row("cmake", "%s", ZTB_CMAKE_VERSION);
  row("C compiler", "%s", ZTB_C_COMPILER);
  row("C flags", "%s", or_none(ZTB_C_FLAGS));
  row("C++ compiler", "%s", ZTB_CXX_COMPILER);
  row("ZT_ENABLE_CUDA", "%s", ZTB_OPT_ENABLE_CUDA);
  row("ZT_FUZZ", "%s", or_none(ZTB_OPT_FUZZ));
  row("CUDA backend compiled", "%s", ZTB_HAVE_CUDA);
  row("NCCL backend compiled", "%s", ZTB_HAVE_NCCL);
  if (!strcmp(ZTB_HAVE_CUDA, "ON")) {
    row("nvcc", "%s %s", ZTB_CUDA_COMPILER, ZTB_CUDA_COMPILER_VERSION);
    row("CMAKE_CUDA_ARCHITECTURES", "%s", ZTB_CUDA_ARCHITECTURES);
    row("CUDA flags", "%s", or_none(ZTB_CUDA_FLAGS));
  }
  if (strstr(ZTB_C_FLAGS, "-march=native"))
    row("note", "-march=native: these binaries use this build machine's instruction set");
  rule();
}

static void report_versions(const cuda_state *cs) {
  char buf[PATH_MAX], buf2[256];
  puts("versions (at build time | at run time)");
  rule();
  row("glibc", "%d.%d | %s", __GLIBC__, __GLIBC_MINOR__, gnu_get_libc_version());
  {
    const char *cfg = openblas_get_config();
    char ver[64];
    snprintf(ver, sizeof ver, "%s", OPENBLAS_VERSION);
    char *v = ver;
    while (*v == ' ') v++;
    for (size_t n = strlen(v); n && v[n - 1] == ' ';) v[--n] = 0;
    row("OpenBLAS", "%s | %s", v, cfg ? cfg : "?");
    row("OpenBLAS core (kernel)", "%s", openblas_get_corename());
    int par = openblas_get_parallel();
    row("OpenBLAS threading", "%s, %d threads", par == 2 ? "OpenMP" : par == 1 ? "pthreads" : "sequential",
        openblas_get_num_threads());
    row("OpenBLAS library", "%s | %s", or_none(ZTB_OPENBLAS_LIB), or_none(loaded_lib("libopenblas", buf, sizeof buf)));
  }
  row("OpenMP", "%d (_OPENMP) / %s | %d procs", _OPENMP, or_none(ZTB_OPENMP_VERSION), omp_get_num_procs());
  {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0, v = 0, sv = 0;
    MPI_Get_library_version(lib, &len);
    MPI_Get_version(&v, &sv);
    char *nl = strpbrk(lib, "\n\r");
    if (nl) *nl = 0;
    char *pkg = strstr(lib, ", package:"); /* Open MPI's string goes on with the packager and the repository */
    if (pkg) *pkg = 0;
#if defined(OMPI_MAJOR_VERSION)
    row("MPI", "Open MPI %d.%d.%d, MPI %d.%d | %s, MPI %d.%d", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
        OMPI_RELEASE_VERSION, MPI_VERSION, MPI_SUBVERSION, lib, v, sv);
#else
    row("MPI", "MPI %d.%d | %s, MPI %d.%d", MPI_VERSION, MPI_SUBVERSION, lib, v, sv);
#endif
    row("MPI library", "%s | %s", or_none(ZTB_MPI_LIB), or_none(loaded_lib("libmpi", buf, sizeof buf)));
  }
  {
    unsigned maj = 0, min = 0, rel = 0;
    H5get_libversion(&maj, &min, &rel);
    row("HDF5", "%d.%d.%d | %u.%u.%u", H5_VERS_MAJOR, H5_VERS_MINOR, H5_VERS_RELEASE, maj, min, rel);
    row("HDF5 library", "%s | %s", or_none(ZTB_HDF5_LIB), or_none(loaded_lib("libhdf5", buf, sizeof buf)));
  }
  row("libaio (no version call; file)", "%s | %s", or_none(ZTB_AIO_LIB), or_none(loaded_lib("libaio", buf, sizeof buf)));
  row("cJSON", "%d.%d.%d | %s", CJSON_VERSION_MAJOR, CJSON_VERSION_MINOR, CJSON_VERSION_PATCH, cJSON_Version());
  row("SentencePiece library", "%s | (not loaded by zt_report)", or_none(ZTB_SPM_LIB));
#if defined(ZT_HAVE_CUDA)
  cuda_version_str(CUDART_VERSION, buf2, sizeof buf2);
  char rt[32], drv[32];
  cuda_version_str(cs->cuda_runtime, rt, sizeof rt);
  cuda_version_str(cs->cuda_driver, drv, sizeof drv);
  row("CUDA runtime", "%s | %s", buf2, rt);
  row("CUDA driver (supports CUDA)", "- | %s", drv);
  size_t lt = cublasLtGetVersion(); /* major * 10000 + minor * 100 + patch, as CUBLAS_VERSION */
  row("cuBLASLt", "%d.%d.%d | %zu.%zu.%zu", CUBLAS_VERSION / 10000, CUBLAS_VERSION / 100 % 100, CUBLAS_VERSION % 100,
      lt / 10000, lt / 100 % 100, lt % 100);
#else
  (void)cs;
  (void)buf2;
  row("CUDA runtime / driver", "not compiled in");
#endif
#if defined(ZT_REPORT_NCCL)
  {
    int nv = 0;
    ncclResult_t r = ncclGetVersion(&nv);
    int maj = nv >= 10000 ? nv / 10000 : nv / 1000, min = nv >= 10000 ? (nv % 10000) / 100 : (nv % 1000) / 100,
        pat = nv % 100;
    if (r == ncclSuccess)
      row("NCCL", "%d.%d.%d | %d.%d.%d", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, maj, min, pat);
    else row("NCCL", "%d.%d.%d | ncclGetVersion: %s", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, ncclGetErrorString(r));
    row("NCCL library", "%s | %s", or_none(ZTB_NCCL_LIB), or_none(loaded_lib("libnccl", buf, sizeof buf)));
  }
#else
  row("NCCL", "not compiled in");
#endif
  rule();
}

#if defined(ZT_HAVE_CUDA)
/* Whether the build's CMAKE_CUDA_ARCHITECTURES ("80;90", "80-real;90", "native", "all") can run on sm_<cc>. */
static const char *arch_verdict(int cc, char *why, size_t len) {
  const char *a = ZTB_CUDA_ARCHITECTURES;
  if (!strcmp(a, "native") || !strcmp(a, "all") || !strcmp(a, "all-major")) {
    snprintf(why, len, "built for %s", a);
    return "[OKAY]";
  }
  int exact = 0, ptx_below = 0;
  for (const char *p = a; *p;) {
    while (*p && !isdigit((unsigned char)*p)) p++;
    if (!*p) break;
    int v = (int)strtol(p, (char **)&p, 10);
    int real_only = !strncmp(p, "-real", 5);
    while (*p && *p != ';') p++;
    if (v == cc) exact = 1;
    else if (v < cc && !real_only) ptx_below = 1;
  }
  if (exact) snprintf(why, len, "built for sm_%d", cc);
  else if (ptx_below) snprintf(why, len, "no sm_%d binary in %s: the PTX is compiled at load time (slow first start)", cc, a);
  else snprintf(why, len, "CMAKE_CUDA_ARCHITECTURES=%s has nothing that runs on sm_%d", a, cc);
  return exact ? "[OKAY]" : ptx_below ? "[WARNING]" : "[NO]";
}
#endif

static void report_gpus(const cuda_state *cs) {
  puts("GPUs");
  rule();
  if (cs->cuda_devices < 0) {
    row("GPUs", "none (CUDA is not compiled into this build)");
    rule();
    return;
  }
  if (cs->cuda_devices == 0) {
    row("GPUs", "none (%s)", cs->cuda_why);
    rule();
    return;
  }
#if defined(ZT_HAVE_CUDA)
  for (int d = 0; d < cs->cuda_devices; d++) {
    struct cudaDeviceProp p;
    char name[32], why[256];
    snprintf(name, sizeof name, "GPU %d", d);
    cudaError_t e = cudaGetDeviceProperties(&p, d);
    if (e != cudaSuccess) {
      row(name, "cudaGetDeviceProperties: %s", cudaGetErrorString(e));
      cudaGetLastError();
      continue;
    }
    const char *v = arch_verdict(p.major * 10 + p.minor, why, sizeof why);
    row(name, "%s, %.1f GiB, compute capability %d.%d, %d SMs %s%s%s %s", p.name, p.totalGlobalMem / 1073741824.0,
        p.major, p.minor, p.multiProcessorCount, tag_color(v), v, g_color ? "\033[0m" : "", why);
  }
#endif
  rule();
}

static void report_system(void) {
  char buf[1024];
  puts("system");
  rule();
  if (!proc_field("/proc/cpuinfo", "model name", buf, sizeof buf) &&
      !proc_field("/proc/cpuinfo", "Model", buf, sizeof buf) && !proc_field("/proc/cpuinfo", "CPU part", buf, sizeof buf))
    snprintf(buf, sizeof buf, "unknown (/proc/cpuinfo has no model name)");
  row("CPU model", "%s", buf);
  cpu_set_t set;
  int affinity = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
  int phys = physical_cores();
  if (phys > 0)
    row("CPU cores", "%ld logical online, %d physical, %d usable by this process", sysconf(_SC_NPROCESSORS_ONLN), phys,
        affinity);
  else row("CPU cores", "%ld logical online, %d usable by this process", sysconf(_SC_NPROCESSORS_ONLN), affinity);
  static const char *const isa[] = {"avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile", "asimd", "sve"};
  char flags[256] = "";
  for (size_t i = 0; i < sizeof isa / sizeof *isa; i++)
    if (has_cpu_flag(isa[i])) {
      strcat(flags, flags[0] ? " " : "");
      strcat(flags, isa[i]);
    }
  row("CPU vector extensions", "%s", or_none(flags));
  if (proc_field("/proc/meminfo", "MemTotal", buf, sizeof buf)) row("memory", "%.1f GiB", atof(buf) / 1048576.0);
  struct statvfs sv;
  if (statvfs("/dev/shm", &sv) == 0)
    row("shared memory (/dev/shm)", "%.2f GiB", (double)sv.f_frsize * sv.f_blocks / 1073741824.0);
  struct utsname u;
  if (uname(&u) == 0) row("kernel", "%s %s %s", u.sysname, u.release, u.machine);
  if (proc_field("/etc/os-release", "PRETTY_NAME", buf, sizeof buf)) row("operating system", "%s", buf);
  static const char *const env[] = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "OMPI_COMM_WORLD_SIZE"};
  for (size_t i = 0; i < sizeof env / sizeof *env; i++) row(env[i], "%s", getenv(env[i]) ? getenv(env[i]) : "(unset)");
  rule();
}

static void usage(void) {
  printf("usage: zt_report [--color | --no-color] [--hide-feature-status]\n\n"
         "The environment report of this zerotron build (as DeepSpeed's ds_report): which features are compiled in\n"
         "(CUDA, NCCL, cuDNN, MPI, HDF5, libaio, OpenMP, OpenBLAS) and whether each is usable here ([OKAY], [NO],\n"
         "[WARNING] with the reason), the build options (CMake options, compilers, flags, build type), the library\n"
         "versions seen at build time and loaded at run time, the GPUs (name, memory, compute capability) and the CPU.\n"
         "Needs no GPU: without a CUDA driver or device the CUDA rows say why. Exit status 0.\n\n"
         "  --color               color the verdicts (default: when stdout is a terminal and NO_COLOR is unset)\n"
         "  --no-color            never color\n"
         "  --hide-feature-status leave out the feature table (ds_report's --hide_operator_status)\n"
         "  -h, --help            this text\n");
}

int main(int argc, char **argv) {
  g_color = isatty(1) && !getenv("NO_COLOR");
  int hide_features = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage();
      return 0;
    } else if (!strcmp(argv[i], "--color")) g_color = 1;
    else if (!strcmp(argv[i], "--no-color")) g_color = 0;
    else if (!strcmp(argv[i], "--hide-feature-status") || !strcmp(argv[i], "--hide_operator_status")) hide_features = 1;
    else {
      fprintf(stderr, "error: zt_report: unrecognized argument: %s (see --help)\n", argv[i]);
      return 2;
    }
  }
  cuda_state cs;
  probe_cuda(&cs);
  if (!hide_features) report_features(&cs);
  else rule();
  report_build();
  report_versions(&cs);
  report_gpus(&cs);
  report_system();
  return 0;
}
