// main() of the test binaries: the lab's kernels are registered before GoogleTest builds
// its parameterized suites, which enumerate every kernel by name.
#include <gtest/gtest.h>

#include "anvil/lab.h"

int main(int argc, char** argv) {
  anvil::lab::register_lab_kernels();
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
