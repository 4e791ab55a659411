#include "polarmem/vocabulary.hpp"

#include <algorithm>
#include <mutex>
#include <shared_mutex>

#include "polarmem/error.hpp"
#include "polarmem/request_checks.hpp"
#include "polarmem/utf8.hpp"

namespace polarmem::text {

namespace {

std::size_t words_of(const std::string& key) {
  return static_cast<std::size_t>(std::count(key.begin(), key.end(), ' ')) + 1;
}

// The other key a hyphenated key is found by in texts ("x-ray" is also "x ray"); "" when none.
std::string spaced(const std::string& key) {
  if (key.find('-') == std::string::npos) return {};
  std::string out(key);
  std::replace(out.begin(), out.end(), '-', ' ');
  return out;
}

// The key of a concept name a table may hold, or a refusal naming the fault: a name needs a
// letter or digit, and must be text (the library passes lone surrogates through to the parse,
// but a name is stored, listed and shown).
std::string name_key(std::string_view name) {
  for (std::size_t i = 0; i < name.size();) {
    const auto [c, length] = utf8::next_char(name, i);
    if ((c >= 0xD800 && c <= 0xDFFF) || (c == 0xFFFD && length == 1))
      fail(ErrorCode::kInvalidArgument,
           "concept name " + checks::quoted(name) +
               " is not UTF-8 text (it holds a lone surrogate or a bad byte); fix the name");
    i += length;
  }
  std::string key = normalise_name(name);
  if (key.empty())
    fail(ErrorCode::kInvalidArgument, "concept name " + checks::quoted(name) + " has no letters or digits");
  return key;
}

}  // namespace

std::size_t Vocabulary::size() const {
  std::shared_lock lock(lock_);
  return names_.size();
}

std::uint64_t Vocabulary::version() const {
  std::shared_lock lock(lock_);
  return version_;
}

std::uint64_t Vocabulary::rewrites() const {
  std::shared_lock lock(lock_);
  return rewrites_;
}

std::optional<std::uint32_t> Vocabulary::lookup(std::string_view name) const {
  std::string key = normalise_name(name);
  std::shared_lock lock(lock_);
  if (const auto alias = aliases_.find(key); alias != aliases_.end()) key = alias->second;
  const auto found = own_.find(key);
  if (found == own_.end()) return std::nullopt;
  return found->second;
}

std::optional<std::uint32_t> Vocabulary::own_id(std::string_view name) const {
  const std::string key = normalise_name(name);
  std::shared_lock lock(lock_);
  const auto found = own_.find(key);
  if (found == own_.end()) return std::nullopt;
  return found->second;
}

std::pair<std::uint32_t, bool> Vocabulary::ensure(std::string_view name) {
  const std::string key = name_key(name);
  if (const auto known = lookup(name)) return {*known, false};
  std::unique_lock lock(lock_);
  const auto alias = aliases_.find(key);
  const auto found = own_.find(alias != aliases_.end() ? alias->second : key);
  if (found != own_.end()) return {found->second, false};
  return {add(name, key), true};
}

std::uint32_t Vocabulary::bind(std::string_view name) {
  const std::string key = name_key(name);
  std::unique_lock lock(lock_);
  return add(name, key);
}

std::uint32_t Vocabulary::add(std::string_view name, const std::string& key) {
  if (const auto found = own_.find(key); found != own_.end()) return found->second;
  const auto id = static_cast<std::uint32_t>(names_.size());
  names_.emplace_back(utf8::strip(name));  // as written, as str.strip() trims it
  own_.emplace(key, id);
  ++version_;
  const std::string other = spaced(key);
  if (!sets_alone(key, other)) {
    keys_stale_ = true;  // an alias names the new concept or shadows its key: the next reader rebuilds
    return id;
  }
  // The appended concept's keys alone, as a rebuild would set them (tested equal). A concept's own
  // key wins over an earlier concept's spaced form; its spaced form fills a gap.
  set_key(key, id);
  if (!other.empty() && !keys_.count(other)) set_key(other, id);
  return id;
}

bool Vocabulary::sets_alone(const std::string& key, const std::string& other) const {
  if (keys_stale_ || aliases_.count(key) || targets_.count(key)) return false;
  if (other.empty() || !keys_.count(other)) return true;
  // The spaced form is taken: it stays so where an own key or a live alias holds it; a spaced
  // form of an alias holds it only until a rebuild puts the new own key's spaced form first.
  if (own_.count(other)) return true;
  const auto alias = aliases_.find(other);
  return alias != aliases_.end() && own_.count(alias->second);
}

void Vocabulary::add_alias(std::string_view alias, std::string_view target, bool shadow) {
  const std::string alias_key = normalise_name(alias), target_key = normalise_name(target);
  if (alias_key.empty() || target_key.empty()) {
    fail(ErrorCode::kInvalidArgument,
         "alias " + checks::quoted(alias) + " -> " + checks::quoted(target) + ": both sides need letters or digits");
  }
  if (alias_key == target_key) return;
  std::unique_lock lock(lock_);
  if (own_.count(alias_key) && !shadow) {
    fail(ErrorCode::kInvalidArgument,
         "alias " + checks::quoted(alias) + " is already a concept of its own; remove it from the vocabulary first");
  }
  auto [alias_entry, added] = aliases_.try_emplace(alias_key, target_key);
  if (!added) {
    if (--targets_[alias_entry->second] == 0) targets_.erase(alias_entry->second);
    alias_entry->second = target_key;
  }
  ++targets_[target_key];
  ++version_;
  ++rewrites_;
  keys_stale_ = true;
}

void Vocabulary::fresh_keys() const {
  if (!keys_stale_.load(std::memory_order_acquire)) return;
  std::unique_lock lock(lock_);
  if (keys_stale_) rebuild_keys();
}

void Vocabulary::set_key(const std::string& key, std::uint32_t id) const {
  if (keys_.insert_or_assign(key, id).second) {
    const std::size_t words = words_of(key);
    ++keys_by_words_[words];
    longest_ = std::max(longest_, words);
  }
}

void Vocabulary::rebuild_keys() const {
  // Own keys first; an alias then names its target's id, or nothing while the target is no
  // concept (even where the alias is a concept of its own); spaced forms fill what is left, own
  // keys' in id order before aliases'.
  keys_.clear();
  keys_by_words_.clear();
  longest_ = 0;
  std::vector<std::string> order;  // keys in the order their spaced forms are tried
  order.reserve(own_.size() + aliases_.size());
  std::vector<const std::string*> own_by_id(names_.size());
  for (const auto& [key, id] : own_) own_by_id[id] = &key;
  for (const auto* key : own_by_id) {
    set_key(*key, own_.at(*key));
    order.push_back(*key);
  }
  std::vector<std::pair<std::string, std::string>> sorted_aliases(aliases_.begin(), aliases_.end());
  std::sort(sorted_aliases.begin(), sorted_aliases.end());  // one order whatever the map's
  for (const auto& [alias, target] : sorted_aliases) {
    const auto found = own_.find(target);
    if (found != own_.end()) {
      if (!own_.count(alias)) order.push_back(alias);
      set_key(alias, found->second);
    } else if (keys_.erase(alias) != 0) {
      const std::size_t words = words_of(alias);
      if (--keys_by_words_[words] == 0) keys_by_words_.erase(words);
    }
  }
  for (const auto& key : order) {
    const auto id = keys_.find(key);
    if (id == keys_.end()) continue;
    if (const auto other = spaced(key); !other.empty() && !keys_.count(other)) set_key(other, id->second);
  }
  longest_ = 0;
  for (const auto& [words, count] : keys_by_words_) longest_ = std::max(longest_, words);
  keys_stale_.store(false, std::memory_order_release);
}

bool Vocabulary::name(std::uint32_t id, std::string* out) const {
  std::shared_lock lock(lock_);
  if (id >= names_.size()) return false;
  *out = names_[id];
  return true;
}

std::vector<std::string> Vocabulary::names(std::size_t first) const {
  std::shared_lock lock(lock_);
  if (first >= names_.size()) return {};
  return {names_.begin() + static_cast<std::ptrdiff_t>(first), names_.end()};
}

std::vector<std::pair<std::string, std::string>> Vocabulary::aliases() const {
  std::shared_lock lock(lock_);
  std::vector<std::pair<std::string, std::string>> out(aliases_.begin(), aliases_.end());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::pair<std::string, std::uint32_t>> Vocabulary::parse_keys() const {
  fresh_keys();
  std::shared_lock lock(lock_);
  std::vector<std::pair<std::string, std::uint32_t>> out(keys_.begin(), keys_.end());
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::uint32_t> Vocabulary::find_key(const std::string& key) const {
  fresh_keys();
  std::shared_lock lock(lock_);
  const auto found = keys_.find(key);
  if (found == keys_.end()) return std::nullopt;
  return found->second;
}

}  // namespace polarmem::text
