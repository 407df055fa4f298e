/* zt_deepspeed: a launcher for people used to DeepSpeed's `deepspeed` command (deepspeed/launcher/runner.py).
 * Reads a DeepSpeed hostfile ("host slots=N" lines), applies --include/--exclude/--num_nodes/--num_gpus with
 * DeepSpeed's semantics and messages, and starts the user program through OpenMPI's mpirun (by-slot mapping
 * over `--host h1:n1,h2:n2`, so global ranks follow the hostfile order), exporting MASTER_ADDR/MASTER_PORT,
 * the environment variables DeepSpeed forwards and the KEY=VAL lines of .deepspeed_env. It prints
 * `cmd = ...` and then execvp()s mpirun, so signals and the exit status pass straight through.
 * ZT_LAUNCHER_DRY_RUN=1 (a test aid, not a DeepSpeed feature) prints the command and exits 0.
 * See docs/launcher.md. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "runtime/base/error.h"

extern char **environ;

/* ---- small growable string and argv helpers ----------------------------------------------------------- */
static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = zt_malloc(n, "zt_deepspeed string");
  memcpy(d, s, n);
  return d;
}

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = zt_malloc((size_t)n + 1, "zt_deepspeed string");
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

typedef struct { char **v; int n, cap; } strvec;
static void sv_push(strvec *a, const char *s) {
  if (a->n + 2 > a->cap) {
    int cap = a->cap ? 2 * a->cap : 32;
    char **v = zt_malloc((size_t)cap * sizeof(char *), "zt_deepspeed argv");
    if (a->n) memcpy(v, a->v, (size_t)a->n * sizeof(char *));
    free(a->v);
    a->v = v;
    a->cap = cap;
  }
  a->v[a->n++] = xstrdup(s);
  a->v[a->n] = NULL;
}

/* ---- hosts: name, slot count from the hostfile, active slot list --------------------------------------- */
typedef struct {
  char *name;
  int nslots;     /* from the hostfile (or the local device count) */
  int *slots;     /* active slots, in the order given */
  int nactive;
} host_t;
typedef struct { host_t *h; int n; } pool_t;

static int pool_find(const pool_t *p, const char *name) {
  for (int i = 0; i < p->n; i++)
    if (strcmp(p->h[i].name, name) == 0) return i;
  return -1;
}
static void pool_add(pool_t *p, const char *name, int nslots) {
  host_t *h = zt_malloc((size_t)(p->n + 1) * sizeof(host_t), "zt_deepspeed hosts");
  if (p->n) memcpy(h, p->h, (size_t)p->n * sizeof(host_t));
  free(p->h);
  p->h = h;
  host_t *e = &p->h[p->n++];
  e->name = xstrdup(name);
  e->nslots = nslots;
  e->slots = zt_malloc((size_t)(nslots > 0 ? nslots : 1) * sizeof(int), "zt_deepspeed slots");
  e->nactive = nslots;
  for (int i = 0; i < nslots; i++) e->slots[i] = i;
}
static void set_slots(host_t *h, const int *slots, int n) {
  free(h->slots);
  h->slots = zt_malloc((size_t)(n > 0 ? n : 1) * sizeof(int), "zt_deepspeed slots");
  /* drop duplicates, keep the first occurrence (DeepSpeed's _stable_remove_duplicates) */
  int k = 0;
  for (int i = 0; i < n; i++) {
    int dup = 0;
    for (int j = 0; j < k; j++) dup |= h->slots[j] == slots[i];
    if (!dup) h->slots[k++] = slots[i];
  }
  h->nactive = k;
}

/* Hostfile: lines matching ^(\S+)\s+slots=(\d+) after stripping (anything after the digits is ignored, as
 * re.search does); '#' comments and blank lines skipped. Returns 0 when the file does not exist. */
