// The hardware table (data/hardware.json, compiled in) and its reader on hostile input: every
// entry the issue names is there with its source, a calibration entry round-trips, and corrupt
// files are errors that name the entry and field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "planner/hardware.h"

namespace pagoda::planner {
namespace {

std::string error_of(const std::string& text) {
  auto r = parse_hardware_json(text);
  EXPECT_FALSE(r.ok()) << text;
  return r.ok() ? "" : r.status().message();
}

TEST(Hardware, BuiltinTableHasEveryDeviceWithSources) {
  auto table = parse_hardware_json(builtin_hardware_json());
  ASSERT_TRUE(table.ok()) << table.status().message();
  for (const char* name :
       {"a100-40g", "a100-80g", "h100-sxm", "h100-pcie", "h200", "l40s", "rtx-4090"}) {
    const HardwareSpec* hw = find_hardware(*table, name);
    ASSERT_NE(hw, nullptr) << name;
    EXPECT_FALSE(hw->sources.empty()) << name;
    EXPECT_GT(hw->bandwidth_gbs, 0);
    EXPECT_GT(hw->interconnect_gbs, 0);
  }
  const HardwareSpec* h100 = find_hardware(*table, "h100-sxm");
  EXPECT_EQ(h100->memory_gb, 80);
  EXPECT_EQ(h100->bandwidth_gbs, 3350);
  EXPECT_EQ(h100->bandwidth_efficiency, 0.8);                               // from "defaults"
  EXPECT_EQ(find_hardware(*table, "h100-pcie")->allreduce_latency_us, 25);  // its own value
  EXPECT_NEAR(h100->usable_bytes(), (80 * 0.9 - 1.5) * 1e9, 1);
}

TEST(Hardware, CalibrationEntryRoundTrips) {
  HardwareSpec cpu;
  cpu.name = "cpu";
  cpu.memory_gb = 16;
  cpu.bandwidth_gbs = 12.5;
  cpu.fp16_tflops = 0.2;
  cpu.matmul[tensor::DType::kQ4_0] = {9.5, 150};
  auto back = parse_hardware_json(hardware_to_json(cpu));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ(back->front().bandwidth_gbs, 12.5);
  EXPECT_EQ(back->front().matmul.at(tensor::DType::kQ4_0).gemm_gflops, 150);
  EXPECT_TRUE(back->front().shapes.empty());
  // With a model's shapes and the per-op barrier.
  cpu.sync_us = 1.5;
  cpu.shapes.push_back({tensor::DType::kQ4_0, 2048, 5632, {1, 8, 512}, {1e-4, 2e-4, 3e-3}});
  cpu.shapes.push_back({tensor::DType::kQ6_K, 32000, 2048, {1}, {5e-3}});
  back = parse_hardware_json(hardware_to_json(cpu));
  ASSERT_TRUE(back.ok()) << back.status().message();
  const HardwareSpec& b = back->front();
  EXPECT_EQ(b.sync_us, 1.5);
  ASSERT_EQ(b.shapes.size(), 2u);
  const ShapeRate* r = b.find_shape(tensor::DType::kQ4_0, 2048, 5632);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->m, (std::vector<double>{1, 8, 512}));
  EXPECT_EQ(r->seconds, (std::vector<double>{1e-4, 2e-4, 3e-3}));
  EXPECT_EQ(b.find_shape(tensor::DType::kQ4_0, 5632, 2048), nullptr);  // rows and cols matter
  EXPECT_EQ(b.find_shape(tensor::DType::kQ8_0, 2048, 5632), nullptr);  // and the type
}

// Piecewise linear between the measured points, flat below the first, linear in m past the last.
TEST(Hardware, ShapeRateInterpolates) {
  const ShapeRate r{tensor::DType::kQ4_0, 64, 64, {1, 8, 32}, {1e-3, 2e-3, 8e-3}};
  EXPECT_DOUBLE_EQ(r.seconds_at(0.5), 1e-3);
  EXPECT_DOUBLE_EQ(r.seconds_at(1), 1e-3);
  EXPECT_DOUBLE_EQ(r.seconds_at(4.5), 1.5e-3);
  EXPECT_DOUBLE_EQ(r.seconds_at(8), 2e-3);
  EXPECT_DOUBLE_EQ(r.seconds_at(20), 5e-3);
  EXPECT_DOUBLE_EQ(r.seconds_at(32), 8e-3);
  EXPECT_DOUBLE_EQ(r.seconds_at(64), 16e-3);
  const ShapeRate one{tensor::DType::kQ4_0, 64, 64, {4}, {2e-3}};
  EXPECT_DOUBLE_EQ(one.seconds_at(2), 2e-3);
  EXPECT_DOUBLE_EQ(one.seconds_at(8), 4e-3);
}

TEST(Hardware, HostileFilesAreErrorsNamingTheField) {
  const std::string ok = R"("memory_gb": 80, "bandwidth_gbs": 2000, "fp16_tflops": 300)";
  EXPECT_NE(error_of("[]").find("object"), std::string::npos);
  EXPECT_NE(error_of("{").find("invalid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"name": "x", "memory_gb": 1e300, "bandwidth_gbs": 1, "fp16_tflops": 1})")
                .find("memory_gb"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name": "x", "memory_gb": -1, "bandwidth_gbs": 1, "fp16_tflops": 1})")
                .find("memory_gb"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name": "x", "memory_gb": "80", "bandwidth_gbs": 1, "fp16_tflops": 1})")
                .find("\"memory_gb\" must be a number"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name": "x", "bandwith_gbs": 1, )" + ok + "}").find("bandwith_gbs"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name": "x", "memory_gb": 80})").find("required"), std::string::npos);
  EXPECT_NE(error_of(R"({"name": "X Y", )" + ok + "}").find("name"), std::string::npos);
  EXPECT_NE(error_of(R"({"name": "x", "max_devices": 8, )" + ok + "}").find("interconnect_gbs"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name": "x", "max_devices": 2.5, "interconnect_gbs": 1, )" + ok + "}")
                .find("max_devices"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name": "x", "bandwidth_efficiency": 1.5, )" + ok + "}")
                .find("bandwidth_efficiency"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name": "x", "matmul": {"Q9_9": {}}, )" + ok + "}").find("Q9_9"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name": "x", "matmul": {"Q4_0": {"gemv_gbs": 1}}, )" + ok + "}")
                .find("gemm_gflops"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name": "x", "sources": [1], )" + ok + "}").find("sources"),
            std::string::npos);
  // Shapes: every field checked, named with the entry's index.
  const auto shape = [&](const std::string& body) {
    return error_of(R"({"name": "x", "shapes": [)" + body + "], " + ok + "}");
  };
  const std::string good = R"("type": "Q4_0", "rows": 8, "cols": 32)";
  EXPECT_NE(shape("{" + good + R"(, "m": [1, 8], "seconds": [1e-3]})").find("differ in length"),
            std::string::npos);
  EXPECT_NE(shape("{" + good + R"(, "m": [8, 1], "seconds": [1, 2]})").find("increasing"),
            std::string::npos);
  EXPECT_NE(shape("{" + good + R"(, "m": [1], "seconds": [0]})").find("\"seconds\""),
            std::string::npos);
  EXPECT_NE(shape("{" + good + R"(, "m": [0.5], "seconds": [1]})").find("\"m\""),
            std::string::npos);
  EXPECT_NE(shape("{" + good + R"(, "m": [], "seconds": []})").find("\"m\""), std::string::npos);
  EXPECT_NE(shape("{" + good + R"(, "m": ["1"], "seconds": [1]})").find("shapes[0]"),
            std::string::npos);
  EXPECT_NE(shape(R"({"type": "Q4_0", "rows": 8.5, "cols": 32, "m": [1], "seconds": [1]})")
                .find("integers"),
            std::string::npos);
  EXPECT_NE(
      shape(R"({"type": "Q9", "rows": 8, "cols": 32, "m": [1], "seconds": [1]})").find("type"),
      std::string::npos);
  EXPECT_NE(shape("{" + good + R"(, "m": [1], "seconds": [1], "extra": 1})").find("extra"),
            std::string::npos);
  EXPECT_NE(shape("{" + good + R"(, "m": [1], "seconds": [1]}, {)" + good +
                  R"(, "m": [1], "seconds": [1]})")
                .find("shapes[1]: the shape is listed twice"),
            std::string::npos);
  EXPECT_TRUE(parse_hardware_json(R"({"name": "x", "shapes": [{)" + good +
                                  R"(, "m": [1], "seconds": [1]}], )" + ok + "}")
                  .ok());
  EXPECT_NE(error_of(R"({"name": "x", "shapes": {}, )" + ok + "}").find("shapes"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"name": "x", "sync_us": -1, )" + ok + "}").find("sync_us"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"hardware": [{"name": "a", )" + ok + R"(}, {"name": "a", )" + ok + "}]}")
                .find("twice"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"hardware": {}})").find("array"), std::string::npos);
  EXPECT_NE(error_of(R"({"hardware": [], "defaults": {"reserved_gb": -3}})").find("reserved_gb"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"hardware": [], "extra": 1})").find("extra"), std::string::npos);
  EXPECT_NE(error_of(R"({"name": "x", "name": "y"})").find("duplicate"), std::string::npos);
  EXPECT_NE(error_of(std::string(2 << 20, ' ')).find("larger"), std::string::npos);
}

