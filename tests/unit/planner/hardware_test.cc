// The hardware table (data/hardware.json, compiled in) and its reader on hostile input: every
// entry the issue names is there with its source, a calibration entry round-trips, and corrupt
// files are errors that name the entry and field.
#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace pagoda::planner