static int read_hostfile(const char *path, pool_t *pool) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  FILE *f = fopen(path, "r");
  if (!f) zt_fatal("--hostfile", "cannot open %s: %s", path, strerror(errno));
  char buf[4096];
  int lineno = 0;
  while (fgets(buf, sizeof buf, f)) {
    lineno++;
    char *s = buf;
    while (*s && isspace((unsigned char)*s)) s++;
    size_t len = strlen(s);
    while (len > 0 && isspace((unsigned char)s[len - 1])) s[--len] = '\0';
    if (*s == '#' || *s == '\0') continue;
    char *p = s;
    while (*p && !isspace((unsigned char)*p)) p++;
    char *name_end = p;
    int ok = p > s && *p != '\0';
    while (*p && isspace((unsigned char)*p)) p++;
    ok = ok && p > name_end && strncmp(p, "slots=", 6) == 0 && isdigit((unsigned char)p[6]);
    if (!ok)
      zt_fatal("--hostfile", "Hostfile contains a bad entry: %s, unable to proceed with launching (%s line %d; "
               "expected 'HOST slots=N')", s, path, lineno);
    *name_end = '\0';
    char *end;
    errno = 0;
    long n = strtol(p + 6, &end, 10);
    if (errno || n > 1000000)
      zt_fatal("--hostfile", "slots=%s for host %s is too large (%s line %d)", p + 6, s, path, lineno);
    if (pool_find(pool, s) >= 0)
      zt_fatal("--hostfile", "Hostfile contains multiple entries for %s, unable to proceed with launching "
               "(%s line %d)", s, path, lineno);
    pool_add(pool, s, (int)n);
  }
  fclose(f);
  if (pool->n == 0)
    zt_fatal("--hostfile", "Hostfile is empty or not formatted correctly, unable to proceed with launching. (%s)",
             path);
  return 1;
}

/* NODE_SPEC[@NODE_SPEC...], NODE_SPEC = NAME[:SLOT[,SLOT...]] (DeepSpeed's parse_resource_filter). The result
 * keeps the hostfile's host order; a host left with no slot is removed (nactive 0). */
static void apply_filter(pool_t *pool, const char *flag, const char *spec, int include) {
  int *keep = zt_calloc((size_t)(pool->n ? pool->n : 1), sizeof(int), "zt_deepspeed filter");
  if (!include)
    for (int i = 0; i < pool->n; i++) keep[i] = 1;
  else
    for (int i = 0; i < pool->n; i++) pool->h[i].nactive = 0;
  char *copy = xstrdup(spec);
  /* split on '@' keeping empty pieces (an empty name is an unknown host, as in DeepSpeed) */
  char *node = copy;
  for (;;) {
    char *at = strchr(node, '@');
    if (at) *at = '\0';
    char *colon = strchr(node, ':');
    if (colon) {
      *colon = '\0';
      char *slotstr = colon + 1;
      if (strchr(slotstr, ':'))
        zt_fatal(flag, "bad node spec '%s:%s' in '%s': expected NAME[:SLOT[,SLOT...]]", node, slotstr, spec);
      int hi = pool_find(pool, node);
      if (hi < 0) zt_fatal(flag, "Hostname '%s' not found in hostfile", node);
      host_t *h = &pool->h[hi];
      int cap = 1;
      for (char *c = slotstr; *c; c++) cap += *c == ',';
      int *slots = zt_malloc((size_t)cap * sizeof(int), "zt_deepspeed slots");
      int ns = 0;
      /* parsed by hand so that "0,,1" is an error */
      char *q = slotstr;
      for (;;) {
        char *comma = strchr(q, ',');
        if (comma) *comma = '\0';
        char *end;
        errno = 0;
        long v = strtol(q, &end, 10);
        if (*q == '\0' || *end != '\0' || errno || !isdigit((unsigned char)*q))
          zt_fatal(flag, "invalid slot '%s' for host '%s' in '%s': slots are non-negative integers", q, node, spec);
        if (v >= h->nslots) zt_fatal(flag, "No slot '%ld' specified on host '%s'", v, node);
        slots[ns++] = (int)v;
        if (!comma) break;
        q = comma + 1;
      }
      if (include) {
        set_slots(h, slots, ns);  /* a later spec for the same host replaces the earlier one, as in DeepSpeed */
        keep[hi] = 1;
      } else {
        int k = 0;  /* remove the listed slots (removing one twice is a no-op here; DeepSpeed raises) */
        for (int i = 0; i < h->nactive; i++) {
          int gone = 0;
          for (int j = 0; j < ns; j++) gone |= h->slots[i] == slots[j];
          if (!gone) h->slots[k++] = h->slots[i];
        }
        h->nactive = k;
      }
      free(slots);
    } else {
      int hi = pool_find(pool, node);
      if (hi < 0) zt_fatal(flag, "Hostname '%s' not found in hostfile", node);
      host_t *h = &pool->h[hi];
      if (include) {
        int *all = zt_malloc((size_t)(h->nslots ? h->nslots : 1) * sizeof(int), "zt_deepspeed slots");
        for (int i = 0; i < h->nslots; i++) all[i] = i;
        set_slots(h, all, h->nslots);
        free(all);
        keep[hi] = 1;
      } else {
        h->nactive = 0;
      }
    }
    if (!at) break;
    node = at + 1;
  }
  for (int i = 0; i < pool->n; i++)
    if (!keep[i]) pool->h[i].nactive = 0;
  free(copy);
  free(keep);
}

