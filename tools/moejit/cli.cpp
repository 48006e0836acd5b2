#include "cli.h"

#include "common/error.h"
#include "workload/presets.h"

#include <llvm/Support/JSON.h>

#include <map>
#include <sstream>

extern const char *const kSeedCasesJson;

namespace moejit::cli {

Args::Args(int argc, char **argv) : rest_(argv, argv + argc) {}

std::optional<std::string> Args::value(const std::string &name) {
  for (size_t i = 0; i < rest_.size(); ++i) {
    if (rest_[i] == name) {
      if (i + 1 >= rest_.size())
        throw Error(ErrorCode::InvalidArgument, name + " needs a value");
      std::string v = rest_[i + 1];
      rest_.erase(rest_.begin() + i, rest_.begin() + i + 2);
      return v;
    }
    if (rest_[i].rfind(name + "=", 0) == 0) {
      std::string v = rest_[i].substr(name.size() + 1);
      rest_.erase(rest_.begin() + i);
      return v;
    }
  }
  return std::nullopt;
}

std::vector<std::string> Args::values(const std::string &name) {
  std::vector<std::string> all;
  while (auto v = value(name))
    all.push_back(*v);
  return all;
}

bool Args::flag(const std::string &name) {
  for (size_t i = 0; i < rest_.size(); ++i)
    if (rest_[i] == name) {
      rest_.erase(rest_.begin() + i);
      return true;
    }
  return false;
}

void Args::finish() const {
  if (!rest_.empty())
    throw Error(ErrorCode::InvalidArgument, "unexpected argument '" + rest_.front() + "'");
}

MoeShape parseShape(const std::string &text) {
  static const std::map<std::string, std::string> aliases = {
      {"h", "hidden"}, {"i", "intermediate"}, {"e", "experts"}};
  MoeShape s = seedShape();
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw Error(ErrorCode::InvalidShape, "shape item '" + item + "' is not key=value");
    std::string key = item.substr(0, eq), val = item.substr(eq + 1);
    if (auto a = aliases.find(key); a != aliases.end())
      key = a->second;
    if (key == "dtype") {
      s.dtype = parse_dtype(val);
      continue;
    }
    int v = 0;
    try {
      v = std::stoi(val);
    } catch (const std::exception &) {
      throw Error(ErrorCode::InvalidShape, "shape value '" + val + "' is not a number");
    }
    if (key == "k")
      s.k = v;
    else if (key == "hidden")
      s.hidden = v;
    else if (key == "intermediate")
      s.intermediate = v;
    else if (key == "experts")
      s.experts = v;
    else
      throw Error(ErrorCode::InvalidShape, "unknown shape key '" + key + "'");
  }
  validate(s);
  return s;
}

std::vector<MoeShape> shapesFromArgs(Args &args) {
  std::vector<MoeShape> shapes;
  for (const std::string &s : args.values("--shape"))
    shapes.push_back(parseShape(s));
  for (const std::string &name : args.values("--model")) {
    if (name == "all") {
      for (const workload::Preset &p : workload::presets())
        shapes.push_back(p.shape);
      continue;
    }
    std::optional<MoeShape> shape = workload::presetShape(name);
    if (!shape) {
      std::string known;
      for (const workload::Preset &p : workload::presets())
        known += " " + p.name;
      throw Error(ErrorCode::InvalidArgument,
                  "unknown model '" + name + "'; known:" + known + " (or all)");
    }
    shapes.push_back(*shape);
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
