// Did-you-mean suggestions (name_suggestions.hpp): difflib's ratio, step for step.
#include "polarmem/name_suggestions.hpp"

#include <algorithm>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "polarmem/utf8.hpp"

namespace polarmem::suggest {

namespace {

std::u32string code_points(std::string_view s) {
  std::u32string out;
  for (std::size_t i = 0; i < s.size();) {
    const auto [c, length] = utf8::next_char(s, i);
    out.push_back(c);
    i += length;
  }
  return out;
}

// str.split(): the words between runs of Python whitespace.
std::set<std::u32string> words_of(const std::u32string& s) {
  std::set<std::u32string> words;
  std::u32string word;
  for (const char32_t c : s) {
    if (utf8::is_space(c)) {
      if (!word.empty()) words.insert(std::move(word));
      word.clear();
    } else {
      word.push_back(c);
    }
  }
  if (!word.empty()) words.insert(std::move(word));
  return words;
}

// SequenceMatcher(None, a, b) with autojunk: b's positions by element, less the popular elements
// of a b of 200 or more (those occurring more than len(b) / 100 + 1 times).
class Matcher {
 public:
  Matcher(const std::u32string& a, const std::u32string& b) : a_(a), b_(b) {
    for (std::size_t j = 0; j < b.size(); ++j) b2j_[b[j]].push_back(static_cast<long>(j));
    if (b.size() >= 200) {
      const std::size_t popular = b.size() / 100 + 1;
      for (auto it = b2j_.begin(); it != b2j_.end();) {
        it = it->second.size() > popular ? b2j_.erase(it) : std::next(it);
      }
    }
  }

  // find_longest_match(alo, ahi, blo, bhi): (i, j, size). No element is junk (isjunk None), so
  // only the extension over equal elements on each end applies.
  std::tuple<long, long, long> longest(long alo, long ahi, long blo, long bhi) const {
    long besti = alo, bestj = blo, bestsize = 0;
    std::unordered_map<long, long> j2len, next;
    for (long i = alo; i < ahi; ++i) {
      next.clear();
      const auto found = b2j_.find(a_[static_cast<std::size_t>(i)]);
      if (found != b2j_.end()) {
        for (const long j : found->second) {
          if (j < blo) continue;
          if (j >= bhi) break;
          const auto previous = j2len.find(j - 1);
          const long k = next[j] = (previous == j2len.end() ? 0 : previous->second) + 1;
          if (k > bestsize) {
            besti = i - k + 1;
            bestj = j - k + 1;
            bestsize = k;
          }
        }
      }
      std::swap(j2len, next);
    }
    while (besti > alo && bestj > blo && at_a(besti - 1) == at_b(bestj - 1)) {
      --besti;
      --bestj;
      ++bestsize;
    }
    while (besti + bestsize < ahi && bestj + bestsize < bhi && at_a(besti + bestsize) == at_b(bestj + bestsize)) {
      ++bestsize;
    }
    return {besti, bestj, bestsize};
  }

  // The sum of get_matching_blocks()' sizes.
  long matches() const {
    long total = 0;
    std::vector<std::tuple<long, long, long, long>> queue{
        {0, static_cast<long>(a_.size()), 0, static_cast<long>(b_.size())}};
    while (!queue.empty()) {
      const auto [alo, ahi, blo, bhi] = queue.back();
      queue.pop_back();
      const auto [i, j, k] = longest(alo, ahi, blo, bhi);
      if (k == 0) continue;
      total += k;
      if (alo < i && blo < j) queue.emplace_back(alo, i, blo, j);
      if (i + k < ahi && j + k < bhi) queue.emplace_back(i + k, ahi, j + k, bhi);
    }
    return total;
  }

 private:
  char32_t at_a(long i) const { return a_[static_cast<std::size_t>(i)]; }
  char32_t at_b(long j) const { return b_[static_cast<std::size_t>(j)]; }

  const std::u32string& a_;
  const std::u32string& b_;
  std::unordered_map<char32_t, std::vector<long>> b2j_;
};

double ratio_of(const std::u32string& a, const std::u32string& b) {
  const std::size_t length = a.size() + b.size();
  if (length == 0) return 1.0;
  return 2.0 * static_cast<double>(Matcher(a, b).matches()) / static_cast<double>(length);
}

bool subset(const std::set<std::u32string>& small, const std::set<std::u32string>& large) {
  return std::includes(large.begin(), large.end(), small.begin(), small.end());
}

}  // namespace

double ratio(std::string_view a, std::string_view b) { return ratio_of(code_points(a), code_points(b)); }

std::vector<std::size_t> closest(std::string_view asked, const std::vector<std::string>& keys, std::size_t limit,
                                 double cutoff) {
  if (limit == 0 || asked.empty() || keys.empty()) return {};
  const std::u32string wanted = code_points(asked);
  const auto wanted_words = words_of(wanted);
  std::vector<std::pair<double, std::size_t>> scored;  // (ratio, position)
  for (std::size_t position = 0; position < keys.size(); ++position) {
    if (keys[position] == asked) return {position};
    const std::u32string key = code_points(keys[position]);
    double score = ratio_of(wanted, key);
    const auto key_words = words_of(key);
    if (subset(wanted_words, key_words) || subset(key_words, wanted_words)) {
      score = std::max(score, cutoff);  // whole-word containment is close enough to offer
    }
    if (score >= cutoff) scored.emplace_back(score, position);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < scored.size() && i < limit; ++i) out.push_back(scored[i].second);
  return out;
}

}  // namespace polarmem::suggest
