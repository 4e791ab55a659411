// The words of a refused field (request_checks.hpp): Python's repr of strings and floats, as the
// library quoted a client's value, and each check's sentence. tests/unit/test_request_checks.py
// compares quoted() and float_repr() with Python's own repr on random values.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "check.hpp"
#include "polarmem/request_checks.hpp"

using namespace polarmem::checks;

POLARMEM_TEST(quoted_is_pythons_repr_of_a_str) {
  CHECK(quoted("dog") == "'dog'");
  CHECK(quoted("it's") == "\"it's\"");
  CHECK(quoted("it's \"x\"") == "'it\\'s \"x\"'");
  CHECK(quoted("a\\b\n\t\x01") == "'a\\\\b\\n\\t\\x01'");
  CHECK(quoted("caf\xc3\xa9") == "'caf\xc3\xa9'");          // printable beyond ASCII stays
  CHECK(quoted("a\xc2\xa0"
               "b") == "'a\\xa0b'");            // a no-break space does not
  CHECK(quoted("\xe2\x80\xa8") == "'\\u2028'");
  const std::string cut = quoted(std::string(100, 'k'));  // 80 characters, then an ellipsis
  // (appended, not "'" + std::string: GCC 12 at -O3 with the sanitizers warns -Wrestrict on that
  // insert, a false positive: gcc.gnu.org/PR105651)
  CHECK(cut == std::string("'").append(79, 'k').append("\xE2\x80\xA6"));
}

POLARMEM_TEST(a_message_is_cut_for_the_trailers) {
  CHECK(cut_message("short") == "short");
  const std::string long_one = cut_message(std::string(1000, 'x'));
  CHECK(long_one == std::string(400, 'x') + "\xE2\x80\xA6");
  std::string accents;
  for (int i = 0; i < 500; ++i) accents += "\xC3\xA9";  // é: cut between characters, not bytes
  CHECK(cut_message(accents).size() == 800 + 3);
}

POLARMEM_TEST(float_repr_is_pythons) {
  CHECK(float_repr(0.0) == "0.0");
  CHECK(float_repr(1.0) == "1.0");
  CHECK(float_repr(-2.5) == "-2.5");
  CHECK(float_repr(1e7) == "10000000.0");
  CHECK(float_repr(1e16) == "1e+16");
  CHECK(float_repr(1.5e16) == "1.5e+16");
  CHECK(float_repr(1234567890123456.0) == "1234567890123456.0");
  CHECK(float_repr(0.0001) == "0.0001");
  CHECK(float_repr(0.00001) == "1e-05");
  CHECK(float_repr(0.1f) == "0.10000000149011612");
  CHECK(float_repr(std::nan("")) == "nan");
  CHECK(float_repr(-std::numeric_limits<double>::infinity()) == "-inf");
}

POLARMEM_TEST(counts_name_the_field_and_the_range) {
  CHECK(count_problem("top_k", 5, 1, 10000).empty());
  CHECK(count_problem("top_k", 0, 1, 10000) == "top_k must be >= 1 and <= 10000 (an integer), got 0");
}

POLARMEM_TEST(vectors_are_of_the_space_finite_and_directed) {
  const std::vector<float> good{1, 0, 0}, zeros{0, 0, 0}, nan{1, std::nanf(""), 0};
  CHECK(vector_problem("vectors", "vis", 3, false, {3}, good.data(), 3).empty());
  CHECK(vector_problem("vectors", "vis", 4, false, {3}, good.data(), 3) ==
        "vectors['vis']: expected dimension 4, got 3");
  CHECK(vector_problem("vectors", "vis", 3, false, {3}, nan.data(), 3) ==
        "vectors['vis']: has a NaN or infinite value; send finite floats");
  CHECK(vector_problem("vectors", "vis", 3, false, {3}, zeros.data(), 3) ==
        "vectors['vis']: a vector is all zeros and has no direction; send non-zero vectors");
  // a multi-vector item: rows of the width, each with a direction
  const std::vector<float> rows{1, 0, 0, 0, 0, 0};
  CHECK(vector_problem("vectors", "rows", 3, true, {2, 3}, rows.data(), 6) ==
        "vectors['rows']: a vector is all zeros and has no direction; send non-zero vectors");
  CHECK(vector_problem("vectors", "rows", 3, true, {2, 2}, rows.data(), 4) ==
        "vectors['rows']: expected dimension 3, got shape (2, 2)");
  CHECK(vector_problem("vectors", "rows", 2, true, {3}, rows.data(), 3) ==
        "vectors['rows']: expected dimension 2, got shape (3,)");
  CHECK(unknown_space("vectors", "x", {"vis", "sem"}) == "vectors: unknown vector space 'x' (namespace has: vis, sem)");
}

POLARMEM_TEST(metadata_within_its_limits) {
  CHECK(metadata_problem("metadata", {{"k", "v"}}).empty());
  CHECK(metadata_problem("metadata", {{std::string(300, 'k'), "v"}}) ==
        "metadata: key '" + std::string(64, 'k') + "' may hold at most 256 bytes (MAX_METADATA_KEY_BYTES), got 300");
  CHECK(metadata_problem("metadata", {{"k", std::string(70000, 'v')}}) ==
        "metadata['k']: a value may hold at most 65536 bytes (MAX_METADATA_VALUE_BYTES), got 70000");
  std::vector<std::pair<std::string, std::string>> many(257, {"k", "v"});
  CHECK(metadata_problem("metadata", many).find("at most 256 keys per item") != std::string::npos);
  std::vector<std::pair<std::string, std::string>> bulky(5, {"k", std::string(60000, 'v')});
  CHECK(metadata_problem("metadata", bulky).find("together may hold at most 262144 bytes") != std::string::npos);
}

POLARMEM_TEST(an_empty_query_lists_the_names_it_skipped_once_each) {
  CHECK(empty_query({}) == "query is empty: give text, vectors, or required / forbidden concepts");
  CHECK(empty_query({"dgo", "cta", "dgo"}) ==
        "query is empty (unknown concepts skipped: cta, dgo): give text, vectors, or required / forbidden concepts");
}

POLARMEM_TEST(concept_names_and_unknown_ones) {
  CHECK(concept_name_problem("required", "hot dog").empty());
  CHECK(concept_name_problem("required", "  --") == "required: concept name '  --' has no letters or digits");
  CHECK(unknown_concepts("required", {"dgo"}, {{"dog"}}, "t") ==
        "required: 'dgo' (did you mean 'dog'?) is not in the vocabulary of namespace 't'; fix the name, or set "
        "allow_unknown_concepts to recall without it");
  CHECK(unknown_concepts("required", {std::string(100, 'q')}, {{}}, "t")
            .find(std::string("'").append(79, 'q').append("\xE2\x80\xA6 is not")) !=
        std::string::npos);  // a long name quoted as the library quotes a value
  CHECK(unknown_concepts("forbidden", {"a", "b"}, {{"x", "y", "z"}, {}}, "t") ==
        "forbidden: 'a' (did you mean 'x', 'y' or 'z'?), 'b' are not in the vocabulary of namespace 't'; fix the "
        "name, or set allow_unknown_concepts to recall without them");
}

int main() { return polarmem::testing::run_all(); }
