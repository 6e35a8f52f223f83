#include "planner/hardware.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "base/strict_json.h"
#include "planner/hardware_data.h"

namespace pagoda::planner {
namespace {

using nlohmann::json;

// Field readers: each names `where` (the entry) and the key in its error.
struct Reader {
  const json& obj;
  std::string where;
  std::set<std::string> seen;

  const json* get(const std::string& key) {
    seen.insert(key);
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
  }
  Status number(const std::string& key, double lo, double hi, bool lo_open, double* out) {
    const json* v = get(key);
    if (v == nullptr) return Status::ok_status();
    if (!v->is_number()) return invalid_argument("{}: \"{}\" must be a number", where, key);
    const double d = v->get<double>();
    if (!std::isfinite(d) || d > hi || d < lo || (lo_open && d == lo)) {
      return invalid_argument("{}: \"{}\" = {} is outside {}{}, {}]", where, key, d,
                              lo_open ? "(" : "[", lo, hi);
    }
    *out = d;
    return Status::ok_status();
  }
  Status string(const std::string& key, std::string* out) {
    const json* v = get(key);
    if (v == nullptr) return Status::ok_status();
    if (!v->is_string()) return invalid_argument("{}: \"{}\" must be a string", where, key);
    const auto& s = v->get_ref<const std::string&>();
    if (s.size() > HardwareLimits::kMaxStringBytes) {
      return invalid_argument("{}: \"{}\" is longer than {} bytes", where, key,
                              HardwareLimits::kMaxStringBytes);
    }
    *out = s;
    return Status::ok_status();
  }
  Status boolean(const std::string& key, bool* out) {
    const json* v = get(key);
    if (v == nullptr) return Status::ok_status();
    if (!v->is_boolean()) return invalid_argument("{}: \"{}\" must be true or false", where, key);
    *out = v->get<bool>();
    return Status::ok_status();
  }
  Status no_unknown_keys() {
    for (const auto& [key, value] : obj.items()) {
      if (key != "_comment" && !seen.count(key)) {
        return invalid_argument("{}: unknown field \"{}\"", where, key.substr(0, 64));
      }
    }
    return Status::ok_status();
  }
};

// The tunables shared by "defaults" and each entry.
Status read_tunables(Reader& r, HardwareSpec* s) {
  PAGODA_RETURN_IF_ERROR(r.number("bandwidth_efficiency", 0, 1, true, &s->bandwidth_efficiency));
  PAGODA_RETURN_IF_ERROR(r.number("compute_efficiency", 0, 1, true, &s->compute_efficiency));
  PAGODA_RETURN_IF_ERROR(r.number("memory_utilization", 0, 1, true, &s->memory_utilization));
  PAGODA_RETURN_IF_ERROR(
      r.number("reserved_gb", 0, HardwareLimits::kMaxMemoryGb, false, &s->reserved_gb));
  PAGODA_RETURN_IF_ERROR(r.number("allreduce_latency_us", 0, HardwareLimits::kMaxLatencyUs, false,
                                  &s->allreduce_latency_us));
  return Status::ok_status();
}

Status read_matmul(Reader& r, HardwareSpec* s) {
  const json* m = r.get("matmul");
  if (m == nullptr) return Status::ok_status();
  if (!m->is_object()) return invalid_argument("{}: \"matmul\" must be an object", r.where);
  if (m->size() > 64) return invalid_argument("{}: \"matmul\" has too many types", r.where);
  for (const auto& [type, rate] : m->items()) {
    const std::string where = fmt::format("{}: matmul \"{}\"", r.where, type.substr(0, 32));
    const auto dtype = tensor::dtype_from_name(type);
    if (!dtype) return invalid_argument("{}: unknown weight type", where);
    if (!rate.is_object()) return invalid_argument("{} must be an object", where);
    Reader rr{rate, where, {}};
    MatmulRate out;
    PAGODA_RETURN_IF_ERROR(
        rr.number("gemv_gbs", 0, HardwareLimits::kMaxBandwidthGbs, true, &out.gemv_gbs));
    PAGODA_RETURN_IF_ERROR(
        rr.number("gemm_gflops", 0, HardwareLimits::kMaxTflops * 1e3, true, &out.gemm_gflops));
    PAGODA_RETURN_IF_ERROR(rr.no_unknown_keys());
    if (out.gemv_gbs == 0 || out.gemm_gflops == 0) {
      return invalid_argument("{}: needs \"gemv_gbs\" and \"gemm_gflops\"", where);
    }
    s->matmul[*dtype] = out;
  }
  return Status::ok_status();
}

// "shapes": [{"type": "Q4_0", "rows": 2048, "cols": 2048, "m": [1, 8], "seconds": [1e-4, 2e-4]}]
Status read_shapes(Reader& r, HardwareSpec* s) {
  const json* list = r.get("shapes");
  if (list == nullptr) return Status::ok_status();
  if (!list->is_array() || list->size() > HardwareLimits::kMaxShapes) {
    return invalid_argument("{}: \"shapes\" must be an array of at most {} objects", r.where,
                            HardwareLimits::kMaxShapes);
  }
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string where = fmt::format("{}: shapes[{}]", r.where, i);
    const json& e = (*list)[i];
    if (!e.is_object()) return invalid_argument("{} must be an object", where);
    Reader rr{e, where, {}};
    ShapeRate out;
    std::string type;
    PAGODA_RETURN_IF_ERROR(rr.string("type", &type));
    const auto dtype = tensor::dtype_from_name(type);
    if (!dtype) return invalid_argument("{}: \"type\" is not a weight type", where);
    out.dtype = *dtype;
    double rows = 0, cols = 0;
    PAGODA_RETURN_IF_ERROR(rr.number("rows", 1, HardwareLimits::kMaxShapeDim, false, &rows));
    PAGODA_RETURN_IF_ERROR(rr.number("cols", 1, HardwareLimits::kMaxShapeDim, false, &cols));
    if (rows < 1 || cols < 1 || rows != std::floor(rows) || cols != std::floor(cols)) {
      return invalid_argument("{}: \"rows\" and \"cols\" must be positive integers", where);
    }
    out.rows = static_cast<int64_t>(rows);
    out.cols = static_cast<int64_t>(cols);
    for (const char* key : {"m", "seconds"}) {
      const json* v = rr.get(key);
      if (v == nullptr || !v->is_array() || v->empty() ||
          v->size() > HardwareLimits::kMaxShapePoints) {
        return invalid_argument("{}: \"{}\" must be an array of 1 to {} numbers", where, key,
                                HardwareLimits::kMaxShapePoints);
      }
      const bool is_m = key[0] == 'm';
      const double hi = is_m ? HardwareLimits::kMaxShapeTokens : HardwareLimits::kMaxShapeSeconds;
      for (const json& x : *v) {
        const double d = x.is_number() ? x.get<double>() : -1;
        if (!std::isfinite(d) || d > hi || (is_m ? d < 1 : d <= 0)) {
          return invalid_argument("{}: \"{}\" holds a value outside {}, {}]", where, key,
                                  is_m ? "[1" : "(0", hi);
        }
        (is_m ? out.m : out.seconds).push_back(d);
      }
    }
    if (out.m.size() != out.seconds.size()) {
      return invalid_argument("{}: \"m\" and \"seconds\" differ in length", where);
    }
    for (size_t k = 1; k < out.m.size(); ++k) {
      if (!(out.m[k] > out.m[k - 1]))
        return invalid_argument("{}: \"m\" must be increasing", where);
    }
    PAGODA_RETURN_IF_ERROR(rr.no_unknown_keys());
    if (s->find_shape(out.dtype, out.rows, out.cols) != nullptr) {
      return invalid_argument("{}: the shape is listed twice", where);
    }
    s->shapes.push_back(std::move(out));
  }
  return Status::ok_status();
}

// "name": a-z, 0-9, '-', '_', '.' only (names are typed on the command line).
Status check_name(const std::string& name, const std::string& where) {
  if (name.empty()) return invalid_argument("{}: \"name\" is required", where);
  for (char c : name) {
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return invalid_argument("{}: \"name\" may hold only a-z, 0-9, '-', '_', '.'", where);
    }
  }
  return Status::ok_status();
}

