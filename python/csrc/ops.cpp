// anvil's GEMMs as PyTorch operators (namespace `anvil`, registered with TORCH_LIBRARY).
//
// Every op checks its arguments before touching the GPU and raises TypeError (dtype) or
// ValueError (shape, stride, device, option) naming the argument and what was expected;
// a problem anvil itself refuses raises RuntimeError with anvil's diagnostic. The same
// checks run for CPU tensors, so that wrong input fails the same way everywhere; CPU
// tensors then fail on the device check (anvil runs only on CUDA).
//
// Kernels run on torch's current stream on the inputs' device; outputs and workspace come
// from torch's caching allocator, so the ops can be captured in CUDA graphs.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "anvil/anvil.h"

namespace {

// ---- argument checks -----------------------------------------------------------------

const char* dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16: return "bf16";
    case at::kHalf: return "fp16";
    case at::kFloat: return "fp32";
    case at::kDouble: return "float64";
    case at::kLong: return "int64";
    case at::kInt: return "int32";
    case at::kShort: return "int16";
    case at::kChar: return "int8";
    case at::kByte: return "uint8";
    case at::kBool: return "bool";
    case at::kFloat8_e4m3fn: return "float8_e4m3fn";
    case at::kFloat8_e5m2: return "float8_e5m2";
    default: return c10::toString(t);
  }
}

anvil::DataType to_anvil(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16: return anvil::DataType::kBF16;
    case at::kHalf: return anvil::DataType::kF16;
    case at::kFloat8_e4m3fn: return anvil::DataType::kE4M3;
    case at::kFloat8_e5m2: return anvil::DataType::kE5M2;
    default: return anvil::DataType::kF32;
  }
}

void check_input_dtype(const char* op, const char* name, const at::Tensor& t) {
  TORCH_CHECK_TYPE(t.scalar_type() == at::kBFloat16 || t.scalar_type() == at::kHalf, "anvil.", op, ": ", name,
                   " must be bf16 or fp16, got ", dtype_name(t.scalar_type()));
}

void check_same_dtype(const char* op, const char* name, const at::Tensor& t, const at::Tensor& like,
                      const char* like_name) {
  TORCH_CHECK_TYPE(t.scalar_type() == like.scalar_type(), "anvil.", op, ": ", name, " must have ", like_name,
                   "'s dtype (", dtype_name(like.scalar_type()), "), got ", dtype_name(t.scalar_type()));
}

// All tensors on one CUDA device. Checked after dtypes and shapes so that CPU tensors
// exercise every other check first.
void check_devices(const char* op, const std::vector<std::pair<const char*, const at::Tensor*>>& tensors) {
  const at::Tensor& first = *tensors.front().second;
  for (const auto& [name, t] : tensors) {
    TORCH_CHECK_VALUE(t->is_cuda(), "anvil.", op, ": ", name, " must be a CUDA tensor, got a tensor on ",
                      t->device().str(), " (anvil runs on CUDA GPUs only)");
    TORCH_CHECK_VALUE(t->device() == first.device(), "anvil.", op, ": ", name, " is on ", t->device().str(),
                      " but ", tensors.front().first, " is on ", first.device().str(),
                      "; all operands must be on one device");
  }
}

// One matrix operand in anvil's terms: storage order, leading dimension, batch stride.
struct Operand {
  anvil::MatrixLayout layout;
  const void* data = nullptr;
};

// Maps a logical rows x cols matrix with element strides (row_stride, col_stride) onto
// anvil's row- or column-major storage. False when neither stride is 1 (or the other one
// is too small to hold a line), which anvil cannot express.
bool to_layout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride, anvil::Order* order,
               int64_t* ld) {
  const int64_t row_line = cols > 1 ? cols : 1;
  const int64_t col_line = rows > 1 ? rows : 1;
  if (col_stride == 1 || cols <= 1) {
    const int64_t lead = rows <= 1 ? row_line : row_stride;
    if (lead >= row_line) {
      *order = anvil::Order::kRowMajor;
      *ld = lead;
      return true;
    }
  }
  if (row_stride == 1 || rows <= 1) {
    const int64_t lead = cols <= 1 ? col_line : col_stride;
    if (lead >= col_line) {
      *order = anvil::Order::kColMajor;
      *ld = lead;
      return true;
    }
  }
  return false;
}

// Numbers, sizes and strides as text ("8", "[4, 8]", "(8, 1)"), formatted with
// std::to_string: error messages are built from strings only, so that raising one does not
// depend on the iostream number formatting of the C++ runtime the extension links.
std::string num(int64_t v) { return std::to_string(v); }

std::string shape_string(c10::IntArrayRef sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

std::string strides_string(const at::Tensor& t) {
  std::string s = "(";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.stride(i));
  return s + ")";
}

// The operand for a 2-D view [rows, cols] with the given strides.
Operand matrix_operand(const char* op, const char* name, const at::Tensor& t, int64_t rows, int64_t cols,
                       int64_t row_stride, int64_t col_stride, int64_t batch_stride) {
  Operand o;
  o.layout.dtype = to_anvil(t.scalar_type());
  o.layout.batch_stride = batch_stride;
  TORCH_CHECK_VALUE(to_layout(rows, cols, row_stride, col_stride, &o.layout.order, &o.layout.ld), "anvil.", op, ": ",
                    name, " has strides ", strides_string(t), " for sizes ", shape_string(t.sizes()),
                    "; anvil needs each matrix stored with a unit stride along its rows or its columns "
                    "(call .contiguous() first)");
  o.data = t.data_ptr();
  return o;
}

// x [..., K] seen as the M x K matrix A: the leading dimensions must fold into one stride.
Operand rows_operand(const char* op, const char* name, const at::Tensor& x, int64_t m, int64_t k) {
  const int64_t d = x.dim();
  int64_t row_stride = k > 0 ? k : 1;
  bool found = false;
  bool foldable = true;
  int64_t expect = 0;
  // From the innermost leading dimension outwards, skipping size-1 ones (their stride is free).
  for (int64_t i = d - 2; i >= 0; --i) {
    if (x.size(i) == 1) continue;
    if (!found) {
      row_stride = x.stride(i);
      found = true;
    } else if (x.stride(i) != expect) {
      foldable = false;
    }
    expect = x.stride(i) * x.size(i);
  }
  TORCH_CHECK_VALUE(foldable, "anvil.", op, ": ", name, " has strides ", strides_string(x), " for sizes ", shape_string(x.sizes()),
                    "; its leading dimensions must fold into one row stride (call .contiguous() first)");
  return matrix_operand(op, name, x, m, k, row_stride, d >= 1 ? x.stride(d - 1) : 1, 0);
}

std::vector<int64_t> leading_shape(const at::Tensor& x, int64_t last) {
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - (x.dim() > 0 ? 1 : 0));
  shape.push_back(last);
  return shape;
}

