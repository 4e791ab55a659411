// The compiled front's fault words (fault_log.hpp): the caller's INTERNAL message, and the log
// line the PolarMemInternalErrors runbook tells the operator to look for — in the Python
// listener's format, one line whatever the exception said.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "check.hpp"
#include "fault_log.hpp"

using namespace polarmem::front;

namespace {

// 1970-01-02 03:04:05.678 UTC
const auto kWhen = std::chrono::system_clock::time_point(std::chrono::milliseconds(97445678));

void check_equal(const std::string& got, const std::string& want, int line) {
  if (got == want) return;
  std::printf("  line %d: got   \"%s\"\n          want  \"%s\"\n", line, got.c_str(), want.c_str());
  ++polarmem::testing::failures();
}
#define CHECK_EQ(got, want) check_equal((got), (want), __LINE__)

// "YYYY-MM-DD HH:MM:SS,mmm ERROR polarmem.fast_front: ...\n" (# a digit). No std::regex: GCC 12
// warns inside it under the sanitizer build's -O3, and warnings are errors.
bool python_log_shape(const std::string& line) {
  const std::string stamp = "####-##-## ##:##:##,### ERROR polarmem.fast_front: ";
  if (line.size() <= stamp.size() || line.back() != '\n') return false;
  for (std::size_t k = 0; k < stamp.size(); ++k) {
    const bool digit = line[k] >= '0' && line[k] <= '9';
    if (stamp[k] == '#' ? !digit : line[k] != stamp[k]) return false;
  }
  return line.find('\n') == line.size() - 1;
}

void in_utc() {
  setenv("TZ", "UTC", 1);
  tzset();
}

}  // namespace

POLARMEM_TEST(caller_message_names_method_and_what_failed) {
  CHECK_EQ(fault_message("Recall", "vector::_M_range_check"),
           std::string("the compiled front failed on this Recall (vector::_M_range_check); please report it with "
                       "the request"));
  CHECK_EQ(fault_message("Remember", nullptr),
           std::string("the compiled front failed on this Remember; please report it with the request"));
}

POLARMEM_TEST(log_line_is_python_listener_format) {
  in_utc();
  CHECK_EQ(internal_error_line("Recall", "the compiled front failed on this Recall (boom)", kWhen),
           std::string("1970-01-02 03:04:05,678 ERROR polarmem.fast_front: internal error in Recall: the compiled "
                       "front failed on this Recall (boom)\n"));
  // what logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s") writes, now
  CHECK(python_log_shape(internal_error_line("Remember", "x", std::chrono::system_clock::now())));
  setenv("TZ", "Asia/Kolkata", 1);  // +05:30, where the zone database has it; UTC otherwise
  tzset();
  const std::string shifted = internal_error_line("Recall", "x", kWhen);
  CHECK(shifted.rfind("1970-01-02 08:34:05,678 ", 0) == 0 || shifted.rfind("1970-01-02 03:04:05,678 ", 0) == 0);
  in_utc();
}

POLARMEM_TEST(milliseconds_keep_three_digits) {
  in_utc();
  const auto early = std::chrono::system_clock::time_point(std::chrono::milliseconds(7));
  CHECK(internal_error_line("Recall", "x", early).rfind("1970-01-01 00:00:00,007 ", 0) == 0);
}

POLARMEM_TEST(line_breaks_do_not_split_the_fault) {
  in_utc();
  const std::string line = internal_error_line("Recall", "first\nsecond\r\nthird", kWhen);
  CHECK_EQ(line, std::string("1970-01-02 03:04:05,678 ERROR polarmem.fast_front: internal error in Recall: first "
                             "second  third\n"));
}

int main() { return polarmem::testing::run_all(); }
