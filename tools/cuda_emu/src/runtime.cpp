// The CUDA runtime API on the host: ZT_EMU_DEVICES emulated devices (default 1; sm_90 with H100's limits, each with
// its own memory budget), "device" memory from the host heap tracked in a registry that records the device current
// at allocation, streams and events that complete at once (every operation runs when it is issued, so a stream is
// always idle), and the checks a GPU makes or should make: a copy direction that does not match the pointers, a range
// past the end of an allocation, a freed or foreign pointer, a destroyed stream.
#include <execinfo.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <map>
#include <vector>

#include "internal.h"

namespace zt_emu {
namespace {

std::map<uintptr_t, Allocation> allocations;
// bytes of device memory in use, per device (one address space, separate budgets: each GPU of a node has its own)
std::vector<size_t> device_used_by;
cudaError_t last_error = cudaSuccess;
int current_device;

size_t device_total() { return (size_t)env_int("ZT_EMU_DEVICE_MEM_GIB", 80) << 30; }
size_t &device_used(int device) {
  if ((size_t)device >= device_used_by.size()) device_used_by.resize((size_t)device + 1);
  return device_used_by[(size_t)device];
}

enum : uint32_t { kStreamMagic = 0x5354524du, kEventMagic = 0x45564e54u, kDead = 0xdeadu };
}  // namespace
}  // namespace zt_emu

struct zt_emu_stream {
  uint32_t magic;
  unsigned flags;
  int device;  // current when it was created: kernels may only be launched into it while that device is current
};
struct zt_emu_event {
  uint32_t magic;
  unsigned flags;
  bool recorded;
  double t;  // seconds
};
struct zt_emu_mempool {
  int device;
  uint64_t release_threshold;
};

namespace zt_emu {

int device_count() { return env_int("ZT_EMU_DEVICES", 1); }
int current_device_id() { return current_device; }

cudaError_t set_error(cudaError_t e) {
  if (e != cudaSuccess) last_error = e;
  return e;
}

const Allocation *find_allocation(const void *p) {
  const uintptr_t a = (uintptr_t)p;
  auto it = allocations.upper_bound(a);
  if (it == allocations.begin()) return NULL;
  --it;
  return a <= it->second.base + it->second.size ? &it->second : NULL;
}

bool in_allocation(const void *p, size_t bytes, MemKind kind) {
  const Allocation *al = find_allocation(p);
  if (!al || (kind == MEM_DEVICE && al->kind != MEM_DEVICE)) return false;
  return (uintptr_t)p - al->base + bytes <= al->size;
}

const char *describe_range(const void *p, size_t bytes, char *buf, size_t len) {
  const Allocation *al = find_allocation(p);
  if (!al)
    snprintf(buf, len, "%p is not in any device allocation (a host pointer, or freed)", p);
  else if ((uintptr_t)p - al->base + bytes > al->size)
    snprintf(buf, len, "[%p, +%zu bytes) runs %zu bytes past the end of its allocation of %zu bytes at %p", p, bytes,
             (size_t)((uintptr_t)p - al->base + bytes - al->size), al->size, (void *)al->base);
  else
    snprintf(buf, len, "%s", "");
  return buf;
}

bool stream_valid(cudaStream_t s) {
  if (s == NULL || s == cudaStreamLegacy || s == cudaStreamPerThread) return true;
  return s->magic == kStreamMagic;  // destroyed streams are kept (marked dead) so this read stays valid
}

int stream_device(cudaStream_t s) {
  // the default streams are per device: whichever is current
  return s == NULL || s == cudaStreamLegacy || s == cudaStreamPerThread ? current_device : s->device;
}

namespace {

// ---- ZT_EMU_HOST_GUARD: device memory the host cannot touch outside DeviceAccess windows ----------------------------
int access_depth;      // open DeviceAccess windows
size_t guarded_count;  // live guarded allocations (none: the windows cost nothing)

size_t mapped_bytes(size_t bytes) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return (bytes + page - 1) / page * page;
}

void protect_all(int prot) {
  if (guarded_count == 0) return;
  for (auto &kv : allocations)
    if (kv.second.guarded && mprotect((void *)kv.second.base, mapped_bytes(kv.second.size), prot))
      note("mprotect of the device allocation at %p failed", (void *)kv.second.base);
}

// A fault inside a guarded allocation outside a window is host code touching device memory: say so, with the host
// stack, then fault again with the default action (the process ends with SIGSEGV). Other faults go straight there.
void on_segv(int, siginfo_t *si, void *) {
  const uintptr_t a = (uintptr_t)si->si_addr;
  auto it = allocations.upper_bound(a);
  if (access_depth == 0 && it != allocations.begin()) {
    --it;
    const Allocation &al = it->second;
    if (al.guarded && a < al.base + mapped_bytes(al.size)) {
      char msg[400];
      const int n = snprintf(msg, sizeof msg, "cuda emulator: host code accessed device memory at %p, %zu bytes into the "
                             "device allocation of %zu bytes at %p (device %d): copy it with cudaMemcpy first "
                             "(ZT_EMU_HOST_GUARD=1); the host stack:\n", (void *)a, (size_t)(a - al.base), al.size,
                             (void *)al.base, al.device);
      if (write(2, msg, (size_t)n) < 0) {}
      void *frames[48];
      backtrace_symbols_fd(frames, backtrace(frames, 48), 2);
    }
  }
  signal(SIGSEGV, SIG_DFL);
}

bool host_guard() {
  static bool installed = false;
  if (!env_int("ZT_EMU_HOST_GUARD", 0)) return false;
  if (!installed) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    installed = true;
  }
  return true;
}

