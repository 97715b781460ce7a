// Random grouped GEMM problems and their judge (grouped_fuzz.h).
#include "verify/grouped_fuzz.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "verify/grouped_reference.h"

namespace anvil::verify {
namespace {

// splitmix64: the same stream on every platform (std distributions are not).
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  int64_t below(int64_t n) { return n <= 1 ? 0 : static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
  int64_t between(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }
  bool percent(int p) { return below(100) < p; }
  template <class T>
  T pick(std::initializer_list<T> items) {
    return *(items.begin() + below(static_cast<int64_t>(items.size())));
  }
};

constexpr int64_t kGuardRows = 2;
constexpr int64_t kMaxMacs = int64_t{3} << 30;        // the reference GEMM's time
constexpr int64_t kMaxSmallMacs = int64_t{1} << 27;

int64_t out_cols(const GroupedGemmDesc& d) { return d.epilogue.activation == Activation::kSwiGLU ? d.n / 2 : d.n; }
int64_t storage_rows(const GroupedGemmDesc& d) {
  return d.layout == GroupedLayout::kMasked ? d.experts * d.rows : d.rows;
}

// Rows of one expert: 0 and 1 often, tile edges (63-65, 127-129, 255-257), else any.
int64_t draw_rows(Rng& r, int64_t most) {
  const int64_t choice = r.below(10);
  int64_t v;
  if (choice < 3) v = 0;
  else if (choice < 5) v = 1;
  else if (choice < 7) v = r.pick<int64_t>({63, 64, 65, 127, 128, 129, 255, 256, 257}) + r.between(-1, 1);
  else v = r.between(0, most);
  return std::clamp<int64_t>(v, 0, most);
}

}  // namespace

GroupedFuzzProblem make_grouped_fuzz_problem(uint64_t seed, int64_t index, bool small) {
  Rng r{seed * 0x2545f4914f6cdd1dull ^ (static_cast<uint64_t>(index) + 0x51ed27ull)};
  r.next();
  GroupedFuzzProblem p;
  p.seed = seed;
  p.index = index;
  p.data_seed = r.next();
  GroupedGemmDesc& d = p.desc;
  d.layout = r.percent(50) ? GroupedLayout::kContiguous : GroupedLayout::kMasked;
  d.experts = r.percent(20) ? r.pick<int64_t>({1, 2, 31, 32, 33, 129, 256, 300})
                            : r.between(1, small ? 40 : 160);
  d.input = r.percent(50) ? DataType::kBF16 : DataType::kF16;
  const int64_t out_choice = r.below(10);
  d.output = out_choice < 2 ? DataType::kF32 : out_choice < 6 ? d.input : (r.percent(50) ? DataType::kBF16 : DataType::kF16);
  d.index_type = r.percent(50) ? IndexType::kInt32 : IndexType::kInt64;
  const int64_t act = r.below(12);
  d.epilogue.activation = act < 6 ? Activation::kIdentity : static_cast<Activation>(act - 6);
  if (r.percent(30)) {
    d.epilogue.bias = BiasMode::kPerColumn;
    d.epilogue.bias_dtype = r.pick<DataType>({DataType::kF32, DataType::kBF16, DataType::kF16});
  }
  d.alpha = r.percent(70) ? 1.0f : r.pick<float>({0.5f, -1.25f, 0.125f});
  if (d.epilogue.activation == Activation::kSwiGLU) {
    d.n = 128 * r.between(1, small ? 4 : 12);
  } else {
    d.n = r.percent(30) ? r.pick<int64_t>({1, 7, 64, 127, 128, 129, 255, 256, 257, 384, 1000})
                        : r.between(1, small ? 600 : 2000);
  }
  d.k = 8 * (r.percent(30) ? r.pick<int64_t>({1, 8, 9, 16, 17, 64}) : r.between(1, small ? 64 : 512));
  const int64_t most = r.pick<int64_t>({1, 8, 64, 130, 300, small ? 300 : 700});
  p.rows.resize(static_cast<size_t>(d.experts));
  for (int64_t& rows : p.rows) rows = draw_rows(r, most);
  // Keep the reference affordable: scale the rows down until the problem fits.
  const int64_t cap = small ? kMaxSmallMacs : kMaxMacs;
  for (;;) {
    int64_t total = 0;
    for (int64_t rows : p.rows) total += rows;
    const int64_t largest_now = *std::max_element(p.rows.begin(), p.rows.end());
    const int64_t slots = d.layout == GroupedLayout::kMasked ? d.experts * std::max<int64_t>(1, largest_now) : total;
    if (slots * d.n * d.k <= cap || largest_now == 0) break;
    for (int64_t& rows : p.rows) rows /= 2;
  }
  const int64_t largest = *std::max_element(p.rows.begin(), p.rows.end());
  if (d.layout == GroupedLayout::kMasked) {
    d.rows = std::max<int64_t>(1, largest + (r.percent(50) ? 0 : r.between(0, 70)));
  } else {
    p.lead = r.percent(50) ? 0 : r.between(1, 9);
    const int64_t trail = r.percent(50) ? 0 : r.between(1, 9);
    int64_t total = 0;
    for (int64_t rows : p.rows) total += rows;
    d.rows = p.lead + total + trail;
  }
  const int64_t hint = r.below(4);
  d.expected_rows_per_expert = hint == 0 ? 0 : hint == 1 ? 16 : hint == 2 ? 200 : 5000;
  // FP8, drawn after everything else so the 16-bit problems of a seed stay as they were:
  // e4m3 A and W (K rounded up to the multiple of 16 TMA needs for 1-byte rows) with no,
  // per-tensor, row/column or DeepSeek-V3 block scales, B's per expert or shared; block
  // scales of A from 0-3 floats past a 16-byte boundary (the tensor map's shift).
  if (r.percent(35)) {
    d.input = DataType::kE4M3;
    if (d.output != DataType::kF32) d.output = r.percent(75) ? DataType::kBF16 : DataType::kF16;
    d.k = (d.k + 15) / 16 * 16;
    const int64_t scales = r.below(10);
    d.scales = scales < 1   ? ScaleMode::kNone
               : scales < 3 ? ScaleMode::kTensor
               : scales < 6 ? ScaleMode::kRowColumn
                            : ScaleMode::kBlock128;
    d.scale_b_per_expert = r.percent(80);
    if (d.scales == ScaleMode::kBlock128) p.scale_a_offset = r.below(4);
  }
  // torch's offs (E row ends) where the first expert starts at row 0.
  if (d.layout == GroupedLayout::kContiguous && p.lead == 0) d.offsets_are_ends = r.percent(40);
  return p;
}

std::vector<int64_t> grouped_bounds(const GroupedFuzzProblem& p) {
  if (p.desc.layout == GroupedLayout::kMasked) return p.rows;
  std::vector<int64_t> offsets{p.lead};
  for (int64_t rows : p.rows) offsets.push_back(offsets.back() + rows);
  if (p.desc.offsets_are_ends) offsets.erase(offsets.begin());
  return offsets;
}

std::string describe(const GroupedFuzzProblem& p) {
  const GroupedGemmDesc& d = p.desc;
  int64_t total = 0, empty = 0;
  for (int64_t rows : p.rows) total += rows, empty += rows == 0;
  const std::string shift =
      p.scale_a_offset > 0 ? " (scale_a +" + std::to_string(p.scale_a_offset) + " floats)" : std::string();
  char text[400];
  std::snprintf(text, sizeof(text),
                "#%lld %s E=%lld N=%lld K=%lld rows=%lld (%lld routed, %lld experts empty, lead %lld) %s->%s idx%s "
                "act %d bias %d/%s alpha %g hint %lld scales %s%s%s%s",
                static_cast<long long>(p.index), d.layout == GroupedLayout::kMasked ? "masked" : "contiguous",
                static_cast<long long>(d.experts), static_cast<long long>(d.n), static_cast<long long>(d.k),
                static_cast<long long>(d.rows), static_cast<long long>(total), static_cast<long long>(empty),
                static_cast<long long>(p.lead), to_string(d.input), to_string(d.output),
                d.index_type == IndexType::kInt64 ? "64" : "32", static_cast<int>(d.epilogue.activation),
                static_cast<int>(d.epilogue.bias), to_string(d.epilogue.bias_dtype), static_cast<double>(d.alpha),
                static_cast<long long>(d.expected_rows_per_expert), to_string(d.scales),
                d.scales != ScaleMode::kNone && !d.scale_b_per_expert ? " (B shared)" : "",
                shift.c_str(), d.offsets_are_ends ? " ends" : "");
  return text;
}

namespace {

// Device memory released on scope exit.
struct Owned {
  void* ptr = nullptr;
  ~Owned() {
    if (ptr != nullptr) cudaFree(ptr);
  }
  cudaError_t allocate(size_t bytes) { return cudaMalloc(&ptr, std::max<size_t>(bytes, 256)); }
};

FuzzOutcome failed(const std::string& kernel, const std::string& message, bool lost = false) {
  FuzzOutcome o;
  o.result = FuzzResult::kFailed;
  o.kernel = kernel;
  o.message = message;
  o.context_lost = lost;
  return o;
}

}  // namespace

FuzzOutcome run_grouped_fuzz_problem(const GroupedFuzzProblem& p, cudaStream_t stream) {
  const GroupedGemmDesc& d = p.desc;
  const char* name = grouped_dispatch_name(d);
  const std::string kernel = std::string("grouped (") + (name != nullptr ? name : "none") + ")";
  const int64_t rows = storage_rows(d);
  const size_t in_bytes = dtype_bytes(d.input), out_bytes = dtype_bytes(d.output);
  const size_t row_bytes = static_cast<size_t>(out_cols(d)) * out_bytes;
  const size_t d_bytes = static_cast<size_t>(rows + kGuardRows) * row_bytes;
  Owned a, w, out, bias, bounds, flags, ref, scale_a, scale_b;
  cudaError_t e = a.allocate(static_cast<size_t>(rows * d.k) * in_bytes);
  if (e == cudaSuccess) e = w.allocate(static_cast<size_t>(d.experts * d.n * d.k) * in_bytes);
  if (e == cudaSuccess) e = out.allocate(d_bytes);
  if (e == cudaSuccess) e = bias.allocate(static_cast<size_t>(d.experts * d.n) * 4);
  if (e == cudaSuccess) e = bounds.allocate(static_cast<size_t>(d.experts + 1) * 8);
  if (e == cudaSuccess) e = flags.allocate(sizeof(int));
  if (e == cudaSuccess) e = ref.allocate(static_cast<size_t>(rows * out_cols(d)) * sizeof(float));
  if (e == cudaSuccess) e = fill_random(a.ptr, d.input, rows * d.k, p.data_seed, 1.0f, stream);
  if (e == cudaSuccess) e = fill_random(w.ptr, d.input, d.experts * d.n * d.k, p.data_seed + 1, 1.0f, stream);
  if (e == cudaSuccess) e = fill_random(bias.ptr, d.epilogue.bias_dtype, d.experts * d.n, p.data_seed + 2, 1.0f, stream);
  // Room for every mode's scales (block scales: ceil(K/128) per row, per 128 x 128 block of W).
  const int64_t k_blocks = (d.k + 127) / 128;
  const int64_t a_floats = p.scale_a_offset + std::max<int64_t>(rows, 1) * k_blocks;
  const int64_t b_floats = d.experts * std::max(d.n, (d.n + 127) / 128 * k_blocks);
  if (e == cudaSuccess) e = scale_a.allocate(static_cast<size_t>(a_floats) * sizeof(float));
  if (e == cudaSuccess) e = scale_b.allocate(static_cast<size_t>(b_floats) * sizeof(float));
  if (e == cudaSuccess) e = fill_scales(static_cast<float*>(scale_a.ptr), a_floats, p.data_seed + 3, stream);
  if (e == cudaSuccess) e = fill_scales(static_cast<float*>(scale_b.ptr), b_floats, p.data_seed + 4, stream);
  if (e == cudaSuccess) e = poison(out.ptr, d.output, static_cast<int64_t>(d_bytes / out_bytes), stream);
  if (e == cudaSuccess) e = cudaMemsetAsync(flags.ptr, 0, sizeof(int), stream);
  const std::vector<int64_t> b = grouped_bounds(p);
  std::vector<int32_t> narrow(b.begin(), b.end());
  if (e == cudaSuccess) {
    e = d.index_type == IndexType::kInt64
            ? cudaMemcpyAsync(bounds.ptr, b.data(), b.size() * 8, cudaMemcpyHostToDevice, stream)
            : cudaMemcpyAsync(bounds.ptr, narrow.data(), narrow.size() * 4, cudaMemcpyHostToDevice, stream);
  }
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) return failed(kernel, std::string("set-up: ") + cudaGetErrorName(e), e != cudaErrorMemoryAllocation);

