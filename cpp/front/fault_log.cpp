#include "fault_log.hpp"

#include <cstdio>
#include <ctime>

namespace polarmem::front {

std::string fault_message(std::string_view method, const char* what) {
  std::string message = "the compiled front failed on this ";
  message += method;
  if (what != nullptr) message += std::string(" (") + what + ")";
  return message + "; please report it with the request";
}

std::string internal_error_line(std::string_view method, std::string_view message,
                                std::chrono::system_clock::time_point when) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(when);
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count() % 1000;
  std::tm local{};
  localtime_r(&seconds, &local);
  char stamp[40];
  const std::size_t length = std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &local);
  std::snprintf(stamp + length, sizeof stamp - length, ",%03d", static_cast<int>(millis));
  std::string line = std::string(stamp) + " ERROR polarmem.fast_front: internal error in ";
  line += method;
  line += ": ";
  for (const char c : message) line += (c == '\n' || c == '\r') ? ' ' : c;
  return line + "\n";
}

void log_internal(std::string_view method, std::string_view message) {
  const std::string line = internal_error_line(method, message, std::chrono::system_clock::now());
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace polarmem::front
