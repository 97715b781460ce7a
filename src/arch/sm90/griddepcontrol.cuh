// griddepcontrol: programmatic dependent launch (PDL). A kernel launched with
// cudaLaunchAttributeProgrammaticStreamSerialization may start while the kernel before it
// in the stream is still running; it must wait before touching memory that kernel writes.
// What overlaps is the launch itself and the prologue (barrier setup, tensor-map
// prefetch) - microseconds that matter for decode GEMMs of 30-40 us.
#pragma once

namespace anvil::sm90 {

// Blocks until every prerequisite grid has completed and its memory operations are
// visible. Returns at once when the kernel was not launched as a dependent.
__device__ __forceinline__ void griddepcontrol_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }

// Lets the runtime launch this grid's dependents once every CTA of the grid has said so
// (or exited). They then wait in griddepcontrol_wait for this grid to finish, so the
// signal only moves their launch earlier, never their first memory access.
__device__ __forceinline__ void griddepcontrol_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

}  // namespace anvil::sm90
