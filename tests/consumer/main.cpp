// A user's program: the version, then a runtime on device 0, which without a
// GPU must be the typed NoDevice error thrown across the library boundary.
#include <moejit/moejit.hpp>

#include <cstdio>

int main() {
  std::printf("moejit %s\n", moejit::version());
  try {
    moejit::Runtime runtime(0);
    std::printf("device 0: %s (%s)\n", runtime.device_name().c_str(), runtime.arch().c_str());
  } catch (const moejit::Error &e) {
    std::printf("error %d: %s\n", static_cast<int>(e.code()), e.what());
    return e.code() == moejit::ErrorCode::NoDevice ? 0 : 1;
  }
  return 0;
}
