// EXPERIMENT harness: per-phase globaltimer stamps of sm90-decode (see the patch in decode_kernel.cuh).
#include <anvil/gemm.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
extern "C" int anvil_decode_trace_read(void* host, size_t bytes);
extern "C" int anvil_decode_trace_clear();
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)
static unsigned long long trace[4096][32];
int main(int argc, char** argv) {
  const char* kernel = argc > 1 ? argv[1] : "sm90-decode";
  int shapes[][3] = {{64, 8192, 128}, {64, 8192, 8192}, {32, 8192, 8192}, {16, 10240, 8192}, {16, 8192, 8192}};
  const char* names[] = {"entry", "synced", "-", "-", "mainloop_done", "parked", "fenced_synced", "planned", "rings_idle", "copies_issued", "landed", "rows.enter", "rows.first_pair", "rows.done", "reduced", "exit"};
  for (auto& s : shapes) {
    int m = s[0], n = s[1], k = s[2];
    std::vector<uint16_t> ha(size_t(m) * k), hw(size_t(n) * k);
    std::mt19937 rng(1);
    for (auto& v : ha) v = 0x3c00 + (rng() & 0x3ff) - 0x200;  // bf16 around 1/128..: any finite values
    for (auto& v : hw) v = 0x3c00 + (rng() & 0x3ff) - 0x200;
    void *a, *w, *d;
    CK(cudaMalloc(&a, ha.size() * 2)); CK(cudaMalloc(&w, hw.size() * 2)); CK(cudaMalloc(&d, size_t(m) * n * 2));
    CK(cudaMemcpy(a, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(w, hw.data(), hw.size() * 2, cudaMemcpyHostToDevice));
    anvil::GemmDesc desc = anvil::linear_desc(m, n, k, anvil::DataType::kBF16, anvil::DataType::kBF16);
    desc.kernel = kernel;
    anvil::GemmArgs args; args.a = a; args.b = w; args.d = d;
    anvil::Diagnostic diag;
    for (int i = 0; i < 50; ++i) if (anvil::gemm(desc, args, &diag) != anvil::Status::kSuccess) { printf("gemm: %s\n", diag.message); return 1; }
    CK(cudaDeviceSynchronize());
    for (int rep = 0; rep < 3; ++rep) {
      CK(cudaError_t(anvil_decode_trace_clear()));
      for (int i = 0; i < 20; ++i) anvil::gemm(desc, args, &diag);
      CK(cudaDeviceSynchronize());
      CK(cudaError_t(anvil_decode_trace_read(trace, sizeof(trace))));
      int ctas = 0; unsigned long long t0 = ~0ull;
      for (int c = 0; c < 4096; ++c) if (trace[c][0]) { ++ctas; t0 = std::min(t0, trace[c][0]); }
      printf("== %s %d x %d x %d rep %d: %d CTAs (ns from the first entry: min / median / max)\n", kernel, m, n, k, rep, ctas);
      for (int slot = 0; slot < 16; ++slot) {
        std::vector<long long> v;
        for (int c = 0; c < 4096; ++c) if (trace[c][0] && trace[c][slot]) v.push_back((long long)(trace[c][slot] - t0));
        if (v.empty()) continue;
        std::sort(v.begin(), v.end());
        printf("  %-17s %7lld %7lld %7lld\n", names[slot], v.front(), v[v.size() / 2], v.back());
      }
      // SMs with two CTAs
      std::vector<int> per_sm(200, 0);
      for (int c = 0; c < 4096; ++c) if (trace[c][0]) per_sm[trace[c][31] % 200]++;
      int two = 0, used = 0; for (int x : per_sm) { if (x) ++used; if (x > 1) ++two; }
      printf("  SMs used %d, with two or more CTAs %d\n", used, two);
    }
    cudaFree(a); cudaFree(w); cudaFree(d);
  }
}
