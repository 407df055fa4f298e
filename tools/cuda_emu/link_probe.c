/* Never built (EXCLUDE_FROM_ALL): CMake writes its link line, which names libzt.a and the CPU libraries the
 * library needs; scripts/cuda_emu_tests.sh reads it to link the emulated tests (tools/cuda_emu/emu_build.py). */
int main(void) { return 0; }
