/* Python's formatting of floats: repr() gives the shortest digits that round-trip, fixed notation
 * for exponents -4..15 and "1e-05"-style scientific notation otherwise, "2.0" for integral values. */
#ifndef ZT_PYFMT_H
#define ZT_PYFMT_H

#include <stddef.h>

/* repr(v) into out (n bytes); as_float: shortest digits that round-trip through float32 (how
 * Megatron prints argparse floats stored as float32 values), else through double. */
void zt_py_float(char *out, size_t n, double v, int as_float);

#endif
