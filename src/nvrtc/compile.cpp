#include "nvrtc/compile.h"

#include "codegen/embedded_templates.h"
#include "common/arch.h"
#include "common/error.h"
#include "common/log.h"
#include "common/safe_fs.h"
#include "common/settings.h"
#include "nvrtc/library.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Path.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <regex>
#include <unistd.h>

namespace moejit::nvrtc {

std::string archForComputeCapability(int major, int minor) {
  std::string arch = fmt::format("sm_{}{}", major, minor);
  return major == 9 && minor == 0 ? arch + "a" : arch;
}

namespace {

/// The real architectures this NVRTC compiles for (75, 80, 86, ...); empty
/// without NVRTC (then only the spelling rules apply: nothing will be
/// compiled anyway).
const std::vector<int> &supportedArchs() {
  static const std::vector<int> archs = [] {
    std::vector<int> out;
    auto lib = library();
    if (!lib) {
      llvm::consumeError(lib.takeError());
      return out;
    }
    int count = 0;
    if ((*lib)->nvrtcGetNumSupportedArchs(&count) == NVRTC_SUCCESS && count > 0) {
      out.resize(static_cast<size_t>(count));
      if ((*lib)->nvrtcGetSupportedArchs(out.data()) != NVRTC_SUCCESS)
        out.clear();
    }
    return out;
  }();
  return archs;
}

} // namespace

llvm::Error checkArch(const std::string &arch) {
  // The spelling is Arch's; which numbers this NVRTC knows is ours.
  llvm::Expected<Arch> parsed = Arch::parse(arch);
  const bool spelt = static_cast<bool>(parsed);
  if (!parsed)
    llvm::consumeError(parsed.takeError());
  const std::vector<int> &known = supportedArchs();
  const bool ok = spelt && (known.empty() ||
                            std::find(known.begin(), known.end(), parsed->number()) != known.end());
  if (ok)
    return llvm::Error::success();
  std::string allowed;
  for (int a : known)
    if (a >= 80)
      allowed += fmt::format("{}sm_{}{}", allowed.empty() ? "" : ", ", a,
                             a >= 90 ? fmt::format(", sm_{}a", a) : "");
  if (allowed.empty())
    allowed = "sm_80, sm_86, sm_89, sm_90, sm_90a and newer";
  return makeError(ErrorCode::InvalidArgument,
                   "unsupported target '{}': expected one of {} (sm_80 and newer that NVRTC {} "
                   "compiles for; the a suffix from sm_90 on)",
                   arch, allowed, version());
}

std::string version() {
  auto lib = library();
  if (lib)
    return (*lib)->version;
  llvm::consumeError(lib.takeError());
  return "none";
}

bool debugPipelines() {
  auto debug = settings::readBool("MOEJIT_DEBUG_PIPELINES");
  if (debug)
    return *debug;
  warnOnce("MOEJIT_DEBUG_PIPELINES", errorMessage(debug.takeError()) + "; taken as 0");
  return false;
}

std::vector<std::string> compileOptions(const std::string &arch,
                                        const std::vector<std::string> &extra) {
  // -minimal leaves out NVRTC's texture, surface and device-runtime
  // declarations, which no template uses: the same cubins, a few ms less of
  // front end per program (NOTES.md, session 27).
  std::vector<std::string> options = {"--gpu-architecture=" + arch, "-std=c++17",
                                      "--ptxas-options=-v", "-default-device", "-minimal"};
  // Options are part of every cache key, so debug builds of the kernels
  // never stand in for the others.
  if (debugPipelines())
    options.push_back("-DMOEJIT_PIPELINE_TIMEOUT_NS=10000000000ull");
  options.insert(options.end(), extra.begin(), extra.end());
  return options;
}

std::string kernelLog(const std::string &log, const std::string &kernel,
                      const std::vector<std::string> &program_kernels) {
  if (program_kernels.size() <= 1)
    return log;
  static const std::string kSection = "Compiling entry function '";
  auto names = [](llvm::StringRef line, const std::string &k) {
    return line.contains("'" + k + "'");
  };
  std::string out;
  std::string section; // the kernel whose section the line is in, "" before any
  llvm::SmallVector<llvm::StringRef, 64> lines;
  llvm::StringRef(log).split(lines, '\n');
  for (llvm::StringRef line : lines) {
    if (size_t at = line.find(kSection); at != llvm::StringRef::npos) {
      llvm::StringRef rest = line.drop_front(at + kSection.size());
      section = rest.take_until([](char c) { return c == '\''; }).str();
    }
    bool mine;
    if (!section.empty())
      mine = section == kernel;
    else
      mine = names(line, kernel) ||
             llvm::none_of(program_kernels, [&](const std::string &k) { return names(line, k); });
    if (mine) {
      out.append(line.data(), line.size());
      out.push_back('\n');
    }
  }
  return out;
}

Resources parseResources(const std::string &log) {
  Resources r;
  std::smatch m;
  if (std::regex_search(log, m, std::regex("Used ([0-9]+) registers")))
    r.registers = std::stoi(m[1]);
  if (std::regex_search(log, m,
                        std::regex("([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads")))
    r.spill_bytes = std::stoi(m[1]) + std::stoi(m[2]);
  if (std::regex_search(log, m, std::regex("([0-9]+) bytes stack frame")))
    r.stack_bytes = std::stoi(m[1]);
  if (std::regex_search(log, m, std::regex("([0-9]+) bytes smem")))
    r.static_shared_bytes = std::stoi(m[1]);
  return r;
}

namespace {

/// Failed units kept for inspection: the newest few, in a folder of this
/// user's, so that a crash loop on a bad kernel cannot fill the disk.
constexpr size_t kKeptSources = 32;

/// Writes a failed unit to $TMPDIR/moejit-<uid>/ (made 0700, refused when
/// it is a link or another user's), removes all but the newest
/// kKeptSources there, and returns the path or why it could not be kept.
std::string keepSource(const std::string &program_name, const std::string &source) {
  llvm::SmallString<256> tmp;
  llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, tmp);
  const std::string folder = fmt::format("{}/moejit-{}", tmp.str().str(), ::geteuid());
  auto dir =
      safefs::openRoot(folder, safefs::Trust::Owner, /*create=*/true, safefs::RootLink::Refuse);
  if (!dir)
    return "(not kept: " + errorMessage(dir.takeError()) + ")";
  const std::string name = fmt::format("{}-{}-{}.cu", program_name, ::getpid(),
                                       std::chrono::steady_clock::now().time_since_epoch().count());
  auto file = safefs::openFile(**dir, name, O_WRONLY | O_CREAT | O_EXCL, safefs::kAnySize);
  if (!file)
    return "(not kept: " + errorMessage(file.takeError()) + ")";
  if (int errnum = safefs::writeAll((*file)->fd.get(), source))
    return fmt::format("(not kept: {})", std::strerror(errnum));
  if (auto listed = safefs::list(**dir)) {
    std::vector<safefs::Listed> kept;
    for (safefs::Listed &l : *listed)
      if (S_ISREG(l.st.st_mode) && llvm::StringRef(l.name).endswith(".cu"))
        kept.push_back(std::move(l));
    std::sort(kept.begin(), kept.end(), [](const safefs::Listed &a, const safefs::Listed &b) {
      return a.st.st_mtim.tv_sec != b.st.st_mtim.tv_sec
                 ? a.st.st_mtim.tv_sec > b.st.st_mtim.tv_sec
                 : a.st.st_mtim.tv_nsec > b.st.st_mtim.tv_nsec;
    });
    for (size_t i = kKeptSources; i < kept.size(); ++i)
      if (kept[i].name != name)
        ::unlinkat((*dir)->fd(), kept[i].name.c_str(), 0);
  } else {
    llvm::consumeError(listed.takeError());
  }
  return (*dir)->pathOf(name);
}

std::string programLog(const Library &lib, nvrtcProgram program) {
  size_t size = 0;
  lib.nvrtcGetProgramLogSize(program, &size);
  std::string log(size, '\0');
  if (size)
    lib.nvrtcGetProgramLog(program, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
    log.pop_back();
  return log;
}

} // namespace

llvm::Expected<CompiledProgram> compile(const std::string &program_name, const std::string &source,
                                        const std::string &arch,
                                        const std::vector<std::string> &extra_options) {
  auto loaded = library();
  if (!loaded)
    return loaded.takeError();
  const Library &lib = **loaded;
  if (llvm::Error e = checkArch(arch))
    return e;
  const auto start = std::chrono::steady_clock::now();
  std::vector<const char *> header_text, header_names;
  for (const codegen::EmbeddedTemplate &t : codegen::embeddedTemplates()) {
    header_text.push_back(t.text);
    header_names.push_back(t.name);
  }
  nvrtcProgram program = nullptr;
  nvrtcResult rc = lib.nvrtcCreateProgram(&program, source.c_str(), (program_name + ".cu").c_str(),
                                          static_cast<int>(header_text.size()), header_text.data(),
                                          header_names.data());
  if (rc != NVRTC_SUCCESS)
    return makeError(ErrorCode::CompileFailed, "nvrtcCreateProgram failed for {}: {}", program_name,
                     lib.nvrtcGetErrorString(rc));
  const std::vector<std::string> options = compileOptions(arch, extra_options);
  std::vector<const char *> option_ptrs;
  for (const std::string &o : options)
    option_ptrs.push_back(o.c_str());
  rc = lib.nvrtcCompileProgram(program, static_cast<int>(option_ptrs.size()), option_ptrs.data());
  CompiledProgram result;
  result.log = programLog(lib, program);
  if (rc == NVRTC_SUCCESS) {
    size_t size = 0;
    lib.nvrtcGetCUBINSize(program, &size);
    result.cubin.resize(size);
    lib.nvrtcGetCUBIN(program, result.cubin.data());
  }
  lib.nvrtcDestroyProgram(&program);
  if (rc != NVRTC_SUCCESS) {
    std::string joined;
    for (const std::string &o : options)
      joined += o + " ";
    return makeError(ErrorCode::CompileFailed,
                     "NVRTC failed to compile {} for {}: {}\noptions: {}\n"
                     "source kept at: {}\nlog:\n{}",
                     program_name, arch, lib.nvrtcGetErrorString(rc), joined,
                     keepSource(program_name, source), result.log);
  }
  result.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

} // namespace moejit::nvrtc
