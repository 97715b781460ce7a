// A GPU-side delay used ahead of each round of timed replays: while the GPU spins, the
// host queues the whole round, so the first timed replay does not start on an idle GPU
// waiting for the host's launch call.
#pragma once

#include <cuda_runtime_api.h>

namespace bench {

// Enqueues a one-thread kernel that busy-waits about `microseconds` of wall time.
cudaError_t launch_spin(cudaStream_t stream, double microseconds);

}  // namespace bench