TEST(Hardware, Request) {
  auto r = parse_hardware_request("h100-sxmx8");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->name, "h100-sxm");
  EXPECT_EQ(r->count, 8);
  r = parse_hardware_request("RTX-4090");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->name, "rtx-4090");
  EXPECT_EQ(r->count, 0);
  r = parse_hardware_request("rtx-4090x2");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->name, "rtx-4090");
  EXPECT_EQ(r->count, 2);
  r = parse_hardware_request("a100-80g:4");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->count, 4);
  EXPECT_FALSE(parse_hardware_request("h100x0").ok());
  EXPECT_FALSE(parse_hardware_request("h100x9999").ok());
  EXPECT_FALSE(parse_hardware_request("x8").ok());
  EXPECT_FALSE(parse_hardware_request("").ok());
}

// The "networks" between nodes (`pagoda plan --nodes`): read by parse_networks_json, allowed
// (and skipped) by parse_hardware_json; hostile entries are errors naming the entry and field.
TEST(Hardware, NetworksAreCheckedAndNamed) {
  auto builtin = parse_networks_json(builtin_hardware_json());
  ASSERT_TRUE(builtin.ok()) << builtin.status().message();
  EXPECT_NE(find_network(*builtin, "100gbe"), nullptr);
  EXPECT_NE(find_network(*builtin, "ib-ndr400"), nullptr);
  EXPECT_EQ(find_network(*builtin, "nvlink4"), nullptr);  // a node's link, not a network
  const std::string gpu = R"({"name": "g", "memory_gb": 1, "bandwidth_gbs": 1, "fp16_tflops": 1})";
  auto error = [&](const std::string& networks) {
    const std::string text = R"({"networks": )" + networks + R"(, "hardware": [)" + gpu + "]}";
    EXPECT_TRUE(parse_hardware_json(text).ok()) << text;
    auto r = parse_networks_json(text);
    EXPECT_FALSE(r.ok()) << text;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(error(R"([{"name": "eth", "latency_us": 40}])").find("\"bandwidth_gbs\""),
            std::string::npos);
  EXPECT_NE(error(R"([{"name": "eth", "latency_us": -1, "bandwidth_gbs": 1}])").find("latency_us"),
            std::string::npos);
  EXPECT_NE(error(R"([{"name": "eth", "latency_us": 1, "bandwidth_gbs": 1, "ring_latency": 1}])")
                .find("ring_latency"),
            std::string::npos);
  EXPECT_NE(error(R"([{"name": "eth", "latency_us": 1, "bandwidth_gbs": 1, "mtu": 9000}])")
                .find("unknown field \"mtu\""),
            std::string::npos);
  EXPECT_NE(error(R"([{"name": "Eth!", "latency_us": 1, "bandwidth_gbs": 1}])").find("name"),
            std::string::npos);
  EXPECT_NE(error(R"([{"name": "e", "latency_us": 1, "bandwidth_gbs": 1},
                      {"name": "e", "latency_us": 2, "bandwidth_gbs": 2}])")
                .find("listed twice"),
            std::string::npos);
  EXPECT_NE(error(R"({"name": "e"})").find("\"networks\" must be an array"), std::string::npos);
  // None: an empty list (a one-entry calibration file).
  auto none = parse_networks_json(gpu);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace pagoda::planner