Status read_sources(Reader& r, std::vector<std::string>* out) {
  const json* src = r.get("sources");
  if (src == nullptr) return Status::ok_status();
  if (!src->is_array() || src->size() > HardwareLimits::kMaxSources) {
    return invalid_argument("{}: \"sources\" must be an array of at most {} strings", r.where,
                            HardwareLimits::kMaxSources);
  }
  for (const json& u : *src) {
    if (!u.is_string() ||
        u.get_ref<const std::string&>().size() > HardwareLimits::kMaxStringBytes) {
      return invalid_argument("{}: \"sources\" must hold strings of at most {} bytes", r.where,
                              HardwareLimits::kMaxStringBytes);
    }
    out->push_back(u.get<std::string>());
  }
  return Status::ok_status();
}

Result<Interconnect> read_network(const json& e, size_t index) {
  std::string where = fmt::format("networks[{}]", index);
  if (!e.is_object()) return invalid_argument("{} must be an object", where);
  Interconnect n;
  Reader r{e, where, {}};
  PAGODA_RETURN_IF_ERROR(r.string("name", &n.name));
  PAGODA_RETURN_IF_ERROR(check_name(n.name, where));
  r.where = where = fmt::format("network \"{}\"", n.name);
  std::string description;
  PAGODA_RETURN_IF_ERROR(r.string("description", &description));
  PAGODA_RETURN_IF_ERROR(
      r.number("latency_us", 0, HardwareLimits::kMaxLatencyUs, true, &n.latency_us));
  PAGODA_RETURN_IF_ERROR(
      r.number("bandwidth_gbs", 0, HardwareLimits::kMaxBandwidthGbs, true, &n.bandwidth_gbs));
  if (n.latency_us == 0 || n.bandwidth_gbs == 0) {
    return invalid_argument("{}: \"latency_us\" and \"bandwidth_gbs\" are required", where);
  }
  PAGODA_RETURN_IF_ERROR(r.boolean("ring_latency", &n.ring_latency));
  std::vector<std::string> sources;
  PAGODA_RETURN_IF_ERROR(read_sources(r, &sources));
  PAGODA_RETURN_IF_ERROR(r.no_unknown_keys());
  return n;
}