anvil::Activation parse_activation(const char* op, std::string_view name) {
  if (name == "none") return anvil::Activation::kIdentity;
  if (name == "relu") return anvil::Activation::kReLU;
  if (name == "gelu") return anvil::Activation::kGeluErf;
  if (name == "gelu_tanh") return anvil::Activation::kGeluTanh;
  if (name == "silu") return anvil::Activation::kSiLU;
  TORCH_CHECK_VALUE(false, "anvil.", op, ": activation must be one of 'none', 'relu', 'gelu', 'gelu_tanh', 'silu', got '",
                    std::string(name), "'");
}

// ---- running a GEMM --------------------------------------------------------------------

void run(const char* op, anvil::GemmDesc& desc, anvil::GemmArgs& args, const at::Tensor& like) {
  args.stream = c10::cuda::getCurrentCUDAStream(like.device().index()).stream();
  const size_t bytes = anvil::workspace_size(desc, args);
  at::Tensor workspace;
  if (bytes > 0) {
    workspace = at::empty({static_cast<int64_t>(bytes)}, like.options().dtype(at::kByte));
    args.workspace = workspace.data_ptr();
    args.workspace_bytes = bytes;
  }
  anvil::Diagnostic diag;
  const anvil::Status status = anvil::gemm(desc, args, &diag);
  TORCH_CHECK(status == anvil::Status::kSuccess, "anvil.", op, ": anvil refused the problem (",
              anvil::to_string(status), "): ", diag.message);
}

// ---- linear and linear_swiglu ----------------------------------------------------------

// y = act(x weight^T + bias) + residual, x [..., K], weight [N, K]. With swiglu, weight is
// the fused gate/up weight [2F, K] (anvil/swiglu.h) and y is [..., F].
at::Tensor linear_impl(const char* op, const at::Tensor& x, const at::Tensor& weight,
                       const std::optional<at::Tensor>& bias, anvil::Activation act,
                       const std::optional<at::Tensor>& residual, bool batch_invariant,
                       const std::optional<at::Tensor>& out) {
  const bool swiglu = act == anvil::Activation::kSwiGLU;
  check_input_dtype(op, "x", x);
  check_same_dtype(op, "weight", weight, x, "x");
  TORCH_CHECK_VALUE(x.dim() >= 1, "anvil.", op, ": x must have at least one dimension [..., K], got a 0-d tensor");
  TORCH_CHECK_VALUE(weight.dim() == 2, "anvil.", op, ": weight must be 2-D [N, K], got ", num(weight.dim()),
                    "-D with sizes ", shape_string(weight.sizes()));
  const int64_t k = x.size(-1);
  const int64_t n = weight.size(0);
  TORCH_CHECK_VALUE(weight.size(1) == k, "anvil.", op, ": weight is ", shape_string(weight.sizes()), " but x has K = ", num(k),
                    " (its last dimension); weight must be [N, ", num(k), "]");
  if (swiglu) {
    TORCH_CHECK_VALUE(n % (2 * anvil::kSwiGLUBlock) == 0, "anvil.", op, ": gate_up must have a multiple of ",
                      num(2 * anvil::kSwiGLUBlock), " rows (gate and up blocks of ", num(anvil::kSwiGLUBlock),
                      ", see anvil.fuse_gate_up), got ", num(n));
  }
  const int64_t n_out = swiglu ? n / 2 : n;
  if (bias) {
    TORCH_CHECK_TYPE(bias->scalar_type() == x.scalar_type() || bias->scalar_type() == at::kFloat, "anvil.", op,
                     ": bias must be ", dtype_name(x.scalar_type()), " (x's dtype) or fp32, got ",
                     dtype_name(bias->scalar_type()));
    TORCH_CHECK_VALUE(bias->dim() == 1 && bias->size(0) == n, "anvil.", op, ": bias must be 1-D of length ", num(n),
                      " (weight's rows), got sizes ", shape_string(bias->sizes()));
  }
  const std::vector<int64_t> out_shape = leading_shape(x, n_out);
  if (residual) {
    check_same_dtype(op, "residual", *residual, x, "x");
    TORCH_CHECK_VALUE(residual->sizes() == at::IntArrayRef(out_shape), "anvil.", op, ": residual must have the output's shape ",
                      shape_string(out_shape), ", got ", shape_string(residual->sizes()));
  }
  if (out) {
    check_same_dtype(op, "out", *out, x, "x");
    TORCH_CHECK_VALUE(out->sizes() == at::IntArrayRef(out_shape), "anvil.", op, ": out must have shape ",
                      shape_string(out_shape), ", got ", shape_string(out->sizes()));
    TORCH_CHECK_VALUE(out->is_contiguous(), "anvil.", op, ": out must be contiguous, got strides ",
                      strides_string(*out));
  }
  std::vector<std::pair<const char*, const at::Tensor*>> tensors = {{"x", &x}, {"weight", &weight}};
  if (bias) tensors.push_back({"bias", &*bias});
  if (residual) tensors.push_back({"residual", &*residual});
  if (out) tensors.push_back({"out", &*out});
  int64_t m = 1;
  for (int64_t i = 0; i + 1 < x.dim(); ++i) m *= x.size(i);
  // Stride checks come before the device check too: they need no GPU.
  const Operand a = rows_operand(op, "x", x, m, k);
  // weight [N, K] is B^T: B (K x N) has row stride weight.stride(1) and column stride weight.stride(0).
  const Operand b = matrix_operand(op, "weight", weight, k, n, weight.stride(1), weight.stride(0), 0);
  check_devices(op, tensors);

  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor y = out ? *out : at::empty(out_shape, x.options());
  if (m == 0 || n_out == 0) return y;
  const at::Tensor bias_c = bias ? bias->contiguous() : at::Tensor();
  // anvil adds C with D's storage: a residual is read as a contiguous [M, n_out] matrix.
  const at::Tensor residual_c = residual ? residual->contiguous() : at::Tensor();

  anvil::GemmDesc desc;
  desc.m = m, desc.n = n, desc.k = k;
  desc.a = a.layout;
  desc.b = b.layout;
  desc.d = anvil::MatrixLayout{to_anvil(x.scalar_type()), anvil::Order::kRowMajor, n_out > 0 ? n_out : 1, 0};
  desc.c = desc.d;
  desc.beta = residual ? 1.0f : 0.0f;
  desc.epilogue.activation = act;
  desc.epilogue.bias = bias ? anvil::BiasMode::kPerColumn : anvil::BiasMode::kNone;
  desc.epilogue.bias_dtype = bias ? to_anvil(bias->scalar_type()) : anvil::DataType::kF32;
  desc.batch_invariant = batch_invariant;
  anvil::GemmArgs args;
  args.a = a.data;
  args.b = b.data;
  args.c = residual ? residual_c.data_ptr() : nullptr;
  args.d = y.data_ptr();
  args.bias = bias ? bias_c.data_ptr() : nullptr;
  run(op, desc, args, x);
  return y;
}

