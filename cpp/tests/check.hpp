// A minimal test harness for the core's CTest executables (no external test framework, so the
// C++ tests build anywhere the core builds).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace polarmem::testing {

struct TestCase {
  const char* name;
  std::function<void()> body;
};

inline std::vector<TestCase>& registry() {
  static std::vector<TestCase> tests;
  return tests;
}

inline int& failures() {
  static int count = 0;
  return count;
}

struct Register {
  Register(const char* name, std::function<void()> body) { registry().push_back({name, std::move(body)}); }
};

inline int run_all() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int failed_tests = 0;
  for (const auto& test : registry()) {
    const int before = failures();
    try {
      test.body();
    } catch (const std::exception& e) {
      std::printf("  unexpected exception: %s\n", e.what());
      ++failures();
    }
    const bool ok = failures() == before;
    failed_tests += ok ? 0 : 1;
    std::printf("[%s] %s\n", ok ? "PASS" : "FAIL", test.name);
  }
  std::printf("%zu passed, %d failed\n", registry().size() - failed_tests, failed_tests);
  return failed_tests == 0 ? 0 : 1;
}

}  // namespace polarmem::testing

#define POLARMEM_TEST(name)                                              \
  static void name();                                                    \
  static ::polarmem::testing::Register name##_registration(#name, name); \
  static void name()

#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      std::printf("  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      ++::polarmem::testing::failures();                                     \
    }                                                                        \
  } while (0)

// `statement` must throw `type` (the core's own errors: polarmem::Error; RocksDB's: KvError).
#define CHECK_THROWS_AS(statement, type)                                                    \
  do {                                                                                      \
    bool thrown = false;                                                                    \
    try {                                                                                   \
      statement;                                                                            \
    } catch (const type&) {                                                                 \
      thrown = true;                                                                        \
    }                                                                                       \
    if (!thrown) {                                                                          \
      std::printf("  %s:%d: expected %s from %s\n", __FILE__, __LINE__, #type, #statement); \
      ++::polarmem::testing::failures();                                                    \
    }                                                                                       \
  } while (0)

#define CHECK_THROWS(statement) CHECK_THROWS_AS(statement, ::polarmem::Error)