Result<HardwareSpec> read_entry(const json& e, size_t index, const HardwareSpec& defaults) {
  std::string where = fmt::format("hardware[{}]", index);
  if (!e.is_object()) return invalid_argument("{} must be an object", where);
  HardwareSpec s = defaults;
  Reader r{e, where, {}};
  PAGODA_RETURN_IF_ERROR(r.string("name", &s.name));
  PAGODA_RETURN_IF_ERROR(check_name(s.name, where));
  r.where = where = fmt::format("hardware \"{}\"", s.name);
  PAGODA_RETURN_IF_ERROR(r.string("description", &s.description));
  s.memory_gb = s.bandwidth_gbs = s.fp16_tflops = 0;
  PAGODA_RETURN_IF_ERROR(
      r.number("memory_gb", 0, HardwareLimits::kMaxMemoryGb, true, &s.memory_gb));
  PAGODA_RETURN_IF_ERROR(
      r.number("bandwidth_gbs", 0, HardwareLimits::kMaxBandwidthGbs, true, &s.bandwidth_gbs));
  PAGODA_RETURN_IF_ERROR(
      r.number("fp16_tflops", 0, HardwareLimits::kMaxTflops, true, &s.fp16_tflops));
  PAGODA_RETURN_IF_ERROR(r.number("int8_tops", 0, HardwareLimits::kMaxTflops, false, &s.int8_tops));
  PAGODA_RETURN_IF_ERROR(r.string("interconnect", &s.interconnect));
  PAGODA_RETURN_IF_ERROR(r.number("interconnect_gbs", 0, HardwareLimits::kMaxBandwidthGbs, false,
                                  &s.interconnect_gbs));
  double devices = 1;
  PAGODA_RETURN_IF_ERROR(r.number("max_devices", 1, HardwareLimits::kMaxDevices, false, &devices));
  if (devices != std::floor(devices))
    return invalid_argument("{}: \"max_devices\" must be an integer", where);
  s.max_devices = static_cast<int32_t>(devices);
  if (s.max_devices > 1 && s.interconnect_gbs <= 0) {
    return invalid_argument("{}: \"interconnect_gbs\" is required when \"max_devices\" > 1", where);
  }
  if (s.memory_gb == 0 || s.bandwidth_gbs == 0 || s.fp16_tflops == 0) {
    return invalid_argument("{}: \"memory_gb\", \"bandwidth_gbs\" and \"fp16_tflops\" are required",
                            where);
  }
  PAGODA_RETURN_IF_ERROR(read_tunables(r, &s));
  PAGODA_RETURN_IF_ERROR(read_matmul(r, &s));
  PAGODA_RETURN_IF_ERROR(read_shapes(r, &s));
  PAGODA_RETURN_IF_ERROR(r.number("sync_us", 0, HardwareLimits::kMaxLatencyUs, false, &s.sync_us));
  PAGODA_RETURN_IF_ERROR(read_sources(r, &s.sources));
  PAGODA_RETURN_IF_ERROR(r.no_unknown_keys());
  return s;
}

}  // namespace

