# The one place that names the GPU architectures anvil's device code is built for.
# sm_90a (Hopper with the 'a' features: wgmma, setmaxnreg) is what anvil runs on today;
# add 100a here once the Blackwell kernels exist.
set(ANVIL_CUDA_ARCHS "90a" CACHE STRING "CUDA architectures (e.g. '90a;100a')")

set(ANVIL_GENCODE_FLAGS "")
foreach(arch IN LISTS ANVIL_CUDA_ARCHS)
  # The -gencode form, not -arch=sm_90a: the shorthand also runs a plain sm_90 pass that
  # rejects wgmma and setmaxnreg.
  list(APPEND ANVIL_GENCODE_FLAGS "-gencode=arch=compute_${arch},code=sm_${arch}")
endforeach()

option(ANVIL_SM90_HANG_CHECK "Hopper mbarrier waits of over a second print where they are and exit (a diagnostic build)" OFF)

# Applies anvil's device-code flags to a target that has CUDA sources.
function(anvil_cuda_target target)
  set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES OFF CUDA_SEPARABLE_COMPILATION OFF)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:${ANVIL_GENCODE_FLAGS}>
    # CMake 3.25 does not know nvcc 13 accepts C++20, so the dialect is passed directly.
    $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20>
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xptxas=-warn-spills>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic>)
  if(ANVIL_SM90_HANG_CHECK)
    target_compile_definitions(${target} PRIVATE ANVIL_SM90_HANG_CHECK=1)
  endif()
endfunction()
