/* The library reports the version its header was built with. */
#include <criterion/criterion.h>

#include "grape/grape.h"

Test(version, matches_header) {
  cr_assert_eq(grape_version(), GRAPE_VERSION_NUMBER);
  cr_assert_eq(GRAPE_VERSION_NUMBER,
               GRAPE_VERSION_MAJOR * 10000 + GRAPE_VERSION_MINOR * 100 + GRAPE_VERSION_PATCH);
}
