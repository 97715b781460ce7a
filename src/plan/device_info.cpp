// The current device's DeviceInfo (plan/launch.h): the one place the planner's inputs are
// asked of the CUDA runtime, once per device.
#include <cuda_runtime.h>

#include <mutex>

#include "host/validate.h"
#include "plan/launch.h"

namespace anvil::detail {
namespace {

DeviceInfo query(int device) {
  DeviceInfo info = DeviceInfo::h200();  // the clock and bandwidth figures: the card anvil is tuned on
  const auto attribute = [device](cudaDeviceAttr what, int fallback) {
    int value = 0;
    if (cudaDeviceGetAttribute(&value, what, device) != cudaSuccess || value <= 0) {
      cudaGetLastError();
      return fallback;
    }
    return value;
  };
  info.sm_count = device_sm_count();
  info.cc_major = attribute(cudaDevAttrComputeCapabilityMajor, info.cc_major);
  info.cc_minor = attribute(cudaDevAttrComputeCapabilityMinor, info.cc_minor);
  info.smem_per_block_bytes = attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, info.smem_per_block_bytes);
  info.smem_per_sm_bytes = attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, info.smem_per_sm_bytes);
  info.registers_per_sm = attribute(cudaDevAttrMaxRegistersPerMultiprocessor, info.registers_per_sm);
  info.l2_bytes = attribute(cudaDevAttrL2CacheSize, static_cast<int>(info.l2_bytes));
  fill_decode_tma_residency(&info);
  fill_decode_ldg_residency(&info);
  fill_fp8_decode_residency(&info);
  return info;
}

}  // namespace

const DeviceInfo& current_device_info() {
  constexpr int kMaxDevices = 64;
  static DeviceInfo infos[kMaxDevices];
  static std::once_flag once[kMaxDevices];
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kMaxDevices) {
    cudaGetLastError();
    // No device to key on: one CTA per SM in whole clusters, as the occupancy queries fall back to.
    static const DeviceInfo fallback = DeviceInfo::fallback(device_sm_count());
    return fallback;
  }
  std::call_once(once[device], [&] { infos[device] = query(device); });
  return infos[device];
}

}  // namespace anvil::detail
