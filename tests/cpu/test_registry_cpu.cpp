// The kernel table: libanvil lists only its own kernels, and the lab's kernels join the
// table when registered (tests/common/lab_main.cpp does that before any test runs).
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "anvil/gemm.h"
#include "anvil/lab.h"
#include "host/registry.h"

namespace {

using anvil::detail::KernelInfo;

bool starts_with(const char* s, const char* prefix) { return std::strncmp(s, prefix, std::strlen(prefix)) == 0; }

TEST(Registry, LibraryCarriesNoLabKernel) {
  const auto library = anvil::detail::library_kernels();
  ASSERT_FALSE(library.empty());
  std::set<std::string> names;
  for (const KernelInfo* k : library) {
    names.insert(k->name);
    EXPECT_FALSE(starts_with(k->name, "ablation-")) << k->name;
    // The naive kernel is the ladder's step 1 and the dispatcher's fallback; no other step.
    if (starts_with(k->name, "ladder-")) {
      EXPECT_STREQ(k->name, "ladder-01-naive");
    }
  }
  // What the dispatcher picks from (dispatch.cpp) must be in the library itself.
  for (const char* name : {"ladder-01-naive", "sm90-gemm", "sm90-decode", "sm90-decode-ldg", "sm90-decode-r64",
                           "sm90-decode-ldg-r64", "sm90-fp8", "sm90-fp8-decode"}) {
    EXPECT_TRUE(names.count(name)) << name;
  }
}

TEST(Registry, LabKernelsRegisteredLadderFirst) {
  // Registered in main(): the ladder's steps are nameable, listed first and in order.
  ASSERT_NE(anvil::detail::find_kernel("ladder-04-swizzle"), nullptr);
  ASSERT_NE(anvil::detail::find_kernel("ablation-09-no-multicast"), nullptr);
  const auto all = anvil::detail::all_kernels();
  ASSERT_GT(all.size(), anvil::detail::library_kernels().size());
  const char* const ladder[] = {"ladder-01-naive",         "ladder-02-smem-tiling",   "ladder-03-tma-wgmma",
                                "ladder-04-swizzle",       "ladder-05-pipeline",      "ladder-06-warp-specialized",
                                "ladder-07-two-consumers", "ladder-08-tma-store",     "ladder-09-cluster-multicast",
                                "ladder-10-persistent",    "ladder-11-deeper-ring"};
  ASSERT_GE(all.size(), std::size(ladder));
  for (size_t i = 0; i < std::size(ladder); ++i) EXPECT_STREQ(all[i]->name, ladder[i]) << i;
  // The library's kernels follow the ladder, ahead of the lab's other entries.
  EXPECT_STREQ(all[std::size(ladder)]->name, "sm90-gemm");
  // The lab's table ends with the ablations, or with the Blackwell ladder where it is built.
  EXPECT_TRUE(starts_with(all.back()->name, "ablation-") || starts_with(all.back()->name, "sm100-ladder-"))
      << all.back()->name;
  // The public listing reads the same table.
  ASSERT_EQ(anvil::kernel_count(), static_cast<int>(all.size()));
  for (size_t i = 0; i < all.size(); ++i) EXPECT_STREQ(anvil::kernel_name(static_cast<int>(i)), all[i]->name);
}

TEST(Registry, RegisteringAgainChangesNothing) {
  const size_t before = anvil::detail::all_kernels().size();
  anvil::lab::register_lab_kernels();
  EXPECT_EQ(anvil::detail::all_kernels().size(), before);
}

TEST(Registry, NameCollisionIsRefused) {
  // A different kernel under a taken name: refused whole, the table unchanged.
  const KernelInfo impostor{"sm90-gemm", "not the production kernel", nullptr, nullptr, nullptr};
  const KernelInfo fresh{"lab-test-fresh", "would be added if the batch were accepted", nullptr, nullptr, nullptr};
  const KernelInfo* batch[] = {&fresh, &impostor};
  const size_t before = anvil::detail::all_kernels().size();
  EXPECT_FALSE(anvil::detail::register_kernels(batch));
  EXPECT_EQ(anvil::detail::all_kernels().size(), before);
  EXPECT_EQ(anvil::detail::find_kernel("lab-test-fresh"), nullptr);
  EXPECT_NE(anvil::detail::find_kernel("sm90-gemm")->summary, impostor.summary);
}

}  // namespace
