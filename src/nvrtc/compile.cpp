#include "nvrtc/compile.h"

#include "codegen/embedded_templates.h"
#include "common/error.h"
#include "common/log.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>
#include <nvrtc.h>

#include <chrono>
#include <regex>

namespace moejit::nvrtc {

std::string archForComputeCapability(int major, int minor) {
  std::string arch = fmt::format("sm_{}{}", major, minor);
  return major == 9 && minor == 0 ? arch + "a" : arch;
}

llvm::Error checkArch(const std::string &arch) {
  static const std::regex pattern("sm_([0-9]+)a?");
  std::smatch m;
  if (!std::regex_match(arch, m, pattern) || std::stoi(m[1]) < 80)
    return makeError(ErrorCode::InvalidArgument,
                     "unsupported target '{}': expected sm_80 or newer, like "
                     "sm_80, sm_90a",
                     arch);
  return llvm::Error::success();
}

std::string version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return fmt::format("{}.{}", major, minor);
}

std::vector<std::string> compileOptions(const std::string &arch) {
  return {"--gpu-architecture=" + arch, "-std=c++17", "--ptxas-options=-v", "-default-device"};
}

Resources parseResources(const std::string &log) {
  Resources r;
  std::smatch m;
  if (std::regex_search(log, m, std::regex("Used ([0-9]+) registers")))
    r.registers = std::stoi(m[1]);
  if (std::regex_search(log, m,
                        std::regex("([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads")))
    r.spill_bytes = std::stoi(m[1]) + std::stoi(m[2]);
  if (std::regex_search(log, m, std::regex("([0-9]+) bytes smem")))
    r.static_shared_bytes = std::stoi(m[1]);
  return r;
}

namespace {

/// Writes a failed unit where the user can find it; returns the path.
std::string keepSource(const std::string &kernel_name, const std::string &source) {
  llvm::SmallString<256> path;
  int fd = -1;
  if (llvm::sys::fs::createTemporaryFile("moejit-" + kernel_name, "cu", fd, path))
    return "(could not be written)";
  llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
  out << source;
  return std::string(path);
}

std::string programLog(nvrtcProgram program) {
  size_t size = 0;
  nvrtcGetProgramLogSize(program, &size);
  std::string log(size, '\0');
  if (size)
    nvrtcGetProgramLog(program, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
    log.pop_back();
  return log;
}

} // namespace

llvm::Expected<CompiledKernel> compile(const std::string &kernel_name, const std::string &source,
                                       const std::string &arch) {
  if (llvm::Error e = checkArch(arch))
    return e;
  const auto start = std::chrono::steady_clock::now();
  std::vector<const char *> header_text, header_names;
  for (const codegen::EmbeddedTemplate &t : codegen::embeddedTemplates()) {
    header_text.push_back(t.text);
    header_names.push_back(t.name);
  }
  nvrtcProgram program = nullptr;
  nvrtcResult rc = nvrtcCreateProgram(&program, source.c_str(), (kernel_name + ".cu").c_str(),
                                      static_cast<int>(header_text.size()), header_text.data(),
                                      header_names.data());
  if (rc != NVRTC_SUCCESS)
    return makeError(ErrorCode::CompileFailed, "nvrtcCreateProgram failed for {}: {}", kernel_name,
                     nvrtcGetErrorString(rc));
  const std::vector<std::string> options = compileOptions(arch);
  std::vector<const char *> option_ptrs;
  for (const std::string &o : options)
    option_ptrs.push_back(o.c_str());
  rc = nvrtcCompileProgram(program, static_cast<int>(option_ptrs.size()), option_ptrs.data());
  CompiledKernel result;
  result.log = programLog(program);
  if (rc == NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetCUBINSize(program, &size);
    result.cubin.resize(size);
    nvrtcGetCUBIN(program, result.cubin.data());
  }
  nvrtcDestroyProgram(&program);
  if (rc != NVRTC_SUCCESS) {
    std::string joined;
    for (const std::string &o : options)
      joined += o + " ";
    return makeError(ErrorCode::CompileFailed,
                     "NVRTC failed to compile {} for {}: {}\noptions: {}\n"
                     "source kept at: {}\nlog:\n{}",
                     kernel_name, arch, nvrtcGetErrorString(rc), joined,
                     keepSource(kernel_name, source), result.log);
  }
  result.resources = parseResources(result.log);
  result.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  logger().info("compiled {} for {} in {:.0f} ms ({} registers, {} spill "
                "bytes)",
                kernel_name, arch, result.compile_ms, result.resources.registers,
                result.resources.spill_bytes);
  if (result.resources.spill_bytes > 0)
    warnOnce("spill:" + kernel_name, fmt::format("{} spills {} bytes to local memory", kernel_name,
                                                 result.resources.spill_bytes));
  return result;
}

} // namespace moejit::nvrtc