void *allocate(size_t bytes, MemKind kind) {
  void *p = NULL;
  const bool guarded = kind == MEM_DEVICE && host_guard();
  if (guarded) {  // a mapping of its own (page-aligned, so also cudaMalloc's 256 bytes), inaccessible between windows
    p = mmap(NULL, mapped_bytes(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
  } else if (posix_memalign(&p, 256, bytes)) {
    return NULL;  // cudaMalloc's alignment
  }
  if (env_int("ZT_EMU_POISON_ALLOC", 1)) memset(p, 0xff, bytes);  // fresh device memory reads as NaN
  if (guarded && access_depth == 0) mprotect(p, mapped_bytes(bytes), PROT_NONE);
  guarded_count += guarded;
  allocations[(uintptr_t)p] = Allocation{(uintptr_t)p, bytes, kind, current_device, guarded};
  if (kind == MEM_DEVICE) device_used(current_device) += bytes;
  return p;
}

cudaError_t release(void *p, MemKind kind, const char *op) {
  if (!p) return cudaSuccess;
  auto it = allocations.find((uintptr_t)p);
  if (it == allocations.end() || it->second.kind != kind) {
    const Allocation *al = find_allocation(p);
    if (al)
      note("%s(%p): not the start of an allocation (it lies %zu bytes into the one at %p)", op, p,
           (size_t)((uintptr_t)p - al->base), (void *)al->base);
    else
      note("%s(%p): not a live %s allocation (freed twice, or never allocated here)", op, p,
           kind == MEM_DEVICE ? "device" : "pinned host");
    return set_error(cudaErrorInvalidValue);
  }
  if (kind == MEM_DEVICE) device_used(it->second.device) -= it->second.size;
  if (it->second.guarded) {  // unmapped: a use after free faults
    munmap(p, mapped_bytes(it->second.size));
    guarded_count--;
    allocations.erase(it);
    return cudaSuccess;
  }
  memset(p, 0xff, it->second.size);  // a use after free reads NaN (and ASan builds report it)
  allocations.erase(it);
  free(p);
  return cudaSuccess;
}

double now() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

cudaError_t check_device(int device) {
  return device >= 0 && device < device_count() ? cudaSuccess : set_error(cudaErrorInvalidDevice);
}

// The copy's pointers against its direction: device memory where the kind says device, host memory (pageable or
// pinned) where it says host, every range inside its allocation.
cudaError_t check_copy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, const char *op) {
  if (bytes == 0) return cudaSuccess;
  if ((int)kind < 0 || (int)kind > 4) return set_error(cudaErrorInvalidMemcpyDirection);
  const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  const void *ends[2] = {dst, src};
  const bool want_dev[2] = {dst_dev, src_dev};
  const char *names[2] = {"destination", "source"};
  for (int i = 0; i < 2; i++) {
    const Allocation *al = find_allocation(ends[i]);
    if (al && (uintptr_t)ends[i] == al->base + al->size) al = NULL;  // one past the end: not this allocation
    const bool is_dev = al && al->kind == MEM_DEVICE;
    char buf[256];
    if (kind != cudaMemcpyDefault && want_dev[i] && !in_allocation(ends[i], bytes, MEM_DEVICE)) {
      note("%s of %zu bytes: the %s %s", op, bytes, names[i], describe_range(ends[i], bytes, buf, sizeof buf));
      return set_error(cudaErrorInvalidValue);
    }
    if (kind != cudaMemcpyDefault && !want_dev[i] && is_dev) {
      note("%s of %zu bytes, kind %d: the %s %p is device memory but the kind says host", op, bytes, (int)kind,
           names[i], ends[i]);
      return set_error(cudaErrorInvalidMemcpyDirection);
    }
    if (al && !in_allocation(ends[i], bytes, MEM_PINNED)) {
      note("%s of %zu bytes: the %s %s", op, bytes, names[i], describe_range(ends[i], bytes, buf, sizeof buf));
      return set_error(cudaErrorInvalidValue);
    }
  }
  return cudaSuccess;
}

}  // namespace

