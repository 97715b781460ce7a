# Host-code sanitizers: -DANVIL_SANITIZE=address,undefined (or thread) instruments every
# C++ translation unit and the host half of every .cu file, and links the runtimes in.
# Device code is unaffected (use compute-sanitizer for that, scripts/gpu_run.sh sanitize).
# AddressSanitizer and ThreadSanitizer cannot be combined; CI builds them separately
# (.ci/run).
set(ANVIL_SANITIZE "" CACHE STRING "Host sanitizers, e.g. 'address,undefined' or 'thread' (empty: none)")

if(ANVIL_SANITIZE)
  if(ANVIL_SANITIZE MATCHES "thread" AND ANVIL_SANITIZE MATCHES "address")
    message(FATAL_ERROR "ANVIL_SANITIZE: thread and address sanitizers cannot be combined")
  endif()
  # One -fsanitize= per sanitizer: nvcc splits -Xcompiler arguments at commas.
  string(REPLACE "," ";" anvil_sanitizers "${ANVIL_SANITIZE}")
  list(TRANSFORM anvil_sanitizers PREPEND "-fsanitize=" OUTPUT_VARIABLE anvil_sanitize_link_flags)
  # Recovering from a UBSan report would let a test pass with undefined behaviour in it.
  set(anvil_sanitize_flags ${anvil_sanitize_link_flags} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  string(REPLACE ";" "," anvil_sanitize_xcompiler "${anvil_sanitize_flags}")
  string(REPLACE ";" "," anvil_sanitize_xlink "${anvil_sanitize_link_flags}")
  add_compile_options(
    "$<$<COMPILE_LANGUAGE:CXX>:${anvil_sanitize_flags}>"
    "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${anvil_sanitize_xcompiler}>")
  # nvcc links CUDA executables through the host compiler, which needs the runtimes too.
  add_link_options(
    "$<$<LINK_LANGUAGE:CXX>:${anvil_sanitize_link_flags}>"
    "$<$<LINK_LANGUAGE:CUDA>:-Xcompiler=${anvil_sanitize_xlink}>")
  message(STATUS "anvil: host code built with -fsanitize=${ANVIL_SANITIZE}")
endif()
