#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "bench.h"
#include "json.h"

namespace bench {

namespace {

std::string fmt(const char* f, double v) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

std::string verified_text(const Row& r) {
  if (r.status != "ok") return r.status;
  if (!r.verified) return "skipped";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%s %.1e", *r.verified ? "yes" : "NO", r.rel_error);
  return buf;
}

std::string kernel_text(const Row& r) {
  // Showing the dispatcher's pick next to "anvil" saves looking it up in the JSON.
  if ((r.kernel == "anvil" || r.kernel == "anvil-plain") && r.dispatched)
    return r.kernel + "[" + *r.dispatched + "]";
  return r.kernel;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string csv_number(double v) {
  if (!std::isfinite(v)) return "";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.10g", v);
  return buf;
}

}  // namespace

void print_table(const Results& res) {
  size_t name_w = 5, kernel_w = 6;
  for (const auto& r : res.rows) {
    name_w = std::max(name_w, r.name.size());
    kernel_w = std::max(kernel_w, kernel_text(r).size());
  }
  std::printf("\n%s, %s -> %s, commit %s\n", res.info.gpu.c_str(), res.info.dtype.c_str(),
              res.info.out_dtype.c_str(), res.info.commit.c_str());
  if (res.info.epilogue != "none") {
    // The rows do not say which ran fused, so the header does.
    std::printf("epilogue %s fused into the anvil rows; cublas and anvil-plain run the plain "
                "GEMM%s\n",
                res.info.epilogue.c_str(),
                res.info.epilogue == "swiglu"
                    ? " (N is the GEMM width; fused D is M x N/2, plain D M x N)"
                    : "");
  }
  std::printf("%-*s %6s %6s %6s  %-*s %10s %9s %8s %9s  %s\n", static_cast<int>(name_w), "shape",
              "M", "N", "K", static_cast<int>(kernel_w), "kernel", "us", "TFLOP/s", "GB/s",
              "vs cuBLAS", "verified");
  std::string last_name;
  for (const auto& r : res.rows) {
    // A blank line between shapes groups each shape's kernels.
    if (!last_name.empty() && r.name != last_name) std::printf("\n");
    last_name = r.name;
    std::string speed = fmt("%.3fx", r.speedup_vs_cublas);
    std::printf("%-*s %6lld %6lld %6lld  %-*s %10s %9s %8s %9s  %s", static_cast<int>(name_w),
                r.name.c_str(), static_cast<long long>(r.m), static_cast<long long>(r.n),
                static_cast<long long>(r.k), static_cast<int>(kernel_w), kernel_text(r).c_str(),
                fmt("%.2f", r.us_median).c_str(), fmt("%.1f", r.tflops).c_str(),
                fmt("%.0f", r.gbps).c_str(), speed.c_str(), verified_text(r).c_str());
    if (r.status != "ok" && !r.message.empty()) std::printf("  (%s)", r.message.c_str());
    std::printf("\n");
  }
  std::fflush(stdout);
}

void print_anchor_check(const RunInfo& info) {
  if (info.anchors_path.empty()) return;
  std::printf("\ncuBLAS here vs anchors (%s%s%s): ratio = ours / anchor\n",
              info.anchors_path.c_str(), info.anchors_device ? ", " : "",
              info.anchors_device ? info.anchors_device->c_str() : "");
  if (info.anchor_check.empty()) {
    std::printf(
        "  no cuBLAS row matched an anchor (same M, N, K and dtype, output dtype = input)\n");
    return;
  }
  size_t name_w = 5;
  for (const auto& c : info.anchor_check) name_w = std::max(name_w, c.name.size());
  std::printf("  %-*s %6s %6s %6s %5s %11s %11s %7s\n", static_cast<int>(name_w), "shape", "M", "N",
              "K", "dtype", "cublas us", "anchor us", "ratio");
  for (const auto& c : info.anchor_check) {
    std::printf("  %-*s %6lld %6lld %6lld %5s %11s %11s %7s\n", static_cast<int>(name_w),
                c.name.c_str(), static_cast<long long>(c.m), static_cast<long long>(c.n),
                static_cast<long long>(c.k), c.dtype.c_str(), fmt("%.2f", c.cublas_us).c_str(),
                fmt("%.2f", c.anchor_us).c_str(), fmt("%.3f", c.ratio).c_str());
  }
  std::fflush(stdout);
}

std::string to_json(const Results& res) {
  const RunInfo& info = res.info;
  json::Writer w;
  w.begin_object();
  w.key("tool");
  w.value("anvil-bench");
  w.key("gpu");
  w.value(info.gpu);
  w.key("compute_capability");
  w.value(info.compute_capability);
  w.key("sm_count");
  w.value(info.sm_count);
  w.key("l2_bytes");
  w.value(info.l2_bytes);
  w.key("driver");
  w.value(info.driver);
  w.key("runtime");
  w.value(info.runtime);
  w.key("driver_release");
  if (info.driver_release) {
    w.value(*info.driver_release);
  } else {
    w.null();
  }
  w.key("sm_clock_mhz_before");
  w.value(info.sm_clock_mhz_before);
  w.key("sm_clock_mhz_after");
  w.value(info.sm_clock_mhz_after);
  w.key("commit");
  w.value(info.commit);
  w.key("date");
  w.value(info.date);
  w.key("dtype");
  w.value(info.dtype);
  w.key("out_dtype");
  w.value(info.out_dtype);
  w.key("scales");
  w.value(info.scales);
  w.key("epilogue");
  w.value(info.epilogue);
  w.key("batch_invariant");
  w.value(info.batch_invariant);
  w.key("inputs");
  w.value(info.inputs);
  w.key("method");
  w.value(info.method);
  w.key("repeats");
  w.value(info.repeats);
  w.key("min_replay_ms");
  w.value(info.min_replay_ms);
  w.key("max_iters");
  w.value(info.max_iters);
  w.key("verify");
  w.value(info.verify);
  w.key("kernels");
  w.begin_array();
  for (const auto& k : info.kernels) w.value(k);
  w.end_array();
  w.key("shape_files");
  w.begin_array();
  for (const auto& f : info.shape_files) w.value(f);
  w.end_array();
  if (info.aborted) {
    w.key("aborted");
    w.value(*info.aborted);
  }

  w.key("rows");
  w.begin_array();
  for (const auto& r : res.rows) {
    w.begin_object();
    w.key("kernel");
    w.value(r.kernel);
    w.key("name");
    w.value(r.name);
    w.key("M");
    w.value(r.m);
    w.key("N");
    w.value(r.n);
    w.key("K");
    w.value(r.k);
    w.key("dtype");
    w.value(r.dtype);
    w.key("out_dtype");
    w.value(r.out_dtype);
    w.key("epilogue");
    w.value(r.epilogue);
    w.key("status");
    w.value(r.status);
    w.key("message");
    if (r.message.empty()) {
      w.null();
    } else {
      w.value(r.message);
    }
    w.key("dispatched");
    if (r.dispatched) {
      w.value(*r.dispatched);
    } else {
      w.null();
    }
    w.key("us_median");
    w.value(r.us_median);
    w.key("us_min");
    w.value(r.us_min);
    w.key("us_max");
    w.value(r.us_max);
    w.key("tflops");
    w.value(r.tflops);
    w.key("gbps");
    w.value(r.gbps);
    w.key("speedup_vs_cublas");
    w.value(r.speedup_vs_cublas);
    w.key("verified");
    if (r.verified) {
      w.value(*r.verified);
    } else {
      w.null();
    }
    w.key("rel_error");
    w.value(r.rel_error);
    w.key("max_abs_error");
    w.value(r.max_abs_error);
    w.key("nonfinite");
    if (r.nonfinite >= 0) {
      w.value(r.nonfinite);
    } else {
      w.null();
    }
    w.key("out_of_tolerance");
    if (r.out_of_tolerance >= 0) {
      w.value(r.out_of_tolerance);
    } else {
      w.null();
    }
    w.key("tol_rel_frobenius");
    w.value(r.tol_rel_frobenius);
    w.key("iters");
    w.value(r.iters);
    w.key("input_sets");
    w.value(r.input_sets);
    w.key("method");
    w.value(r.method);
    if (!r.algo.empty()) {
      w.key("algo");
      w.value(r.algo);
    }
    w.key("flops");
    w.value(r.flops);
    w.key("min_bytes");
    w.value(r.min_bytes);
    w.key("sm_clock_mhz_after");
    w.value(r.sm_clock_mhz_after);
    w.key("us_samples");
    w.number_array(r.samples_us);
    w.end_object();
  }
  w.end_array();

  if (!info.anchors_path.empty()) {
    w.key("anchor_file");
    w.value(info.anchors_path);
    w.key("anchor_device");
    if (info.anchors_device) {
      w.value(*info.anchors_device);
    } else {
      w.null();
    }
    w.key("anchor_check");
    w.begin_array();
    for (const auto& c : info.anchor_check) {
      w.begin_object();
      w.key("name");
      w.value(c.name);
      w.key("M");
      w.value(c.m);
      w.key("N");
      w.value(c.n);
      w.key("K");
      w.value(c.k);
      w.key("dtype");
      w.value(c.dtype);
      w.key("cublas_us");
      w.value(c.cublas_us);
      w.key("anchor_us");
      w.value(c.anchor_us);
      w.key("ratio");
      w.value(c.ratio);
      w.end_object();
    }
    w.end_array();
  }
  w.end_object();
  return w.str();
}

std::string to_csv(const Results& res) {
  std::string out =
      "name,M,N,K,kernel,dispatched,dtype,out_dtype,status,us_median,us_min,us_max,tflops,gbps,"
      "speedup_vs_cublas,verified,rel_error,iters,input_sets,method,message\n";
  for (const auto& r : res.rows) {
    out += csv_field(r.name) + ',' + std::to_string(r.m) + ',' + std::to_string(r.n) + ',' +
           std::to_string(r.k) + ',' + csv_field(r.kernel) + ',' +
           csv_field(r.dispatched ? *r.dispatched : std::string()) + ',' + r.dtype + ',' +
           r.out_dtype + ',' + r.status + ',' + csv_number(r.us_median) + ',' +
           csv_number(r.us_min) + ',' + csv_number(r.us_max) + ',' + csv_number(r.tflops) + ',' +
           csv_number(r.gbps) + ',' + csv_number(r.speedup_vs_cublas) + ',' +
           (r.verified ? (*r.verified ? "true" : "false") : "") + ',' + csv_number(r.rel_error) +
           ',' + std::to_string(r.iters) + ',' + std::to_string(r.input_sets) + ',' +
           csv_field(r.method) + ',' + csv_field(r.message) + '\n';
  }
  return out;
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) {
    std::fprintf(stderr, "anvil-bench: cannot write %s\n", path.c_str());
    return false;
  }
  f << text;
  f.close();
  if (!f) {
    std::fprintf(stderr, "anvil-bench: error writing %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace bench