DeviceAccess::DeviceAccess() {
  if (access_depth++ == 0) protect_all(PROT_READ | PROT_WRITE);
}
DeviceAccess::~DeviceAccess() {
  if (--access_depth == 0) protect_all(PROT_NONE);
}

cudaError_t func_set_attribute(KernelInfo *k, cudaFuncAttribute attr, int value) {
  switch (attr) {
    case cudaFuncAttributeMaxDynamicSharedMemorySize:
      if (value < 0 || (size_t)value + k->static_smem > (size_t)kOptinSmem) {
        note("cudaFuncSetAttribute(%s, MaxDynamicSharedMemorySize, %d): above the %d bytes a block may have", k->signature,
             value, (int)kOptinSmem);
        return set_error(cudaErrorInvalidValue);
      }
      k->max_dynamic_smem = value;
      return cudaSuccess;
    case cudaFuncAttributePreferredSharedMemoryCarveout:
      if (value < -1 || value > 100) return set_error(cudaErrorInvalidValue);
      k->carveout = value;
      return cudaSuccess;
  }
  return set_error(cudaErrorInvalidValue);
}

cudaError_t func_get_attributes(KernelInfo *k, cudaFuncAttributes *a) {
  if (!a) return set_error(cudaErrorInvalidValue);
  memset(a, 0, sizeof *a);
  // the static shared memory a block of this kernel has used so far (0 before its first launch): the emulator
  // learns it at run time, where nvcc knows it at compile time
  a->sharedSizeBytes = k->static_smem;
  a->maxThreadsPerBlock = k->launch_bound > 0 ? k->launch_bound : kMaxThreadsPerBlock;
  a->numRegs = 32;
  a->ptxVersion = a->binaryVersion = 90;
  a->maxDynamicSharedSizeBytes = k->max_dynamic_smem >= 0 ? k->max_dynamic_smem
                                                          : kDefaultDynamicSmem - (int)k->static_smem;
  a->preferredShmemCarveout = k->carveout;
  return cudaSuccess;
}

}  // namespace zt_emu

using namespace zt_emu;

extern "C" {

const char *cudaGetErrorName(cudaError_t e) {
  switch (e) {
#define N(x) \
  case x: return #x;
    N(cudaSuccess) N(cudaErrorInvalidValue) N(cudaErrorMemoryAllocation) N(cudaErrorInitializationError)
    N(cudaErrorInvalidConfiguration) N(cudaErrorInvalidPitchValue) N(cudaErrorInvalidSymbol)
    N(cudaErrorInvalidHostPointer) N(cudaErrorInvalidDevicePointer) N(cudaErrorInvalidMemcpyDirection)
    N(cudaErrorInvalidDeviceFunction) N(cudaErrorNoDevice) N(cudaErrorInvalidDevice)
    N(cudaErrorInvalidResourceHandle) N(cudaErrorNotReady) N(cudaErrorIllegalAddress)
    N(cudaErrorLaunchOutOfResources) N(cudaErrorAssert) N(cudaErrorMisalignedAddress) N(cudaErrorLaunchFailure)
    N(cudaErrorNotSupported) N(cudaErrorUnknown)
#undef N
  }
  return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorMisalignedAddress: return "misaligned address";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    default: return cudaGetErrorName(e);
  }
}

