#include "verify/fuzz_runner.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

namespace anvil::verify {
namespace {

// Elements after D that a kernel must not write: catches stores past the last batch.
constexpr int64_t kGuardElements = 256;
// D allocations up to this size are copied to the host to check every padding element;
// larger ones before their base, in the guard band after their last element and in the
// padding between their lines and batches, which is snapshotted on the device and
// compared this many bytes at a time.
constexpr size_t kMaxHostCheckedBytes = size_t{32} << 20;

// Allocation sizes are rounded up so that slightly growing problems reuse the buffer.
constexpr size_t kAllocationGranule = size_t{2} << 20;

bool wants_dispatcher(const char* kernel) { return kernel == nullptr || std::strcmp(kernel, "auto") == 0; }

unsigned char* at_element(void* base, DataType dtype, int64_t offset) {
  return static_cast<unsigned char*>(base) + offset * static_cast<int64_t>(dtype_bytes(dtype));
}

// Whether the CUDA context survived an error. One that is not sticky (an allocation that
// did not fit, an invalid launch configuration) is cleared by reading it, and the device
// then synchronizes cleanly; a sticky one (an illegal address, a kernel fault) comes back
// from every later call.
bool context_survives() {
  cudaGetLastError();
  return cudaDeviceSynchronize() == cudaSuccess && cudaGetLastError() == cudaSuccess;
}

// Counts the bytes that differ between two device buffers, copying them to the host a
// bounded chunk at a time.
cudaError_t count_differing_bytes(const void* a, const void* b, size_t bytes, cudaStream_t stream, int64_t* differing) {
  *differing = 0;
  std::vector<unsigned char> host_a(std::min(bytes, kMaxHostCheckedBytes)), host_b(host_a.size());
  for (size_t done = 0; done < bytes; done += host_a.size()) {
    const size_t chunk = std::min(host_a.size(), bytes - done);
    cudaError_t e = cudaMemcpyAsync(host_a.data(), static_cast<const unsigned char*>(a) + done, chunk,
                                    cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess) {
      e = cudaMemcpyAsync(host_b.data(), static_cast<const unsigned char*>(b) + done, chunk, cudaMemcpyDeviceToHost,
                          stream);
    }
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) return e;
    for (size_t i = 0; i < chunk; ++i) *differing += host_a[i] != host_b[i];
  }
  return cudaSuccess;
}

}  // namespace

const char* to_string(FuzzResult result) {
  switch (result) {
    case FuzzResult::kPassed: return "passed";
    case FuzzResult::kRefused: return "refused";
    case FuzzResult::kFailed: return "failed";
  }
  return "?";
}

cudaError_t FuzzRunner::Buffer::reserve(size_t bytes) {
  if (bytes <= capacity) return cudaSuccess;
  release();
  const size_t rounded = (bytes + kAllocationGranule - 1) / kAllocationGranule * kAllocationGranule;
  const cudaError_t e = cudaMalloc(&ptr, rounded);
  if (e == cudaSuccess) capacity = rounded;
  return e;
}

void FuzzRunner::Buffer::release() {
  if (ptr != nullptr) cudaFree(ptr);
  ptr = nullptr;
  capacity = 0;
}

FuzzOutcome FuzzRunner::outcome(FuzzResult result, std::string message) const {
  FuzzOutcome o;
  o.result = result;
  o.kernel = kernel_label_;
  o.message = std::move(message);
  return o;
}

FuzzOutcome FuzzRunner::cuda_failure(const char* what, cudaError_t error) const {
  FuzzOutcome o = outcome(FuzzResult::kFailed, std::string(what) + ": " + cudaGetErrorName(error) + " (" +
                                                   cudaGetErrorString(error) + ")");
  o.context_lost = !context_survives();
  return o;
}

