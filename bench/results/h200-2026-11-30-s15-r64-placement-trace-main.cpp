// EXPERIMENT harness (session 15): which SM each decode CTA ran on, and when its mainloop
// ended, for sm90-decode-r64's two-per-SM configuration.
#include <anvil/gemm.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <vector>
extern "C" int anvil_decode_trace_read(void* host, size_t bytes);
extern "C" int anvil_decode_trace_clear();
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)
static unsigned long long trace[4096][4];
static double med(std::vector<double> v) { if (v.empty()) return 0; std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
static double mx(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }
int main() {
  struct Run { const char* kernel; int m, n, k; };
  Run runs[] = {{"sm90-decode-r64", 16, 10240, 8192}, {"sm90-decode", 16, 10240, 8192}, {"sm90-decode-r64", 16, 8192, 8192},
                {"sm90-decode-r64", 9, 8192, 8192}, {"sm90-decode-r64", 64, 8192, 8192}};
  for (auto& r : runs) {
    std::vector<uint16_t> ha(size_t(r.m) * r.k), hw(size_t(r.n) * r.k);
    std::mt19937 rng(1);
    for (auto& v : ha) v = 0x3c00 + (rng() & 0x3ff) - 0x200;
    for (auto& v : hw) v = 0x3c00 + (rng() & 0x3ff) - 0x200;
    void *a, *w, *d;
    CK(cudaMalloc(&a, ha.size() * 2)); CK(cudaMalloc(&w, hw.size() * 2)); CK(cudaMalloc(&d, size_t(r.m) * r.n * 2));
    CK(cudaMemcpy(a, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(w, hw.data(), hw.size() * 2, cudaMemcpyHostToDevice));
    anvil::GemmDesc desc = anvil::linear_desc(r.m, r.n, r.k, anvil::DataType::kBF16, anvil::DataType::kBF16);
    desc.kernel = r.kernel;
    anvil::GemmArgs args; args.a = a; args.b = w; args.d = d;
    anvil::Diagnostic diag;
    for (int i = 0; i < 50; ++i) if (anvil::gemm(desc, args, &diag) != anvil::Status::kSuccess) { printf("gemm: %s\n", diag.message); return 1; }
    CK(cudaDeviceSynchronize());
    for (int rep = 0; rep < 4; ++rep) {
      CK(cudaError_t(anvil_decode_trace_clear()));
      for (int i = 0; i < 20; ++i) anvil::gemm(desc, args, &diag);
      CK(cudaDeviceSynchronize());
      CK(cudaError_t(anvil_decode_trace_read(trace, sizeof(trace))));
      unsigned long long t0 = ~0ull; int ctas = 0;
      std::map<int, int> per_sm;
      for (int c = 0; c < 4096; ++c) if (trace[c][0]) { ++ctas; t0 = std::min(t0, trace[c][0]); per_sm[int(trace[c][3])]++; }
      std::vector<double> single, doubled, exit_all;
      std::vector<int> doubled_sms;
      for (auto& [sm, n] : per_sm) if (n > 1) doubled_sms.push_back(sm);
      for (int c = 0; c < 4096; ++c) {
        if (!trace[c][0] || !trace[c][1]) continue;
        const double done = (trace[c][1] - t0) / 1000.0;
        (per_sm[int(trace[c][3])] > 1 ? doubled : single).push_back(done);
        if (trace[c][2]) exit_all.push_back((trace[c][2] - t0) / 1000.0);
      }
      printf("%s %d x %d x %d rep %d: %d CTAs on %zu SMs, %zu SMs with two; mainloop end (us) single-SM CTAs med %.2f max %.2f | doubled-SM CTAs med %.2f max %.2f | last exit %.2f\n",
             r.kernel, r.m, r.n, r.k, rep, ctas, per_sm.size(), doubled_sms.size(), med(single), mx(single), med(doubled), mx(doubled), mx(exit_all));
      if (rep == 0) {
        printf("  doubled SMs:"); for (int sm : doubled_sms) printf(" %d", sm); printf("\n");
        printf("  unused SMs:"); for (int sm = 0; sm < 132; ++sm) if (!per_sm.count(sm)) printf(" %d", sm); printf("\n");
        // The 10 slowest CTAs: smid and mainloop end.
        std::vector<std::pair<double, int>> v;
        for (int c = 0; c < 4096; ++c) if (trace[c][0] && trace[c][1]) v.push_back({(trace[c][1] - t0) / 1000.0, int(trace[c][3])});
        std::sort(v.begin(), v.end());
        printf("  slowest:"); for (size_t i = v.size() > 10 ? v.size() - 10 : 0; i < v.size(); ++i) printf(" sm%d@%.2f", v[i].second, v[i].first); printf("\n");
        printf("  fastest:"); for (size_t i = 0; i < std::min<size_t>(6, v.size()); ++i) printf(" sm%d@%.2f", v[i].second, v[i].first); printf("\n");
      }
    }
    cudaFree(a); cudaFree(w); cudaFree(d);
  }
}
