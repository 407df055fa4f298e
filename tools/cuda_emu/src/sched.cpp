// The emulator's execution model: a grid runs one block at a time, in a random order; a block's threads are fibers
// (their own stacks) run in a random order by a cooperative scheduler. A thread runs until it reaches a block
// barrier, a warp collective or its end; a barrier releases its threads only when every thread of the block has
// arrived at the same barrier, a warp collective when every lane of its mask has. Whatever the GPU may do in
// parallel between two synchronization points, the emulator does in some random sequential order, so code that
// relies on an order the CUDA model does not promise (a read of another thread's write without a barrier between
// them, a warp-synchronous idiom without __syncwarp, blocks in order) gives different results from seed to seed.
// Undefined behaviour the model names (divergent barriers, a barrier after some threads exited, a shuffle from a
// lane outside the mask) ends the process with the kernel, block, thread and source line.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <numeric>
#include <vector>

#include "internal.h"

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(ZT_EMU_UCONTEXT)
#define ZT_EMU_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

namespace zt_emu {

ThreadState *cur;
uint3 cur_block;
dim3 cur_grid, cur_block_dim;
bool probing;
KernelInfo *probed;

void fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fflush(stdout);
  fprintf(stderr, "cuda emulator: error: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  abort();
}

void note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fflush(stdout);
  fprintf(stderr, "cuda emulator: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

int env_int(const char *name, int fallback) {
  const char *s = getenv(name);
  return s && *s ? atoi(s) : fallback;
}

namespace {

// ---- context switching ----------------------------------------------------------------------------------------
#ifdef ZT_EMU_ASM_SWITCH
// zt_emu_switch(save, to): saves the callee-saved registers, MXCSR and the x87 control word on the current stack,
// stores the stack pointer in *save and resumes the context whose stack pointer is `to`. No system call (glibc's
// swapcontext makes one per switch to save the signal mask), so a switch costs a few nanoseconds.
extern "C" void zt_emu_switch(void **save, void *to);
extern "C" void zt_emu_fiber_trampoline();
__asm__(R"(
  .text
  .p2align 4
  .globl zt_emu_switch
  .type zt_emu_switch,@function
zt_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $16, %rsp
  stmxcsr 8(%rsp)
  fnstcw (%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  fldcw (%rsp)
  ldmxcsr 8(%rsp)
  addq $16, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size zt_emu_switch, .-zt_emu_switch
  .p2align 4
  .globl zt_emu_fiber_trampoline
  .type zt_emu_fiber_trampoline,@function
zt_emu_fiber_trampoline:
  movq %r13, %rdi
  callq *%r12
  ud2
  .size zt_emu_fiber_trampoline, .-zt_emu_fiber_trampoline
  .section .note.GNU-stack,"",@progbits
  .text
)");
#endif

enum State { RUNNABLE, AT_BARRIER, AT_WARP_OP, DONE };

struct Fiber {
  ThreadState ts;
  int state;
#ifdef ZT_EMU_ASM_SWITCH
  void *sp;
#else
  ucontext_t uc;
#endif
  char *stack;
  // at a block barrier
  int bkind, bpred, bresult;
  const char *bfile;
  int bline;
  // at a warp collective
  int wkind, warg, wwidth;
  unsigned wmask;
  uint64_t wvalue, wresult;
  const char *wfile;
  int wline;
};

struct Grid {
  KernelInfo *kernel;
  LaunchSite site;
  void (*thread_main)(void *);
  void *ctx;
  int nthreads, nwarps;
  size_t dyn_bytes;
  unsigned char *dyn;        // dynamic shared memory of the running block
  unsigned char *arena;      // static shared memory of the running block
  size_t arena_used;
  uint64_t generation;       // of the running block, for the static shared slots
} g;

std::vector<Fiber> fibers;
size_t stack_bytes;
std::vector<std::vector<int>> ready;  // per warp: the threads that may run
std::vector<int> running;
int nready;
int schedule_mode;  // ZT_EMU_SCHEDULE: 0 mixed (a random one of the two per block), 1 rounds, 2 warps
int nlive, ndone, at_barrier;
std::vector<unsigned> warp_waiting;  // per warp: lanes waiting at a warp collective
int current;                         // the running fiber
#ifdef ZT_EMU_ASM_SWITCH
void *sched_sp;
uint64_t fp_control[2];
#else
ucontext_t sched_uc;
#endif
uint64_t rng_state;

void make_ready(int i) {
  ready[i >> 5].push_back(i);
  nready++;
}

uint64_t next_random() {  // splitmix64
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

const char *where(char *buf, size_t len) {
  const ThreadState &t = fibers[current].ts;
  snprintf(buf, len, "kernel %s (launched at %s:%d), block (%u,%u,%u), thread (%u,%u,%u)", g.kernel->signature,
           g.site.file, g.site.line, cur_block.x, cur_block.y, cur_block.z, t.idx.x, t.idx.y, t.idx.z);
  return buf;
}

void fiber_main(void *arg) {
  Fiber *f = (Fiber *)arg;
  g.thread_main(g.ctx);
  f->state = DONE;
  nlive--;
  ndone++;
  if (at_barrier > 0) {
    char w[512];
    int i = 0;
    while (fibers[i].state != AT_BARRIER) i++;
    fatal("%s: the thread ended while %d threads of its block wait at the barrier of %s:%d: __syncthreads must be "
          "reached by every thread of the block (undefined behaviour: a hang or worse on a GPU)",
          where(w, sizeof w), at_barrier, fibers[i].bfile, fibers[i].bline);
  }
  for (int l = 0; l < 32; l++) {
    const int o = f->ts.warp * 32 + l;
    if ((warp_waiting[f->ts.warp] >> l & 1u) && (fibers[o].wmask >> f->ts.lane & 1u)) {
      char w[512];
      fatal("%s: the thread ended while lane %d of its warp waits at the warp collective of %s:%d, whose mask 0x%08x "
            "includes it",
            where(w, sizeof w), l, fibers[o].wfile, fibers[o].wline, fibers[o].wmask);
    }
  }
#ifdef ZT_EMU_ASM_SWITCH
  zt_emu_switch(&f->sp, sched_sp);
#else
  swapcontext(&f->uc, &sched_uc);
#endif
  abort();  // a finished fiber is never resumed
}

#ifndef ZT_EMU_ASM_SWITCH
void fiber_main_uc(unsigned lo, unsigned hi) { fiber_main((void *)(((uintptr_t)hi << 32) | lo)); }
#endif

void yield() {
  Fiber &f = fibers[current];
#ifdef ZT_EMU_ASM_SWITCH
  zt_emu_switch(&f.sp, sched_sp);
#else
  swapcontext(&f.uc, &sched_uc);
#endif
}

void ensure_fibers(int n) {
  if ((int)fibers.size() >= n) return;
  const size_t page = 4096;
  const int old = (int)fibers.size();
  fibers.resize(n);
  for (int i = old; i < n; i++) {
    // a guard page below each stack: an overflow faults instead of corrupting the neighbour
    char *m = (char *)mmap(NULL, stack_bytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                           -1, 0);
    if (m == MAP_FAILED) fatal("cannot map %zu bytes for a thread stack", stack_bytes + page);
    mprotect(m, page, PROT_NONE);
    fibers[i].stack = m + page;
  }
}

void start_fiber(Fiber &f) {
#ifdef ZT_EMU_ASM_SWITCH
  uint64_t *top = (uint64_t *)(((uintptr_t)f.stack + stack_bytes) & ~(uintptr_t)15);
  uint64_t *sp = top - 9;  // control words, r15 r14 r13 r12 rbx rbp, return address (see zt_emu_switch)
  sp[0] = fp_control[0];
  sp[1] = fp_control[1];
  sp[2] = sp[3] = 0;
  sp[4] = (uint64_t)(uintptr_t)&f;           // r13: the argument
  sp[5] = (uint64_t)(uintptr_t)&fiber_main;  // r12: the function
  sp[6] = sp[7] = 0;
  sp[8] = (uint64_t)(uintptr_t)&zt_emu_fiber_trampoline;
  f.sp = sp;
#else
  getcontext(&f.uc);
  f.uc.uc_stack.ss_sp = f.stack;
  f.uc.uc_stack.ss_size = stack_bytes;
  f.uc.uc_link = NULL;
  const uintptr_t a = (uintptr_t)&f;
  makecontext(&f.uc, (void (*)())fiber_main_uc, 2, (unsigned)(a & 0xffffffffu), (unsigned)(a >> 32));
#endif
}

void resume(int i) {
  current = i;
  cur = &fibers[i].ts;
#ifdef ZT_EMU_ASM_SWITCH
  zt_emu_switch(&sched_sp, fibers[i].sp);
#else
  swapcontext(&sched_uc, &fibers[i].uc);
#endif
}

void diagnose_deadlock() {
  char buf[4096];
  int n = snprintf(buf, sizeof buf, "deadlock in kernel %s (launched at %s:%d), block (%u,%u,%u): no thread can run;",
                   g.kernel->signature, g.site.file, g.site.line, cur_block.x, cur_block.y, cur_block.z);
  int shown = 0;
  for (int i = 0; i < g.nthreads && shown < 8 && n < (int)sizeof buf - 200; i++) {
    const Fiber &f = fibers[i];
    if (f.state == AT_BARRIER && (i == 0 || fibers[i - 1].state != AT_BARRIER)) {
      n += snprintf(buf + n, sizeof buf - n, " thread %d.. wait at the barrier of %s:%d;", i, f.bfile, f.bline);
      shown++;
    } else if (f.state == AT_WARP_OP) {
      n += snprintf(buf + n, sizeof buf - n, " thread %d waits at the warp collective of %s:%d (mask 0x%08x);", i,
                    f.wfile, f.wline, f.wmask);
      shown++;
    }
  }
  snprintf(buf + n, sizeof buf - n, " %d threads ended", ndone);
  fatal("%s", buf);
}

// Two orders of running the ready threads, picked at random per block (ZT_EMU_SCHEDULE=rounds|warps pins one):
//  rounds: every ready thread once, in a random order, then again: the warps of a block advance together, the
//          finest interleaving of their steps;
//  warps:  one warp, picked at random, as far as it can go (past completed barriers too) before another: the
//          warps drift as far apart as the barriers allow, as they may on a GPU (a warp running ahead into the
//          next use of a shared buffer that a late warp still reads).
void run_block() {
  g.generation++;
  g.arena_used = 0;
  if (g.dyn_bytes) memset(g.dyn, 0xff, g.dyn_bytes);  // NaN in fp32, bf16 and fp16: unwritten reads show
  nlive = g.nthreads;
  ndone = at_barrier = nready = 0;
  for (int w = 0; w < g.nwarps; w++) {
    warp_waiting[w] = 0;
    ready[w].clear();
  }
  const dim3 bd = cur_block_dim;
  for (int i = 0; i < g.nthreads; i++) {
    Fiber &f = fibers[i];
    f.ts.idx = uint3{i % bd.x, i / bd.x % bd.y, i / (bd.x * bd.y)};
    f.ts.linear = i;
    f.ts.lane = i % 32;
    f.ts.warp = i / 32;
    f.state = RUNNABLE;
    start_fiber(f);
    make_ready(i);
  }
  const bool by_warp = schedule_mode == 2 || (schedule_mode == 0 && (next_random() & 1));
  while (nlive > 0) {
    if (nready == 0) diagnose_deadlock();
    if (by_warp) {
      int pick = (int)(next_random() % (uint64_t)nready), w = 0;  // a warp, by its share of the ready threads
      while (pick >= (int)ready[w].size()) pick -= (int)ready[w++].size();
      while (!ready[w].empty()) {
        running.swap(ready[w]);
        ready[w].clear();
        nready -= (int)running.size();
        for (size_t i = running.size(); i > 1; i--) std::swap(running[i - 1], running[next_random() % i]);
        for (int i : running) resume(i);
      }
    } else {
      running.clear();
      for (int w = 0; w < g.nwarps; w++) {
        running.insert(running.end(), ready[w].begin(), ready[w].end());
        ready[w].clear();
      }
      nready = 0;
      for (size_t i = running.size(); i > 1; i--) std::swap(running[i - 1], running[next_random() % i]);
      for (int i : running) resume(i);
    }
  }
}

}  // namespace

// ---- barriers ---------------------------------------------------------------------------------------------------
int sync_block(int kind, int pred, const char *file, int line) {
  Fiber &f = fibers[current];
  char w[512];
  if (ndone > 0)
    fatal("%s: __syncthreads at %s:%d after %d threads of the block ended: a barrier must be reached by every thread "
          "of the block (undefined behaviour)",
          where(w, sizeof w), file, line, ndone);
  f.state = AT_BARRIER;
  f.bkind = kind, f.bpred = pred, f.bfile = file, f.bline = line;
  if (++at_barrier == g.nthreads) {
    int n_or = 0, n_and = 1, count = 0;
    for (int i = 0; i < g.nthreads; i++) {
      const Fiber &o = fibers[i];
      if (o.bline != line || o.bkind != kind || (o.bfile != file && strcmp(o.bfile, file) != 0)) {
        current = i;
        fatal("%s: waits at the barrier of %s:%d while thread (%u,%u,%u) waits at %s:%d: divergent barriers "
              "(undefined behaviour)",
              where(w, sizeof w), o.bfile, o.bline, f.ts.idx.x, f.ts.idx.y, f.ts.idx.z, file, line);
      }
      n_or |= o.bpred;
      n_and &= o.bpred;
      count += o.bpred;
    }
    const int result = kind == SYNC_OR ? n_or : kind == SYNC_AND ? n_and : kind == SYNC_COUNT ? count : 0;
    for (int i = 0; i < g.nthreads; i++) {
      fibers[i].state = RUNNABLE;
      fibers[i].bresult = result;
      make_ready(i);
    }
    at_barrier = 0;
  }
  yield();
  return f.bresult;
}

// ---- warp collectives -------------------------------------------------------------------------------------------
uint64_t warp_collective(int kind, unsigned mask, uint64_t value, int arg, int width, const char *file, int line) {
  Fiber &f = fibers[current];
  char w[512];
  const int lane = f.ts.lane, warp = f.ts.warp, base = warp * 32;
  const int lanes = g.nthreads - base < 32 ? g.nthreads - base : 32;
  const unsigned exist = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
  if (!(mask >> lane & 1u))
    fatal("%s: warp collective at %s:%d with mask 0x%08x that does not include the calling lane %d",
          where(w, sizeof w), file, line, mask, lane);
  if (mask & ~exist)
    fatal("%s: warp collective at %s:%d with mask 0x%08x naming lanes past the end of the block (its last warp has "
          "%d lanes)",
          where(w, sizeof w), file, line, mask, lanes);
  if (kind <= WARP_SHFL_XOR && (width < 1 || width > 32 || (width & (width - 1))))
    fatal("%s: shuffle at %s:%d with width %d (a power of two up to 32)", where(w, sizeof w), file, line, width);
  for (int l = 0; l < lanes; l++) {
    const Fiber &o = fibers[base + l];
    if ((mask >> l & 1u) && o.state == DONE)
      fatal("%s: warp collective at %s:%d with mask 0x%08x names lane %d, which has ended", where(w, sizeof w), file,
            line, mask, l);
    if (o.state == AT_WARP_OP && (o.wmask & mask) && o.wmask != mask)
      fatal("%s: warp collective at %s:%d with mask 0x%08x while lane %d waits at %s:%d with mask 0x%08x",
            where(w, sizeof w), file, line, mask, l, o.wfile, o.wline, o.wmask);
  }
  f.state = AT_WARP_OP;
  f.wkind = kind, f.wmask = mask, f.wvalue = value, f.warg = arg, f.wwidth = width, f.wfile = file, f.wline = line;
  warp_waiting[warp] |= 1u << lane;
  if ((warp_waiting[warp] & mask) == mask) {
    uint64_t ballot = 0;
    int any = 0, all = 1;
    for (int l = 0; l < 32; l++) {
      if (!(mask >> l & 1u)) continue;
      const Fiber &o = fibers[base + l];
      if (o.wkind != kind || o.wline != line || o.wwidth != width || (o.wfile != file && strcmp(o.wfile, file) != 0)) {
        current = base + l;
        fatal("%s: waits at the warp collective of %s:%d while lane %d of its warp waits at %s:%d (kind %d/%d, width "
              "%d/%d): divergent collectives (undefined behaviour)",
              where(w, sizeof w), o.wfile, o.wline, lane, file, line, o.wkind, kind, o.wwidth, width);
      }
      ballot |= (uint64_t)(o.wvalue != 0) << l;
      any |= o.wvalue != 0;
      all &= o.wvalue != 0;
    }
    for (int l = 0; l < 32; l++) {
      if (!(mask >> l & 1u)) continue;
      Fiber &o = fibers[base + l];
      uint64_t r = 0;
      if (kind <= WARP_SHFL_XOR) {
        // PTX shfl.sync with c = ((32 - width) << 8) | (up ? 0 : 31): a segment of `width` lanes
        const int seg = 32 - o.wwidth, min_lane = l & seg, max_lane = min_lane | (31 & ~seg);
        int src = l;
        bool ok;
        switch (kind) {
          case WARP_SHFL_IDX: src = min_lane | (o.warg & 31 & ~seg); ok = src <= max_lane; break;
          case WARP_SHFL_UP: src = l - o.warg; ok = src >= min_lane; break;
          case WARP_SHFL_DOWN: src = l + o.warg; ok = src <= max_lane; break;
          default: src = l ^ o.warg; ok = src <= max_lane; break;
        }
        if (!ok || src < 0 || src > 31) src = l;
        if (!(mask >> src & 1u)) {
          current = base + l;
          fatal("%s: shuffle at %s:%d reads lane %d, which is not in the mask 0x%08x (undefined value)",
                where(w, sizeof w), file, line, src, mask);
        }
        r = fibers[base + src].wvalue;
      } else if (kind == WARP_BALLOT) {
        r = ballot;
      } else if (kind == WARP_ANY) {
        r = (uint64_t)any;
      } else if (kind == WARP_ALL) {
        r = (uint64_t)all;
      }
      o.wresult = r;
    }
    for (int l = 0; l < 32; l++)
      if (mask >> l & 1u) {
        fibers[base + l].state = RUNNABLE;
        make_ready(base + l);
      }
    warp_waiting[warp] &= ~mask;
  }
  yield();
  return f.wresult;
}

// ---- shared memory ------------------------------------------------------------------------------------------------
void *shared_static(SharedSlot *slot, size_t bytes, size_t align, const char *name) {
  if (probing) fatal("shared memory used in probe mode (%s)", name);
  if (slot->block_generation == g.generation) return slot->p;
  size_t off = (g.arena_used + align - 1) / align * align;
  if (off + bytes > kStaticSmemLimit) {
    char w[512];
    fatal("%s: static __shared__ %s of %zu bytes takes the block's static shared memory to %zu bytes, past the "
          "48 KiB limit",
          where(w, sizeof w), name, bytes, off + bytes);
  }
  g.arena_used = off + bytes;
  if (g.arena_used > g.kernel->static_smem) {
    g.kernel->static_smem = g.arena_used;
    if (g.arena_used + g.dyn_bytes > (size_t)kOptinSmem) {
      char w[512];
      fatal("%s: %zu bytes of static plus %zu of dynamic shared memory exceed the %d a block may have",
            where(w, sizeof w), g.arena_used, g.dyn_bytes, (int)kOptinSmem);
    }
  }
  slot->block_generation = g.generation;
  slot->p = g.arena + off;
  memset(slot->p, 0xff, bytes);
  return slot->p;
}

void *shared_dynamic() { return g.dyn; }

// ---- launches -----------------------------------------------------------------------------------------------------
bool launch_check(KernelInfo *k, const LaunchSite &site, dim3 grid, dim3 block, size_t smem, cudaStream_t stream) {
  const unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
  const char *why = NULL;
  char buf[256];
  cudaError_t e = cudaErrorInvalidConfiguration;
  if (!stream_valid(stream)) {
    why = "the stream is not a live stream";
    e = cudaErrorInvalidResourceHandle;
  } else if (stream_device(stream) != current_device_id()) {
    snprintf(buf, sizeof buf, "the stream belongs to device %d but device %d is current", stream_device(stream),
             current_device_id());
    why = buf;
    e = cudaErrorInvalidResourceHandle;
  } else if (block.x == 0 || block.y == 0 || block.z == 0 || block.x > 1024 || block.y > 1024 || block.z > 64 ||
             threads > (unsigned long long)kMaxThreadsPerBlock) {
    snprintf(buf, sizeof buf, "block (%u,%u,%u): at most (1024,1024,64) and 1024 threads", block.x, block.y, block.z);
    why = buf;
  } else if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u || grid.y > 65535u ||
             grid.z > 65535u) {
    snprintf(buf, sizeof buf, "grid (%u,%u,%u): each at least 1, at most (2^31-1, 65535, 65535)", grid.x, grid.y,
             grid.z);
    why = buf;
  } else if (k->launch_bound > 0 && threads > (unsigned long long)k->launch_bound) {
    snprintf(buf, sizeof buf, "%llu threads per block, above the kernel's __launch_bounds__(%d)", threads,
             k->launch_bound);
    why = buf;
    e = cudaErrorLaunchOutOfResources;
  } else {
    const size_t limit = k->max_dynamic_smem >= 0 ? (size_t)k->max_dynamic_smem
                                                  : (size_t)kDefaultDynamicSmem - k->static_smem;
    if (smem > limit) {
      snprintf(buf, sizeof buf,
               "%zu bytes of dynamic shared memory, above the kernel's limit of %zu (raise it with "
               "cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize))",
               smem, limit);
      why = buf;
      e = cudaErrorInvalidValue;
    }
  }
  if (!why) return true;
  note("launch of %s at %s:%d refused: %s", site.kernel, site.file, site.line, why);
  set_error(e);
  return false;
}

void check_kernel_pointer(KernelInfo *k, const LaunchSite &site, int index, const void *p, size_t align) {
  if (!p) return;
  const Allocation *al = find_allocation(p);
  if (!al)
    fatal("launch of %s at %s:%d: argument %d is %p, which is not device memory (a host pointer, or a freed "
          "allocation): a kernel that dereferences it faults",
          site.kernel, site.file, site.line, index, p);
  // several emulated devices share one address space; on GPUs without peer access another device's memory faults
  if (al->kind == MEM_DEVICE && al->device != current_device_id())
    fatal("launch of %s at %s:%d: argument %d is %p, memory of device %d, but the kernel runs on device %d (no peer "
          "access: a kernel that dereferences it faults)",
          site.kernel, site.file, site.line, index, p, al->device, current_device_id());
  if ((uintptr_t)p % align)
    fatal("launch of %s at %s:%d: argument %d is %p, not aligned to its type's %zu bytes (a load faults with "
          "cudaErrorMisalignedAddress)",
          site.kernel, site.file, site.line, index, p, align);
}

void run_grid(KernelInfo *k, const LaunchSite &site, dim3 grid, dim3 block, size_t smem, void (*thread_main)(void *),
              void *ctx) {
  static bool init;
  if (!init) {
    init = true;
#if defined(__SANITIZE_ADDRESS__)
    stack_bytes = (size_t)env_int("ZT_EMU_STACK_KB", 1024) * 1024;
#else
    stack_bytes = (size_t)env_int("ZT_EMU_STACK_KB", 256) * 1024;
#endif
    rng_state = (uint64_t)env_int("ZT_EMU_SEED", 1) * 0x2545f4914f6cdd1dull;
    const char *mode = getenv("ZT_EMU_SCHEDULE");
    schedule_mode = !mode || !strcmp(mode, "mixed") ? 0 : !strcmp(mode, "rounds") ? 1 : !strcmp(mode, "warps") ? 2 : -1;
    if (schedule_mode < 0) fatal("ZT_EMU_SCHEDULE=%s: use mixed, rounds or warps", mode);
    g.arena = (unsigned char *)aligned_alloc(256, kStaticSmemLimit);
#ifdef ZT_EMU_ASM_SWITCH
    __asm__ volatile("fnstcw %0" : "=m"(*(uint16_t *)&fp_control[0]));
    __asm__ volatile("stmxcsr %0" : "=m"(*(uint32_t *)&fp_control[1]));
#endif
  }
  static bool in_grid;
  if (in_grid) fatal("launch of %s at %s:%d from inside a kernel: dynamic parallelism is not emulated", site.kernel,
                     site.file, site.line);
  in_grid = true;
  k->launches++;
  g.kernel = k;
  g.site = site;
  g.thread_main = thread_main;
  g.ctx = ctx;
  g.nthreads = (int)(block.x * block.y * block.z);
  g.nwarps = (g.nthreads + 31) / 32;
  g.dyn_bytes = smem;
  g.dyn = NULL;
  if (smem && posix_memalign((void **)&g.dyn, 128, smem)) fatal("out of host memory (%zu bytes of shared memory)", smem);
  ensure_fibers(g.nthreads);
  warp_waiting.assign(g.nwarps, 0);
  if ((int)ready.size() < g.nwarps) ready.resize(g.nwarps);
  cur_grid = grid;
  cur_block_dim = block;
  // blocks in a random order: a bijection i -> (a i + c) mod n with a odd and coprime to n
  const uint64_t nblocks = (uint64_t)grid.x * grid.y * grid.z;
  uint64_t a = 1, c = 0;
  if (nblocks > 1) {
    c = next_random() % nblocks;
    do a = (next_random() % nblocks) | 1; while (std::gcd(a, nblocks) != 1);
  }
  ThreadState *saved = cur;
  for (uint64_t i = 0; i < nblocks; i++) {
    const uint64_t b = (uint64_t)(((unsigned __int128)a * i + c) % nblocks);
    cur_block = uint3{(unsigned)(b % grid.x), (unsigned)(b / grid.x % grid.y), (unsigned)(b / grid.x / grid.y)};
    run_block();
  }
  cur = saved;
  free(g.dyn);
  g.dyn = NULL;
  in_grid = false;
}

}  // namespace zt_emu
