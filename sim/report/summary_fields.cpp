#include "sim/report/summary_fields.hpp"

#include <stdexcept>

#include "sim/scenario/summary_field_names.hpp"

namespace podsim {

double summary_field_value(const nlohmann::json& summary, const std::string& field) {
  if (find_summary_row(field) == nullptr)
    throw std::out_of_range("no summary.json field is named " + field + " (docs/scenario-schema.md lists them)");
  auto number = [&](const nlohmann::json& node) {
    if (node.is_boolean()) return node.get<bool>() ? 1.0 : 0.0;
    if (!node.is_number()) throw std::out_of_range("summary.json's " + field + " is not a number");
    return node.get<double>();
  };
  if (field.rfind("operations.", 0) != 0) {
    const nlohmann::json* node = &summary;
    size_t begin = 0;
    while (true) {
      const size_t dot = field.find('.', begin);
      const std::string key = field.substr(begin, dot - begin);
      if (!node->is_object() || !node->contains(key)) throw std::out_of_range("summary.json has no " + field);
      node = &node->at(key);
      if (dot == std::string::npos) break;
      begin = dot + 1;
    }
    return number(*node);
  }
  const auto rest = field.substr(std::string("operations.").size());
  const auto dot = rest.rfind('.');
  if (dot == std::string::npos) throw std::out_of_range("summary.json has no " + field);
  const auto name = rest.substr(0, dot);
  if (summary.contains("operations")) {
    for (const auto& op : summary.at("operations")) {
      if (op.at("name") == name && op.contains(rest.substr(dot + 1))) return number(op.at(rest.substr(dot + 1)));
    }
  }
  throw std::out_of_range("summary.json has no operation " + name + " with " + rest.substr(dot + 1));
}

}  // namespace podsim
