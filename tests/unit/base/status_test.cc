#include "base/status.h"

#include <gtest/gtest.h>

#include <memory>

namespace pagoda {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return invalid_argument("value {} is not positive", v);
  return v;
}

Result<int> doubled(int v) {
  PAGODA_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return 2 * x;
}

Status check_both(int a, int b) {
  PAGODA_RETURN_IF_ERROR(parse_positive(a).status());
  PAGODA_RETURN_IF_ERROR(parse_positive(b).status());
  return Status();
}

TEST(StatusTest, OkAndError) {
  EXPECT_TRUE(Status().ok());
  Status s = invalid_argument("field {} bad", "x");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "field x bad");
  EXPECT_EQ(s.to_string(), "invalid_argument: field x bad");
  EXPECT_EQ(s.with_context("reading f").message(), "reading f: field x bad");
}

TEST(StatusTest, ResultPropagates) {
  auto ok = doubled(4);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 8);
  auto bad = doubled(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "value -1 is not positive");
  EXPECT_TRUE(check_both(1, 2).ok());
  EXPECT_EQ(check_both(1, 0).message(), "value 0 is not positive");
}

TEST(StatusTest, ResultHoldsMoveOnly) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(5);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 5);
}

}  // namespace
}  // namespace pagoda