  GroupedGemmArgs args;
  args.a = a.ptr;
  args.w = w.ptr;
  args.d = out.ptr;
  args.bias = d.epilogue.bias != BiasMode::kNone ? bias.ptr : nullptr;
  args.bounds = bounds.ptr;
  args.error_flags = static_cast<int*>(flags.ptr);
  args.stream = stream;
  if (d.scales != ScaleMode::kNone) {
    args.scale_a = static_cast<const float*>(scale_a.ptr) + p.scale_a_offset;
    args.scale_b = static_cast<const float*>(scale_b.ptr);
  }
  Diagnostic diag;
  const Status s = grouped_gemm(d, args, &diag);
  if (s != Status::kSuccess) {
    return failed(kernel, std::string("refused a valid problem: ") + to_string(s) + ": " + diag.message);
  }
  // Bounded wait: a kernel that never finishes is reported, not waited on forever.
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    e = cudaStreamQuery(stream);
    if (e != cudaErrorNotReady) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > 60.0) {
      return failed(kernel, "did not finish within 60 s (hang)", true);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  if (e != cudaSuccess) return failed(kernel, std::string("kernel fault: ") + cudaGetErrorName(e), true);
  int word = -1;
  e = cudaMemcpy(&word, flags.ptr, sizeof(int), cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) return failed(kernel, std::string("cudaMemcpy: ") + cudaGetErrorName(e), true);
  if (word != 0) {
    Diagnostic why;
    grouped_error_status(word, &why);
    return failed(kernel, std::string("valid bounds reported invalid: ") + why.message);
  }
  e = reference_grouped(d, args, b, static_cast<float*>(ref.ptr), stream);
  if (e != cudaSuccess) return failed(kernel, std::string("reference: ") + cudaGetErrorName(e), true);
  const GroupedComparison c = compare_grouped(d, out.ptr, static_cast<const float*>(ref.ptr), b, stream);
  e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) return failed(kernel, std::string("compare: ") + cudaGetErrorName(e), true);
  FuzzOutcome o;
  o.kernel = kernel;
  o.comparison = c.worst;
  if (!c.passed) {
    o.result = FuzzResult::kFailed;
    o.message = describe(c);
    return o;
  }
  // Rows no expert owns, and the guard rows, still hold the poison.
  std::vector<unsigned char> host(d_bytes);
  e = cudaMemcpy(host.data(), out.ptr, d_bytes, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) return failed(kernel, std::string("cudaMemcpy: ") + cudaGetErrorName(e), true);
  std::vector<bool> owned(static_cast<size_t>(rows + kGuardRows), false);
  for (const ExpertRows& er : expert_rows(d, b)) {
    for (int64_t i = er.first; i < er.first + er.rows; ++i) owned[static_cast<size_t>(i)] = true;
  }
  for (int64_t i = 0; i < rows + kGuardRows; ++i) {
    if (owned[static_cast<size_t>(i)]) continue;
    for (size_t byte = 0; byte < row_bytes; ++byte) {
      if (host[static_cast<size_t>(i) * row_bytes + byte] != 0xFF) {
        o.result = FuzzResult::kFailed;
        o.message = "row " + std::to_string(i) + (i >= rows ? " (a guard row past D)" : " (owned by no expert)") +
                    " was written at byte " + std::to_string(byte);
        return o;
      }
    }
  }
  o.result = FuzzResult::kPassed;
  return o;
}

}  // namespace anvil::verify
