# The Blackwell (sm_100a) path: its kernels, its CPU tests and its SASS check.
# Included once from the root CMakeLists.txt after the anvil target exists.
#
# Architectures are per translation unit: the sm_100a kernels are compiled only for
# compute_100a/sm_100a (tcgen05 exists nowhere else), and the Hopper kernels' units keep
# their sm_90a flags (wgmma does not exist on sm_100a). The static library then carries
# both in one archive; the runtime picks the cubin matching the device, and dispatch
# checks the compute capability first, so neither family is ever launched on the other's
# GPU.
option(ANVIL_SM100 "Build the Blackwell (sm_100a) kernels" ON)
# A first-run aid: barrier waits that last seconds print where they are and trap.
option(ANVIL_SM100_HANG_CHECK "Blackwell kernels trap on a barrier wait of seconds, naming it" OFF)

if(ANVIL_SM100)
  # sm_100a device code only: the flags of anvil_cuda_target without its architectures.
  function(anvil_sm100_target target)
    set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES OFF CUDA_SEPARABLE_COMPILATION OFF
                                               POSITION_INDEPENDENT_CODE ON)
    target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:-gencode=arch=compute_100a,code=sm_100a>
      $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20>
      $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>
      $<$<COMPILE_LANGUAGE:CUDA>:-Xptxas=-warn-spills>
      $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
    if(ANVIL_SM100_HANG_CHECK)
      target_compile_definitions(${target} PRIVATE ANVIL_SM100_HANG_CHECK=1)
    endif()
  endfunction()

  # The production kernels: their objects go into libanvil.a itself.
  add_library(anvil_sm100 OBJECT src/kernels/sm100/gemm_sm100.cu)
  anvil_sm100_target(anvil_sm100)
  target_sources(anvil PRIVATE $<TARGET_OBJECTS:anvil_sm100>)
  target_compile_definitions(anvil PRIVATE ANVIL_HAVE_SM100=1)

  # The seeds' steps as configurations (docs/blackwell.md, "Ladder"): lab kernels, into
  # libanvil_lab.a with the Hopper ladder.
  if(TARGET anvil_lab)
    add_library(anvil_sm100_lab OBJECT lab/kernels/sm100/ladder_sm100.cu)
    anvil_sm100_target(anvil_sm100_lab)
    target_sources(anvil_lab PRIVATE $<TARGET_OBJECTS:anvil_sm100_lab>)
    target_compile_definitions(anvil_lab PRIVATE ANVIL_HAVE_SM100=1)
  endif()
endif()

if(ANVIL_BUILD_TESTS)
  enable_testing()
  find_package(GTest REQUIRED)
  include(GoogleTest)
  # Descriptor encoders and the sm_100 budget: constexpr, no CUDA needed.
  add_executable(anvil_sm100_cpu_tests tests/cpu/test_sm100_descriptors_cpu.cpp)
  target_include_directories(anvil_sm100_cpu_tests PRIVATE src)
  target_link_libraries(anvil_sm100_cpu_tests PRIVATE GTest::gtest GTest::gtest_main)
  target_compile_options(anvil_sm100_cpu_tests PRIVATE -Wall -Wextra -Wpedantic)
  gtest_discover_tests(anvil_sm100_cpu_tests PROPERTIES LABELS cpu DISCOVERY_TIMEOUT 60)
endif()

if(ANVIL_SM100)
  # The verification toolkit (random fill, poison, reference GEMM) is plain CUDA: it also
  # gets sm_100a code, so that the GPU tests can run on a B200.
  if(TARGET anvil_verify_kernels)
    target_compile_options(anvil_verify_kernels PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-gencode=arch=compute_100a,code=sm_100a>)
  endif()
  # So is the benchmark's own device code (its timing kernels), which measures the ladder.
  if(TARGET anvil-bench)
    target_compile_options(anvil-bench PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-gencode=arch=compute_100a,code=sm_100a>)
  endif()
endif()

if(ANVIL_SM100 AND ANVIL_BUILD_TESTS AND TARGET anvil_lab)
  # The Blackwell GEMM against the GPU reference: without an sm_100 GPU every kernel test
  # skips with "no sm_100 GPU: <reason>" and CTest reports the entry skipped.
  add_executable(anvil_sm100_gpu_tests tests/gpu/test_sm100_gpu.cpp)
  target_include_directories(anvil_sm100_gpu_tests PRIVATE src)
  target_link_libraries(anvil_sm100_gpu_tests PRIVATE anvil_lab anvil anvil_verify GTest::gtest GTest::gtest_main)
  target_compile_options(anvil_sm100_gpu_tests PRIVATE -Wall -Wextra -Wpedantic)
  add_test(NAME anvil_sm100_gpu_tests.kernels COMMAND anvil_sm100_gpu_tests --gtest_filter=Sm100/*)
  set_tests_properties(anvil_sm100_gpu_tests.kernels PROPERTIES LABELS gpu TIMEOUT 600
                       SKIP_REGULAR_EXPRESSION "no sm_100 GPU")
  # The clean refusal on every other device (or none): runs, and can fail, anywhere.
  add_test(NAME anvil_sm100_gpu_tests.refusal COMMAND anvil_sm100_gpu_tests --gtest_filter=Sm100Refusal.*)
  set_tests_properties(anvil_sm100_gpu_tests.refusal PROPERTIES LABELS cpu TIMEOUT 120)
endif()

# The sm_100a machine code, checked without a GPU (scripts/check_sass.py --sm100): the
# tcgen05 MMA (and its 2-CTA form), TMEM loads, CLC requests, no local memory, registers
# within the limit. Reads the one object file, not the whole library. Skips (77) without
# cuobjdump.
if(ANVIL_SM100 AND ANVIL_BUILD_TESTS AND TARGET anvil_lab)
  find_package(Python3 COMPONENTS Interpreter)
  if(Python3_FOUND)
    add_test(NAME sass_check_sm100
             COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check_sass.py --sm100
                     $<TARGET_OBJECTS:anvil_sm100> $<TARGET_OBJECTS:anvil_sm100_lab>
             COMMAND_EXPAND_LISTS)
    set_tests_properties(sass_check_sm100 PROPERTIES LABELS cpu SKIP_RETURN_CODE 77 TIMEOUT 300)
    # What the Blackwell kernel shares with the Hopper one, and that nothing else differs
    # (scripts/diff_kernels.py): every definition of either kernel file is classified.
    add_test(NAME kernel_parts COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/diff_kernels.py)
    set_tests_properties(kernel_parts PROPERTIES LABELS cpu TIMEOUT 60)
  endif()
endif()
