/* Stands in for a test that cannot run here: prints why and exits 77, which
 * meson reports as SKIP. */
#include <stdio.h>

int main(int argc, char** argv) {
  printf("SKIP: %s\n", argc > 1 ? argv[1] : "not available on this machine");
  return 77;
}
