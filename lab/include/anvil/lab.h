// The lab: the ladder's steps 2-11, the ablations that explain its flat or negative
// steps, and (later) measurement-only configurations of the production kernel. None of
// them is ever picked by the dispatcher; they exist to be named and measured (anvil-bench,
// the GPU tests). They live in the static library anvil_lab, outside libanvil.
#pragma once

namespace anvil::lab {

// Makes the lab's kernels nameable (GemmDesc::kernel) and listed by kernel_count() and
// kernel_name(), ladder steps first. Call it once at the start of main(), before any
// other anvil call and while no other thread uses anvil: it rebuilds the kernel table
// without a lock. Calling it again does nothing. Aborts with a message if a lab kernel's
// name collides with a library kernel's (a build mistake, not a run-time condition).
void register_lab_kernels();

}  // namespace anvil::lab
