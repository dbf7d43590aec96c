#include "crashsim/reports/schema_validator.h"

#include <cmath>
#include <regex>
#include <set>
#include <stdexcept>

namespace crashsim::reports {
namespace {

using nlohmann::json;

const std::set<std::string>& supportedKeywords() {
  static const std::set<std::string> k = {"$schema",  "$id",         "$defs",
                                          "title",    "description", "type",
                                          "required", "properties",  "additionalProperties",
                                          "enum",     "const",       "items",
                                          "minimum",  "maximum",     "minLength",
                                          "pattern",  "$ref",        "if",
                                          "then",     "else"};
  return k;
}

bool hasType(const json& v, const std::string& t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  if (t == "integer") {
    if (v.is_number_integer()) return true;
    if (v.is_number_float()) {
      // An integral value a signed 64-bit count can hold (the readers store integers so);
      // the range test comes first, a cast of a value out of range is undefined.
      const double d = v.get<double>();
      return std::isfinite(d) && d >= -0x1p63 && d < 0x1p63 && std::trunc(d) == d;
    }
    return false;
  }
  if (t == "number") return v.is_number();
  throw std::invalid_argument("unsupported schema type: " + t);
}

class Validator {
 public:
  explicit Validator(const json& root) : root_(root) {}
  std::vector<SchemaViolation> out;

  void validate(const json& schema, const json& v, const std::string& path) {
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) add(path, "no value allowed here");
      return;
    }
    if (!schema.is_object()) throw std::invalid_argument("schema node is not an object");
    for (auto it = schema.begin(); it != schema.end(); ++it) {
      if (!supportedKeywords().count(it.key()))
        throw std::invalid_argument("unsupported schema keyword: " + it.key());
    }
    if (auto r = schema.find("$ref"); r != schema.end()) {
      validate(resolve(r->get<std::string>()), v, path);
    }
    // if/then/else: the instance that passes `if` (judged silently) must pass `then`, any
    // other `else` (report.schema.json: an open sweep's report by its `runtime`).
    if (auto i = schema.find("if"); i != schema.end()) {
      Validator probe(root_);
      probe.validate(*i, v, path);
      const char* branch = probe.out.empty() ? "then" : "else";
      if (auto b = schema.find(branch); b != schema.end()) validate(*b, v, path);
    }
    if (auto t = schema.find("type"); t != schema.end()) {
      bool ok = false;
      std::string names;
      if (t->is_string()) {
        ok = hasType(v, t->get<std::string>());
        names = t->get<std::string>();
      } else {
        for (const auto& x : *t) {
          ok = ok || hasType(v, x.get<std::string>());
          if (!names.empty()) names += '|';
          names += x.get<std::string>();
        }
      }
      if (!ok) {
        add(path, "expected type " + names + ", got " + std::string(v.type_name()));
        return;
      }
    }
    if (auto e = schema.find("enum"); e != schema.end()) {
      bool found = false;
      for (const auto& x : *e) found = found || x == v;
      if (!found) add(path, "value " + v.dump() + " not in enum " + e->dump());
    }
    if (auto c = schema.find("const"); c != schema.end() && *c != v) {
      add(path, "value " + v.dump() + " is not " + c->dump());
    }
    if (v.is_number()) {
      if (auto m = schema.find("minimum"); m != schema.end() && v.get<double>() < m->get<double>())
        add(path, "value below minimum " + m->dump());
      if (auto m = schema.find("maximum"); m != schema.end() && v.get<double>() > m->get<double>())
        add(path, "value above maximum " + m->dump());
    }
    if (v.is_string()) {
      const auto& s = v.get_ref<const std::string&>();
      if (auto m = schema.find("minLength"); m != schema.end() && s.size() < m->get<size_t>())
        add(path, "string shorter than " + m->dump());
      if (auto p = schema.find("pattern"); p != schema.end()) {
        std::regex re(p->get<std::string>(), std::regex::ECMAScript);
        if (!std::regex_search(s, re)) add(path, "string does not match " + p->dump());
      }
    }
    if (v.is_object()) {
      if (auto r = schema.find("required"); r != schema.end()) {
        for (const auto& k : *r)
          if (!v.contains(k.get<std::string>()))
            add(path, "missing required property " + k.get<std::string>());
      }
      const json* props = nullptr;
      if (auto p = schema.find("properties"); p != schema.end()) props = &*p;
      for (auto it = v.begin(); it != v.end(); ++it) {
        std::string sub = path + "." + it.key();
        if (props && props->contains(it.key())) {
          validate((*props)[it.key()], it.value(), sub);
        } else if (auto a = schema.find("additionalProperties"); a != schema.end()) {
          if (a->is_boolean()) {
            if (!a->get<bool>()) add(sub, "property not allowed");
          } else {
            validate(*a, it.value(), sub);
          }
        }
      }
    }
    if (v.is_array()) {
      if (auto items = schema.find("items"); items != schema.end()) {
        for (size_t i = 0; i < v.size(); ++i)
          validate(*items, v[i], path + "[" + std::to_string(i) + "]");
      }
    }
  }

 private:
  const json& resolve(const std::string& ref) {
    const std::string prefix = "#/$defs/";
    if (ref.rfind(prefix, 0) != 0) throw std::invalid_argument("unsupported $ref: " + ref);
    auto defs = root_.find("$defs");
    if (defs == root_.end() || !defs->contains(ref.substr(prefix.size())))
      throw std::invalid_argument("unresolvable $ref: " + ref);
    return (*defs)[ref.substr(prefix.size())];
  }
  void add(const std::string& path, std::string message) {
    out.push_back({path, std::move(message)});
  }
  const json& root_;
};

}  // namespace

std::vector<SchemaViolation> validateSchema(const nlohmann::json& schema,
                                            const nlohmann::json& instance) {
  Validator v(schema);
  v.validate(schema, instance, "$");
  return std::move(v.out);
}

namespace detail {
extern const char* const kReportSchemaText;
extern const char* const kDurabilitySchemaText;
}  // namespace detail

const nlohmann::json& reportSchema() {
  static const nlohmann::json schema = nlohmann::json::parse(detail::kReportSchemaText);
  return schema;
}

const nlohmann::json& durabilitySchema() {
  static const nlohmann::json schema = nlohmann::json::parse(detail::kDurabilitySchemaText);
  return schema;
}

}  // namespace crashsim::reports