at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                  c10::string_view activation, const std::optional<at::Tensor>& residual, bool batch_invariant) {
  const auto act = parse_activation("linear", std::string_view(activation.data(), activation.size()));
  return linear_impl("linear", x, weight, bias, act, residual, batch_invariant, std::nullopt);
}

// linear writing into out. It returns nothing, as torch.compile's functionalization
// requires of custom ops that mutate an argument.
void linear_into(const at::Tensor& x, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                 c10::string_view activation, const std::optional<at::Tensor>& residual, bool batch_invariant,
                 at::Tensor& out) {
  const auto act = parse_activation("linear", std::string_view(activation.data(), activation.size()));
  linear_impl("linear", x, weight, bias, act, residual, batch_invariant, out);
}

at::Tensor linear_swiglu(const at::Tensor& x, const at::Tensor& gate_up, const std::optional<at::Tensor>& bias,
                         bool batch_invariant) {
  return linear_impl("linear_swiglu", x, gate_up, bias, anvil::Activation::kSwiGLU, std::nullopt, batch_invariant,
                     std::nullopt);
}

// ---- matmul and bmm ----------------------------------------------------------------------

// a [M, K] or [B, M, K] times b [K, N] or [B, K, N]; a 2-D operand against a 3-D one, or a
// batch of 1 against a batch of B, is broadcast (batch stride 0), as torch.matmul does.
at::Tensor matmul_impl(const char* op, const at::Tensor& a, const at::Tensor& b, bool batch_invariant,
                       bool require_3d) {
  check_input_dtype(op, "a", a);
  check_same_dtype(op, "b", b, a, "a");
  for (const auto& [name, t] : {std::pair<const char*, const at::Tensor*>{"a", &a}, {"b", &b}}) {
    if (require_3d) {
      TORCH_CHECK_VALUE(t->dim() == 3, "anvil.", op, ": ", name, " must be 3-D [batch, rows, cols], got ", num(t->dim()),
                        "-D with sizes ", shape_string(t->sizes()));
    } else {
      TORCH_CHECK_VALUE(t->dim() == 2 || t->dim() == 3, "anvil.", op, ": ", name,
                        " must be 2-D or 3-D (anvil computes matrix products; reshape other ranks first), got ",
                        num(t->dim()), "-D with sizes ", shape_string(t->sizes()));
    }
  }
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  TORCH_CHECK_VALUE(b.size(-2) == k, "anvil.", op, ": a is ", shape_string(a.sizes()), " and b is ", shape_string(b.sizes()),
                    "; b's rows must equal a's columns (K = ", num(k), ")");
  const int64_t batch_a = a.dim() == 3 ? a.size(0) : 1;
  const int64_t batch_b = b.dim() == 3 ? b.size(0) : 1;
  if (require_3d) {
    TORCH_CHECK_VALUE(batch_a == batch_b, "anvil.", op, ": a has batch ", num(batch_a), " and b has batch ", num(batch_b),
                      "; bmm needs equal batches");
  } else {
    TORCH_CHECK_VALUE(batch_a == batch_b || batch_a == 1 || batch_b == 1, "anvil.", op, ": a has batch ", num(batch_a),
                      " and b has batch ", num(batch_b), "; batches must be equal or one of them 1");
  }
  const int64_t batch = batch_a > batch_b ? batch_a : batch_b;
  const bool batched_out = a.dim() == 3 || b.dim() == 3;
  auto batch_stride = [&](const at::Tensor& t) { return t.dim() == 3 && t.size(0) > 1 ? t.stride(0) : 0; };
  const Operand oa = matrix_operand(op, "a", a, m, k, a.stride(-2), a.stride(-1), batch_stride(a));
  const Operand ob = matrix_operand(op, "b", b, k, n, b.stride(-2), b.stride(-1), batch_stride(b));
  check_devices(op, {{"a", &a}, {"b", &b}});

  const c10::cuda::CUDAGuard guard(a.device());
  at::Tensor y = batched_out ? at::empty({batch, m, n}, a.options()) : at::empty({m, n}, a.options());
  if (m == 0 || n == 0 || batch == 0) return y;
  anvil::GemmDesc desc;
  desc.m = m, desc.n = n, desc.k = k, desc.batch = batch;
  desc.a = oa.layout;
  desc.b = ob.layout;
  desc.d = anvil::MatrixLayout{to_anvil(a.scalar_type()), anvil::Order::kRowMajor, n > 0 ? n : 1, m * n};
  desc.c = desc.d;
  desc.batch_invariant = batch_invariant;
  anvil::GemmArgs args;
  args.a = oa.data;
  args.b = ob.data;
  args.d = y.data_ptr();
  run(op, desc, args, a);
  return y;
}

at::Tensor matmul(const at::Tensor& a, const at::Tensor& b, bool batch_invariant) {
  return matmul_impl("matmul", a, b, batch_invariant, false);
}

at::Tensor bmm(const at::Tensor& a, const at::Tensor& b, bool batch_invariant) {
  return matmul_impl("bmm", a, b, batch_invariant, true);
}

// ---- grouped GEMM (mixture of experts) -------------------------------------------------

// The most experts anvil's grouped GEMM takes (src/host/grouped.cpp).
constexpr int64_t kMaxExperts = int64_t{1} << 16;

