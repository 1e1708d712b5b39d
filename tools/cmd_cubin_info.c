/* grape cubin-info: placeholder until the cubin parser lands. */
#include <stdio.h>

#include "commands.h"

int cmd_cubin_info(int argc, char** argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "grape: error: cubin-info is not built yet\n");
  return 1;
}
