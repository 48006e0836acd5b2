// moejit cache: prints what store/cache_admin finds and does; the logic
// (scan, checks, LRU choice, lock-aware removal) lives in the library.
#include "cache_cmd.h"

#include "common/error.h"
#include "store/cache_admin.h"
#include "api/warm.h"

#include <llvm/Support/Path.h>

#include <cstdio>
#include <ctime>
#include <map>

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

int list(const std::string &root) {
  const store::CacheScan scan = unwrapOrThrow(store::scanCache(root));
  std::printf("cache root: %s\n", root.c_str());
  std::map<std::string, std::vector<const store::CacheFile *>> by_workload;
  for (const store::CacheFile &f : scan.files)
    by_workload[f.workload_id].push_back(&f);
  size_t workloads = 0;
  for (const auto &[id, files] : by_workload) {
    uint64_t bytes = 0;
    size_t entries = 0, temps = 0, locks = 0;
    for (const store::CacheFile *f : files) {
      entries += f->kind == store::FileKind::Entry;
      temps += f->kind == store::FileKind::Temp;
      locks += f->kind == store::FileKind::Lock;
      bytes += f->kind == store::FileKind::Entry ? f->size : 0;
    }
    if (entries == 0 && temps == 0 && locks == 0)
      continue;
    ++workloads;
    std::printf("\nworkload %s: %zu entries, %s\n", id.c_str(), entries,
                store::formatSize(bytes).c_str());
    std::printf("  %-72s %8s %9s  %s\n", "kernel", "size", "last use", "key");
    for (const store::CacheFile *f : files) {
      if (f->kind != store::FileKind::Entry)
        continue;
      auto meta = store::checkEntryFile(root, *f);
      const std::string kernel = meta ? meta->kernel + " " + meta->arch
                                      : "(corrupt: " + errorMessage(meta.takeError()) + ")";
      const std::string name = llvm::sys::path::filename(f->path).str();
      std::printf("  %-72s %8s %9s  %.16s\n", kernel.c_str(), store::formatSize(f->size).c_str(),
                  age(f->lastUsed()).c_str(), name.c_str());
    }
    if (temps || locks)
      std::printf("  and %zu temporary, %zu lock files (moejit cache verify)\n", temps, locks);
  }
  const uint64_t total = scan.entryBytes();
  std::printf("\ntotal: %zu entries in %zu workloads, %s (%llu bytes)\n",
              scan.count(store::FileKind::Entry), workloads, store::formatSize(total).c_str(),
              static_cast<unsigned long long>(total));
  for (const store::CacheFile &f : scan.refused)
    std::printf("refused %s: %s\n", f.relative.c_str(), f.refused.c_str());
  if (scan.tuning.empty()) {
    std::printf("tuning records: none\n");
    return 0;
  }
  std::printf("tuning records (not interpreted here):\n");
  for (const store::CacheFile &f : scan.tuning)
    std::printf("  %-100s %8s %6s\n", f.relative.c_str(), store::formatSize(f.size).c_str(),
                age(f.mtime).c_str());
  return 0;
}

void printFindings(const std::string &root, const char *label,
                   const std::vector<store::Finding> &findings) {
  for (const store::Finding &f : findings)
    std::printf("%s %s: %s%s\n", label, relative(root, f.path).c_str(), f.what.c_str(),
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
    std::printf("removed %s (%s)\n", relative(root, f.path).c_str(), f.what.c_str());
  printFindings(root, "kept", report.kept);
  printFindings(root, "refused (left alone)", report.refused);
  for (const store::Finding &f : report.temps)
    std::printf("removed stale temporary file %s\n", relative(root, f.path).c_str());
  for (const store::Finding &f : report.locks)
    std::printf("removed stale lock file %s\n", relative(root, f.path).c_str());
  printFindings(root, "error:", report.errors);
  std::printf("final size: %s (%llu bytes) in %zu entries; limit %s\n",
              store::formatSize(report.final_bytes).c_str(),
              static_cast<unsigned long long>(report.final_bytes), report.final_entries,
              store::formatSize(max_bytes).c_str());
  if (report.final_bytes > max_bytes)
    std::printf("still above the limit: entries in use by running processes were kept\n");
  return report.errors.empty() ? 0 : 1;
}

} // namespace

int runCache(Args args) {
  const std::string root = args.value("--cache-dir").value_or(store::defaultRoot());
  if (root.empty())
    throw Error(ErrorCode::InvalidArgument,
                "no cache root: no home folder; give --cache-dir or set MOEJIT_CACHE_DIR");
  const std::optional<std::string> max_size = args.value("--max-size");
  const bool fix = args.flag("--fix");
  const bool do_list = args.flag("list"), do_verify = args.flag("verify"),
             do_prune = args.flag("prune");
  args.finish();
  if (do_list + do_verify + do_prune != 1)
    throw Error(ErrorCode::InvalidArgument, "cache needs one of: list, verify [--fix], "
                                            "prune --max-size SIZE");
  if (fix && !do_verify)
    throw Error(ErrorCode::InvalidArgument, "--fix goes with cache verify");
  if (max_size.has_value() != do_prune)
    throw Error(ErrorCode::InvalidArgument, "cache prune needs --max-size SIZE (and only it)");
  if (do_list)
    return list(root);
  if (do_verify)
    return verify(root, fix);
  return prune(root, unwrapOrThrow(store::parseSize(*max_size)));
}

} // namespace moejit::cli