// Checks shared by both layouts: weight [E, N, K] of x's dtype, K a positive multiple of 8,
// the index tensor int32/int64 of length E, bias [E, N]. Returns E.
int64_t check_grouped(const char* op, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& index,
                      const char* index_name, const char* index_meaning, const std::optional<at::Tensor>& bias,
                      int64_t x_dims, const char* x_shape) {
  check_input_dtype(op, "x", x);
  check_same_dtype(op, "weight", weight, x, "x");
  TORCH_CHECK_TYPE(index.scalar_type() == at::kInt || index.scalar_type() == at::kLong, "anvil.", op, ": ", index_name,
                   " must be int32 or int64, got ", dtype_name(index.scalar_type()));
  TORCH_CHECK_VALUE(x.dim() == x_dims, "anvil.", op, ": x must be ", num(x_dims), "-D ", x_shape, ", got ", num(x.dim()),
                    "-D with sizes ", shape_string(x.sizes()));
  TORCH_CHECK_VALUE(weight.dim() == 3, "anvil.", op, ": weight must be 3-D [E, N, K], got ", num(weight.dim()),
                    "-D with sizes ", shape_string(weight.sizes()));
  const int64_t k = x.size(-1);
  const int64_t experts = weight.size(0), n = weight.size(1);
  TORCH_CHECK_VALUE(weight.size(2) == k, "anvil.", op, ": weight is ", shape_string(weight.sizes()), " but x has K = ",
                    num(k), " (its last dimension); weight must be [E, N, ", num(k), "]");
  TORCH_CHECK_VALUE(experts >= 1 && experts <= kMaxExperts, "anvil.", op, ": weight must hold between 1 and ",
                    num(kMaxExperts), " experts, got ", num(experts));
  if (x_dims == 3) {
    TORCH_CHECK_VALUE(x.size(0) == experts, "anvil.", op, ": x has ", num(x.size(0)), " experts (its first dimension) but weight has ",
                      num(experts));
  }
  TORCH_CHECK_VALUE(index.dim() == 1 && index.size(0) == experts, "anvil.", op, ": ", index_name, " must be 1-D of length ",
                    num(experts), " (", index_meaning, "), got sizes ", shape_string(index.sizes()));
  TORCH_CHECK_VALUE(k > 0 && k % 8 == 0, "anvil.", op,
                    ": K must be a positive multiple of 8 (the grouped GEMM reads rows 16-byte aligned), got ", num(k));
  if (bias) {
    TORCH_CHECK_TYPE(bias->scalar_type() == x.scalar_type() || bias->scalar_type() == at::kFloat, "anvil.", op,
                     ": bias must be ", dtype_name(x.scalar_type()), " (x's dtype) or fp32, got ",
                     dtype_name(bias->scalar_type()));
    TORCH_CHECK_VALUE(bias->dim() == 2 && bias->size(0) == experts && bias->size(1) == n, "anvil.", op,
                      ": bias must be [E, N] = ", shape_string({experts, n}), " (one row per expert), got sizes ",
                      shape_string(bias->sizes()));
  }
  std::vector<std::pair<const char*, const at::Tensor*>> tensors = {{"x", &x}, {"weight", &weight}, {index_name, &index}};
  if (bias) tensors.push_back({"bias", &*bias});
  check_devices(op, tensors);
  return experts;
}

// Runs the grouped GEMM into y, which the caller has zero-filled: anvil writes only the rows
// some expert owns, so every other row reads as zero.
void run_grouped(const char* op, anvil::GroupedLayout layout, const at::Tensor& x, const at::Tensor& weight,
                 const at::Tensor& bounds, const std::optional<at::Tensor>& bias, anvil::Activation act, int64_t rows,
                 const at::Tensor& y) {
  const at::Tensor x_c = x.contiguous();
  const at::Tensor w_c = weight.contiguous();
  const at::Tensor bias_c = bias ? bias->contiguous() : at::Tensor();
  anvil::GroupedGemmDesc desc;
  desc.layout = layout;
  desc.experts = weight.size(0);
  desc.n = weight.size(1);
  desc.k = weight.size(2);
  desc.rows = rows;
  desc.input = to_anvil(x.scalar_type());
  desc.output = desc.input;
  desc.index_type = bounds.scalar_type() == at::kLong ? anvil::IndexType::kInt64 : anvil::IndexType::kInt32;
  // The contiguous layout reads torch's offs as they are: the E cumulative row ends.
  desc.offsets_are_ends = layout == anvil::GroupedLayout::kContiguous;
  desc.epilogue.activation = act;
  desc.epilogue.bias = bias ? anvil::BiasMode::kPerColumn : anvil::BiasMode::kNone;
  desc.epilogue.bias_dtype = bias ? to_anvil(bias->scalar_type()) : anvil::DataType::kF32;
  anvil::GroupedGemmArgs args;
  args.a = x_c.data_ptr();
  args.w = w_c.data_ptr();
  args.d = y.data_ptr();
  args.bias = bias ? bias_c.data_ptr() : nullptr;
  args.bounds = bounds.data_ptr();
  args.stream = c10::cuda::getCurrentCUDAStream(x.device().index()).stream();
  const size_t bytes = anvil::grouped_workspace_size(desc);
  at::Tensor workspace;
  if (bytes > 0) {
    workspace = at::empty({static_cast<int64_t>(bytes)}, x.options().dtype(at::kByte));
    args.workspace = workspace.data_ptr();
    args.workspace_bytes = bytes;
  }
  anvil::Diagnostic diag;
  const anvil::Status status = anvil::grouped_gemm(desc, args, &diag);
  TORCH_CHECK(status == anvil::Status::kSuccess, "anvil.", op, ": anvil refused the problem (", anvil::to_string(status),
              "): ", diag.message);
}

// Contiguous layout. offsets follows torch._grouped_mm's `offs`: E cumulative row ends,
// expert e owning rows offsets[e-1] .. offsets[e] (from row 0 for e = 0), which anvil reads
// as they are (GroupedGemmDesc::offsets_are_ends): the host never reads the routing.
at::Tensor grouped_mm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& offsets,
                      const std::optional<at::Tensor>& bias, c10::string_view activation) {
  const char* op = "grouped_mm";
  const auto act = parse_activation(op, std::string_view(activation.data(), activation.size()));
  const int64_t experts = check_grouped(op, x, weight, offsets, "offsets",
                                        "the cumulative row ends of the experts, as torch._grouped_mm's offs", bias, 2,
                                        "[rows, K]");
  const c10::cuda::CUDAGuard guard(x.device());
  const int64_t rows = x.size(0), n = weight.size(1);
  at::Tensor y = at::zeros({rows, n}, x.options());
  if (rows == 0 || n == 0) return y;
  (void)experts;
  run_grouped(op, anvil::GroupedLayout::kContiguous, x, weight, offsets.contiguous(), bias, act, rows, y);
  return y;
}

// Masked layout: x [E, max_rows, K], expert e using its first counts[e] rows.
at::Tensor grouped_mm_masked(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& counts,
                             const std::optional<at::Tensor>& bias, c10::string_view activation) {
  const char* op = "grouped_mm_masked";
  const auto act = parse_activation(op, std::string_view(activation.data(), activation.size()));
  check_grouped(op, x, weight, counts, "counts", "the rows each expert uses", bias, 3, "[E, max_rows, K]");
  const c10::cuda::CUDAGuard guard(x.device());
  const int64_t max_rows = x.size(1), n = weight.size(1);
  at::Tensor y = at::zeros({x.size(0), max_rows, n}, x.options());
  if (max_rows == 0 || n == 0) return y;
  run_grouped(op, anvil::GroupedLayout::kMasked, x, weight, counts.contiguous(), bias, act, max_rows, y);
  return y;
}

// ---- FP8 -------------------------------------------------------------------------------

bool is_fp8(at::ScalarType t) { return t == at::kFloat8_e4m3fn || t == at::kFloat8_e5m2; }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void check_fp8_k(const char* op, int64_t k) {
  TORCH_CHECK_VALUE(k > 0 && k % 16 == 0, "anvil.", op,
                    ": K must be a positive multiple of 16 (FP8 rows are read in 16-byte units), got ", num(k));
}