cudaError_t cudaGetLastError(void) {
  const cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError(void) { return last_error; }

cudaError_t cudaGetDeviceCount(int *count) {
  if (!count) return set_error(cudaErrorInvalidValue);
  *count = device_count();
  return *count > 0 ? cudaSuccess : set_error(cudaErrorNoDevice);
}
cudaError_t cudaGetDevice(int *device) {
  if (!device) return set_error(cudaErrorInvalidValue);
  *device = current_device;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  if (check_device(device)) return cudaErrorInvalidDevice;
  current_device = device;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int device) {
  if (!p) return set_error(cudaErrorInvalidValue);
  if (check_device(device)) return cudaErrorInvalidDevice;
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "zerotron CUDA emulator on the CPU (H100 limits)");
  p->totalGlobalMem = device_total();
  p->sharedMemPerBlock = kDefaultDynamicSmem;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = kMaxThreadsPerBlock;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024, p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647, p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->totalConstMem = 65536;
  p->major = 9, p->minor = 0;
  p->multiProcessorCount = kMultiProcessors;
  p->l2CacheSize = 50 << 20;
  p->maxThreadsPerMultiProcessor = 2048;
  p->sharedMemPerMultiprocessor = 228 * 1024;
  p->sharedMemPerBlockOptin = kOptinSmem;
  p->memoryBusWidth = 5120;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr attr, int device) {
  if (!v) return set_error(cudaErrorInvalidValue);
  if (check_device(device)) return cudaErrorInvalidDevice;
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *v = kMaxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: case cudaDevAttrMaxBlockDimY: *v = 1024; break;
    case cudaDevAttrMaxBlockDimZ: *v = 64; break;
    case cudaDevAttrMaxGridDimX: *v = 2147483647; break;
    case cudaDevAttrMaxGridDimY: case cudaDevAttrMaxGridDimZ: *v = 65535; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *v = kDefaultDynamicSmem; break;
    case cudaDevAttrWarpSize: *v = 32; break;
    case cudaDevAttrMultiProcessorCount: *v = kMultiProcessors; break;
    case cudaDevAttrL2CacheSize: *v = 50 << 20; break;
    case cudaDevAttrComputeCapabilityMajor: *v = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *v = 0; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = 228 * 1024; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = kOptinSmem; break;
    default: return set_error(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

// ---- streams and events: every operation completes when it is issued --------------------------------------------
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
  if (!s || (flags & ~1u)) return set_error(cudaErrorInvalidValue);
  *s = new zt_emu_stream{kStreamMagic, flags, current_device};
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  if (!s || s == cudaStreamLegacy || s == cudaStreamPerThread || !stream_valid(s))
    return set_error(cudaErrorInvalidResourceHandle);
  s->magic = kDead;  // kept, so a later use is caught rather than read from freed memory
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  return stream_valid(s) ? cudaSuccess : set_error(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaStreamQuery(cudaStream_t s) { return cudaStreamSynchronize(s); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags) {
  if (!e || (flags & ~7u)) return set_error(cudaErrorInvalidValue);
  *e = new zt_emu_event{kEventMagic, flags, false, 0.0};
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }
static bool event_valid(cudaEvent_t e) { return e && e->magic == kEventMagic; }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  if (!event_valid(e)) return set_error(cudaErrorInvalidResourceHandle);
  e->magic = kDead;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  if (!event_valid(e) || !stream_valid(s)) return set_error(cudaErrorInvalidResourceHandle);
  e->recorded = true;
  e->t = now();
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  return event_valid(e) ? cudaSuccess : set_error(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaEventQuery(cudaEvent_t e) { return cudaEventSynchronize(e); }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
  if (!ms) return set_error(cudaErrorInvalidValue);
  if (!event_valid(a) || !event_valid(b)) return set_error(cudaErrorInvalidResourceHandle);
  if (!a->recorded || !b->recorded || ((a->flags | b->flags) & cudaEventDisableTiming))
    return set_error(cudaErrorInvalidResourceHandle);
  *ms = (float)((b->t - a->t) * 1e3);
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags) {
  if (!stream_valid(s) || !event_valid(e)) return set_error(cudaErrorInvalidResourceHandle);
  return cudaSuccess;
}

// ---- memory -------------------------------------------------------------------------------------------------------
cudaError_t cudaMalloc(void **p, size_t bytes) {
  if (!p) return set_error(cudaErrorInvalidValue);
  *p = NULL;
  if (bytes == 0) return cudaSuccess;
  if (bytes > device_total() - device_used(current_device)) return set_error(cudaErrorMemoryAllocation);
  *p = allocate(bytes, MEM_DEVICE);
  return *p ? cudaSuccess : set_error(cudaErrorMemoryAllocation);
}
cudaError_t cudaFree(void *p) { return release(p, MEM_DEVICE, "cudaFree"); }
cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s) {
  if (!stream_valid(s)) return set_error(cudaErrorInvalidResourceHandle);
  return cudaMalloc(p, bytes);
}
cudaError_t cudaFreeAsync(void *p, cudaStream_t s) {
  if (!stream_valid(s)) return set_error(cudaErrorInvalidResourceHandle);
  return release(p, MEM_DEVICE, "cudaFreeAsync");
}
cudaError_t cudaMallocHost(void **p, size_t bytes) {
  if (!p) return set_error(cudaErrorInvalidValue);
  *p = bytes ? allocate(bytes, MEM_PINNED) : NULL;
  return *p || !bytes ? cudaSuccess : set_error(cudaErrorMemoryAllocation);
}
cudaError_t cudaFreeHost(void *p) { return release(p, MEM_PINNED, "cudaFreeHost"); }
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
  if (!free_bytes || !total_bytes) return set_error(cudaErrorInvalidValue);
  *total_bytes = device_total();
  *free_bytes = device_total() - device_used(current_device);
  return cudaSuccess;
}
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *p) {
  if (!a) return set_error(cudaErrorInvalidValue);
  const Allocation *al = find_allocation(p);
  a->device = al ? al->device : current_device;  // device memory: where it lives; pinned: current at allocation
  a->type = !al ? cudaMemoryTypeUnregistered : al->kind == MEM_DEVICE ? cudaMemoryTypeDevice : cudaMemoryTypeHost;
  a->devicePointer = al ? (void *)p : NULL;
  a->hostPointer = !al || al->kind == MEM_PINNED ? (void *)p : NULL;
  return cudaSuccess;
}

