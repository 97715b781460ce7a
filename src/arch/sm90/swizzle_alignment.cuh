// Where a shared-memory region of 128-byte-swizzled tiles may start. The swizzle pattern
// repeats every 8 rows of 128 bytes and TMA and wgmma derive it from the address itself
// (bits 4-9), so a tile must start on a 1024-byte boundary. Dynamic shared memory is only
// promised 16-byte alignment: a kernel reserves kSwizzleAtomBytes of slack in its launch
// size and rounds its base up into it.
#pragma once

#include <cstdint>

namespace anvil::sm90 {

inline constexpr int kSwizzleAtomBytes = 1024;

// The first 1024-byte boundary at or after `raw`, as a T*.
template <class T = uint8_t>
__device__ __forceinline__ T* align_to_swizzle_atom(void* raw) {
  constexpr uintptr_t kMask = kSwizzleAtomBytes - 1;
  return reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(raw) + kMask) & ~kMask);
}

}  // namespace anvil::sm90
