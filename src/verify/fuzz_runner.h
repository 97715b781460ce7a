// Runs one fuzz problem (fuzz_problem.h) on the GPU and judges it: random inputs at the
// problem's offsets and strides, D poisoned, the GEMM through the public API, the result
// against verify::reference_gemm with the documented tolerances, and D's padding, the
// elements before its base and a guard band after it checked to be untouched.
//
// Shared by anvil-fuzz, the GPU tier's fixed-seed subset and its concurrency test. Each
// runner owns its device buffers (grown, never shrunk, across problems) and works on one
// stream, so runners on different threads and streams are independent.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "anvil/gemm.h"
#include "verify/fuzz_problem.h"
#include "verify/verify.h"

namespace anvil::verify {

enum class FuzzResult { kPassed, kRefused, kFailed };

struct FuzzOutcome {
  FuzzResult result = FuzzResult::kFailed;
  std::string kernel;   // "auto (<what the dispatcher picks>)" or the kernel's name
  std::string message;  // why it was refused or failed
  Comparison comparison;
  // A CUDA error that leaves the context unusable (e.g. an illegal address): nothing
  // after it can be trusted, so a caller should stop.
  bool context_lost = false;
};

const char* to_string(FuzzResult result);

class FuzzRunner {
 public:
  explicit FuzzRunner(cudaStream_t stream) : stream_(stream) {}
  FuzzRunner(const FuzzRunner&) = delete;
  FuzzRunner& operator=(const FuzzRunner&) = delete;

  // Everything: prepare, launch, check. kernel: nullptr or "auto" for the dispatcher.
  FuzzOutcome run(const FuzzProblem& problem, const char* kernel);

  // The steps, for callers that launch one prepared problem many times.
  // Allocates and fills the operands, asks can_implement, prepares D and computes the
  // reference. Returns nothing when ready to launch, else the refusal or failure.
  std::optional<FuzzOutcome> prepare(const FuzzProblem& problem, const char* kernel);
  // Puts D back as it was before the GEMM: poison, or C's values when C is D.
  cudaError_t reset_output();
  // Enqueues the GEMM on the runner's stream; does not wait.
  Status launch(Diagnostic* diag);
  // Waits for the stream, then compares D with the reference and checks its padding.
  FuzzOutcome check();
  // The prepared problem's operands (D's pointer for tests that write past it).
  const GemmArgs& args() const { return args_; }

 private:
  // A device allocation that only grows, so a run of problems mostly reuses memory.
  struct Buffer {
    void* ptr = nullptr;
    size_t capacity = 0;
    Buffer() = default;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() { release(); }
    cudaError_t reserve(size_t bytes);
    void release();
  };

  FuzzOutcome outcome(FuzzResult result, std::string message) const;
  FuzzOutcome cuda_failure(const char* what, cudaError_t error) const;
  std::optional<FuzzOutcome> check_padding();
  // check_padding for allocations past the host-checked size: D's two ends, and the
  // padding inside its storage (d_gaps).
  std::optional<FuzzOutcome> check_ends();
  // Bytes of D's allocation before its base, and the offset of the first byte after its
  // last element.
  size_t d_head_bytes() const;
  size_t d_tail_begin() const;
  // The bytes of D's storage that are not output, as 2D regions of `height` runs of
  // `width` bytes, `pitch` apart, from `offset` in the allocation: the padding after each
  // line (row or column) up to the leading dimension, and the space between batches.
  struct Gap {
    size_t offset, pitch, width, height;
  };
  std::vector<Gap> d_gaps() const;
  // Copies those regions, one after another, to `dst` (sized by the caller; host or
  // device memory as `kind` says).
  cudaError_t copy_gaps(void* dst, cudaMemcpyKind kind) const;

  cudaStream_t stream_;
  FuzzProblem problem_;
  GemmDesc desc_;
  GemmArgs args_;
  std::string kernel_name_;
  std::string kernel_label_;
  Buffer a_, b_, c_, d_, bias_, ref_, workspace_;
  Buffer scale_a_, scale_b_;  // FP8 scales (desc.scales)
  // For D allocations past the host-checked size: the padding between its lines and
  // batches (d_gap_bytes_ of it) as the GEMM found it and as it left it, on the device.
  Buffer gaps_before_, gaps_after_;
  size_t d_gap_bytes_ = 0;
  int64_t d_storage_elements_ = 0;
  size_t d_allocation_bytes_ = 0;
  // D's whole allocation as the GEMM found it; empty when too large to check on the host.
  std::vector<unsigned char> d_before_;
  // For allocations too large for that: the bytes before D's base and after its last
  // element (the guard band), as the GEMM found them.
  std::vector<unsigned char> d_ends_before_;
};

}  // namespace anvil::verify
