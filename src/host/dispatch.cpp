// The public entry points: validation, kernel choice, launch.
#include <cstring>

#include "anvil/gemm.h"
#include "host/registry.h"
#include "host/validate.h"
#include "kernels/sm90/decode_plan.h"

namespace anvil {
namespace {

using detail::KernelInfo;

bool wants_auto(const GemmDesc& desc) { return desc.kernel == nullptr || std::strcmp(desc.kernel, "auto") == 0; }

// The dispatcher's preference: a decode kernel for few tokens (the load-path one for the
// fewest, prefers_decode_ldg; the 64-row ones where their tiles all run at once unsplit,
// prefers_decode_ldg_r64 and prefers_decode_r64; always sm90-decode for batch
// invariance), the production Hopper kernel, then the CUDA-core naive kernel, which
// accepts every valid problem (K = 0, odd strides, any layout). The decode kernels take
// K-major operands in place only; other layouts go to sm90-gemm, which repacks them.
const KernelInfo* pick(const GemmDesc& desc, const GemmArgs* args) {
  if (desc.batch_invariant || detail::prefers_decode(desc.m, desc.n, desc.batch, detail::device_sm_count())) {
    if (const KernelInfo* k = detail::pick_decode_kernel(desc, args)) return k;
  }
  for (const char* name : {"sm90-gemm", "ladder-01-naive"}) {
    const KernelInfo* k = detail::find_kernel(name);
    if (k != nullptr && k->check(desc, args, nullptr) == Status::kSuccess) return k;
  }
  return nullptr;
}

// Resolves the kernel for desc, running every description- and pointer-level check.
Status resolve(const GemmDesc& desc, const GemmArgs* args, const KernelInfo** out, Diagnostic* diag) {
  *out = nullptr;
  Status s = detail::validate_desc(desc, diag);
  if (s != Status::kSuccess) return s;
  if (args != nullptr) {
    s = detail::validate_args(desc, *args, diag);
    if (s != Status::kSuccess) return s;
  }
  if (wants_auto(desc)) {
    *out = pick(desc, args);
    if (*out == nullptr) return detail::fail(diag, Status::kNotSupported, "no kernel supports this problem");
  } else {
    *out = detail::find_kernel(desc.kernel);
    if (*out == nullptr) return detail::fail(diag, Status::kNotSupported, "unknown kernel '%s'", desc.kernel);
    s = (*out)->check(desc, args, diag);
    if (s != Status::kSuccess) return s;
  }
  if (args != nullptr) {
    const size_t need = (*out)->workspace != nullptr ? (*out)->workspace(desc, args) : 0;
    if (args->workspace_bytes < need) {
      return detail::fail(diag, Status::kWorkspaceTooSmall, "%s needs %zu workspace bytes, got %zu", (*out)->name, need,
                          args->workspace_bytes);
    }
  }
  return Status::kSuccess;
}

}  // namespace

namespace detail {

const KernelInfo* pick_decode_kernel(const GemmDesc& desc, const GemmArgs* args) {
  const bool load_path = !desc.batch_invariant && prefers_decode_ldg(desc.m);
  // The 64-row kernels refuse SwiGLU themselves; the next candidate takes it.
  // The residency table is looked up only for the few-token problems the split rule weighs.
  const bool load_path_rows64 =
      !desc.batch_invariant &&
      (prefers_decode_ldg_r64(desc.m, desc.n, desc.k, desc.batch, device_sm_count()) ||
       (load_path &&
        prefers_decode_ldg_r64_split(desc.m, desc.n, desc.k, desc.batch, device_sm_count(), decode_ldg_residency())));
  const bool rows64 = !desc.batch_invariant && prefers_decode_r64(desc.m, desc.n, desc.batch, device_sm_count());
  for (const char* name : {load_path_rows64 ? "sm90-decode-ldg-r64" : "", load_path ? "sm90-decode-ldg" : "",
                           rows64 ? "sm90-decode-r64" : "", "sm90-decode"}) {
    if (*name == '\0') continue;
    const KernelInfo* k = find_kernel(name);
    if (k != nullptr && k->check(desc, args, nullptr) == Status::kSuccess) return k;
  }
  return nullptr;
}

}  // namespace detail

Status can_implement(const GemmDesc& desc, const GemmArgs* args, Diagnostic* diag) {
  const KernelInfo* kernel = nullptr;
  Status s = resolve(desc, args, &kernel, diag);
  if (s != Status::kSuccess) return s;
  if (detail::is_noop(desc)) return Status::kSuccess;
  return detail::validate_device(diag);
}

size_t workspace_size(const GemmDesc& desc) {
  const KernelInfo* kernel = nullptr;
  if (resolve(desc, nullptr, &kernel, nullptr) != Status::kSuccess || kernel->workspace == nullptr) return 0;
  return kernel->workspace(desc, nullptr);
}

size_t workspace_size(const GemmDesc& desc, const GemmArgs& args) {
  const KernelInfo* kernel = nullptr;
  GemmArgs probe = args;
  probe.workspace_bytes = ~size_t{0};  // ask what is needed, not whether it is there
  probe.workspace = probe.workspace != nullptr ? probe.workspace : reinterpret_cast<void*>(256);
  if (resolve(desc, &probe, &kernel, nullptr) != Status::kSuccess || kernel->workspace == nullptr) return 0;
  return kernel->workspace(desc, &args);
}

Status gemm(const GemmDesc& desc, const GemmArgs& args, Diagnostic* diag) {
  const KernelInfo* kernel = nullptr;
  Status s = resolve(desc, &args, &kernel, diag);
  if (s != Status::kSuccess) return s;
  if (detail::is_noop(desc)) return Status::kSuccess;
  s = detail::validate_device(diag);
  if (s != Status::kSuccess) return s;
  return kernel->launch(desc, args, diag);
}

int kernel_count() { return static_cast<int>(detail::all_kernels().size()); }

const char* kernel_name(int index) {
  const auto kernels = detail::all_kernels();
  return index >= 0 && index < kernel_count() ? kernels[index]->name : nullptr;
}

const char* kernel_summary(int index) {
  const auto kernels = detail::all_kernels();
  return index >= 0 && index < kernel_count() ? kernels[index]->summary : nullptr;
}

const char* dispatch_name(const GemmDesc& desc) {
  const KernelInfo* kernel = nullptr;
  return resolve(desc, nullptr, &kernel, nullptr) == Status::kSuccess ? kernel->name : nullptr;
}

GemmDesc linear_desc(int64_t m, int64_t n, int64_t k, DataType in, DataType out) {
  GemmDesc d;
  d.m = m, d.n = n, d.k = k;
  d.a = MatrixLayout{in, Order::kRowMajor, k > 0 ? k : 1, 0};
  d.b = MatrixLayout{in, Order::kColMajor, k > 0 ? k : 1, 0};  // W[N,K] row-major is B = W^T column-major
  d.c = MatrixLayout{out, Order::kRowMajor, n > 0 ? n : 1, 0};
  d.d = MatrixLayout{out, Order::kRowMajor, n > 0 ? n : 1, 0};
  return d;
}

}  // namespace anvil
