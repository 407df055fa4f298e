/* OpenBLAS set-up. Debian's OpenBLAS picks its kernels from the CPU model; on CPUs it does not know
 * (common in VMs, which report a generic model) it falls back to the 2004 "Prescott" kernels, 3-6x
 * slower than the AVX2/AVX-512 ones the CPU supports. The library reads OPENBLAS_CORETYPE only when it
 * loads, so zt_blas_setup re-executes the program once with the right value set. */
#ifndef ZT_BLAS_H
#define ZT_BLAS_H

/* Call first in main(). May re-exec argv with OPENBLAS_CORETYPE=SkylakeX (AVX-512) or Haswell (AVX2)
 * when OpenBLAS chose a generic core; does nothing when the user set OPENBLAS_CORETYPE. */
void zt_blas_setup(int argc, char **argv);
/* The kernel family OpenBLAS is using ("SkylakeX", "Haswell", ...). */
const char *zt_blas_core(void);

#endif
