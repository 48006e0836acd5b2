#include "cli.h"

#include "common/error.h"
#include "common/settings.h"
#include "store/cubin_store.h"
#include "workload/presets.h"

#include <llvm/Support/FormatVariadic.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/raw_ostream.h>

#include <charconv>
#include <limits>
#include <map>
#include <set>
#include <sstream>

extern const char *const kSeedCasesJson;

namespace moejit::cli {

int64_t parseInteger(std::string_view text, const std::string &what, int64_t lo, int64_t hi) {
  int64_t value = 0;
  const char *end = text.data() + text.size();
  // from_chars takes no '+', no space and no base prefix; the whole text
  // must be used, so "4096e3" and "12abc" are refused, not read as 4096, 12.
  const auto [stop, ec] = std::from_chars(text.data(), end, value);
  const std::string named = what.empty() ? "" : what + " ";
  if (text.empty() || ec == std::errc::invalid_argument || stop != end)
    throw UsageError(named + "'" + std::string(text) + "' is not a whole number");
  if (ec == std::errc::result_out_of_range || value < lo || value > hi)
    throw UsageError(named + std::string(text) + " is not in " + std::to_string(lo) + ".." +
                     std::to_string(hi));
  return value;
}

CLI::Validator integerText() {
  return CLI::Validator(
      [](std::string &text) -> std::string {
        try {
          text = std::to_string(parseInteger(text, "", std::numeric_limits<int64_t>::min(),
                                             std::numeric_limits<int64_t>::max()));
          return {};
        } catch (const UsageError &e) {
          return e.what();
        }
      },
      "", "integer");
}

std::string cacheRoot(const std::string &given) {
  const std::string root = given.empty() ? store::defaultRoot() : given;
  if (root.empty())
    throw Error(ErrorCode::InvalidArgument,
                "no cache root: no home folder; give --cache-dir or set MOEJIT_CACHE_DIR");
  return root;
}

CLI::Validator nonEmpty() {
  return CLI::Validator(
      [](std::string &text) -> std::string { return text.empty() ? "must not be empty" : ""; }, "");
}

CLI::Validator combineMode() {
  std::vector<std::string> modes;
  for (std::string_view m : settings::find("MOEJIT_COMBINE")->choices)
    modes.emplace_back(m);
  return CLI::IsMember(modes);
}

CLI::Validator checkedBy(std::function<void(const std::string &)> parse, std::string description) {
  return CLI::Validator(
      [parse = std::move(parse)](std::string &text) -> std::string {
        try {
          parse(text);
          return {};
        } catch (const UsageError &e) {
          return e.what();
        } catch (const Error &e) {
          return e.what();
        }
      },
      std::move(description));
}

MoeShape parseShape(const std::string &text) {
  static const std::map<std::string, std::string> aliases = {
      {"h", "hidden"}, {"i", "intermediate"}, {"e", "experts"}};
  MoeShape s = seedShape();
  if (text.empty())
    throw UsageError("the shape is empty: give key=value items, e.g. k=8,hidden=2048");
  // Every item, empty ones too ("k=8," or "k=8,,e=64"), each key once: a
  // shape that says two things is refused, not read as the last.
  std::set<std::string> seen;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    begin = end + 1;
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw UsageError("shape item '" + item + "' is not key=value");
    std::string key = item.substr(0, eq), val = item.substr(eq + 1);
    if (auto a = aliases.find(key); a != aliases.end())
      key = a->second;
    if (!seen.insert(key).second)
      throw UsageError("shape key '" + key + "' is given twice");
    if (key == "dtype") {
      s.dtype = parse_dtype(val);
      continue;
    }
    int *field = key == "k"              ? &s.k
                 : key == "hidden"       ? &s.hidden
                 : key == "intermediate" ? &s.intermediate
                 : key == "experts"      ? &s.experts
                                         : nullptr;
    if (!field)
      throw UsageError("unknown shape key '" + key + "' (k, hidden, intermediate, experts, dtype)");
    // The range only keeps the value an int; validate() applies the rules.
    *field = static_cast<int>(parseInteger(val, key, 0, std::numeric_limits<int>::max()));
  }
  validate(s);
  return s;
}

namespace {
std::string knownModels() {
  std::string known;
  for (const workload::Preset &p : workload::presets())
    known += p.name + ", ";
  return known + "all";
}
} // namespace

void addShapeOptions(CLI::App &app, ShapeArgs &args) {
  args.shape_option = app.add_option("--shape", args.shapes,
                                     "a shape, e.g. k=8,hidden=2048,intermediate=768,experts=128,"
                                     "dtype=bf16 (omitted keys: the seed shape's; repeatable)")
                          ->type_name("S")
                          ->allow_extra_args(false)
                          ->check(checkedBy([](const std::string &s) { parseShape(s); }, ""));
  args.model_option =
      app.add_option("--model", args.models, "a preset shape (repeatable): " + knownModels())
          ->type_name("NAME")
          ->allow_extra_args(false)
          ->check(checkedBy(
              [](const std::string &name) {
                if (name != "all" && !workload::presetShape(name))
                  throw UsageError("unknown model '" + name + "'; known: " + knownModels());
              },
              ""));
}

std::vector<MoeShape> shapesOf(const ShapeArgs &args) {
  std::vector<MoeShape> shapes;
  for (const std::string &s : args.shapes)
    shapes.push_back(parseShape(s));
  for (const std::string &name : args.models) {
    if (name == "all") {
      for (const workload::Preset &p : workload::presets())
        shapes.push_back(p.shape);
      continue;
    }
    shapes.push_back(*workload::presetShape(name)); // checked while parsing
  }
  if (shapes.empty())
    shapes.push_back(seedShape());
  return shapes;
}

std::string shapeText(const MoeShape &s) {
  return "k=" + std::to_string(s.k) + ",hidden=" + std::to_string(s.hidden) +
         ",intermediate=" + std::to_string(s.intermediate) +
         ",experts=" + std::to_string(s.experts) + ",dtype=" + dtype_name(s.dtype);
}

void printJson(const llvm::json::Value &value) {
  llvm::outs() << llvm::formatv("{0:2}", value) << "\n";
  llvm::outs().flush();
}

namespace {
const llvm::json::Object &seedJson() {
  static const llvm::json::Value value = [] {
    auto v = llvm::json::parse(kSeedCasesJson);
    if (!v)
      throw Error(ErrorCode::Internal, "embedded seed.json: " + errorMessage(v.takeError()));
    return std::move(*v);
  }();
  return *value.getAsObject();
}

MoeShape shapeOf(const llvm::json::Object &o) {
  MoeShape s;
  s.k = static_cast<int>(*o.getInteger("k"));
  s.hidden = static_cast<int>(*o.getInteger("hidden"));
  s.intermediate = static_cast<int>(*o.getInteger("intermediate"));
  s.experts = static_cast<int>(o.getInteger("experts").getValueOr(0));
  s.dtype = parse_dtype(o.getString("dtype")->str());
  return s;
}
} // namespace

MoeShape seedShape() {
  const auto &cases = *seedJson().getArray("cases");
  return shapeOf(*cases.front().getAsObject());
}

std::vector<BenchCase> seedCases() {
  std::vector<BenchCase> out;
  for (const llvm::json::Value &c : *seedJson().getArray("cases")) {
    const auto &o = *c.getAsObject();
    out.push_back({o.getString("name")->str(), *o.getInteger("tokens"), shapeOf(o)});
  }
  return out;
}

} // namespace moejit::cli
