#include "verify/device_probe.h"

#include <cuda_runtime.h>

namespace anvil::verify {

std::string sm90_unavailable_reason() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    std::string why = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
    // The static runtime reports a missing driver library as an old driver.
    if (e == cudaErrorInsufficientDriver) why += "; no usable NVIDIA driver (libcuda.so.1) here";
    return why;
  }
  if (count == 0) return "cudaGetDeviceCount reports no CUDA device";
  cudaDeviceProp prop{};
  e = cudaGetDeviceProperties(&prop, 0);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return std::string("cudaGetDeviceProperties failed: ") + cudaGetErrorName(e);
  }
  if (prop.major != 9 || prop.minor != 0) {
    return std::string("device 0 (") + prop.name + ") is sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
           ", anvil is built for sm_90a";
  }
  return std::string();
}

}  // namespace anvil::verify