// One scale tensor: fp32, with the sizes the scale mode reads.
void check_scale(const char* op, const char* name, const at::Tensor& s, std::string_view mode,
                 const std::vector<int64_t>& expected, const char* meaning) {
  TORCH_CHECK_TYPE(s.scalar_type() == at::kFloat, "anvil.", op, ": ", name, " must be fp32, got ",
                   dtype_name(s.scalar_type()));
  if (mode == "tensor") {
    TORCH_CHECK_VALUE(s.numel() == 1 && s.dim() <= 1, "anvil.", op, ": ", name,
                      " must hold one value for scales='tensor' (sizes [] or [1]), got sizes ", shape_string(s.sizes()));
    return;
  }
  TORCH_CHECK_VALUE(s.sizes() == at::IntArrayRef(expected), "anvil.", op, ": ", name, " must be ", shape_string(expected),
                    " for scales='", std::string(mode), "' (", meaning, "), got sizes ", shape_string(s.sizes()));
}

at::Tensor linear_fp8(const at::Tensor& x_q, const at::Tensor& weight_q, const at::Tensor& x_scale,
                      const at::Tensor& weight_scale, const std::optional<at::Tensor>& bias, c10::string_view scales,
                      c10::string_view activation, std::optional<at::ScalarType> out_dtype) {
  const char* op = "linear_fp8";
  const std::string_view mode(scales.data(), scales.size());
  TORCH_CHECK_VALUE(mode == "block" || mode == "tensor" || mode == "rowcol", "anvil.", op,
                    ": scales must be one of 'block', 'tensor', 'rowcol', got '", std::string(mode), "'");
  const auto act = parse_activation(op, std::string_view(activation.data(), activation.size()));
  const at::ScalarType out_t = out_dtype.value_or(at::kBFloat16);
  for (const auto& [name, t] : {std::pair<const char*, const at::Tensor*>{"x_q", &x_q}, {"weight_q", &weight_q}}) {
    TORCH_CHECK_TYPE(is_fp8(t->scalar_type()), "anvil.", op, ": ", name, " must be float8_e4m3fn or float8_e5m2, got ",
                     dtype_name(t->scalar_type()));
  }
  TORCH_CHECK_TYPE(!(x_q.scalar_type() == at::kFloat8_e5m2 && weight_q.scalar_type() == at::kFloat8_e5m2), "anvil.", op,
                   ": x_q and weight_q are both float8_e5m2; anvil multiplies e4m3 x e4m3, e4m3 x e5m2 and e5m2 x e4m3");
  TORCH_CHECK_TYPE(mode != "block" || (x_q.scalar_type() == at::kFloat8_e4m3fn && weight_q.scalar_type() == at::kFloat8_e4m3fn),
                   "anvil.", op, ": scales='block' needs float8_e4m3fn x_q and weight_q, got ", dtype_name(x_q.scalar_type()),
                   " and ", dtype_name(weight_q.scalar_type()));
  TORCH_CHECK_TYPE(out_t == at::kBFloat16 || out_t == at::kHalf || out_t == at::kFloat, "anvil.", op,
                   ": out_dtype must be bf16, fp16 or fp32, got ", dtype_name(out_t));
  TORCH_CHECK_VALUE(x_q.dim() == 2, "anvil.", op, ": x_q must be 2-D [M, K], got ", num(x_q.dim()), "-D with sizes ",
                    shape_string(x_q.sizes()));
  TORCH_CHECK_VALUE(weight_q.dim() == 2, "anvil.", op, ": weight_q must be 2-D [N, K], got ", num(weight_q.dim()),
                    "-D with sizes ", shape_string(weight_q.sizes()));
  const int64_t m = x_q.size(0), k = x_q.size(1), n = weight_q.size(0);
  TORCH_CHECK_VALUE(weight_q.size(1) == k, "anvil.", op, ": weight_q is ", shape_string(weight_q.sizes()),
                    " but x_q has K = ", num(k), " (its last dimension); weight_q must be [N, ", num(k), "]");
  check_fp8_k(op, k);
  const int64_t kb = ceil_div(k, 128);
  if (mode == "block") {
    check_scale(op, "x_scale", x_scale, mode, {kb, m}, "one per row of x_q and 128 columns, K-block-major, as anvil.quantize_fp8 writes");
    check_scale(op, "weight_scale", weight_scale, mode, {ceil_div(n, 128), kb}, "one per 128 x 128 block of weight_q");
  } else {
    check_scale(op, "x_scale", x_scale, mode, {m}, "one per row of x_q");
    check_scale(op, "weight_scale", weight_scale, mode, {n}, "one per row of weight_q");
  }
  if (bias) {
    TORCH_CHECK_TYPE(bias->scalar_type() == out_t || bias->scalar_type() == at::kFloat, "anvil.", op, ": bias must be ",
                     dtype_name(out_t), " (out_dtype) or fp32, got ", dtype_name(bias->scalar_type()));
    TORCH_CHECK_VALUE(bias->dim() == 1 && bias->size(0) == n, "anvil.", op, ": bias must be 1-D of length ", num(n),
                      " (weight_q's rows), got sizes ", shape_string(bias->sizes()));
  }
  // The FP8 kernel reads both operands K-major (nn.Linear's layout).
  TORCH_CHECK_VALUE(x_q.stride(1) == 1, "anvil.", op, ": x_q has strides ", strides_string(x_q),
                    "; FP8 operands must be stored with a unit stride along K (call .contiguous() first)");
  TORCH_CHECK_VALUE(weight_q.stride(1) == 1, "anvil.", op, ": weight_q has strides ", strides_string(weight_q),
                    "; FP8 operands must be stored with a unit stride along K (call .contiguous() first)");
  std::vector<std::pair<const char*, const at::Tensor*>> tensors = {
      {"x_q", &x_q}, {"weight_q", &weight_q}, {"x_scale", &x_scale}, {"weight_scale", &weight_scale}};
  if (bias) tensors.push_back({"bias", &*bias});
  check_devices(op, tensors);

  const c10::cuda::CUDAGuard guard(x_q.device());
  at::Tensor y = at::empty({m, n}, x_q.options().dtype(out_t));
  if (m == 0 || n == 0) return y;
  const at::Tensor sa = x_scale.contiguous(), sb = weight_scale.contiguous();
  const at::Tensor bias_c = bias ? bias->contiguous() : at::Tensor();
  anvil::GemmDesc desc;
  desc.m = m, desc.n = n, desc.k = k;
  desc.a = anvil::MatrixLayout{to_anvil(x_q.scalar_type()), anvil::Order::kRowMajor, m <= 1 ? k : x_q.stride(0), 0};
  desc.b = anvil::MatrixLayout{to_anvil(weight_q.scalar_type()), anvil::Order::kColMajor, n <= 1 ? k : weight_q.stride(0), 0};
  desc.d = anvil::MatrixLayout{to_anvil(out_t), anvil::Order::kRowMajor, n, 0};
  desc.c = desc.d;
  desc.epilogue.activation = act;
  desc.epilogue.bias = bias ? anvil::BiasMode::kPerColumn : anvil::BiasMode::kNone;
  desc.epilogue.bias_dtype = bias ? to_anvil(bias->scalar_type()) : anvil::DataType::kF32;
  desc.scales = mode == "block" ? anvil::ScaleMode::kBlock128 : mode == "tensor" ? anvil::ScaleMode::kTensor
                                                                                 : anvil::ScaleMode::kRowColumn;
  anvil::GemmArgs args;
  args.a = x_q.data_ptr();
  args.b = weight_q.data_ptr();
  args.d = y.data_ptr();
  args.bias = bias ? bias_c.data_ptr() : nullptr;
  args.scale_a = sa.data_ptr<float>();
  args.scale_b = sb.data_ptr<float>();
  run(op, desc, args, x_q);
  return y;
}

