// setmaxnreg: moves registers between the warpgroups of a CTA at run time. The producer
// warpgroup only issues TMA and needs few; the consumers hold wgmma accumulators and need
// many. Takes effect only under __launch_bounds__(threads, 1) with each role in one branch.
#pragma once

namespace anvil::sm90 {

template <int kRegisters>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

template <int kRegisters>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

}  // namespace anvil::sm90