/* ---- helpers for the local machine and remote lookups -------------------------------------------------- */
static int local_gpu_count(void) {
  DIR *d = opendir("/proc/driver/nvidia/gpus");
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

static int is_local_host(const char *h) {
  char me[256] = "";
  gethostname(me, sizeof me - 1);
  return strcmp(h, "localhost") == 0 || strcmp(h, "127.0.0.1") == 0 || strcmp(h, me) == 0;
}

/* Runs argv with stdout/stderr to /dev/null; returns its exit status (127 when it cannot start). */
static int run_quiet(char *const argv[]) {
  pid_t pid = fork();
  if (pid < 0) return 127;
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); }
    execvp(argv[0], argv);
    _exit(127);
  }
  int st = 0;
  if (waitpid(pid, &st, 0) < 0) return 127;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* First word of `[ssh HOST] hostname -I`, or NULL. */
static char *first_address(const char *host) {
  char *cmd = is_local_host(host) ? xprintf("hostname -I 2>/dev/null")
                                  : xprintf("ssh '%s' hostname -I 2>/dev/null", host);
  FILE *p = popen(cmd, "r");
  free(cmd);
  if (!p) return NULL;
  char buf[1024] = "";
  char *r = fgets(buf, sizeof buf, p);
  int st = pclose(p);
  if (!r || st != 0) return NULL;
  char *s = buf;
  while (*s && isspace((unsigned char)*s)) s++;
  char *e = s;
  while (*e && !isspace((unsigned char)*e)) e++;
  *e = '\0';
  return *s ? xstrdup(s) : NULL;
}

/* ---- exported environment: ordered KEY -> VAL, a later add replaces the value in place ------------------ */
typedef struct { char **k, **v; int n, cap; } envlist;
static void env_add(envlist *e, const char *k, const char *v) {
  for (int i = 0; i < e->n; i++)
    if (strcmp(e->k[i], k) == 0) { free(e->v[i]); e->v[i] = xstrdup(v); return; }
  if (e->n == e->cap) {
    int cap = e->cap ? 2 * e->cap : 16;
    char **k2 = zt_malloc((size_t)cap * sizeof(char *), "zt_deepspeed env"), **v2 = zt_malloc((size_t)cap * sizeof(char *), "zt_deepspeed env");
    if (e->n) { memcpy(k2, e->k, (size_t)e->n * sizeof(char *)); memcpy(v2, e->v, (size_t)e->n * sizeof(char *)); }
    free(e->k); free(e->v);
    e->k = k2; e->v = v2; e->cap = cap;
  }
  e->k[e->n] = xstrdup(k);
  e->v[e->n] = xstrdup(v);
  e->n++;
}

