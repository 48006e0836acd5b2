// The settings registry is the one list of MOEJIT_* variables: values are
// validated when read, the README shows exactly the registry, and nothing in
// the library reads a MOEJIT_* variable behind its back.
#include "common/settings.h"

#include "common/error.h"

#include "testkit.h"

#include <gtest/gtest.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <regex>
#include <set>

using namespace moejit;
using namespace moejit::settings;

namespace {

using testkit::EnvVar;

std::string readText(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  EXPECT_TRUE(static_cast<bool>(buffer)) << path << ": " << buffer.getError().message();
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

} // namespace

TEST(Settings, RegistryNamesArePrefixedAndUnique) {
  std::set<std::string_view> names;
  for (const Setting &s : registry()) {
    EXPECT_EQ(s.name.substr(0, 7), "MOEJIT_") << s.name;
    EXPECT_TRUE(names.insert(s.name).second) << s.name << " is listed twice";
    EXPECT_EQ(find(s.name), &s);
    EXPECT_FALSE(s.meaning.empty()) << s.name;
    EXPECT_EQ(s.type == Type::Choice, !s.choices.empty()) << s.name;
  }
  EXPECT_EQ(find("MOEJIT_NOT_A_SETTING"), nullptr);
}

TEST(Settings, UnsetReadsEmpty) {
  for (const Setting &s : registry()) {
    EnvVar unset(std::string(s.name).c_str(), nullptr);
    auto v = read(s.name);
    ASSERT_TRUE(static_cast<bool>(v)) << errorMessage(v.takeError());
    EXPECT_EQ(*v, "") << s.name;
  }
  EnvVar empty("MOEJIT_NO_COMPILE", "");
  auto v = readBool("MOEJIT_NO_COMPILE", true);
  ASSERT_TRUE(static_cast<bool>(v));
  EXPECT_TRUE(*v) << "empty counts as unset: the fallback";
}

TEST(Settings, BoolValues) {
  for (const char *yes : {"1", "true", "YES", "On"}) {
    EnvVar env("MOEJIT_NO_COMPILE", yes);
    auto v = read("MOEJIT_NO_COMPILE");
    ASSERT_TRUE(static_cast<bool>(v)) << yes;
    EXPECT_EQ(*v, "1") << yes;
    auto b = readBool("MOEJIT_NO_COMPILE");
    ASSERT_TRUE(static_cast<bool>(b));
    EXPECT_TRUE(*b);
  }
  for (const char *no : {"0", "false", "No", "OFF"}) {
    EnvVar env("MOEJIT_NO_COMPILE", no);
    auto b = readBool("MOEJIT_NO_COMPILE", true);
    ASSERT_TRUE(static_cast<bool>(b)) << no;
    EXPECT_FALSE(*b) << no;
  }
}

TEST(Settings, BadBoolNamesTheVariable) {
  EnvVar env("MOEJIT_NO_COMPILE", "maybe");
  auto check = [](llvm::Error e) {
    ASSERT_TRUE(static_cast<bool>(e));
    ErrorCode code = ErrorCode::Internal;
    std::string message;
    llvm::handleAllErrors(std::move(e), [&](const MoeErrorInfo &info) {
      code = info.code();
      message = info.message();
    });
    EXPECT_EQ(code, ErrorCode::InvalidArgument);
    EXPECT_NE(message.find("MOEJIT_NO_COMPILE"), std::string::npos) << message;
    EXPECT_NE(message.find("maybe"), std::string::npos) << message;
  };
  check(read("MOEJIT_NO_COMPILE").takeError());
  check(readBool("MOEJIT_NO_COMPILE").takeError());
}

TEST(Settings, CheckAllNamesEveryBadValue) {
  std::vector<std::unique_ptr<EnvVar>> unset;
  for (const Setting &s : registry())
    unset.push_back(std::make_unique<EnvVar>(s.name.data(), nullptr)); // names are literals
  EXPECT_EQ(errorMessage(checkAll()), "");
  {
    // Settings the library only warns about count too.
    EnvVar tuning("MOEJIT_TUNING", "bogus"), pipelines("MOEJIT_DEBUG_PIPELINES", "ture"),
        trust("MOEJIT_CACHE_TRUST", "sharde"), fine("MOEJIT_COMBINE", "fast");
    llvm::Error e = checkAll();
    ASSERT_TRUE(static_cast<bool>(e));
    const std::string message = errorMessage(std::move(e));
    for (const char *named :
         {"MOEJIT_TUNING=bogus", "MOEJIT_DEBUG_PIPELINES=ture", "MOEJIT_CACHE_TRUST=sharde"})
      EXPECT_NE(message.find(named), std::string::npos) << message;
    EXPECT_EQ(message.find("MOEJIT_COMBINE"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  }
  EXPECT_EQ(errorMessage(checkAll()), "");
}

TEST(Settings, CountsAreWholeNumbersInRange) {
  {
    EnvVar unset("MOEJIT_COMPILE_THREADS", nullptr);
    auto n = readCount("MOEJIT_COMPILE_THREADS");
    ASSERT_TRUE(static_cast<bool>(n));
    EXPECT_EQ(*n, 0u) << "unset reads 0";
  }
  for (const auto &[text, value] :
       {std::pair{"1", 1u}, std::pair{"007", 7u}, std::pair{"1024", 1024u}}) {
    EnvVar env("MOEJIT_COMPILE_THREADS", text);
    auto n = readCount("MOEJIT_COMPILE_THREADS");
    ASSERT_TRUE(static_cast<bool>(n)) << text;
    EXPECT_EQ(*n, value) << text;
  }
  for (const char *bad : {"0", "1025", "-2", "+3", "4 ", "2x", "0x10", "99999999999999999999"}) {
    EnvVar env("MOEJIT_COMPILE_THREADS", bad);
    auto n = readCount("MOEJIT_COMPILE_THREADS");
    ASSERT_FALSE(static_cast<bool>(n)) << bad;
    const std::string message = errorMessage(n.takeError());
    EXPECT_NE(message.find("MOEJIT_COMPILE_THREADS"), std::string::npos) << message;
    EXPECT_NE(message.find("1 to 1024"), std::string::npos) << message;
  }
}

TEST(Settings, ChoicesAreCaseInsensitive) {
  {
    EnvVar env("MOEJIT_TUNING", "HEURISTIC");
    auto v = read("MOEJIT_TUNING");
    ASSERT_TRUE(static_cast<bool>(v)) << errorMessage(v.takeError());
    EXPECT_EQ(*v, "heuristic");
  }
  {
    EnvVar env("MOEJIT_LOG_LEVEL", "Info");
    auto v = read("MOEJIT_LOG_LEVEL");
    ASSERT_TRUE(static_cast<bool>(v)) << errorMessage(v.takeError());
    EXPECT_EQ(*v, "info");
  }
  EnvVar env("MOEJIT_TUNING", "fastest");
  auto v = read("MOEJIT_TUNING");
  ASSERT_FALSE(static_cast<bool>(v));
  const std::string message = errorMessage(v.takeError());
  EXPECT_NE(message.find("MOEJIT_TUNING=fastest"), std::string::npos) << message;
  EXPECT_NE(message.find("first-use"), std::string::npos) << "lists the choices: " << message;
}

TEST(Settings, CombineModes) {
  for (const char *mode : {"deterministic", "fast", "batch-invariant"}) {
    EnvVar env("MOEJIT_COMBINE", mode);
    auto v = read("MOEJIT_COMBINE");
    ASSERT_TRUE(static_cast<bool>(v)) << errorMessage(v.takeError());
    EXPECT_EQ(*v, mode);
    EXPECT_EQ(moejit::combine_name(moejit::parse_combine(*v)), *v);
  }
  EnvVar env("MOEJIT_COMBINE", "sloppy");
  auto v = read("MOEJIT_COMBINE");
  ASSERT_FALSE(static_cast<bool>(v));
  const std::string message = errorMessage(v.takeError());
  EXPECT_NE(message.find("MOEJIT_COMBINE=sloppy"), std::string::npos) << message;
  EXPECT_NE(message.find("batch-invariant"), std::string::npos) << message;
  EXPECT_THROW(moejit::parse_combine("sloppy"), moejit::Error);
}

TEST(Settings, PathsAreTakenAsIs) {
  EnvVar env("MOEJIT_CACHE_DIR", "/tmp/Some Dir");
  auto v = read("MOEJIT_CACHE_DIR");
  ASSERT_TRUE(static_cast<bool>(v));
  EXPECT_EQ(*v, "/tmp/Some Dir");
}

TEST(Settings, UnknownNameIsAnError) {
  auto v = read("MOEJIT_NOT_A_SETTING");
  ASSERT_FALSE(static_cast<bool>(v));
  EXPECT_NE(errorMessage(v.takeError()).find("MOEJIT_NOT_A_SETTING"), std::string::npos);
}

TEST(Settings, MarkdownTableListsEveryEntry) {
  const std::string table = markdownTable();
  for (const Setting &s : registry())
    EXPECT_NE(table.find("| `" + std::string(s.name) + "` |"), std::string::npos) << s.name;
  // Header, separator, one row per entry.
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), long(registry().size() + 2));
}

// `moejit settings` prints markdownTable(); the README shows the same table.
TEST(Settings, ReadmeShowsTheRegistry) {
  const std::string readme = readText(std::string(MOEJIT_SOURCE_DIR) + "/README.md");
  EXPECT_NE(readme.find(markdownTable()), std::string::npos)
      << "README.md's Settings table differs from the registry; replace it with the output of "
         "`moejit settings`:\n"
      << markdownTable();
}

// Reading MOEJIT_* through getenv anywhere else would bypass validation and
// leave the variable out of the README and `moejit settings`.
TEST(Settings, OnlyTheRegistryReadsMoejitVariables) {
  const std::regex direct(R"(getenv\s*\(\s*"MOEJIT_)");
  int scanned = 0;
  for (const char *top : {"src", "include"}) {
    std::error_code ec;
    const std::string root = std::string(MOEJIT_SOURCE_DIR) + "/" + top;
    for (llvm::sys::fs::recursive_directory_iterator it(root, ec), end; !ec && it != end;
         it.increment(ec)) {
      const std::string path = it->path();
      const llvm::StringRef ext = llvm::sys::path::extension(path);
      if (ext != ".cpp" && ext != ".h" && ext != ".hpp")
        continue;
      ++scanned;
      if (llvm::StringRef(path).endswith("src/common/settings.cpp"))
        continue;
      EXPECT_FALSE(std::regex_search(readText(path), direct))
          << path << " reads a MOEJIT_* variable with getenv: add it to the registry in "
          << "src/common/settings.cpp and use settings::read";
    }
    EXPECT_FALSE(ec) << root << ": " << ec.message();
  }
  EXPECT_GT(scanned, 10) << "the source tree was not found at " << MOEJIT_SOURCE_DIR;
}