double ShapeRate::seconds_at(double tokens) const {
  if (m.empty()) return 0;
  if (tokens <= m.front()) return seconds.front();
  for (size_t k = 1; k < m.size(); ++k) {
    if (tokens <= m[k]) {
      const double f = (tokens - m[k - 1]) / (m[k] - m[k - 1]);
      return seconds[k - 1] + f * (seconds[k] - seconds[k - 1]);
    }
  }
  return seconds.back() * tokens / m.back();
}

const ShapeRate* HardwareSpec::find_shape(tensor::DType dtype, int64_t rows, int64_t cols) const {
  for (const ShapeRate& r : shapes) {
    if (r.dtype == dtype && r.rows == rows && r.cols == cols) return &r;
  }
  return nullptr;
}

double HardwareSpec::usable_bytes() const {
  return std::max(0.0, memory_gb * memory_utilization - reserved_gb) * 1e9;
}

Result<std::vector<HardwareSpec>> parse_hardware_json(std::string_view text) {
  if (text.size() > HardwareLimits::kMaxFileBytes) {
    return invalid_argument("hardware file: larger than {} bytes", HardwareLimits::kMaxFileBytes);
  }
  PAGODA_ASSIGN_OR_RETURN(json root, parse_strict_json(text, "hardware file", 8));
  if (!root.is_object()) return invalid_argument("hardware file: must be a JSON object");
  HardwareSpec defaults;
  std::vector<HardwareSpec> out;
  if (!root.contains("hardware")) {  // one entry
    PAGODA_ASSIGN_OR_RETURN(HardwareSpec s, read_entry(root, 0, defaults));
    out.push_back(std::move(s));
    return out;
  }
  Reader r{root, "hardware file", {}};
  if (const json* d = r.get("defaults")) {
    if (!d->is_object()) return invalid_argument("hardware file: \"defaults\" must be an object");
    Reader dr{*d, "hardware file: defaults", {}};
    PAGODA_RETURN_IF_ERROR(read_tunables(dr, &defaults));
    PAGODA_RETURN_IF_ERROR(dr.no_unknown_keys());
  }
  r.get("networks");  // (parse_networks_json reads them)
  const json* list = r.get("hardware");
  if (list == nullptr || !list->is_array()) {
    return invalid_argument("hardware file: \"hardware\" must be an array");
  }
  PAGODA_RETURN_IF_ERROR(r.no_unknown_keys());
  if (list->size() > HardwareLimits::kMaxEntries) {
    return invalid_argument("hardware file: more than {} entries", HardwareLimits::kMaxEntries);
  }
  std::set<std::string> names;
  for (size_t i = 0; i < list->size(); ++i) {
    PAGODA_ASSIGN_OR_RETURN(HardwareSpec s, read_entry((*list)[i], i, defaults));
    if (!names.insert(s.name).second) {
      return invalid_argument("hardware file: \"{}\" is listed twice", s.name);
    }
    out.push_back(std::move(s));
  }
  return out;
}

Interconnect HardwareSpec::node_link() const {
  return Interconnect{interconnect, allreduce_latency_us, interconnect_gbs, false};
}

