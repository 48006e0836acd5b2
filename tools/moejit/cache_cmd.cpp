// moejit cache: prints what store/cache_admin finds and does; the logic
// (scan, checks, LRU choice, lock-aware removal) lives in the library.
#include "cli.h"

#include "api/warm.h"
#include "common/error.h"
#include "common/safe_fs.h"
#include "store/cache_admin.h"
#include "workload/shape.h"

#include <llvm/Support/JSON.h>
#include <llvm/Support/Path.h>

#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <regex>

namespace moejit::cli {

namespace {

/// Paths are printed relative to the root printed first.
std::string relative(const std::string &root, const std::string &path) {
  if (path.size() > root.size() + 1 && path.compare(0, root.size(), root) == 0)
    return path.substr(root.size() + 1);
  return path;
}

std::string age(int64_t when) {
  const int64_t s = std::max<int64_t>(0, static_cast<int64_t>(std::time(nullptr)) - when);
  if (s < 120)
    return std::to_string(s) + "s";
  if (s < 2 * 3600)
    return std::to_string(s / 60) + "m";
  if (s < 2 * 86400)
    return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

/// The shape of workload `id`, from the kernel names of its entries. A
/// workload id is a one-way hash (sha256 of workload::canonicalText), and an
/// entry's metadata holds its kernel name, which spells the shape
/// (moe_gemm1_bf16_k8_h2048_i768_e128_...); a shape counts only if it hashes
/// back to `id`, so a name spelled some other way gives none, not a wrong
/// one.
std::optional<MoeShape> shapeOfWorkload(const std::string &id,
                                        const std::vector<std::string> &kernels) {
  static const std::regex spelled("_([a-z0-9]+)_k([0-9]+)_h([0-9]+)_i([0-9]+)_e([0-9]+)(_|$)");
  for (const std::string &kernel : kernels) {
    std::smatch m;
    if (!std::regex_search(kernel, m, spelled))
      continue;
    try {
      const MoeShape shape{static_cast<int>(parseInteger(m.str(2), "k", 1, kMaxDim)),
                           static_cast<int>(parseInteger(m.str(3), "hidden", 1, kMaxDim)),
                           static_cast<int>(parseInteger(m.str(4), "intermediate", 1, kMaxDim)),
                           static_cast<int>(parseInteger(m.str(5), "experts", 1, kMaxExperts)),
                           parse_dtype(m.str(1))};
      if (workload::workloadId(shape) == id)
        return shape;
    } catch (const std::exception &) { // not a shape moejit spells
    }
  }
  return std::nullopt;
}

/// s with every byte outside printable ASCII (and the backslash) as \xNN:
/// names and texts from the cache root, which may be hostile, never reach a
/// terminal as control sequences or forged lines, and JSON gets valid UTF-8.
std::string shown(llvm::StringRef s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

struct ListedEntry {
  const store::CacheFile *file;
  std::string kernel, arch, corrupt; ///< corrupt: why it does not decode
};

int list(const std::string &root, bool json) {
  const store::CacheScan scan = unwrapOrThrow(store::scanCache(root));
  if (!json)
    std::printf("cache root: %s\n", root.c_str());
  std::map<std::string, std::vector<const store::CacheFile *>> by_workload;
  for (const store::CacheFile &f : scan.files)
    by_workload[f.workload_id].push_back(&f);
  size_t workloads = 0;
  llvm::json::Array workloads_json;
  for (const auto &[id, files] : by_workload) {
    uint64_t bytes = 0;
    size_t entries = 0, temps = 0, locks = 0;
    std::vector<ListedEntry> listed;
    std::vector<std::string> kernels;
    for (const store::CacheFile *f : files) {
      temps += f->kind == store::FileKind::Temp;
      locks += f->kind == store::FileKind::Lock;
      if (f->kind != store::FileKind::Entry)
        continue;
      ++entries;
      bytes += f->size;
      auto meta = store::checkEntryFile(root, *f);
      if (meta) {
        listed.push_back({f, shown(meta->kernel), shown(meta->arch), ""});
        kernels.push_back(meta->kernel);
      } else {
        listed.push_back({f, "", "", shown(errorMessage(meta.takeError()))});
      }
    }
    if (entries == 0 && temps == 0 && locks == 0)
      continue;
    ++workloads;
    const std::optional<MoeShape> shape = shapeOfWorkload(id, kernels);
    if (json) {
      llvm::json::Array entries_json;
      for (const ListedEntry &e : listed) {
        llvm::json::Object o{{"file", shown(llvm::sys::path::filename(e.file->path))},
                             {"size", static_cast<int64_t>(e.file->size)},
                             {"last_used", e.file->lastUsed()}};
        if (e.corrupt.empty()) {
          o["kernel"] = e.kernel;
          o["arch"] = e.arch;
        } else {
          o["corrupt"] = e.corrupt;
        }
        entries_json.push_back(std::move(o));
      }
      workloads_json.push_back(llvm::json::Object{
          {"workload_id", shown(id)},
          {"shape", shape ? llvm::json::Value(shapeText(*shape)) : llvm::json::Value(nullptr)},
          {"bytes", static_cast<int64_t>(bytes)},
          {"temporary_files", static_cast<int64_t>(temps)},
          {"lock_files", static_cast<int64_t>(locks)},
          {"entries", std::move(entries_json)}});
      continue;
    }
    std::printf("\nworkload %s: %zu entries, %s\n", shown(id).c_str(), entries,
                store::formatSize(bytes).c_str());
    std::printf("  shape %s\n", shape ? shapeText(*shape).c_str()
                                      : "unknown (no entry's kernel name spells this workload)");
    std::printf("  %-72s %8s %9s  %s\n", "kernel", "size", "last use", "key");
    for (const ListedEntry &e : listed) {
      const std::string kernel =
          e.corrupt.empty() ? e.kernel + " " + e.arch : "(corrupt: " + e.corrupt + ")";
      const std::string name = shown(llvm::sys::path::filename(e.file->path));
      std::printf("  %-72s %8s %9s  %.16s\n", kernel.c_str(),
                  store::formatSize(e.file->size).c_str(), age(e.file->lastUsed()).c_str(),
                  name.c_str());
    }
    if (temps || locks)
      std::printf("  and %zu temporary, %zu lock files (moejit cache verify)\n", temps, locks);
  }
  const uint64_t total = scan.entryBytes();
  if (json) {
    llvm::json::Array refused, tuning;
    for (const store::CacheFile &f : scan.refused)
      refused.push_back(
          llvm::json::Object{{"path", shown(f.relative)}, {"why", shown(f.refused)}});
    for (const store::CacheFile &f : scan.tuning)
      tuning.push_back(llvm::json::Object{
          {"path", shown(f.relative)}, {"size", static_cast<int64_t>(f.size)}, {"mtime", f.mtime}});
    printJson(
        llvm::json::Object{{"cache_root", root},
                           {"workloads", std::move(workloads_json)},
                           {"entries", static_cast<int64_t>(scan.count(store::FileKind::Entry))},
                           {"bytes", static_cast<int64_t>(total)},
                           {"refused", std::move(refused)},
                           {"tuning_records", std::move(tuning)}});
    return 0;
  }
  std::printf("\ntotal: %zu entries in %zu workloads, %s (%llu bytes)\n",
              scan.count(store::FileKind::Entry), workloads, store::formatSize(total).c_str(),
              static_cast<unsigned long long>(total));
  for (const store::CacheFile &f : scan.refused)
    std::printf("refused %s: %s\n", shown(f.relative).c_str(), shown(f.refused).c_str());
  if (scan.tuning.empty()) {
    std::printf("tuning records: none\n");
    return 0;
  }
  std::printf("tuning records (not interpreted here):\n");
  for (const store::CacheFile &f : scan.tuning)
    std::printf("  %-100s %8s %6s\n", shown(f.relative).c_str(), store::formatSize(f.size).c_str(),
                age(f.mtime).c_str());
  return 0;
}

void printFindings(const std::string &root, const char *label,
                   const std::vector<store::Finding> &findings) {
  for (const store::Finding &f : findings)
    std::printf("%s %s: %s%s\n", label, shown(relative(root, f.path)).c_str(), shown(f.what).c_str(),
                f.removed ? " (removed)" : "");
}

int verify(const std::string &root, bool fix) {
  const store::VerifyReport report =
      unwrapOrThrow(store::verifyCache(root, fix, api::recordCheck()));
  std::printf("cache root: %s\n", root.c_str());
  printFindings(root, "refused", report.refused);
  printFindings(root, "corrupt entry", report.corrupt);
  printFindings(root, "bad tuning record", report.records);
  printFindings(root, "temporary file", report.temps);
  printFindings(root, "stale lock file", report.stale_locks);
  printFindings(root, "error:", report.errors);
  std::printf("%zu entries ok, %zu corrupt, %zu temporary files, %zu stale lock files, %zu "
              "refused, %zu bad tuning records\n",
              report.entries_ok, report.corrupt.size(), report.temps.size(),
              report.stale_locks.size(), report.refused.size(), report.records.size());
  if (!report.ok())
    std::printf("corrupt entries and bad records are misses and get rebuilt, links and special "
                "files are never followed; `moejit cache verify --fix` removes them\n");
  return report.ok() ? 0 : 1;
}

int prune(const std::string &root, uint64_t max_bytes) {
  const store::PruneReport report = unwrapOrThrow(store::pruneCache(root, max_bytes));
  std::printf("cache root: %s\n", root.c_str());
  for (const store::Finding &f : report.removed)
    std::printf("removed %s (%s)\n", shown(relative(root, f.path)).c_str(), shown(f.what).c_str());
  printFindings(root, "kept", report.kept);
  printFindings(root, "refused (left alone)", report.refused);
  for (const store::Finding &f : report.temps)
    std::printf("removed stale temporary file %s\n", shown(relative(root, f.path)).c_str());
  for (const store::Finding &f : report.locks)
    std::printf("removed stale lock file %s\n", shown(relative(root, f.path)).c_str());
  printFindings(root, "error:", report.errors);
  // What the walk refused (an untrusted folder, a link) was neither entered
  // nor counted: the size is then a lower bound, and the prune incomplete.
  const bool refused = !report.refused.empty();
  std::printf("final size: %s%s (%llu bytes) in %zu entries; limit %s\n",
              refused ? "at least " : "", store::formatSize(report.final_bytes).c_str(),
              static_cast<unsigned long long>(report.final_bytes), report.final_entries,
              store::formatSize(max_bytes).c_str());
  if (report.final_bytes > max_bytes) {
    // Each reason only where it happened: an entry that could not be
    // removed was once said to be in use.
    size_t in_use = 0;
    for (const store::Finding &f : report.kept)
      in_use += f.what.rfind("in use", 0) == 0;
    std::vector<std::string> why;
    if (in_use)
      why.push_back(std::to_string(in_use) + " entries in use by running processes were kept");
    if (report.kept.size() > in_use)
      why.push_back(std::to_string(report.kept.size() - in_use) +
                    " entries were replaced by other processes meanwhile");
    if (!report.errors.empty())
      why.push_back(std::to_string(report.errors.size()) + " could not be removed (error: above)");
    if (why.empty())
      why.push_back("other processes saved entries meanwhile");
    std::string text;
    for (const std::string &w : why)
      text += (text.empty() ? "" : "; ") + w;
    std::printf("still above the limit: %s\n", text.c_str());
  }
  if (refused)
    std::printf("not pruned: %zu refused paths (above), left alone and not counted\n",
                report.refused.size());
  return report.errors.empty() && !refused ? 0 : 1;
}

/// The library reads a root that does not exist as an empty cache (a
/// process's first run); asked about by name, it is an error: a mistyped
/// --cache-dir "verified" and "pruned" clean.
void requireRoot(const std::string &root) {
  auto dir = safefs::openRoot(root, safefs::cacheTrust(), /*create=*/false);
  if (!dir)
    throw Error(ErrorCode::InvalidArgument,
                "cache root " + root + ": " + errorMessage(dir.takeError()));
  if (!*dir)
    throw Error(ErrorCode::InvalidArgument, "cache root " + root + " does not exist");
}

} // namespace

Command addCache(CLI::App &app) {
  struct CacheArgs {
    std::string root, max_size;
    bool fix = false, json = false;
  };
  auto a = std::make_shared<CacheArgs>();
  CLI::App *cmd = app.add_subcommand("cache", "Show, check or trim the cubin cache.");
  cmd->require_subcommand(1);
  auto addRoot = [&](CLI::App *sub) {
    sub->add_option("--cache-dir", a->root, "cache root (default: MOEJIT_CACHE_DIR or ~/.cache)")
        ->type_name("DIR")
        ->check(nonEmpty());
  };
  CLI::App *list_cmd = cmd->add_subcommand(
      "list", "Show each workload (shape, entries: kernel, size, last use) and tuning record.");
  addRoot(list_cmd);
  list_cmd->add_flag("--json", a->json, "print a JSON document on stdout instead of text");
  CLI::App *verify_cmd = cmd->add_subcommand(
      "verify", "Check every entry and tuning record; exit 1 on a corrupt entry, a bad record, a "
                "link or a special file.");
  addRoot(verify_cmd);
  verify_cmd->add_flag("--fix", a->fix,
                       "remove those, and leftovers of killed processes (never following a link)");
  CLI::App *prune_cmd = cmd->add_subcommand(
      "prune", "Remove least recently used entries down to a size, never one a running process "
               "has open.");
  addRoot(prune_cmd);
  prune_cmd->add_option("--max-size", a->max_size, "the size to keep: 512M, 2G, 100K, 12345")
      ->type_name("SIZE")
      ->required()
      ->check(checkedBy([](const std::string &s) { unwrapOrThrow(store::parseSize(s)); }, ""));
  return {cmd, [a, list_cmd, verify_cmd] {
            const std::string root = cacheRoot(a->root);
            requireRoot(root);
            if (list_cmd->parsed())
              return list(root, a->json);
            if (verify_cmd->parsed())
              return verify(root, a->fix);
            return prune(root, unwrapOrThrow(store::parseSize(a->max_size)));
          }};
}

} // namespace moejit::cli