// ---- grouped FP8 (torch._scaled_grouped_mm) ------------------------------------------

// torch._scaled_grouped_mm's 2-D x 3-D and 3-D x 3-D cases, argument for argument:
// mat_a [rows, K] (tokens sorted by expert, offs their cumulative row ends) or [E, M, K]
// (offs None), e4m3, row-major; mat_b [E, K, N] e4m3, the transpose of the experts'
// weights [E, N, K] (K contiguous); row-wise scales scale_a [rows] or [E, M] and scale_b
// [E, N], per-tensor ones (scale_a one value, scale_b one value or one per expert, [E]), or
// DeepSeek-V3 block scales: scale_a [ceil(K/128), rows] (or [ceil(K/128), E M]) and scale_b
// [E, ceil(N/128), ceil(K/128)].
// Returns [rows, N] or [E, M, N] in out_dtype (bf16 unless given). The output is allocated
// uninitialised, as torch's is: rows from offs[E-1] on are not written (zero-filling them
// would cost a pass over the whole output, 10-25% of a prefill call). use_fast_accum is taken for the signature: anvil sums the whole K in the tensor
// cores' accumulator either way (torch's use_fast_accum=True arithmetic; docs/fp8.md).
at::Tensor scaled_grouped_mm(const at::Tensor& mat_a, const at::Tensor& mat_b, const at::Tensor& scale_a,
                             const at::Tensor& scale_b, const std::optional<at::Tensor>& offs,
                             const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& scale_result,
                             std::optional<at::ScalarType> out_dtype, bool use_fast_accum) {
  (void)use_fast_accum;
  const char* op = "scaled_grouped_mm";
  for (const auto& [name, t] : {std::pair<const char*, const at::Tensor*>{"mat_a", &mat_a}, {"mat_b", &mat_b}}) {
    TORCH_CHECK_TYPE(t->scalar_type() == at::kFloat8_e4m3fn, "anvil.", op, ": ", name, " must be float8_e4m3fn, got ",
                     dtype_name(t->scalar_type()));
  }
  const at::ScalarType out_t = out_dtype.value_or(at::kBFloat16);
  TORCH_CHECK_TYPE(out_t == at::kBFloat16 || out_t == at::kHalf || out_t == at::kFloat, "anvil.", op,
                   ": out_dtype must be bf16, fp16 or fp32, got ", dtype_name(out_t));
  TORCH_CHECK_VALUE(!scale_result, "anvil.", op, ": scale_result is not supported (pass None, as torch._scaled_grouped_mm requires)");
  TORCH_CHECK_VALUE(mat_a.dim() == 2 || mat_a.dim() == 3, "anvil.", op, ": mat_a must be 2-D [rows, K] or 3-D [E, M, K], got ",
                    num(mat_a.dim()), "-D with sizes ", shape_string(mat_a.sizes()));
  TORCH_CHECK_VALUE(mat_b.dim() == 3, "anvil.", op, ": mat_b must be 3-D [E, K, N] (the experts' [E, N, K] weights transposed), got ",
                    num(mat_b.dim()), "-D with sizes ", shape_string(mat_b.sizes()));
  const bool stacked = mat_a.dim() == 3;
  const int64_t experts = mat_b.size(0), k = mat_b.size(1), n = mat_b.size(2);
  TORCH_CHECK_VALUE(mat_a.size(-1) == k, "anvil.", op, ": mat_b is ", shape_string(mat_b.sizes()), " but mat_a has K = ",
                    num(mat_a.size(-1)), " (its last dimension); mat_b must be [E, ", num(mat_a.size(-1)), ", N]");
  TORCH_CHECK_VALUE(experts >= 1 && experts <= kMaxExperts, "anvil.", op, ": mat_b must hold between 1 and ",
                    num(kMaxExperts), " experts, got ", num(experts));
  if (stacked) {
    TORCH_CHECK_VALUE(mat_a.size(0) == experts, "anvil.", op, ": mat_a has ", num(mat_a.size(0)),
                      " experts (its first dimension) but mat_b has ", num(experts));
    TORCH_CHECK_VALUE(!offs, "anvil.", op, ": offs must be None when mat_a is 3-D [E, M, K] (every expert uses its M rows)");
  } else {
    TORCH_CHECK_VALUE(offs.has_value(), "anvil.", op,
                      ": offs is required when mat_a is 2-D (the cumulative row ends of the experts, as torch._scaled_grouped_mm's offs)");
    TORCH_CHECK_TYPE(offs->scalar_type() == at::kInt || offs->scalar_type() == at::kLong, "anvil.", op,
                     ": offs must be int32 or int64, got ", dtype_name(offs->scalar_type()));
    TORCH_CHECK_VALUE(offs->dim() == 1 && offs->size(0) == experts, "anvil.", op, ": offs must be 1-D of length ", num(experts),
                      " (the cumulative row ends of the experts), got sizes ", shape_string(offs->sizes()));
  }
  check_fp8_k(op, k);
  for (const auto& [name, t] : {std::pair<const char*, const at::Tensor*>{"scale_a", &scale_a}, {"scale_b", &scale_b}}) {
    TORCH_CHECK_TYPE(t->scalar_type() == at::kFloat, "anvil.", op, ": ", name, " must be fp32, got ", dtype_name(t->scalar_type()));
  }
  const bool row_wise = scale_b.dim() == 2;
  const bool block = scale_b.dim() == 3;
  const int64_t k_blocks = (k + 127) / 128, n_blocks = (n + 127) / 128;
  if (block) {
    TORCH_CHECK_VALUE(scale_b.size(0) == experts && scale_b.size(1) == n_blocks && scale_b.size(2) == k_blocks, "anvil.",
                      op, ": scale_b must be [E, ceil(N/128), ceil(K/128)] = ", shape_string({experts, n_blocks, k_blocks}),
                      " for block scales (one per expert and 128 x 128 block of its weight), got sizes ",
                      shape_string(scale_b.sizes()));
    const int64_t storage_rows = stacked ? experts * mat_a.size(1) : mat_a.size(0);
    TORCH_CHECK_VALUE(scale_a.dim() == 2 && scale_a.size(0) == k_blocks && scale_a.size(1) == storage_rows, "anvil.", op,
                      ": scale_a must be [ceil(K/128), rows] = ", shape_string({k_blocks, storage_rows}),
                      " for block scales (one per row of mat_a and 128 columns, K-block-major, as anvil.quantize_fp8 "
                      "writes), got sizes ", shape_string(scale_a.sizes()));
  } else if (row_wise) {
    TORCH_CHECK_VALUE(scale_b.size(0) == experts && scale_b.size(1) == n, "anvil.", op, ": scale_b must be [E, N] = ",
                      shape_string({experts, n}), " for row-wise scales (one per expert and output column), got sizes ",
                      shape_string(scale_b.sizes()));
    const std::vector<int64_t> a_rows = stacked ? std::vector<int64_t>{experts, mat_a.size(1)} : std::vector<int64_t>{mat_a.size(0)};
    TORCH_CHECK_VALUE(scale_a.sizes() == at::IntArrayRef(a_rows), "anvil.", op, ": scale_a must be ", shape_string(a_rows),
                      " for row-wise scales (one per row of mat_a), got sizes ", shape_string(scale_a.sizes()));
  } else {
    TORCH_CHECK_VALUE(scale_b.numel() == 1 || (scale_b.dim() == 1 && scale_b.size(0) == experts), "anvil.", op,
                      ": scale_b must be [E, N] (row-wise), [E, ceil(N/128), ceil(K/128)] (block), [E] (one per expert) "
                      "or [] / [1] (one for all), got sizes ",
                      shape_string(scale_b.sizes()));
    TORCH_CHECK_VALUE(scale_a.numel() == 1 && scale_a.dim() <= 1, "anvil.", op,
                      ": scale_a must hold one value (sizes [] or [1]) when scale_b is per tensor or per expert, got sizes ",
                      shape_string(scale_a.sizes()));
  }
  if (bias) {
    TORCH_CHECK_TYPE(bias->scalar_type() == out_t || bias->scalar_type() == at::kFloat, "anvil.", op, ": bias must be ",
                     dtype_name(out_t), " (out_dtype) or fp32, got ", dtype_name(bias->scalar_type()));
    TORCH_CHECK_VALUE(bias->dim() == 2 && bias->size(0) == experts && bias->size(1) == n, "anvil.", op,
                      ": bias must be [E, N] = ", shape_string({experts, n}), " (one row per expert), got sizes ",
                      shape_string(bias->sizes()));
  }
  TORCH_CHECK_VALUE(mat_a.is_contiguous(), "anvil.", op, ": mat_a has strides ", strides_string(mat_a),
                    "; it must be contiguous (row-major, K contiguous)");
  // W = mat_b.transpose(-2, -1) must be a contiguous [E, N, K]: strides (N K, 1, K).
  TORCH_CHECK_VALUE(mat_b.transpose(-2, -1).is_contiguous(), "anvil.", op, ": mat_b has strides ", strides_string(mat_b),
                    "; it must be the transpose of a contiguous [E, N, K] weight (weight.transpose(-2, -1), K contiguous)");
  std::vector<std::pair<const char*, const at::Tensor*>> tensors = {
      {"mat_a", &mat_a}, {"mat_b", &mat_b}, {"scale_a", &scale_a}, {"scale_b", &scale_b}};
  if (offs) tensors.push_back({"offs", &*offs});
  if (bias) tensors.push_back({"bias", &*bias});
  check_devices(op, tensors);

  const c10::cuda::CUDAGuard guard(mat_a.device());
  const int64_t rows = stacked ? mat_a.size(1) : mat_a.size(0);
  at::Tensor y = stacked ? at::empty({experts, rows, n}, mat_a.options().dtype(out_t))
                         : at::empty({rows, n}, mat_a.options().dtype(out_t));
  if (rows == 0 || n == 0) return y;
  // 2-D: torch's offs as they are (E row ends); 3-D: the masked layout, every count M.
  const at::Tensor bounds = stacked ? at::full({experts}, rows, mat_a.options().dtype(at::kInt)) : offs->contiguous();
  const at::Tensor sa = scale_a.contiguous(), sb = scale_b.contiguous();
  const at::Tensor bias_c = bias ? bias->contiguous() : at::Tensor();
  anvil::GroupedGemmDesc desc;
  desc.layout = stacked ? anvil::GroupedLayout::kMasked : anvil::GroupedLayout::kContiguous;
  desc.experts = experts;
  desc.n = n;
  desc.k = k;
  desc.rows = rows;
  desc.input = anvil::DataType::kE4M3;
  desc.output = to_anvil(out_t);
  desc.index_type = bounds.scalar_type() == at::kLong ? anvil::IndexType::kInt64 : anvil::IndexType::kInt32;
  desc.offsets_are_ends = !stacked;
  desc.epilogue.bias = bias ? anvil::BiasMode::kPerColumn : anvil::BiasMode::kNone;
  desc.epilogue.bias_dtype = bias ? to_anvil(bias->scalar_type()) : anvil::DataType::kF32;
  desc.scales = block ? anvil::ScaleMode::kBlock128 : row_wise ? anvil::ScaleMode::kRowColumn : anvil::ScaleMode::kTensor;
  desc.scale_b_per_expert = block || row_wise || sb.numel() == experts;
  anvil::GroupedGemmArgs args;
  args.a = mat_a.data_ptr();
  args.w = mat_b.data_ptr();
  args.d = y.data_ptr();
  args.bias = bias ? bias_c.data_ptr() : nullptr;
  args.bounds = bounds.data_ptr();
  args.scale_a = sa.data_ptr<float>();
  args.scale_b = sb.data_ptr<float>();
  args.stream = c10::cuda::getCurrentCUDAStream(mat_a.device().index()).stream();
  anvil::Diagnostic diag;
  const anvil::Status status = anvil::grouped_gemm(desc, args, &diag);
  TORCH_CHECK(status == anvil::Status::kSuccess, "anvil.", op, ": anvil refused the problem (", anvil::to_string(status),
              "): ", diag.message);
  return y;
}

