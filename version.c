/* grape_version(): lets a caller detect a header/library mismatch. */
#include "grape/grape.h"

unsigned grape_version(void) {
  return GRAPE_VERSION_NUMBER;
}
