// Which launch attributes and graph edges cuBLASLt's kernels get when captured back to back.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define CB(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { printf("%s: %d\n", #x, (int)s_); exit(1); } } while (0)
int main() {
  cublasLtHandle_t h; CB(cublasLtCreate(&h));
  void* ws; size_t wsb = 64 << 20; CK(cudaMalloc(&ws, wsb));
  int shapes[][3] = {{1, 8192, 8192}, {64, 8192, 8192}, {16, 10240, 8192}, {64, 8192, 128}, {4096, 4096, 4096}, {512, 8192, 5376}};
  cudaStream_t st; CK(cudaStreamCreate(&st));
  for (auto& s : shapes) {
    int m = s[0], n = s[1], k = s[2];
    void *a, *w, *d;
    CK(cudaMalloc(&a, size_t(m) * k * 2)); CK(cudaMalloc(&w, size_t(n) * k * 2)); CK(cudaMalloc(&d, size_t(m) * n * 2));
    CK(cudaMemset(a, 0x3c, size_t(m) * k * 2)); CK(cudaMemset(w, 0x3c, size_t(n) * k * 2));
    cublasLtMatmulDesc_t op; CB(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t tw = CUBLAS_OP_T, ta = CUBLAS_OP_N;
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &tw, sizeof tw));
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &ta, sizeof ta));
    cublasLtMatrixLayout_t lw, la, ld;
    CB(cublasLtMatrixLayoutCreate(&lw, CUDA_R_16BF, k, n, k));
    CB(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, k, m, k));
    CB(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, n, m, n));
    cublasLtMatmulPreference_t pref; CB(cublasLtMatmulPreferenceCreate(&pref));
    CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
    cublasLtMatmulHeuristicResult_t r{}; int found = 0;
    CB(cublasLtMatmulAlgoGetHeuristic(h, op, lw, la, ld, ld, pref, 1, &r, &found));
    float alpha = 1, beta = 0;
    CB(cublasLtMatmul(h, op, &alpha, w, lw, a, la, &beta, d, ld, d, ld, &r.algo, ws, wsb, st));
    CK(cudaStreamSynchronize(st));
    cudaGraph_t g;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 3; ++i) CB(cublasLtMatmul(h, op, &alpha, w, lw, a, la, &beta, d, ld, d, ld, &r.algo, ws, wsb, st));
    CK(cudaStreamEndCapture(st, &g));
    size_t nn = 0; CK(cudaGraphGetNodes(g, nullptr, &nn));
    std::vector<cudaGraphNode_t> nodes(nn); CK(cudaGraphGetNodes(g, nodes.data(), &nn));
    printf("== %d x %d x %d: %zu nodes\n", m, n, k, nn);
    for (size_t i = 0; i < nn; ++i) {
      cudaGraphNodeType t; CK(cudaGraphNodeGetType(nodes[i], &t));
      if (t != cudaGraphNodeTypeKernel) { printf("  node %zu type %d\n", i, (int)t); continue; }
      cudaKernelNodeParams p{}; if (cudaGraphKernelNodeGetParams(nodes[i], &p) != cudaSuccess) { cudaGetLastError(); p.func = nullptr; }
      const char* name = "?"; if (p.func) cudaFuncGetName(&name, p.func); cudaGetLastError();
      cudaLaunchAttributeValue v{};
      int pss = -1, pev = -1, prio = -1;
      if (cudaGraphKernelNodeGetAttribute(nodes[i], cudaLaunchAttributeProgrammaticStreamSerialization, &v) == cudaSuccess) pss = v.programmaticStreamSerializationAllowed;
      cudaGetLastError();
      if (cudaGraphKernelNodeGetAttribute(nodes[i], cudaLaunchAttributeProgrammaticEvent, &v) == cudaSuccess) pev = v.programmaticEvent.triggerAtBlockStart;
      cudaGetLastError();
      printf("  node %zu kernel %.90s grid %u,%u,%u block %u smem %u pss %d progEvent %d\n", i, name, p.gridDim.x, p.gridDim.y, p.gridDim.z, p.blockDim.x, p.sharedMemBytes, pss, pev);
    }
    size_t ne = 0; CK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &ne));
    std::vector<cudaGraphNode_t> from(ne), to(ne); std::vector<cudaGraphEdgeData> ed(ne);
    CK(cudaGraphGetEdges(g, from.data(), to.data(), ed.data(), &ne));
    for (size_t i = 0; i < ne; ++i) {
      size_t fi = 0, ti = 0;
      for (size_t j = 0; j < nn; ++j) { if (nodes[j] == from[i]) fi = j; if (nodes[j] == to[i]) ti = j; }
      printf("  edge %zu -> %zu type %d from_port %d to_port %d\n", fi, ti, (int)ed[i].type, (int)ed[i].from_port, (int)ed[i].to_port);
    }
    CK(cudaGraphDestroy(g));
    // Timing: 200 launches captured; then the same graph with every programmatic edge made a full one.
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 200; ++i) CB(cublasLtMatmul(h, op, &alpha, w, lw, a, la, &beta, d, ld, d, ld, &r.algo, ws, wsb, st));
    CK(cudaStreamEndCapture(st, &g));
    cudaGraph_t g2; CK(cudaGraphClone(&g2, g));
    {
      size_t n2 = 0; CK(cudaGraphGetEdges(g2, nullptr, nullptr, nullptr, &n2));
      std::vector<cudaGraphNode_t> f2(n2), t2(n2); std::vector<cudaGraphEdgeData> e2(n2);
      CK(cudaGraphGetEdges(g2, f2.data(), t2.data(), e2.data(), &n2));
      int changed = 0;
      for (size_t i = 0; i < n2; ++i) {
        if (e2[i].type == cudaGraphDependencyTypeDefault && e2[i].from_port == 0) continue;
        CK(cudaGraphRemoveDependencies(g2, &f2[i], &t2[i], &e2[i], 1));
        cudaGraphEdgeData plain{}; 
        CK(cudaGraphAddDependencies(g2, &f2[i], &t2[i], &plain, 1));
        ++changed;
      }
      printf("  timing graph: %zu edges, %d made plain\n", n2, changed);
    }
    cudaGraphExec_t x1, x2; CK(cudaGraphInstantiate(&x1, g, 0)); CK(cudaGraphInstantiate(&x2, g2, 0));
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    for (int rep = 0; rep < 3; ++rep) {
      for (int which = 0; which < 2; ++which) {
        cudaGraphExec_t x = which ? x2 : x1;
        CK(cudaGraphLaunch(x, st));
        CK(cudaEventRecord(e0, st)); CK(cudaGraphLaunch(x, st)); CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1)); float ms = 0; CK(cudaEventElapsedTime(&ms, e0, e1));
        printf("  rep %d %s: %.2f us per launch\n", rep, which ? "plain edges" : "as captured", ms * 1000 / 200);
      }
    }
    cudaGraphExecDestroy(x1); cudaGraphExecDestroy(x2); cudaGraphDestroy(g); cudaGraphDestroy(g2);
    cudaFree(a); cudaFree(w); cudaFree(d);
  }
  printf("done\n");
}
