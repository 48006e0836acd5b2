// Skips a GPU test, with the reason, where no CUDA device is usable.
#pragma once

#include "testkit.h"

#include <gtest/gtest.h>

#include <string>

#define REQUIRE_GPU()                                                                              \
  do {                                                                                             \
    std::string why;                                                                               \
    if (!::moejit::testkit::gpuAvailable(why))                                                     \
      GTEST_SKIP() << "no GPU: " << why;                                                           \
  } while (0)
