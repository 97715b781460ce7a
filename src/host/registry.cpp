#include "host/registry.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#if defined(ANVIL_HAVE_SM100)
#include "kernels/sm100/sm100_api.h"
#endif

namespace anvil::detail {

extern const KernelInfo kLadder01Naive;
extern const KernelInfo kSm90Gemm;
extern const KernelInfo kSm90Decode;
extern const KernelInfo kSm90DecodeLdg;
extern const KernelInfo kSm90DecodeR64;
extern const KernelInfo kSm90DecodeLdgR64;
extern const KernelInfo kSm90Fp8;
extern const KernelInfo kSm90Fp8Decode;

namespace {

// The library's kernels: the fallback (the ladder's step 1) and the production kernels
// the dispatcher picks from.
const std::array kLibraryKernels = {
    &kLadder01Naive, &kSm90Gemm, &kSm90Decode, &kSm90DecodeLdg, &kSm90DecodeR64, &kSm90DecodeLdgR64, &kSm90Fp8, &kSm90Fp8Decode,
#if defined(ANVIL_HAVE_SM100)
    // Blackwell (docs/blackwell.md): what dispatch runs on an sm_100 device.
    &kSm100Gemm, &kSm100GemmStatic, &kSm100Gemm1Cta,
#endif
};

bool is_ladder_step(const KernelInfo* k) { return std::strncmp(k->name, "ladder-", 7) == 0; }

// The named table: the library's kernels until register_kernels adds others. A function's
// static, so that it exists before any static initializer of a caller runs.
std::vector<const KernelInfo*>& table() {
  static std::vector<const KernelInfo*> kernels(kLibraryKernels.begin(), kLibraryKernels.end());
  return kernels;
}

}  // namespace

std::span<const KernelInfo* const> library_kernels() { return kLibraryKernels; }

std::span<const KernelInfo* const> all_kernels() { return table(); }

const KernelInfo* find_kernel(const char* name) {
  for (const KernelInfo* k : table()) {
    if (std::strcmp(k->name, name) == 0) return k;
  }
  return nullptr;
}

bool register_kernels(std::span<const KernelInfo* const> kernels) {
  std::vector<const KernelInfo*> merged = table();
  for (const KernelInfo* k : kernels) {
    if (std::find(merged.begin(), merged.end(), k) != merged.end()) continue;
    for (const KernelInfo* added : merged) {
      if (std::strcmp(added->name, k->name) == 0) return false;
    }
    merged.push_back(k);
  }
  // Ladder steps first, in the order given (the library's step 1, then the steps added),
  // then everything else in the order it arrived: the listing reads as the ladder.
  std::stable_partition(merged.begin(), merged.end(), is_ladder_step);
  table() = std::move(merged);
  return true;
}

}  // namespace anvil::detail