// x [M, K] bf16/fp16 to FP8 with fp32 scales: block = 128 gives one scale per row and 128
// columns in scales='block''s x_scale layout ([ceil(K/128), M]); no block gives one scale
// for the tensor (sizes [1], scales='tensor').
std::tuple<at::Tensor, at::Tensor> quantize_fp8(const at::Tensor& x, std::optional<int64_t> block,
                                                std::optional<at::ScalarType> dtype) {
  const char* op = "quantize_fp8";
  TORCH_CHECK_VALUE(!block || *block == 128, "anvil.", op,
                    ": block must be 128 (one scale per row and 128 columns) or None (one scale for the tensor), got ",
                    num(*block));
  const at::ScalarType q_t = dtype.value_or(at::kFloat8_e4m3fn);
  TORCH_CHECK_TYPE(is_fp8(q_t), "anvil.", op, ": dtype must be float8_e4m3fn or float8_e5m2, got ", dtype_name(q_t));
  check_input_dtype(op, "x", x);
  TORCH_CHECK_VALUE(x.dim() == 2, "anvil.", op, ": x must be 2-D [M, K], got ", num(x.dim()), "-D with sizes ",
                    shape_string(x.sizes()));
  const int64_t m = x.size(0), k = x.size(1);
  check_fp8_k(op, k);
  check_devices(op, {{"x", &x}});

  const c10::cuda::CUDAGuard guard(x.device());
  at::Tensor q = at::empty({m, k}, x.options().dtype(q_t));
  at::Tensor scale = block ? at::empty({ceil_div(k, 128), m}, x.options().dtype(at::kFloat))
                           : at::ones({1}, x.options().dtype(at::kFloat));
  if (m == 0) return {q, scale};
  const at::Tensor x_c = x.stride(1) == 1 && x.stride(0) >= k ? x : x.contiguous();
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(x.device().index()).stream();
  anvil::Diagnostic diag;
  const anvil::Status status =
      block ? anvil::quantize_fp8_blocks(x_c.data_ptr(), to_anvil(x.scalar_type()), x_c.stride(0), q.data_ptr(),
                                         to_anvil(q_t), k, scale.data_ptr<float>(), m, k, stream, &diag)
            : anvil::quantize_fp8_tensor(x_c.data_ptr(), to_anvil(x.scalar_type()), x_c.stride(0), q.data_ptr(),
                                         to_anvil(q_t), k, scale.data_ptr<float>(), m, k, stream, &diag);
  TORCH_CHECK(status == anvil::Status::kSuccess, "anvil.", op, ": anvil refused the problem (", anvil::to_string(status),
              "): ", diag.message);
  return {q, scale};
}

