// The C++ standard library's engines as helpers.cpp uses them, for test_bert_dataset.py to check its Python
// transcription of std::mt19937 / std::mt19937_64 against: prints N draws of std::mt19937(SEED), then N draws of
// std::mt19937_64(SEED + 1), one decimal number a line.
//   bert_std_random SEED N
#include <cstdio>
#include <cstdlib>
#include <random>

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  const int seed = std::atoi(argv[1]), n = std::atoi(argv[2]);
  std::mt19937 g32(seed);
  for (int i = 0; i < n; i++) std::printf("%lu\n", static_cast<unsigned long>(g32()));
  std::mt19937_64 g64(seed + 1);
  for (int i = 0; i < n; i++) std::printf("%llu\n", static_cast<unsigned long long>(g64()));
  return 0;
}