Result<std::vector<Interconnect>> parse_networks_json(std::string_view text) {
  if (text.size() > HardwareLimits::kMaxFileBytes) {
    return invalid_argument("hardware file: larger than {} bytes", HardwareLimits::kMaxFileBytes);
  }
  PAGODA_ASSIGN_OR_RETURN(json root, parse_strict_json(text, "hardware file", 8));
  if (!root.is_object()) return invalid_argument("hardware file: must be a JSON object");
  std::vector<Interconnect> out;
  auto it = root.find("networks");
  if (it == root.end() || it->is_null()) return out;
  if (!it->is_array() || it->size() > HardwareLimits::kMaxEntries) {
    return invalid_argument("hardware file: \"networks\" must be an array of at most {} objects",
                            HardwareLimits::kMaxEntries);
  }
  for (size_t i = 0; i < it->size(); ++i) {
    PAGODA_ASSIGN_OR_RETURN(Interconnect n, read_network((*it)[i], i));
    if (find_network(out, n.name) != nullptr) {
      return invalid_argument("hardware file: network \"{}\" is listed twice", n.name);
    }
    out.push_back(std::move(n));
  }
  return out;
}

const Interconnect* find_network(const std::vector<Interconnect>& table, std::string_view name) {
  for (const Interconnect& n : table) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

std::string hardware_to_json(const HardwareSpec& s) {
  json j;
  j["name"] = s.name;
  j["description"] = s.description;
  j["memory_gb"] = s.memory_gb;
  j["bandwidth_gbs"] = s.bandwidth_gbs;
  j["fp16_tflops"] = s.fp16_tflops;
  j["int8_tops"] = s.int8_tops;
  j["interconnect"] = s.interconnect;
  j["interconnect_gbs"] = s.interconnect_gbs;
  j["max_devices"] = s.max_devices;
  j["bandwidth_efficiency"] = s.bandwidth_efficiency;
  j["compute_efficiency"] = s.compute_efficiency;
  j["memory_utilization"] = s.memory_utilization;
  j["reserved_gb"] = s.reserved_gb;
  j["allreduce_latency_us"] = s.allreduce_latency_us;
  json m = json::object();
  for (const auto& [dtype, rate] : s.matmul) {
    m[std::string(tensor::dtype_name(dtype))] = {{"gemv_gbs", rate.gemv_gbs},
                                                 {"gemm_gflops", rate.gemm_gflops}};
  }
  j["matmul"] = m;
  if (!s.shapes.empty()) {
    json shapes = json::array();
    for (const ShapeRate& r : s.shapes) {
      shapes.push_back({{"type", std::string(tensor::dtype_name(r.dtype))},
                        {"rows", r.rows},
                        {"cols", r.cols},
                        {"m", r.m},
                        {"seconds", r.seconds}});
    }
    j["shapes"] = shapes;
  }
  j["sync_us"] = s.sync_us;
  j["sources"] = s.sources;
  return j.dump(2) + "\n";
}

std::string_view builtin_hardware_json() {
  return kHardwareJson;
}

Result<HardwareRequest> parse_hardware_request(std::string_view text) {
  HardwareRequest req;
  std::string_view name = text;
  std::string_view count;
  // The count follows the last 'x' or ':' when only digits follow it ("h100-sxmx8", "cpu:1").
  const size_t sep = text.find_last_of("x:");
  if (sep != std::string_view::npos && sep + 1 < text.size()) {
    const std::string_view tail = text.substr(sep + 1);
    bool digits = tail.size() <= 4;
    for (char c : tail)
      digits = digits && std::isdigit(static_cast<unsigned char>(c));
    if (digits) {
      name = text.substr(0, sep);
      count = tail;
    }
  }
  while (!name.empty() && name.back() == ' ')
    name.remove_suffix(1);
  if (name.empty() || name.size() > 64) {
    return invalid_argument("--hardware: expected NAME or NAMExN, got \"{}\"", text.substr(0, 64));
  }
  req.name = std::string(name);
  for (char& c : req.name)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!count.empty()) {
    std::from_chars(count.data(), count.data() + count.size(), req.count);
    if (req.count < 1 || req.count > HardwareLimits::kMaxDevices) {
      return invalid_argument("--hardware: device count must be in [1, {}]",
                              HardwareLimits::kMaxDevices);
    }
  }
  return req;
}

const HardwareSpec* find_hardware(const std::vector<HardwareSpec>& table, std::string_view name) {
  for (const HardwareSpec& s : table) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

}  // namespace pagoda::planner
