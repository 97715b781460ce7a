// The Blackwell GEMM's production configurations, and the dispatch hooks.
#include <cuda_runtime.h>

#include <atomic>

#include "kernels/sm100/launch.h"
#include "kernels/sm100/sm100_api.h"

namespace anvil::detail {

// Asked on every gemm() built with sm_100 support, so cached per device (a device's compute
// capability never changes): one cudaGetDevice per call after the first.
int device_compute_capability() {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cached[kMaxDevices] = {};
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0) {
    cudaGetLastError();
    return 0;
  }
  if (device < kMaxDevices) {
    const int known = cached[device].load(std::memory_order_relaxed);
    if (known != 0) return known;
  }
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  const int capability = major * 10 + minor;
  if (device < kMaxDevices) cached[device].store(capability, std::memory_order_relaxed);
  return capability;
}

namespace {

// The pair's stage is 32 KiB per CTA (seed 003's arithmetic, budget.h): the deepest ring
// that fits next to the epilogue's staging. The single CTA holds all 256 B columns, 48 KiB
// a stage: four.
using PairClc = Sm100Config<Sm100Spec{.cta_group = 2, .stages = sm100::budget::kPairGemmStages,
                                      .schedule = Sm100Schedule::kClc}>;
using PairStatic = Sm100Config<Sm100Spec{.cta_group = 2, .stages = sm100::budget::kPairGemmStages,
                                         .schedule = Sm100Schedule::kStaticPersistent}>;
using SingleClc = Sm100Config<Sm100Spec{.cta_group = 1, .stages = 4, .schedule = Sm100Schedule::kClc}>;

constexpr char kPairClcName[] = "sm100-gemm";
constexpr char kPairStaticName[] = "sm100-gemm-static";
constexpr char kSingleClcName[] = "sm100-gemm-1cta";

}  // namespace

const KernelInfo kSm100Gemm = Sm100Kernel<PairClc, kPairClcName>::info(
    "Blackwell: CTA-pair tcgen05 MMA (256x256 tiles), TMEM double-buffered accumulators, CLC scheduling");
const KernelInfo kSm100GemmStatic = Sm100Kernel<PairStatic, kPairStaticName>::info(
    "Blackwell: sm100-gemm with the static persistent schedule instead of CLC");
const KernelInfo kSm100Gemm1Cta = Sm100Kernel<SingleClc, kSingleClcName>::info(
    "Blackwell: single-CTA tcgen05 MMA (128x256 tiles), for M up to 128");

namespace {
// M <= 128 goes to the single CTA, where a 256-row tile would be more than half padding;
// in batch-invariant mode every M goes to the pair kernel, so that no row's result
// depends on which kernel the other rows chose.
const KernelInfo& sm100_kernel_for_shape(const GemmDesc& desc) {
  return desc.m <= 128 && !desc.batch_invariant ? kSm100Gemm1Cta : kSm100Gemm;
}
}  // namespace

bool sm100_supported(const GemmDesc& desc) {
  const KernelInfo& k = sm100_kernel_for_shape(desc);
  return k.check(desc, nullptr, nullptr) == Status::kSuccess;
}

Status launch_sm100(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  const KernelInfo& k = sm100_kernel_for_shape(desc);
  const Status s = k.check(desc, &args, diag);
  if (s != Status::kSuccess) return s;
  return k.launch(desc, args, diag);
}

}  // namespace anvil::detail
