// Where there is no GPU or driver, the library still loads and says so with a
// typed error instead of crashing. On a GPU machine these checks skip.
#include "driver/driver.h"
#include "testkit.h"

#include <gtest/gtest.h>

using namespace moejit;

TEST(NoGpu, RuntimeThrowsNoDevice) {
  std::string why;
  if (testkit::gpuAvailable(why))
    GTEST_SKIP() << "a GPU is present: nothing to check";
  try {
    Runtime rt(0);
    ADD_FAILURE() << "a Runtime was created without a GPU";
  } catch (const Error &e) {
    EXPECT_EQ(e.code(), ErrorCode::NoDevice) << e.what();
    EXPECT_FALSE(std::string(e.what()).empty());
  }
}

TEST(NoGpu, DriverReportsZeroDevices) {
  std::string why;
  if (testkit::gpuAvailable(why))
    GTEST_SKIP() << "a GPU is present: nothing to check";
  EXPECT_EQ(driver::deviceCount(), 0);
  EXPECT_FALSE(why.empty());
}

TEST(AnyMachine, InvalidDeviceIsNoDevice) {
  try {
    Runtime rt(4096);
    ADD_FAILURE() << "device 4096 accepted";
  } catch (const Error &e) {
    EXPECT_EQ(e.code(), ErrorCode::NoDevice) << e.what();
  }
}

/// Options are checked before the device is opened: a value outside its
/// enum is InvalidArgument on any machine, with or without a GPU.
TEST(AnyMachine, RuntimeOptionsOutsideTheirEnumsAreRefused) {
  RuntimeOptions bad_tuning;
  bad_tuning.tuning = static_cast<Tuning>(7);
  RuntimeOptions bad_combine;
  bad_combine.combine = static_cast<Combine>(9);
  for (const auto &[options, field] : {std::pair{bad_tuning, "tuning"},
                                       std::pair{bad_combine, "combine"}}) {
    try {
      Runtime rt(4096, options);
      ADD_FAILURE() << field << " outside its enum accepted";
    } catch (const Error &e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
}
