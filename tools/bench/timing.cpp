// The shared timing pieces (timing.h).
#include "timing.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "check.h"

namespace bench {

int rotating_set_count(size_t set_bytes, size_t l2_bytes, int max_sets) {
  int64_t r = int64_t(3 * l2_bytes / std::max<size_t>(set_bytes, 1)) + 1;
  return static_cast<int>(std::min<int64_t>(std::max<int64_t>(r, 2), max_sets));
}

int64_t round_to_sets(int64_t n, int sets) { return (n + sets - 1) / sets * sets; }

int choose_iters(double est_us, double min_replay_ms, int max_iters, int sets) {
  int64_t cap = std::max<int64_t>(sets, int64_t(max_iters) / sets * sets);
  double want = est_us > 0 ? min_replay_ms * 1000.0 / est_us : double(cap);
  int64_t it = round_to_sets(static_cast<int64_t>(std::ceil(std::min(want, 1e9))), sets);
  return static_cast<int>(std::clamp<int64_t>(it, sets, cap));
}

bool capture_graph(cudaStream_t stream, int iters, const LaunchFn& launch, cudaGraphExec_t* exec, std::string& why) {
  *exec = nullptr;
  BENCH_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  std::string err;
  bool ok = true;
  for (int i = 0; i < iters && ok; ++i) ok = launch(i, err);
  cudaGraph_t graph = nullptr;
  cudaError_t e = cudaStreamEndCapture(stream, &graph);
  if (!ok || e != cudaSuccess || graph == nullptr) {
    why = !ok ? err : std::string("cudaStreamEndCapture: ") + cudaGetErrorName(e);
    if (graph) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();  // capture errors are not sticky; clear for the fallback
    return false;
  }
  e = cudaGraphInstantiate(exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  if (e != cudaSuccess) {
    why = std::string("cudaGraphInstantiate: ") + cudaGetErrorName(e);
    *exec = nullptr;
    (void)cudaGetLastError();
    return false;
  }
  return true;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

}  // namespace bench
