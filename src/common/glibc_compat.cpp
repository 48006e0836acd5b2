// Keeps the binaries loadable on glibc 2.35 (Ubuntu 22.04, RHEL 9), the
// bases of common serving images. Debian's static LLVM Support calls
// arc4random, which glibc has only from 2.36; defined here, the static
// link resolves LLVM's calls to this one (hidden in libmoejit.so; executables
// linking libmoejit.a pull it in with -Wl,--undefined=arc4random) and no
// GLIBC_2.36 symbol is imported. tests/glibc_versions_test.cmake checks it.
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <sys/random.h>

extern "C" uint32_t arc4random(void) {
  uint32_t value = 0;
  auto *bytes = reinterpret_cast<unsigned char *>(&value);
  size_t done = 0;
  while (done < sizeof value) {
    const ssize_t n = ::getrandom(bytes + done, sizeof value - done, 0);
    if (n > 0)
      done += static_cast<size_t>(n);
    else if (n < 0 && errno != EINTR)
      std::abort(); // arc4random cannot fail; neither may this
  }
  return value;
}
