// Shared by the emulator's sources: the device-memory registry, stream validation, the sticky error, settings.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "zt_emu/device.h"

namespace zt_emu {

enum MemKind { MEM_DEVICE, MEM_PINNED };
struct Allocation {
  uintptr_t base;
  size_t size;
  MemKind kind;
  int device;  // current when it was allocated (one address space; the device tells whose memory it is)
  bool guarded;  // ZT_EMU_HOST_GUARD: a mapping of its own, inaccessible outside DeviceAccess windows
};
// The live allocation holding address p (base <= p <= base + size: a pointer one past the end counts, as a
// kernel may receive one for an empty range), or NULL.
const Allocation *find_allocation(const void *p);
// True when [p, p + bytes) lies inside one live allocation of the kind (MEM_PINNED accepts device memory too).
bool in_allocation(const void *p, size_t bytes, MemKind kind);
// Why [p, p + bytes) is not device memory, for a message ("" when it is).
const char *describe_range(const void *p, size_t bytes, char *buf, size_t len);

bool stream_valid(cudaStream_t s);
int stream_device(cudaStream_t s);  // the device a (valid) stream belongs to; the default streams: the current one
int device_count();                 // ZT_EMU_DEVICES (default 1)
int current_device_id();            // cudaSetDevice's, 0 until then
cudaError_t set_error(cudaError_t e);  // records e as the last error (when not cudaSuccess) and returns it
int env_int(const char *name, int fallback);

// The emulated device's limits (an sm_90 part, H100's numbers).
enum : int {
  kMaxThreadsPerBlock = 1024,
  kStaticSmemLimit = 48 * 1024,
  kDefaultDynamicSmem = 48 * 1024,
  kOptinSmem = 227 * 1024,
  kMultiProcessors = 132,
};

void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));  // "cuda emulator: ..." on stderr

}  // namespace zt_emu