// one default pool per device, created on first use and never freed (as the driver's)
static std::vector<zt_emu_mempool *> default_pools;
static bool pool_valid(cudaMemPool_t pool) {
  for (zt_emu_mempool *p : default_pools)
    if (p == pool) return true;
  return false;
}
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int device) {
  if (!pool) return set_error(cudaErrorInvalidValue);
  if (check_device(device)) return cudaErrorInvalidDevice;
  if ((size_t)device >= default_pools.size()) default_pools.resize((size_t)device + 1, NULL);
  if (!default_pools[(size_t)device]) default_pools[(size_t)device] = new zt_emu_mempool{device, 0};
  *pool = default_pools[(size_t)device];
  return cudaSuccess;
}
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void *value) {
  if (!pool_valid(pool) || !value) return set_error(cudaErrorInvalidValue);
  switch (attr) {
    case cudaMemPoolAttrReleaseThreshold: memcpy(&pool->release_threshold, value, 8); return cudaSuccess;
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies: return cudaSuccess;  // int flags: no effect here
    case cudaMemPoolAttrReservedMemHigh:
    case cudaMemPoolAttrUsedMemHigh:
      if (*(uint64_t *)value != 0) return set_error(cudaErrorInvalidValue);  // may only be reset to 0
      return cudaSuccess;
    default: return set_error(cudaErrorInvalidValue);  // read-only
  }
}
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void *value) {
  if (!pool_valid(pool) || !value) return set_error(cudaErrorInvalidValue);
  uint64_t v = 0;
  switch (attr) {
    case cudaMemPoolAttrReleaseThreshold: v = pool->release_threshold; break;
    case cudaMemPoolAttrReservedMemCurrent: case cudaMemPoolAttrReservedMemHigh:
    case cudaMemPoolAttrUsedMemCurrent: case cudaMemPoolAttrUsedMemHigh: v = device_used(pool->device); break;
    default: *(int *)value = 1; return cudaSuccess;
  }
  memcpy(value, &v, 8);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
  if (!stream_valid(s)) return set_error(cudaErrorInvalidResourceHandle);
  if (bytes && (!dst || !src)) return set_error(cudaErrorInvalidValue);
  if (cudaError_t e = check_copy(dst, src, bytes, kind, "cudaMemcpy")) return e;
  const DeviceAccess access;
  if (bytes) memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
  return cudaMemcpyAsync(dst, src, bytes, kind, NULL);
}
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s) {
  if (!stream_valid(s)) return set_error(cudaErrorInvalidResourceHandle);
  if (bytes == 0) return cudaSuccess;
  if (!in_allocation(p, bytes, MEM_DEVICE)) {
    char buf[256];
    note("cudaMemset of %zu bytes: %s", bytes, describe_range(p, bytes, buf, sizeof buf));
    return set_error(cudaErrorInvalidValue);
  }
  const DeviceAccess access;
  memset(p, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemset(void *p, int value, size_t bytes) { return cudaMemsetAsync(p, value, bytes, NULL); }

}  // extern "C"
