#include "spin.h"

namespace bench {

namespace {
// %globaltimer counts wall-clock nanoseconds, so the delay does not depend on the SM
// clock, which is exactly what varies under the power cap.
__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}
}  // namespace

cudaError_t launch_spin(cudaStream_t stream, double microseconds) {
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(microseconds * 1000.0));
  return cudaGetLastError();
}

}  // namespace bench