#define FUZZ_CUDA(expr)                                             \
  do {                                                              \
    const cudaError_t fuzz_cuda_error_ = (expr);                    \
    if (fuzz_cuda_error_ != cudaSuccess) return cuda_failure(#expr, fuzz_cuda_error_); \
  } while (0)

std::optional<FuzzOutcome> FuzzRunner::prepare(const FuzzProblem& problem, const char* kernel) {
  // A refused problem returns with its fills still queued; growing a buffer under them
  // would free memory they write.
  FUZZ_CUDA(cudaStreamSynchronize(stream_));
  problem_ = problem;
  desc_ = problem.desc;
  kernel_name_ = wants_dispatcher(kernel) ? std::string() : std::string(kernel);
  desc_.kernel = kernel_name_.empty() ? nullptr : kernel_name_.c_str();
  if (kernel_name_.empty()) {
    const char* picked = dispatch_name(desc_);
    kernel_label_ = std::string("auto (") + (picked != nullptr ? picked : "none") + ")";
  } else {
    kernel_label_ = kernel_name_;
  }
  d_before_.clear();
  d_ends_before_.clear();
  d_gap_bytes_ = 0;

  const int64_t n_out = output_cols(desc_);
  const int64_t a_count = storage_elements(desc_.a, desc_.m, desc_.k, desc_.batch);
  const int64_t b_count = storage_elements(desc_.b, desc_.k, desc_.n, desc_.batch);
  const int64_t c_count = storage_elements(desc_.c, desc_.m, n_out, desc_.batch);
  const int64_t bias_count = desc_.epilogue.bias == BiasMode::kPerColumn ? desc_.n : desc_.m;
  d_storage_elements_ = storage_elements(desc_.d, desc_.m, n_out, desc_.batch);
  d_allocation_bytes_ = static_cast<size_t>(problem.d_offset + d_storage_elements_ + kGuardElements) *
                        dtype_bytes(desc_.d.dtype);
  auto bytes_for = [](int64_t offset, int64_t count, DataType dtype) {
    return static_cast<size_t>(offset + count) * dtype_bytes(dtype);
  };
  FUZZ_CUDA(a_.reserve(bytes_for(problem.a_offset, a_count, desc_.a.dtype)));
  FUZZ_CUDA(b_.reserve(bytes_for(problem.b_offset, b_count, desc_.b.dtype)));
  FUZZ_CUDA(d_.reserve(d_allocation_bytes_));
  FUZZ_CUDA(ref_.reserve(static_cast<size_t>(desc_.m * n_out * desc_.batch) * sizeof(float)));

  args_ = GemmArgs{};
  args_.stream = stream_;
  args_.a = at_element(a_.ptr, desc_.a.dtype, problem.a_offset);
  args_.b = at_element(b_.ptr, desc_.b.dtype, problem.b_offset);
  args_.d = at_element(d_.ptr, desc_.d.dtype, problem.d_offset);
  // Distinct seeds per operand, so no two operands hold the same values.
  const uint64_t seed = problem.data_seed;
  FUZZ_CUDA(fill_random(const_cast<void*>(args_.a), desc_.a.dtype, a_count, seed + 1, 1.0f, stream_));
  FUZZ_CUDA(fill_random(const_cast<void*>(args_.b), desc_.b.dtype, b_count, seed + 2, 1.0f, stream_));
  if (problem.c_is_d) {
    args_.c = args_.d;
  } else if (desc_.beta != 0.0f || problem.unread_c) {
    FUZZ_CUDA(c_.reserve(bytes_for(problem.c_offset, c_count, desc_.c.dtype)));
    args_.c = at_element(c_.ptr, desc_.c.dtype, problem.c_offset);
    FUZZ_CUDA(problem.unread_c ? poison(const_cast<void*>(args_.c), desc_.c.dtype, c_count, stream_)
                               : fill_random(const_cast<void*>(args_.c), desc_.c.dtype, c_count, seed + 3, 1.0f, stream_));
  }
  if (desc_.epilogue.bias != BiasMode::kNone) {
    const DataType t = desc_.epilogue.bias_dtype;
    FUZZ_CUDA(bias_.reserve(bytes_for(problem.bias_offset, bias_count, t)));
    args_.bias = at_element(bias_.ptr, t, problem.bias_offset);
    FUZZ_CUDA(fill_random(const_cast<void*>(args_.bias), t, bias_count, seed + 4, 1.0f, stream_));
  }

  if (desc_.scales != ScaleMode::kNone) {
    const int64_t na = scale_elements_a(desc_), nb = scale_elements_b(desc_);
    FUZZ_CUDA(scale_a_.reserve(static_cast<size_t>(problem.scale_a_offset + na) * sizeof(float)));
    FUZZ_CUDA(scale_b_.reserve(static_cast<size_t>(nb) * sizeof(float)));
    FUZZ_CUDA(fill_scales(static_cast<float*>(scale_a_.ptr), problem.scale_a_offset + na, seed + 5, stream_));
    FUZZ_CUDA(fill_scales(static_cast<float*>(scale_b_.ptr), nb, seed + 6, stream_));
    args_.scale_a = static_cast<const float*>(scale_a_.ptr) + problem.scale_a_offset;
    args_.scale_b = static_cast<const float*>(scale_b_.ptr);
  }

  // Sized for these very pointers: a misaligned base needs a repack an aligned one does not.
  const size_t workspace_bytes = workspace_size(desc_, args_);
  if (workspace_bytes > 0) {
    FUZZ_CUDA(workspace_.reserve(workspace_bytes));
    args_.workspace = workspace_.ptr;
    args_.workspace_bytes = workspace_bytes;
  }

  Diagnostic diag;
  const Status s = can_implement(desc_, &args_, &diag);
  if (s != Status::kSuccess) {
    // A named kernel may support less; the dispatcher must take every valid problem.
    const bool clean_refusal = s == Status::kNotSupported || s == Status::kMisalignedOperand;
    const bool refused = !kernel_name_.empty() && clean_refusal;
    return outcome(refused ? FuzzResult::kRefused : FuzzResult::kFailed,
                   std::string(refused ? "" : "can_implement refused a valid problem: ") + anvil::to_string(s) + ": " +
                       diag.message);
  }

  FUZZ_CUDA(reset_output());
  // Before the GEMM: when C is D, the GEMM overwrites the C the reference reads.
  FUZZ_CUDA(reference_gemm(desc_, args_, static_cast<float*>(ref_.ptr), stream_));
  if (d_allocation_bytes_ <= kMaxHostCheckedBytes) {
    d_before_.resize(d_allocation_bytes_);
    FUZZ_CUDA(cudaMemcpyAsync(d_before_.data(), d_.ptr, d_allocation_bytes_, cudaMemcpyDeviceToHost, stream_));
  } else {
    const size_t head = d_head_bytes(), tail = d_tail_begin();
    d_ends_before_.resize(head + d_allocation_bytes_ - tail);
    FUZZ_CUDA(cudaMemcpyAsync(d_ends_before_.data(), d_.ptr, head, cudaMemcpyDeviceToHost, stream_));
    FUZZ_CUDA(cudaMemcpyAsync(d_ends_before_.data() + head, static_cast<unsigned char*>(d_.ptr) + tail,
                              d_allocation_bytes_ - tail, cudaMemcpyDeviceToHost, stream_));
    d_gap_bytes_ = 0;
    for (const Gap& g : d_gaps()) d_gap_bytes_ += g.width * g.height;
    if (d_gap_bytes_ > 0) {
      FUZZ_CUDA(gaps_before_.reserve(d_gap_bytes_));
      FUZZ_CUDA(copy_gaps(gaps_before_.ptr, cudaMemcpyDeviceToDevice));
    }
  }
  FUZZ_CUDA(cudaStreamSynchronize(stream_));
  return std::nullopt;
}

std::vector<FuzzRunner::Gap> FuzzRunner::d_gaps() const {
  const size_t width = dtype_bytes(desc_.d.dtype);
  const MatrixLayout& l = desc_.d;
  const bool row_major = l.order == Order::kRowMajor;
  const int64_t lines = row_major ? desc_.m : output_cols(desc_);
  const int64_t extent = row_major ? output_cols(desc_) : desc_.m;
  const int64_t pitch = std::max(l.ld, extent);  // storage_elements' whole padded lines
  std::vector<Gap> gaps;
  if (lines <= 0 || extent <= 0) return gaps;
  for (int64_t b = 0; b < desc_.batch; ++b) {
    const int64_t first = problem_.d_offset + b * l.batch_stride;
    if (pitch > extent && lines > 1) {  // after every line but the last
      gaps.push_back({static_cast<size_t>(first + extent) * width, static_cast<size_t>(pitch) * width,
                      static_cast<size_t>(pitch - extent) * width, static_cast<size_t>(lines - 1)});
    }
    // After the last line: to the next batch, which may start inside that line's padding
    // (a batch stride of (lines - 1) ld + extent is valid), or to the end of the storage.
    const int64_t tail = first + (lines - 1) * pitch + extent;
    const int64_t end = b + 1 < desc_.batch ? first + l.batch_stride : first + lines * pitch;
    if (end > tail) {
      gaps.push_back({static_cast<size_t>(tail) * width, 0, static_cast<size_t>(end - tail) * width, 1});
    }
  }
  return gaps;
}

cudaError_t FuzzRunner::copy_gaps(void* dst, cudaMemcpyKind kind) const {
  auto* out = static_cast<unsigned char*>(dst);
  for (const Gap& g : d_gaps()) {
    const cudaError_t e = cudaMemcpy2DAsync(out, g.width, static_cast<const unsigned char*>(d_.ptr) + g.offset,
                                            g.height > 1 ? g.pitch : g.width, g.width, g.height, kind, stream_);
    if (e != cudaSuccess) return e;
    out += g.width * g.height;
  }
  return cudaSuccess;
}

cudaError_t FuzzRunner::reset_output() {
  cudaError_t e = cudaMemsetAsync(d_.ptr, 0xFF, d_allocation_bytes_, stream_);  // NaN in every dtype
  if (e == cudaSuccess && problem_.c_is_d) {
    e = fill_random(args_.d, desc_.d.dtype, d_storage_elements_, problem_.data_seed + 3, 1.0f, stream_);
  }
  return e;
}

Status FuzzRunner::launch(Diagnostic* diag) { return gemm(desc_, args_, diag); }

FuzzOutcome FuzzRunner::check() {
  FUZZ_CUDA(cudaStreamSynchronize(stream_));
  FUZZ_CUDA(cudaGetLastError());
  const Comparison cmp = compare(desc_, args_.d, static_cast<const float*>(ref_.ptr), tolerance_for(desc_), stream_);
  if (cmp.count < 0) {
    const cudaError_t e = cudaGetLastError();
    return cuda_failure("verify::compare", e != cudaSuccess ? e : cudaErrorUnknown);
  }
  if (!cmp.passed) {
    FuzzOutcome o = outcome(FuzzResult::kFailed, "mismatch: " + describe(cmp));
    o.comparison = cmp;
    return o;
  }
  if (std::optional<FuzzOutcome> padding = check_padding()) return *padding;
  FuzzOutcome o = outcome(FuzzResult::kPassed, "");
  o.comparison = cmp;
  return o;
}

size_t FuzzRunner::d_head_bytes() const { return static_cast<size_t>(problem_.d_offset) * dtype_bytes(desc_.d.dtype); }

size_t FuzzRunner::d_tail_begin() const {
  return static_cast<size_t>(problem_.d_offset + d_storage_elements_) * dtype_bytes(desc_.d.dtype);
}

// A large D's allocation: the bytes before its base and the guard band after its last
// element must be as they were (stores before the first or past the last batch).
std::optional<FuzzOutcome> FuzzRunner::check_ends() {
  const size_t head = d_head_bytes(), tail = d_tail_begin();
  std::vector<unsigned char> after(d_ends_before_.size());
  FUZZ_CUDA(cudaMemcpyAsync(after.data(), d_.ptr, head, cudaMemcpyDeviceToHost, stream_));
  FUZZ_CUDA(cudaMemcpyAsync(after.data() + head, static_cast<unsigned char*>(d_.ptr) + tail, d_allocation_bytes_ - tail,
                            cudaMemcpyDeviceToHost, stream_));
  FUZZ_CUDA(cudaStreamSynchronize(stream_));
  int64_t before_base = 0, past_end = 0, in_padding = 0;
  for (size_t i = 0; i < after.size(); ++i) {
    if (after[i] != d_ends_before_[i]) ++(i < head ? before_base : past_end);
  }
  if (d_gap_bytes_ > 0) {
    FUZZ_CUDA(gaps_after_.reserve(d_gap_bytes_));
    FUZZ_CUDA(copy_gaps(gaps_after_.ptr, cudaMemcpyDeviceToDevice));
    FUZZ_CUDA(count_differing_bytes(gaps_before_.ptr, gaps_after_.ptr, d_gap_bytes_, stream_, &in_padding));
  }
  if (before_base == 0 && past_end == 0 && in_padding == 0) return std::nullopt;
  char buf[240];
  std::snprintf(buf, sizeof(buf),
                "%lld bytes written before D's base, %lld in the guard band after its last element and %lld in "
                "the padding between its lines or batches",
                static_cast<long long>(before_base), static_cast<long long>(past_end),
                static_cast<long long>(in_padding));
  return outcome(FuzzResult::kFailed, buf);
}

// Every byte of D's allocation outside the logical output must be as it was before.
std::optional<FuzzOutcome> FuzzRunner::check_padding() {
  if (!d_ends_before_.empty()) return check_ends();
  if (d_before_.empty()) return std::nullopt;
  std::vector<unsigned char> after(d_allocation_bytes_);
  FUZZ_CUDA(cudaMemcpyAsync(after.data(), d_.ptr, d_allocation_bytes_, cudaMemcpyDeviceToHost, stream_));
  FUZZ_CUDA(cudaStreamSynchronize(stream_));
  const size_t width = dtype_bytes(desc_.d.dtype);
  std::vector<bool> logical(d_allocation_bytes_ / width, false);
  const int64_t n_out = output_cols(desc_);
  const MatrixLayout& l = desc_.d;
  for (int64_t b = 0; b < desc_.batch; ++b)
    for (int64_t i = 0; i < desc_.m; ++i)
      for (int64_t j = 0; j < n_out; ++j) {
        const int64_t in_matrix = l.order == Order::kRowMajor ? i * l.ld + j : j * l.ld + i;
        logical[static_cast<size_t>(problem_.d_offset + b * l.batch_stride + in_matrix)] = true;
      }
  int64_t touched = 0, first = -1;
  for (size_t e = 0; e < logical.size(); ++e) {
    if (logical[e] || std::memcmp(&after[e * width], &d_before_[e * width], width) == 0) continue;
    if (first < 0) first = static_cast<int64_t>(e) - problem_.d_offset;
    ++touched;
  }
  if (touched == 0) return std::nullopt;
  char buf[200];
  std::snprintf(buf, sizeof(buf),
                "%lld elements written outside the logical output, the first at element %lld from D's base",
                static_cast<long long>(touched), static_cast<long long>(first));
  return outcome(FuzzResult::kFailed, buf);
}

FuzzOutcome FuzzRunner::run(const FuzzProblem& problem, const char* kernel) {
  if (std::optional<FuzzOutcome> early = prepare(problem, kernel)) return *early;
  Diagnostic diag;
  const Status s = launch(&diag);
  if (s != Status::kSuccess) {
    FuzzOutcome o = outcome(FuzzResult::kFailed, std::string("gemm() after can_implement succeeded: ") +
                                                     anvil::to_string(s) + ": " + diag.message);
    o.context_lost = s == Status::kCudaError && !context_survives();
    return o;
  }
  return check();
}

#undef FUZZ_CUDA

}  // namespace anvil::verify
