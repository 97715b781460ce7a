// The timing method anvil-bench and anvil-tune share: rotating input sets larger than L2,
// launches captured back to back into a CUDA graph, and the median of timed replays.
// anvil-bench's main.cpp documents the protocol and its reasons.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace bench {

// Input sets to rotate through so that no launch finds its operands in L2: enough for
// their total to exceed 3x L2, at least 2, then at most max_sets.
int rotating_set_count(size_t set_bytes, size_t l2_bytes, int max_sets);

// Launch counts are multiples of the set count, so every replay starts on set 0 after set
// R-1 was last touched: the first launch of a replay finds no operand in L2 either.
int64_t round_to_sets(int64_t n, int sets);

// Launches per replay: enough for one replay to last min_replay_ms at est_us per launch,
// a multiple of sets, at most max_iters (rounded down to sets, at least sets).
int choose_iters(double est_us, double min_replay_ms, int max_iters, int sets);

// One launch: i is its index in the replay; false (with err) when it was refused.
using LaunchFn = std::function<bool(int i, std::string& err)>;

// Captures iters launches into an executable graph. False with a reason when a launch was
// refused or the stream cannot be captured; the stream is left out of capture mode.
bool capture_graph(cudaStream_t stream, int iters, const LaunchFn& launch, cudaGraphExec_t* exec, std::string& why);

double median_of(std::vector<double> v);

}  // namespace bench
