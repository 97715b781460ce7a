// Anchor files hold cuBLAS times measured independently (through PyTorch) on the same
// kind of GPU. Comparing our own cuBLAS times against them tells whether this run's card,
// clocks and timing method agree with that reference before anvil's ratios are trusted.
#include <cstdio>
#include <cstdlib>

#include "bench.h"
#include "json.h"

namespace bench {

AnchorFile load_anchors(const std::string& path) {
  AnchorFile file;
  file.path = path;
  json::Value doc;
  std::string err;
  if (!json::parse_file(path, doc, err)) {
    std::fprintf(stderr, "anvil-bench: cannot read anchors: %s\n", err.c_str());
    std::exit(1);
  }
  if (const json::Value* dev = doc.find("device"); dev && dev->is_string())
    file.device = dev->as_string();
  const json::Value* rows = doc.find("rows");
  if (!rows || !rows->is_array()) {
    std::fprintf(stderr, "anvil-bench: %s: expected a top-level \"rows\" array\n", path.c_str());
    std::exit(1);
  }
  for (const auto& r : rows->items()) {
    const json::Value* name = r.find("name");
    const json::Value* m = r.find("M");
    const json::Value* n = r.find("N");
    const json::Value* k = r.find("K");
    const json::Value* dtype = r.find("dtype");
    const json::Value* us = r.find("us_median");
    // Rows without the fields a comparison needs are skipped, not fatal: anchor files
    // may carry other kinds of measurement.
    if (!m || !m->is_number() || !n || !n->is_number() || !k || !k->is_number() || !us ||
        !us->is_number() || !dtype || !dtype->is_string())
      continue;
    auto t = parse_dtype(dtype->as_string());
    if (!t) continue;
    Anchor a;
    a.name = name && name->is_string() ? name->as_string() : std::string();
    a.m = static_cast<int64_t>(m->as_number());
    a.n = static_cast<int64_t>(n->as_number());
    a.k = static_cast<int64_t>(k->as_number());
    a.dtype = dtype_name(*t);
    a.us_median = us->as_number();
    file.rows.push_back(std::move(a));
  }
  if (file.rows.empty()) {
    std::fprintf(stderr, "anvil-bench: %s: no usable rows (need M, N, K, dtype, us_median)\n",
                 path.c_str());
    std::exit(1);
  }
  return file;
}

std::vector<AnchorCheck> check_anchors(const AnchorFile& anchors, const std::vector<Row>& rows) {
  std::vector<AnchorCheck> out;
  for (const auto& row : rows) {
    if (row.kernel != "cublas") continue;
    // The anchors are plain torch.matmul, whose output dtype is the input's.
    if (row.out_dtype != row.dtype) continue;
    const Anchor* match = nullptr;
    // Matching on the shape, not the name, lets --m/--n/--k sweeps use the anchors too;
    // among equal shapes an equal name is preferred.
    for (const auto& a : anchors.rows) {
      if (a.m != row.m || a.n != row.n || a.k != row.k || a.dtype != row.dtype) continue;
      if (!match || (a.name == row.name && match->name != row.name)) match = &a;
    }
    if (!match) continue;
    AnchorCheck c;
    c.name = row.name;
    c.m = row.m;
    c.n = row.n;
    c.k = row.k;
    c.dtype = row.dtype;
    c.cublas_us = row.us_median;
    c.anchor_us = match->us_median;
    c.ratio = c.cublas_us / c.anchor_us;
    out.push_back(c);
  }
  return out;
}

}  // namespace bench