static char *strip(char *s) {
  while (*s && isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
  return s;
}

static void read_env_file(envlist *e, const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return;
  FILE *f = fopen(path, "r");
  if (!f) zt_fatal("DS_ENV_FILE", "cannot open %s: %s", path, strerror(errno));
  printf("zt_deepspeed: deepspeed_env file = %s\n", path);
  char buf[8192];
  int lineno = 0;
  while (fgets(buf, sizeof buf, f)) {
    lineno++;
    char *s = strip(buf);
    if (*s == '\0' || *s == '#') continue;  /* DeepSpeed fails on these; we skip them */
    char *eq = strchr(s, '=');
    if (!eq) zt_fatal("DS_ENV_FILE", "%s line %d: '%s' is not KEY=VAL", path, lineno, s);
    *eq = '\0';
    char *k = strip(s), *v = strip(eq + 1);
    if (*k == '\0') zt_fatal("DS_ENV_FILE", "%s line %d: empty variable name", path, lineno);
    env_add(e, k, v);
  }
  fclose(f);
}

/* ---- command-line options -------------------------------------------------------------------------------- */
typedef struct {
  const char *hostfile, *include, *exclude, *master_addr, *launcher, *launcher_args;
  int num_nodes, num_gpus, master_port;
  int no_local_rank, force_multi, no_ssh_check, save_pid, bind_cores_to_rank;
} opts_t;

static int parse_int(const char *flag, const char *v) {
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0' || errno || x < -1000000000L || x > 1000000000L)
    zt_fatal(flag, "invalid int value: '%s'", v);
  return (int)x;
}

static const char *const refused[] = {
  "--min_elastic_nodes", "--max_elastic_nodes", "--node_rank", "--module", "--no_ssh", "--enable_each_rank_log",
  "--autotuning", "--elastic_training", "--bind_core_list", "--ssh_port", "--comment", "--venv_script", NULL};

static void usage(FILE *f) {
  fprintf(f,
    "usage: zt_deepspeed [-H HOSTFILE] [-i INCLUDE] [-e EXCLUDE] [--num_nodes N] [--num_gpus G]\n"
    "                    [--master_addr ADDR] [--master_port PORT] [--launcher openmpi] [--launcher_args ARGS]\n"
    "                    [--no_local_rank] [--no_python] [--force_multi] [--no_ssh_check] [--save_pid]\n"
    "                    [--bind_cores_to_rank] PROGRAM [ARGS...]\n"
    "Starts PROGRAM under OpenMPI's mpirun on the hosts of a DeepSpeed hostfile (default /job/hostfile;\n"
    "without one, on localhost). See docs/launcher.md.\n");
}

/* Returns the index of the user program in argv. */
static int parse_args(int argc, char **argv, opts_t *o) {
  *o = (opts_t){.hostfile = "/job/hostfile", .include = "", .exclude = "", .master_addr = "", .launcher = "openmpi",
                .launcher_args = "", .num_nodes = -1, .num_gpus = -1, .master_port = 29500};
  int i = 1;
  while (i < argc) {
    char *a = argv[i];
    if (a[0] != '-' || strcmp(a, "-") == 0) break;
    if (strcmp(a, "--") == 0) { i++; break; }
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { usage(stdout); exit(0); }
    /* --name=value or --name value */
    char name[128];
    const char *val = NULL;
    const char *eq = strchr(a, '=');
    if (eq && a[1] == '-') {
      size_t n = (size_t)(eq - a);
      if (n >= sizeof name) n = sizeof name - 1;
      memcpy(name, a, n);
      name[n] = '\0';
      val = eq + 1;
    } else if (a[1] != '-' && (a[1] == 'H' || a[1] == 'i' || a[1] == 'e') && a[2] != '\0') {
      snprintf(name, sizeof name, "-%c", a[1]);  /* -Hhostfile, as argparse allows */
      val = a + 2;
    } else {
      snprintf(name, sizeof name, "%s", a);
    }
    for (int r = 0; refused[r]; r++)
      if (strcmp(name, refused[r]) == 0)
        zt_fatal(name, "not supported by zt_deepspeed (it launches through OpenMPI's mpirun only; see docs/launcher.md)");
    static const char *const with_value[] = {"-H", "--hostfile", "-i", "--include", "-e", "--exclude", "--num_nodes",
                                             "--num_gpus", "--num_accelerators", "--master_addr", "--master_port",
                                             "--launcher", "--launcher_args", NULL};
    int takes = 0;
    for (int w = 0; with_value[w]; w++) takes |= strcmp(name, with_value[w]) == 0;
    if (takes) {
      if (!val) {
        zt_check(i + 1 < argc, name, "expected one argument");
        val = argv[++i];
      }
      if (!strcmp(name, "-H") || !strcmp(name, "--hostfile")) o->hostfile = val;
      else if (!strcmp(name, "-i") || !strcmp(name, "--include")) o->include = val;
      else if (!strcmp(name, "-e") || !strcmp(name, "--exclude")) o->exclude = val;
      else if (!strcmp(name, "--num_nodes")) o->num_nodes = parse_int(name, val);
      else if (!strcmp(name, "--num_gpus") || !strcmp(name, "--num_accelerators")) o->num_gpus = parse_int(name, val);
      else if (!strcmp(name, "--master_addr")) o->master_addr = val;
      else if (!strcmp(name, "--master_port")) o->master_port = parse_int(name, val);
      else if (!strcmp(name, "--launcher")) o->launcher = val;
      else if (!strcmp(name, "--launcher_args")) o->launcher_args = val;
    } else {
      zt_check(!val, name, "ignored explicit argument '%s' (this flag takes no value)", val);
      if (!strcmp(name, "--no_local_rank")) o->no_local_rank = 1;
      else if (!strcmp(name, "--no_python")) ;  /* what zt_deepspeed always does: PROGRAM is run directly */
      else if (!strcmp(name, "--force_multi")) o->force_multi = 1;
      else if (!strcmp(name, "--no_ssh_check")) o->no_ssh_check = 1;
      else if (!strcmp(name, "--save_pid")) o->save_pid = 1;
      else if (!strcmp(name, "--bind_cores_to_rank")) o->bind_cores_to_rank = 1;
      else {
        usage(stderr);
        zt_fatal(name, "unrecognized argument (zt_deepspeed's options come before the program; see --help)");
      }
    }
    i++;
  }
  if (i >= argc) {
    usage(stderr);
    zt_fatal("zt_deepspeed", "the following arguments are required: user_script (the program to launch)");
  }
  return i;
}

/* Splits --launcher_args on whitespace, honouring single and double quotes (like shlex.split). */
static void split_words(strvec *out, const char *s) {
  char *w = zt_malloc(strlen(s) + 1, "zt_deepspeed launcher_args");
  const char *p = s;
  while (*p) {
    while (*p && isspace((unsigned char)*p)) p++;
    if (!*p) break;
    size_t n = 0;
    while (*p && !isspace((unsigned char)*p)) {
      if (*p == '\'' || *p == '"') {
        char q = *p++;
        while (*p && *p != q) w[n++] = *p++;
        zt_check(*p == q, "--launcher_args", "no closing quotation in '%s'", s);
        p++;
      } else if (*p == '\\' && p[1]) {
        w[n++] = p[1];
        p += 2;
      } else {
        w[n++] = *p++;
      }
    }
    w[n] = '\0';
    sv_push(out, w);
  }
  free(w);
}

/* Prints one argument so that the printed command can be pasted into a shell. */
static void print_word(const char *s) {
  int plain = *s != '\0';
  for (const char *c = s; *c; c++)
    if (!(isalnum((unsigned char)*c) || strchr("-_./:,=@+%", *c))) plain = 0;
  if (plain) { fputs(s, stdout); return; }
  putchar('\'');
  for (const char *c = s; *c; c++) {
    if (*c == '\'') fputs("'\\''", stdout);
    else putchar(*c);
  }
  putchar('\'');
}

static char *slot_list(const host_t *h) {
  size_t cap = (size_t)h->nactive * 12 + 2;
  char *s = zt_malloc(cap, "zt_deepspeed slot list");
  size_t n = 0;
  s[0] = '\0';
  for (int i = 0; i < h->nactive; i++) n += (size_t)snprintf(s + n, cap - n, "%s%d", i ? "," : "", h->slots[i]);
  return s;
}

int main(int argc, char **argv) {
  opts_t o;
  int prog = parse_args(argc, argv, &o);
  const char *dry = getenv("ZT_LAUNCHER_DRY_RUN");
  int dry_run = dry && *dry && strcmp(dry, "0") != 0;

  /* launcher: only OpenMPI here (DeepSpeed's default is pdsh) */
  {
    char l[64];
    snprintf(l, sizeof l, "%s", o.launcher);
    for (char *c = l; *c; c++) *c = (char)tolower((unsigned char)*c);
    static const char *const known[] = {"pdsh", "mvapich", "slurm", "mpich", "impi", NULL};
    for (int k = 0; known[k]; k++)
      if (strcmp(l, known[k]) == 0)
        zt_fatal("--launcher", "'%s' is not supported by zt_deepspeed: it launches through OpenMPI's mpirun only "
                 "(--launcher openmpi, the default here)", o.launcher);
    zt_check(strcmp(l, "openmpi") == 0, "--launcher", "Unknown launcher %s (zt_deepspeed supports openmpi only)",
             o.launcher);
  }
  zt_check(o.master_port > 0 && o.master_port < 65536, "--master_port", "%d is not a TCP port (1..65535)",
           o.master_port);

  pool_t pool = {0};
  int have_hostfile = read_hostfile(o.hostfile, &pool);
  if (!have_hostfile)
    zt_warn("Unable to find hostfile, will proceed with training with local resources only. (no file %s)",
            o.hostfile);

  /* respect CUDA_VISIBLE_DEVICES for a single node without explicit resource filters */
  const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
  char *include_from_cvd = NULL;
  if (!have_hostfile && cvd && *cvd) {
    if (*o.include || *o.exclude || o.num_nodes > 1 || o.num_gpus > 0) {
      printf("zt_deepspeed: Detected CUDA_VISIBLE_DEVICES=%s but ignoring it because one or several of "
             "--include/--exclude/--num_gpus/--num_nodes cl args were used. If you want to use CUDA_VISIBLE_DEVICES "
             "don't pass any of these arguments to deepspeed.\n", cvd);
    } else {
      include_from_cvd = xprintf("localhost:%s", cvd);
      o.include = include_from_cvd;
      printf("zt_deepspeed: Detected CUDA_VISIBLE_DEVICES=%s: setting --include=%s\n", cvd, o.include);
    }
    unsetenv("CUDA_VISIBLE_DEVICES");
  }

  zt_check(!(*o.include && *o.exclude), "--include/--exclude", "include_str and exclude_str are mutually exclusive.");
  if (o.num_nodes >= 0 || o.num_gpus >= 0)
    zt_check(!*o.include && !*o.exclude, "--num_nodes/--num_gpus",
             "Cannot specify num_nodes/gpus with include/exclude (--num_nodes %d, --num_gpus %d, --include '%s', "
             "--exclude '%s')", o.num_nodes, o.num_gpus, o.include, o.exclude);

  int multi_node = 1;
  const char *master_addr = o.master_addr;
  if (!have_hostfile) {
    int gpus = local_gpu_count();
    int slots = gpus;
    if (gpus == 0) {
      /* DeepSpeed stops here ("no GPU resources available"); a CPU build runs one rank per slot */
      slots = o.num_gpus > 0 ? o.num_gpus : 1;
      printf("zt_deepspeed: no GPU found: localhost gets %d slot%s (%s)\n", slots, slots == 1 ? "" : "s",
             o.num_gpus > 0 ? "from --num_gpus" : "use --num_gpus N for N ranks");
    }
    pool_add(&pool, "localhost", slots);
    master_addr = "127.0.0.1";
    multi_node = 0;
  }
  zt_check(multi_node || o.num_nodes <= 1, "--num_nodes",
           "Num nodes is >1 but no extra nodes available via hostfile (--num_nodes %d, no hostfile %s)", o.num_nodes,
           o.hostfile);

  if (*o.include) apply_filter(&pool, "--include", o.include, 1);
  if (*o.exclude) apply_filter(&pool, "--exclude", o.exclude, 0);

  /* active hosts in hostfile order */
  int nh = 0;
  host_t **act = zt_malloc((size_t)(pool.n ? pool.n : 1) * sizeof(host_t *), "zt_deepspeed hosts");
  for (int i = 0; i < pool.n; i++)
    if (pool.h[i].nactive > 0) act[nh++] = &pool.h[i];
  zt_check(nh > 0, "--include/--exclude", "no slot is left to run on (hostfile %s, --include '%s', --exclude '%s')",
           have_hostfile ? o.hostfile : "(none)", o.include, o.exclude);

  /* passwordless ssh to the first host (skipped for this machine, under --no_ssh_check, and in a dry run) */
  if (multi_node && !o.no_ssh_check && !dry_run && !is_local_host(act[0]->name)) {
    char *ssh[] = {"ssh", "-o", "PasswordAuthentication=no", act[0]->name, "hostname", NULL};
    if (run_quiet(ssh) != 0)
      zt_fatal("--hostfile", "Using hostfile at %s but host=%s was not reachable via ssh. If you are running with a "
               "single node please remove %s or setup passwordless ssh.", o.hostfile, act[0]->name, o.hostfile);
  }
  if (!*master_addr) {
    if (dry_run) {
      master_addr = act[0]->name;  /* a dry run does not ssh: the first host's name stands in for its address */
    } else {
      char *addr = first_address(act[0]->name);
      zt_check(addr, "--master_addr", "Unable to detect suitable master address via `hostname -I` on %s, please "
               "manually specify one via --master_addr", act[0]->name);
      master_addr = addr;
      printf("zt_deepspeed: Using IP address of %s for node %s\n", master_addr, act[0]->name);
    }
  }

  if (o.num_nodes > 0 && o.num_nodes < nh) nh = o.num_nodes;
  if (o.num_gpus > 0)
    for (int i = 0; i < nh; i++) {
      int *all = zt_malloc((size_t)o.num_gpus * sizeof(int), "zt_deepspeed slots");
      for (int s = 0; s < o.num_gpus; s++) all[s] = s;
      set_slots(act[i], all, o.num_gpus);
      free(all);
    }

  /* the resolved resources, printed as DeepSpeed's world info dict */
  printf("zt_deepspeed: active resources = {");
  int total = 0, maxper = 0;
  for (int i = 0; i < nh; i++) {
    printf("%s'%s': [", i ? ", " : "", act[i]->name);
    for (int s = 0; s < act[i]->nactive; s++) printf("%s%d", s ? ", " : "", act[i]->slots[s]);
    printf("]");
    total += act[i]->nactive;
    if (act[i]->nactive > maxper) maxper = act[i]->nactive;
  }
  printf("}\n");

  /* exported environment */
  envlist env = {0};
  env_add(&env, "MASTER_ADDR", master_addr);
  env_add(&env, "MASTER_PORT", xprintf("%d", o.master_port));
  static const char *const prefixes[] = {"MLFLOW", "PYTHON", "MV2", "UCX", "NCCL", "OMP_", "ZT_", NULL};
  for (char **e = environ; *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq || strncmp(*e, "ZT_LAUNCHER_DRY_RUN=", 20) == 0) continue;
    for (int p = 0; prefixes[p]; p++)
      if (strncmp(*e, prefixes[p], strlen(prefixes[p])) == 0) {
        char *k = xstrdup(*e);
        k[eq - *e] = '\0';
        env_add(&env, k, eq + 1);
        free(k);
        break;
      }
  }
  {
    const char *name = getenv("DS_ENV_FILE");
    if (!name || !*name) name = ".deepspeed_env";
    const char *home = getenv("HOME");
    char *paths[2] = {name[0] == '/' ? xstrdup(name) : xprintf("%s/%s", home ? home : "", name),
                      name[0] == '/' ? xstrdup(name) : xprintf("./%s", name)};
    read_env_file(&env, paths[0]);
    read_env_file(&env, paths[1]);
  }
  int cores_per_rank = 0;
  if (o.bind_cores_to_rank) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cores_per_rank = (int)(ncpu / (maxper ? maxper : 1));
    if (cores_per_rank < 1) cores_per_rank = 1;
    env_add(&env, "OMP_NUM_THREADS", xprintf("%d", cores_per_rank));
  }

  /* visible devices: only when some host runs on other slots than 0..n-1 */
  int default_slots = 1, same_slots = 1;
  for (int i = 0; i < nh; i++) {
    for (int s = 0; s < act[i]->nactive; s++) default_slots &= act[i]->slots[s] == s;
    if (i > 0) {
      same_slots &= act[i]->nactive == act[0]->nactive;
      for (int s = 0; same_slots && s < act[i]->nactive; s++) same_slots &= act[i]->slots[s] == act[0]->slots[s];
    }
  }

  /* the mpirun command */
  strvec cmd = {0};
  sv_push(&cmd, "mpirun");
  if (geteuid() == 0) sv_push(&cmd, "--allow-run-as-root");
  if (o.bind_cores_to_rank) {
    sv_push(&cmd, "--bind-to");
    sv_push(&cmd, "core");
    sv_push(&cmd, "--map-by");
    sv_push(&cmd, xprintf("slot:PE=%d", cores_per_rank));
  }
  split_words(&cmd, o.launcher_args);
  int contexts = default_slots || same_slots ? 1 : nh;
  for (int c = 0; c < contexts; c++) {
    int h0 = contexts == 1 ? 0 : c, h1 = contexts == 1 ? nh : c + 1, n = 0;
    char *hosts = xstrdup("");
    for (int i = h0; i < h1; i++) {
      char *next = xprintf("%s%s%s:%d", hosts, i > h0 ? "," : "", act[i]->name, act[i]->nactive);
      free(hosts);
      hosts = next;
      n += act[i]->nactive;
    }
    if (c > 0) sv_push(&cmd, ":");
    sv_push(&cmd, "-n");
    sv_push(&cmd, xprintf("%d", n));
    sv_push(&cmd, "--host");
    sv_push(&cmd, hosts);
    for (int i = 0; i < env.n; i++) {
      sv_push(&cmd, "-x");
      sv_push(&cmd, xprintf("%s=%s", env.k[i], env.v[i]));
    }
    if (!default_slots) {
      sv_push(&cmd, "-x");
      sv_push(&cmd, xprintf("CUDA_VISIBLE_DEVICES=%s", slot_list(act[h0])));
    }
    for (int a = prog; a < argc; a++) sv_push(&cmd, argv[a]);
  }
  (void)total;

  if (o.save_pid) {
    char *pid_file = xprintf("/tmp/%d.deepspeed", (int)getpid());
    if (!dry_run) {
      FILE *f = fopen(pid_file, "w");
      zt_check(f, "--save_pid", "cannot write %s: %s", pid_file, strerror(errno));
      fprintf(f, "%d", (int)getpid());
      fclose(f);
    }
    printf("zt_deepspeed: launcher pid: %d (in %s)\n", (int)getpid(), pid_file);
  }

  printf("zt_deepspeed: cmd =");
  for (int i = 0; i < cmd.n; i++) { putchar(' '); print_word(cmd.v[i]); }
  printf("\n");
  fflush(stdout);
  if (dry_run) return 0;
  execvp(cmd.v[0], cmd.v);
  zt_fatal("zt_deepspeed", "cannot run %s: %s (install OpenMPI: apt-get install openmpi-bin)", cmd.v[0],
           strerror(errno));
}
