// Tuning records: the JSON format, files in a cache root, the shipped tables
// and the lookup order record -> shipped table -> heuristic.
#include "runtime/planner.h"
#include "tune/plan_lookup.h"
#include "tune/record.h"
#include "tune/shipped_tables.h"
#include "workload/shape.h"

#include "common/error.h"

#include "testkit.h"

#include <gtest/gtest.h>
#include <llvm/ADT/STLExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/Path.h>

#include <fstream>
#include <functional>
#include <iostream>
#include <set>

using namespace moejit;
using namespace moejit::tune;
using codegen::TileConfig;

namespace {

const MoeShape kSeed{8, 2048, 768, 128, DType::BF16};
const std::string kGpu = "NVIDIA H200";
const char *const kArch = "sm_90a";

void writeFile(const std::string &path, const std::string &bytes) {
  llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path));
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

/// A record for `shape` whose plan is the heuristic's with every bucket
/// switched to 64-row wgmma tiles: valid on sm_90a and unlike the heuristic.
TuningRecord sampleRecord(const MoeShape &shape = kSeed) {
  TuningRecord r;
  r.workload_id = workload::workloadId(shape);
  r.workload = workload::canonicalText(shape);
  r.gpu = kGpu;
  r.arch = kArch;
  r.moejit_version = version();
  r.nvrtc_version = "13.0";
  r.created_utc = "2025-01-02T03:04:05Z";
  r.tuning_seconds = 81.25;
  r.candidates = 24;
  r.failed = 2;
  for (int b = 0; b < runtime::kBucketCount; ++b) {
    BucketRecord br;
    br.bucket = b;
    br.tokens = runtime::bucketTokens(b);
    br.choice = {TileConfig{64, 64, 4, 0, 0, true, 0}, TileConfig{64, 128, 4, 0, 0, true, 1}};
    br.ms = 0.345 + b;
    br.heuristic_ms = 0.4 + b;
    r.buckets.push_back(br);
  }
  return r;
}

/// toJson(sampleRecord()) with `edit` applied to the parsed JSON object.
std::string editedJson(const std::function<void(llvm::json::Object &)> &edit) {
  auto value = llvm::json::parse(toJson(sampleRecord()));
  EXPECT_TRUE(static_cast<bool>(value));
  edit(*value->getAsObject());
  std::string out;
  llvm::raw_string_ostream os(out);
  os << *value;
  return os.str();
}

llvm::json::Object &bucketAt(llvm::json::Object &o, size_t b) {
  return *(*o.getArray("buckets"))[b].getAsObject();
}

/// The message of parseRecord's error for `json`; "" if it parsed.
std::string rejection(const std::string &json) {
  auto r = parseRecord(json);
  if (r)
    return "";
  return errorMessage(r.takeError());
}

std::string planError(const TuningRecord &r, const MoeShape &shape, const Arch &arch) {
  auto plan = planFromRecord(r, shape, arch);
  return plan ? "" : errorMessage(plan.takeError());
}

} // namespace