// The kernel anvil's dispatcher would choose for a linear problem (for reports and tests).
std::string dispatch_name_linear(int64_t m, int64_t n, int64_t k, c10::string_view dtype, bool batch_invariant) {
  const auto t = std::string_view(dtype.data(), dtype.size()) == "fp16" ? anvil::DataType::kF16 : anvil::DataType::kBF16;
  anvil::GemmDesc desc = anvil::linear_desc(m, n, k, t, t);
  desc.batch_invariant = batch_invariant;
  const char* name = anvil::dispatch_name(desc);
  return name != nullptr ? name : "";
}

// Tuning caches (docs/tuning.md): anvil-tune's plans for the user's GPU, named from
// Python as from C++. A file that cannot be read or is not a valid cache is refused with
// the library's message; the built-in table stays either way.
void load_tuning_cache_op(c10::string_view path) {
  const std::string file(path.data(), path.size());
  anvil::Diagnostic diag;
  TORCH_CHECK_VALUE(anvil::load_tuning_cache(file.c_str(), &diag) == anvil::Status::kSuccess,
                    "anvil.load_tuning_cache: ", diag.message);
}

void clear_tuning_cache_op() { anvil::clear_tuning_cache(); }

}  // namespace

TORCH_LIBRARY(anvil, m) {
  m.def("linear(Tensor x, Tensor weight, Tensor? bias=None, str activation='none', Tensor? residual=None, "
        "*, bool batch_invariant=False) -> Tensor");
  m.def("linear_into(Tensor x, Tensor weight, Tensor? bias=None, str activation='none', Tensor? residual=None, "
        "*, bool batch_invariant=False, Tensor(a!) out) -> ()");
  m.def("linear_swiglu(Tensor x, Tensor gate_up, Tensor? bias=None, *, bool batch_invariant=False) -> Tensor");
  m.def("matmul(Tensor a, Tensor b, *, bool batch_invariant=False) -> Tensor");
  m.def("bmm(Tensor a, Tensor b, *, bool batch_invariant=False) -> Tensor");
  m.def("dispatch_name(int m, int n, int k, str dtype='bf16', bool batch_invariant=False) -> str",
        &dispatch_name_linear);
  m.def("load_tuning_cache(str path) -> ()", &load_tuning_cache_op);
  m.def("clear_tuning_cache() -> ()", &clear_tuning_cache_op);
  m.def("grouped_mm(Tensor x, Tensor weight, Tensor offsets, Tensor? bias=None, str activation='none') -> Tensor");
  m.def("grouped_mm_masked(Tensor x, Tensor weight, Tensor counts, Tensor? bias=None, str activation='none') -> Tensor");
  // bias is not keyword-only in the schema (torch.library.register_autograd refuses keyword-only
  // tensors); the Python wrapper takes it by keyword.
  m.def("linear_fp8(Tensor x_q, Tensor weight_q, Tensor x_scale, Tensor weight_scale, Tensor? bias=None, *, "
        "str scales='block', str activation='none', ScalarType? out_dtype=None) -> Tensor");
  m.def("quantize_fp8(Tensor x, int? block=128, ScalarType? dtype=None) -> (Tensor, Tensor)");
  m.def("scaled_grouped_mm(Tensor mat_a, Tensor mat_b, Tensor scale_a, Tensor scale_b, Tensor? offs=None, "
        "Tensor? bias=None, Tensor? scale_result=None, ScalarType? out_dtype=None, bool use_fast_accum=False) -> Tensor");
}

// The same functions serve CUDA tensors and CPU ones, which fail on the device check
// after every other argument check has run.
static void register_kernels(torch::Library& m) {
  m.impl("linear", &linear);
  m.impl("linear_into", &linear_into);
  m.impl("linear_swiglu", &linear_swiglu);
  m.impl("matmul", &matmul);
  m.impl("bmm", &bmm);
  m.impl("grouped_mm", &grouped_mm);
  m.impl("grouped_mm_masked", &grouped_mm_masked);
  m.impl("linear_fp8", &linear_fp8);
  m.impl("quantize_fp8", &quantize_fp8);
  m.impl("scaled_grouped_mm", &scaled_grouped_mm);
}

TORCH_LIBRARY_IMPL(anvil, CUDA, m) { register_kernels(m); }
TORCH_LIBRARY_IMPL(anvil, CPU, m) { register_kernels(m); }
