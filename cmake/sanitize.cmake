# Host-code sanitizers.
#
# anvil_sanitize(<target> <sanitizers>): compiles <target>'s C++ sources with
# -fsanitize=<sanitizers> (e.g. "address,undefined" or "thread") and links the runtimes.
# The test tree uses it for the sanitized CPU tier (tests/CMakeLists.txt): the host
# sources compiled again, instrumented, and linked against the kernels' ordinary objects,
# so no CUDA file is compiled twice. Device code is never instrumented (use
# compute-sanitizer for that: scripts/gpu_run.sh sanitize).
function(anvil_sanitize target sanitizers)
  if(sanitizers MATCHES "thread" AND sanitizers MATCHES "address")
    message(FATAL_ERROR "anvil_sanitize(${target}): thread and address sanitizers cannot be combined")
  endif()
  string(REPLACE "," ";" names "${sanitizers}")
  list(TRANSFORM names PREPEND "-fsanitize=" OUTPUT_VARIABLE flags)
  # Recovering from a UBSan report would let a test pass with undefined behaviour in it.
  target_compile_options(${target} PRIVATE
    "$<$<COMPILE_LANGUAGE:CXX>:${flags};-fno-sanitize-recover=all;-fno-omit-frame-pointer>")
  target_link_options(${target} PRIVATE ${flags})
endfunction()

# -DANVIL_SANITIZE=address,undefined (or thread) instead instruments the whole build: every
# C++ translation unit and the host half of every .cu file (much slower to build).
set(ANVIL_SANITIZE "" CACHE STRING "Instrument the whole build's host code, e.g. 'address,undefined' or 'thread' (empty: none)")
if(ANVIL_SANITIZE)
  if(ANVIL_SANITIZE MATCHES "thread" AND ANVIL_SANITIZE MATCHES "address")
    message(FATAL_ERROR "ANVIL_SANITIZE: thread and address sanitizers cannot be combined")
  endif()
  # One -fsanitize= per sanitizer: nvcc splits -Xcompiler arguments at commas.
  string(REPLACE "," ";" anvil_sanitizers "${ANVIL_SANITIZE}")
  list(TRANSFORM anvil_sanitizers PREPEND "-fsanitize=" OUTPUT_VARIABLE anvil_sanitize_link_flags)
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