TEST(TuningRecord, GpuSlug) {
  EXPECT_EQ(gpuSlug("NVIDIA H200"), "nvidia-h200");
  EXPECT_EQ(gpuSlug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
  EXPECT_EQ(gpuSlug("NVIDIA A100-SXM4-40GB"), "nvidia-a100-sxm4-40gb");
  EXPECT_EQ(gpuSlug("  NVIDIA  GeForce RTX 4090 (x) "), "nvidia-geforce-rtx-4090-x");
  EXPECT_EQ(gpuSlug(""), "gpu");
  EXPECT_EQ(gpuSlug("--"), "gpu");
}

TEST(TuningRecord, JsonRoundTrip) {
  const TuningRecord r = sampleRecord();
  const std::string json = toJson(r);
  EXPECT_NE(json.find("\"format\": \"moejit-tuning\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"format_version\": 1"), std::string::npos);
  EXPECT_NE(json.find("\"gemm2\": \"bm64_bn128_s4_wgmma_f1\""), std::string::npos);
  EXPECT_NE(json.find("\"ms\": 0.345"), std::string::npos) << "numbers are written shortest";
  auto back = parseRecord(json);
  ASSERT_TRUE(static_cast<bool>(back)) << errorMessage(back.takeError());
  EXPECT_EQ(back->workload_id, r.workload_id);
  EXPECT_EQ(back->workload, r.workload);
  EXPECT_EQ(back->gpu, r.gpu);
  EXPECT_EQ(back->arch, r.arch);
  EXPECT_EQ(back->moejit_version, r.moejit_version);
  EXPECT_EQ(back->nvrtc_version, r.nvrtc_version);
  EXPECT_EQ(back->created_utc, r.created_utc);
  EXPECT_EQ(back->tuning_seconds, r.tuning_seconds);
  EXPECT_EQ(back->candidates, r.candidates);
  EXPECT_EQ(back->failed, r.failed);
  ASSERT_EQ(back->buckets.size(), r.buckets.size());
  for (size_t b = 0; b < r.buckets.size(); ++b) {
    EXPECT_EQ(back->buckets[b].bucket, r.buckets[b].bucket);
    EXPECT_EQ(back->buckets[b].tokens, r.buckets[b].tokens);
    EXPECT_EQ(back->buckets[b].choice, r.buckets[b].choice);
    EXPECT_EQ(back->buckets[b].ms, r.buckets[b].ms); // exact: shortest round-trip text
    EXPECT_EQ(back->buckets[b].heuristic_ms, r.buckets[b].heuristic_ms);
  }
  EXPECT_EQ(toJson(*back), json);
}

TEST(TuningRecord, ParseRejectsBadRecords) {
  using llvm::json::Object;
  struct Case {
    const char *name;
    std::function<void(Object &)> edit;
    const char *message; ///< part of the error message
  };
  const std::vector<Case> cases = {
      {"wrong format", [](Object &o) { o["format"] = "moejit-cache"; }, "\"format\""},
      {"no format", [](Object &o) { o.erase("format"); }, "\"format\""},
      {"newer version", [](Object &o) { o["format_version"] = 2; }, "format_version 2"},
      {"no version", [](Object &o) { o.erase("format_version"); }, "format_version"},
      {"no gpu", [](Object &o) { o.erase("gpu"); }, "missing \"gpu\""},
      {"empty arch", [](Object &o) { o["arch"] = ""; }, "\"arch\" must not be empty"},
      {"numeric version", [](Object &o) { o["moejit_version"] = 2; },
       "\"moejit_version\" must be a string"},
      {"no created_utc", [](Object &o) { o.erase("created_utc"); }, "missing \"created_utc\""},
      {"negative seconds", [](Object &o) { o["tuning_seconds"] = -1.0; }, "tuning_seconds"},
      {"fractional candidates", [](Object &o) { o["candidates"] = 2.5; }, "candidates"},
      {"more failed than tried", [](Object &o) { o["failed"] = 25; }, "failed (25)"},
      {"bad id", [](Object &o) { o["workload_id"] = "abc"; }, "64 lower-case hex"},
      {"id of another text",
       [](Object &o) {
         o["workload"] = workload::canonicalText({8, 4096, 768, 128});
       },
       "not the sha256"},
      {"no buckets", [](Object &o) { o.erase("buckets"); }, "missing \"buckets\""},
      {"buckets not array", [](Object &o) { o["buckets"] = "x"; }, "must be an array"},
      {"16 buckets", [](Object &o) { o.getArray("buckets")->pop_back(); }, "16 buckets"},
      {"18 buckets",
       [](Object &o) {
         auto &a = *o.getArray("buckets");
         a.push_back(a.back());
       },
       "18 buckets"},
      {"swapped buckets",
       [](Object &o) {
         auto &a = *o.getArray("buckets");
         std::swap(a[3], a[4]);
       },
       "buckets[3]: bucket 4 is out of order"},
      {"bucket not object", [](Object &o) { (*o.getArray("buckets"))[5] = 5; },
       "buckets[5]: not an object"},
      {"wrong tokens", [](Object &o) { bucketAt(o, 7)["tokens"] = 100; }, "tokens 100"},
      {"missing ms", [](Object &o) { bucketAt(o, 2).erase("ms"); }, "buckets[2]: missing \"ms\""},
      {"missing gemm2", [](Object &o) { bucketAt(o, 0).erase("gemm2"); }, "missing \"gemm2\""},
      {"unparsable config", [](Object &o) { bucketAt(o, 9)["gemm1"] = "big_tiles"; },
       "buckets[9]: gemm1: 'big_tiles' is not a tile config"},
      {"config with trailing text",
       [](Object &o) { bucketAt(o, 9)["gemm2"] = "bm64_bn64_s3_w2x2x"; }, "gemm2"},
      {"config not canonical", [](Object &o) { bucketAt(o, 1)["gemm1"] = "bm064_bn64_s3_w2x2"; },
       "not spelled as"},
      // Texts that reach terminals in messages: printable ASCII, bounded.
      {"escape sequences in gpu",
       [](Object &o) {
         o["gpu"] = "\x1b[2K\rmoejit: all 14 kernels are in the cache\n\x1b[31mFORGED";
       },
       "\"gpu\" must be printable ASCII of at most 256 bytes"},
      {"gpu over 256 bytes", [](Object &o) { o["gpu"] = std::string(257, 'A'); },
       "\"gpu\" must be printable ASCII"},
      {"non-ASCII workload",
       [](Object &o) { o["workload"] = "moejit-workload v1 k=8 hidden=2048 \xc3\xa9"; },
       "\"workload\" must be printable ASCII"},
      {"newline in moejit_version", [](Object &o) { o["moejit_version"] = "0.2.0\nforged"; },
       "\"moejit_version\" must be printable ASCII"},
      {"tab in created_utc", [](Object &o) { o["created_utc"] = "2025\t01"; },
       "\"created_utc\" must be printable ASCII"},
      {"DEL in nvrtc_version", [](Object &o) { o["nvrtc_version"] = "13.0\x7f"; },
       "\"nvrtc_version\" must be printable ASCII"},
      {"bell in a tile config", [](Object &o) { bucketAt(o, 3)["gemm1"] = "bm64\a"; },
       "buckets[3]: \"gemm1\" must be printable ASCII"},
  };
  for (const Case &c : cases) {
    const std::string message = rejection(editedJson(c.edit));
    EXPECT_NE(message, "") << c.name << ": accepted";
    EXPECT_NE(message.find(c.message), std::string::npos) << c.name << ": " << message;
    EXPECT_TRUE(llvm::all_of(message, [](char ch) { return ch >= 0x20 && ch < 0x7f; }))
        << c.name << ": the message quotes a control byte: " << message;
  }
  // A key given twice: llvm::json keeps the last, a person may read the
  // first (a plan other than the one used), so the record is refused.
  const std::string json = toJson(sampleRecord());
  auto withBefore = [&](const std::string &anchor, const std::string &inserted) {
    std::string text = json;
    const size_t at = text.find(anchor);
    EXPECT_NE(at, std::string::npos) << anchor;
    return text.insert(at, inserted);
  };
  EXPECT_NE(rejection(withBefore("\"gpu\"", "\"gpu\": \"OTHER\", ")).find("duplicate key \"gpu\""),
            std::string::npos);
  EXPECT_NE(
      rejection(withBefore("\"gpu\"", "\"gp\\u0075\": \"OTHER\", ")).find("duplicate key \"gpu\""),
      std::string::npos)
      << "escapes are decoded before keys are compared";
  EXPECT_NE(rejection(withBefore("\"gemm1\"", "\"gemm1\": \"bm32_bn64_s3_w2x2\", "))
                .find("duplicate key \"gemm1\""),
            std::string::npos);
  EXPECT_NE(rejection(withBefore("\"gpu\"", "\"x\\u001b[2K\": 1, \"x\\u001b[2K\": 2, "))
                .find("duplicate key \"x\\x1b[2K\""),
            std::string::npos)
      << "a key is quoted with its control bytes escaped";
  // At the bound, and with spaces (GPU names have them): accepted.
  EXPECT_EQ(rejection(editedJson([](Object &o) { o["gpu"] = std::string(255, 'A') + " "; })), "");
  EXPECT_NE(rejection("{ not json"), "");
  EXPECT_NE(rejection("[1, 2]").find("not a JSON object"), std::string::npos);
  EXPECT_EQ(rejection(editedJson([](Object &o) { o["comment"] = "fields unknown to v1"; })), "");
}

TEST(TuningRecord, ParseCanonicalText) {
  for (const MoeShape &s :
       {kSeed, MoeShape{2, 4096, 14336, 8, DType::FP16}, MoeShape{1, 8, 8, 1, DType::FP32}}) {
    auto back = parseCanonicalText(workload::canonicalText(s));
    ASSERT_TRUE(static_cast<bool>(back)) << errorMessage(back.takeError());
    EXPECT_EQ(workload::workloadId(*back), workload::workloadId(s));
  }
  for (const char *bad : {
           "",
           "moejit-workload v2 k=8 hidden=2048 intermediate=768 experts=128 dtype=bf16",
           "moejit-workload v1 k=8 hidden=2048 intermediate=768 experts=128 dtype=int8",
           "moejit-workload v1 k=8 hidden=2048 intermediate=768 experts=128 dtype=bf16 x",
           "moejit-workload v1  k=8 hidden=2048 intermediate=768 experts=128 dtype=bf16",
           "moejit-workload v1 k=+8 hidden=2048 intermediate=768 experts=128 dtype=bf16",
           "moejit-workload v1 k=8 hidden=2047 intermediate=768 experts=128 dtype=bf16",
       }) {
    auto s = parseCanonicalText(bad);
    EXPECT_FALSE(static_cast<bool>(s)) << "accepted '" << bad << "'";
    if (!s)
      llvm::consumeError(s.takeError());
  }
}

TEST(TuningRecord, PathIsKeyedByIdGpuAndVersion) {
  const std::string id = workload::workloadId(kSeed);
  EXPECT_EQ(recordPath("/r", id, kGpu, "0.2.0"),
            "/r/tuning/v1/" + id + "/nvidia-h200/moejit-0.2.0.json");
}

/// The record's folder is made (or found unusable) before a tune, so that
/// minutes of tuning are not lost to a folder that cannot take the record.
TEST(TuningRecord, RecordFolderIsMadeOrRefusedBeforeATune) {
  testkit::TempDir root("moejit-tuning-test");
  const std::string id = sampleRecord().workload_id;
  const std::string path = recordPath(root.path, id, kGpu, version());
  llvm::Error made = makeRecordFolder(root.path, id, kGpu, version());
  ASSERT_FALSE(static_cast<bool>(made)) << errorMessage(std::move(made));
  EXPECT_TRUE(llvm::sys::fs::is_directory(llvm::sys::path::parent_path(path)));
  EXPECT_FALSE(llvm::sys::fs::exists(path)); // the folder only
  // A file where the tuning folder should be.
  testkit::TempDir other("moejit-tuning-test");
  { std::ofstream(other.path + "/tuning") << "not a folder"; }
  llvm::Error refused = makeRecordFolder(other.path, id, kGpu, version());
  ASSERT_TRUE(static_cast<bool>(refused));
  const std::string why = errorMessage(std::move(refused));
  EXPECT_NE(why.find("cannot write tuning record " + other.path + "/tuning/"), std::string::npos)
      << why;
  // A folder at the record's own name: the rename that publishes a record
  // could never replace it, so the tune would be lost at its end.
  ASSERT_TRUE(llvm::sys::fs::create_directory(path) == std::error_code());
  llvm::Error squatted = makeRecordFolder(root.path, id, kGpu, version());
  ASSERT_TRUE(static_cast<bool>(squatted));
  const std::string squat_why = errorMessage(std::move(squatted));
  EXPECT_NE(squat_why.find("a folder stands at its name"), std::string::npos) << squat_why;
  llvm::Error save = saveRecord(root.path, sampleRecord());
  ASSERT_TRUE(static_cast<bool>(save));
  EXPECT_NE(errorMessage(std::move(save)).find("a folder stands at its name"), std::string::npos);
}

TEST(TuningRecord, SaveThenLoad) {
  testkit::TempDir root("moejit-tuning-test");
  const TuningRecord r = sampleRecord();
  ASSERT_FALSE(static_cast<bool>(saveRecord(root.path, r)));
  const std::string path = recordPath(root.path, r.workload_id, kGpu, version());
  EXPECT_TRUE(llvm::sys::fs::exists(path));
  auto back = loadRecord(root.path, r.workload_id, kGpu, version());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(toJson(*back), toJson(r));
  // Nothing is left beside it (written through a temporary file + rename).
  std::error_code ec;
  int files = 0;
  for (llvm::sys::fs::directory_iterator it(llvm::sys::path::parent_path(path), ec), end;
       !ec && it != end; it.increment(ec))
    ++files;
  EXPECT_EQ(files, 1);

  const std::string other_id = workload::workloadId({8, 4096, 768, 128, DType::BF16});
  EXPECT_FALSE(loadRecord(root.path, other_id, kGpu, version()).has_value());
  EXPECT_FALSE(loadRecord(root.path, r.workload_id, "NVIDIA H100", version()).has_value());
  EXPECT_FALSE(loadRecord(root.path, r.workload_id, kGpu, "0.0.1").has_value());
}

TEST(TuningRecord, SaveRefusesAnInvalidRecord) {
  testkit::TempDir root("moejit-tuning-test");
  TuningRecord r = sampleRecord();
  r.buckets.pop_back();
  llvm::Error e = saveRecord(root.path, r);
  ASSERT_TRUE(static_cast<bool>(e));
  EXPECT_NE(errorMessage(std::move(e)).find("16 buckets"), std::string::npos);
  EXPECT_FALSE(llvm::sys::fs::exists(recordPath(root.path, r.workload_id, kGpu, version())));
}

TEST(TuningRecord, LoadIgnoresMisplacedRecords) {
  // A valid record copied under another key's path is not that key's record.
  testkit::TempDir root("moejit-tuning-test");
  TuningRecord r = sampleRecord();
  const std::string id = r.workload_id;
  writeFile(recordPath(root.path, id, kGpu, "9.9.9"), toJson(r));
  EXPECT_FALSE(loadRecord(root.path, id, kGpu, "9.9.9").has_value());
  r.gpu = "NVIDIA-H200"; // same slug, other name
  writeFile(recordPath(root.path, id, kGpu, version()), toJson(r));
  EXPECT_FALSE(loadRecord(root.path, id, kGpu, version()).has_value());
}

TEST(TuningRecord, CorruptRecordFallsBack) {
  testkit::TempDir root("moejit-tuning-test");
  const std::string id = workload::workloadId(kSeed);
  const std::string path = recordPath(root.path, id, kGpu, version());
  const std::string good = toJson(sampleRecord());
  for (const std::string &bytes : {std::string(), good.substr(0, good.size() / 2),
                                   std::string("\0\xff\x01garbage", 10), std::string("{}")}) {
    writeFile(path, bytes);
    EXPECT_FALSE(loadRecord(root.path, id, kGpu, version()).has_value());
    const runtime::Plan plan = choosePlan(kSeed, kArch, kGpu, root.path, {});
    EXPECT_EQ(plan.source, "heuristic");
    EXPECT_EQ(plan.buckets, runtime::heuristicPlan(kSeed, kArch).buckets);
  }
  // Shipped table next when the record in the root is corrupt.
  const runtime::Plan plan = choosePlan(kSeed, kArch, kGpu, root.path, {sampleRecord()});
  EXPECT_EQ(plan.source, "shipped table");
  // A directory where the file should be is unreadable, not a crash.
  llvm::sys::fs::remove(path);
  llvm::sys::fs::create_directories(path);
  EXPECT_FALSE(loadRecord(root.path, id, kGpu, version()).has_value());
}

TEST(TuningRecord, LookupOrder) {
  testkit::TempDir root("moejit-tuning-test");
  const TuningRecord record = sampleRecord();
  const runtime::Plan heuristic = runtime::heuristicPlan(kSeed, kArch);
  std::vector<runtime::GemmPlan> recorded;
  for (const BucketRecord &b : record.buckets)
    recorded.push_back(b.choice);
  ASSERT_NE(recorded, heuristic.buckets);

  // A shipped table that also differs from the record in the root.
  TuningRecord shipped = sampleRecord();
  for (BucketRecord &b : shipped.buckets)
    b.choice = {TileConfig{128, 64, 3, 0, 0, true, 0}, TileConfig{128, 128, 3, 0, 0, true, 0}};
  std::vector<runtime::GemmPlan> shipped_plan;
  for (const BucketRecord &b : shipped.buckets)
    shipped_plan.push_back(b.choice);

  // Nothing: the heuristic.
  runtime::Plan plan = choosePlan(kSeed, kArch, kGpu, root.path, {});
  EXPECT_EQ(plan.source, "heuristic");
  EXPECT_EQ(plan.buckets, heuristic.buckets);
  // A shipped table for another GPU, version or workload does not apply.
  for (auto edit : std::vector<std::function<void(TuningRecord &)>>{
           [](TuningRecord &r) { r.gpu = "NVIDIA H100"; },
           [](TuningRecord &r) { r.moejit_version = "0.0.1"; },
           [](TuningRecord &r) {
             const MoeShape other{8, 4096, 768, 128, DType::BF16};
             r.workload_id = workload::workloadId(other);
             r.workload = workload::canonicalText(other);
           }}) {
    TuningRecord t = shipped;
    edit(t);
    EXPECT_EQ(choosePlan(kSeed, kArch, kGpu, root.path, {t}).source, "heuristic");
  }
  // Shipped table.
  plan = choosePlan(kSeed, kArch, kGpu, root.path, {shipped});
  EXPECT_EQ(plan.source, "shipped table");
  EXPECT_EQ(plan.buckets, shipped_plan);
  // A shipped table unusable on this arch is skipped.
  plan = choosePlan(kSeed, "sm_80", kGpu, root.path, {shipped});
  EXPECT_EQ(plan.source, "heuristic");
  EXPECT_EQ(plan.buckets, runtime::heuristicPlan(kSeed, "sm_80").buckets);

  // A record in the root wins over both.
  ASSERT_FALSE(static_cast<bool>(saveRecord(root.path, record)));
  plan = choosePlan(kSeed, kArch, kGpu, root.path, {shipped});
  EXPECT_EQ(plan.source,
            "tuning record " + recordPath(root.path, record.workload_id, kGpu, version()));
  EXPECT_EQ(plan.buckets, recorded);
  // ... but only for its own GPU, and only if usable on the arch.
  EXPECT_EQ(choosePlan(kSeed, kArch, "NVIDIA H100", root.path, {shipped}).source, "heuristic");
  EXPECT_EQ(choosePlan(kSeed, "sm_80", kGpu, root.path, {}).source, "heuristic");
  // An empty root means no root.
  EXPECT_EQ(choosePlan(kSeed, kArch, kGpu, "", {shipped}).source, "shipped table");
}

TEST(TuningRecord, PlanFromRecordChecksRules) {
  TuningRecord r = sampleRecord();
  auto plan = planFromRecord(r, kSeed, kArch);
  ASSERT_TRUE(static_cast<bool>(plan)) << errorMessage(plan.takeError());
  EXPECT_EQ(plan->buckets.size(), size_t(runtime::kBucketCount));

  EXPECT_NE(planError(r, {8, 4096, 768, 128, DType::BF16}, kArch).find("workload"),
            std::string::npos);
  EXPECT_NE(planError(r, kSeed, "sm_80").find("for sm_90a used for sm_80"), std::string::npos);

  // wgmma off sm_90a: a record made for sm_80 that names wgmma.
  r.arch = "sm_80";
  EXPECT_NE(planError(r, kSeed, "sm_80").find("only sm_90a"), std::string::npos);

  // mma.sync configs on sm_80: 64/128 pairs are fine, 64/96 are not.
  auto mma = [](int bm) { return TileConfig{bm, 64, 3, bm / 32 >= 2 ? 2 : 1, 2}; };
  for (BucketRecord &b : r.buckets)
    b.choice = {mma(64), TileConfig{128, 128, 3, 2, 2}};
  EXPECT_EQ(planError(r, kSeed, "sm_80"), "");
  r.buckets[4].choice.gemm2 = TileConfig{96, 128, 3, 2, 2};
  EXPECT_NE(planError(r, kSeed, "sm_80").find("bucket 4"), std::string::npos);
  EXPECT_NE(planError(r, kSeed, "sm_80").find("smaller must divide"), std::string::npos);

  // A config breaking checkMmaConfig (bm not a multiple of 16 * warps_m).
  r.buckets[4].choice.gemm2 = TileConfig{128, 128, 3, 2, 2};
  r.buckets[6].choice.gemm1 = TileConfig{48, 64, 3, 2, 2};
  EXPECT_NE(planError(r, kSeed, "sm_80").find("16-row warp tiles"), std::string::npos);
  // A hostile record's config whose thread count overflowed to 0 (32 *
  // 16384 * 8192) divided by zero in the check (SIGFPE): refused now.
  r.buckets[6].choice.gemm1 = TileConfig{262144, 65536, 3, 16384, 8192};
  EXPECT_NE(planError(r, kSeed, "sm_80").find("must be in 1..1024"), std::string::npos);
  // Each config is checked for its own GEMM: bn 192 is a wgmma width for
  // GEMM2, but GEMM1 loads gate and up rows, 2 * 192 = 384 B rows.
  r.buckets[6].choice.gemm1 = mma(64);
  r.arch = kArch;
  for (BucketRecord &b : r.buckets)
    b.choice = {TileConfig{64, 192, 3, 0, 0, true, 0}, TileConfig{64, 192, 3, 0, 0, true, 0}};
  EXPECT_NE(planError(r, kSeed, kArch).find("GEMM1"), std::string::npos);

  // fp32 runs a fixed SIMT tile: the configs only need to parse.
  const MoeShape fp32{8, 2048, 768, 128, DType::FP32};
  TuningRecord f = sampleRecord(fp32);
  f.arch = "sm_80";
  EXPECT_EQ(planError(f, fp32, "sm_80"), "");
}

TEST(TuningRecord, ShippedTablesParseAndSkipBroken) {
  const std::string good = toJson(sampleRecord());
  const std::vector<ShippedText> texts = {
      {"nvidia-h200/a.json", good.c_str()},
      {"nvidia-h200/broken.json", "{\"format\": \"moejit-tuning\""},
      {"nvidia-h200/v2.json", "{\"format\": \"moejit-tuning\", \"format_version\": 2}"},
  };
  const std::vector<TuningRecord> parsed = parseShippedTables(texts);
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(toJson(parsed[0]), good);
  EXPECT_TRUE(findRecord(parsed, parsed[0].workload_id, kGpu, version()).has_value());
  EXPECT_FALSE(findRecord(parsed, parsed[0].workload_id, "NVIDIA H100", version()).has_value());
}

// Every table in cache/tuning/ must load, belong to this moejit version (a
// version bump forces a retune) and give a usable plan for its own shape.
TEST(TuningRecord, EmbeddedShippedTablesAreValid) {
  const std::vector<ShippedText> &tables = embeddedTuningTables();
  if (tables.empty())
    std::cout << "no shipped tuning tables in cache/tuning/\n";
  std::set<std::string> keys;
  for (const ShippedText &t : tables) {
    SCOPED_TRACE(std::string("cache/tuning/") + t.path);
    auto r = parseRecord(t.text);
    ASSERT_TRUE(static_cast<bool>(r)) << errorMessage(r.takeError());
    EXPECT_EQ(r->moejit_version, version()) << "retune: moejit_version is not this version";
    const std::string dir = std::string(t.path).substr(0, std::string(t.path).find('/'));
    EXPECT_EQ(dir, gpuSlug(r->gpu)) << "a table lives in the folder of its GPU's slug";
    auto shape = parseCanonicalText(r->workload);
    ASSERT_TRUE(static_cast<bool>(shape)) << errorMessage(shape.takeError());
    EXPECT_EQ(workload::workloadId(*shape), r->workload_id);
    const Arch arch(r->arch.c_str());
    auto plan = planFromRecord(*r, *shape, arch);
    ASSERT_TRUE(static_cast<bool>(plan)) << errorMessage(plan.takeError());
    // Such a table changes no plan, and it would pin the heuristic of its
    // day against later rules: remove it rather than ship it.
    EXPECT_NE(plan->buckets, runtime::heuristicPlan(*shape, arch).buckets)
        << "the table equals the heuristic's plan in every bucket: remove it";
    EXPECT_TRUE(keys.insert(r->workload_id + "|" + r->gpu + "|" + r->moejit_version).second)
        << "two tables for one (workload, gpu, version)";
  }
  EXPECT_EQ(shippedRecords().size(), tables.size());
  for (const TuningRecord &r : shippedRecords())
    EXPECT_TRUE(shippedRecord(r.workload_id, r.gpu, r.moejit_version).has_value());
}
