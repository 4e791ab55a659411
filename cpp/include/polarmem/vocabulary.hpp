// A namespace's concept vocabulary: names, aliases and dense ids, and the lookup keys the parse
// reads — one table for the library's lookups, the compiled parse and the compiled front's
// names (a write appends to it; every reader sees the append at once).
//
// Normalisation is normalise_name (text_parse.hpp): two names with the same key are the same
// concept. An alias maps a key to a concept's own key ("puppy" -> "dog"), one step, and names
// nothing while its target is no concept. Ids are dense, in order of first use, and persisted by
// the store, so they are stable across restarts. The parse also finds a hyphenated key written
// with spaces ("x ray" for "x-ray", "e mail" for an alias "e-mail"); `lookup` does not.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "polarmem/rw_lock.hpp"
#include "polarmem/text_parse.hpp"

namespace polarmem::text {

class Vocabulary {
 public:
  Vocabulary() = default;
  Vocabulary(const Vocabulary&) = delete;
  Vocabulary& operator=(const Vocabulary&) = delete;

  std::size_t size() const;
  // Moves with every change (a concept, an alias).
  std::uint64_t version() const;
  // Moves with every change that is not an appended concept (an alias): an appended concept
  // leaves every name that resolved before resolving to the same id; these changes may not.
  std::uint64_t rewrites() const;

  // Id of a name, an alias or a plural form of either (aliases one step); nullopt: unknown.
  std::optional<std::uint32_t> lookup(std::string_view name) const;
  // Id of the concept named `name` itself, never an alias's target.
  std::optional<std::uint32_t> own_id(std::string_view name) const;
  // Id of `name` (as lookup finds it), adding it if new: (id, added). A name without a letter or
  // digit, or that is not UTF-8 text (a lone surrogate), is refused (kInvalidArgument). A name
  // is kept as written without the whitespace around it (as Python's str.strip()).
  std::pair<std::uint32_t, bool> ensure(std::string_view name);
  // Id of `name` itself, adding it if new; an alias never redirects it (the store's concepts are
  // bound by their own names; an alias may shadow one since). Refused as `ensure` refuses.
  std::uint32_t bind(std::string_view name);
  // `shadow`: the alias may name a concept of its own, which keeps its states while lookups of
  // the name find the target (an open vocabulary made a concept of every word before the alias
  // was declared). Refused (kInvalidArgument) without letters or digits on either side, or when
  // the alias is a concept of its own and `shadow` is false.
  void add_alias(std::string_view alias, std::string_view target, bool shadow);

  // The name concept `id` was first written as (trimmed); false when there is no such id yet.
  bool name(std::uint32_t id, std::string* out) const;
  // Names of ids first, first + 1, ... (all by default).
  std::vector<std::string> names(std::size_t first = 0) const;
  std::vector<std::pair<std::string, std::string>> aliases() const;  // alias key -> target key
  // Every key the parse finds a concept by (own keys, aliases, spaced forms): for tests.
  std::vector<std::pair<std::string, std::uint32_t>> parse_keys() const;
  // The concept a parse key names (nullopt: none).
  std::optional<std::uint32_t> find_key(const std::string& key) const;
  // Brings the parse keys up to date after aliases changed them (a reader calls it first: with
  // aliases, each change marks the keys stale and the next reader rebuilds them once, so a write
  // appending many concepts pays one rebuild, not one per concept).
  void fresh_keys() const;

 private:
  friend ParsedText parse(std::string_view utf8, const Vocabulary& vocabulary, const TriggerTable& triggers);

  std::uint32_t add(std::string_view name, const std::string& key);  // under the write lock
  // Whether an appended concept's own key and spaced form (`other`, "" for none) are all a
  // rebuild would change: no alias names it or shadows it, and its spaced form is free or kept.
  bool sets_alone(const std::string& key, const std::string& other) const;
  void set_key(const std::string& key, std::uint32_t id) const;     // (the keys are a cache: mutable)
  void rebuild_keys() const;                                        // under the write lock

  mutable RwLock lock_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::uint32_t> own_;       // own key -> id
  std::unordered_map<std::string, std::string> aliases_;     // alias key -> target key
  std::unordered_map<std::string, std::size_t> targets_;     // target key -> how many aliases name it
  mutable std::unordered_map<std::string, std::uint32_t> keys_;      // what the parse reads
  mutable std::unordered_map<std::size_t, std::size_t> keys_by_words_;  // words -> how many keys have that many
  mutable std::size_t longest_ = 0;                                  // words of the longest key
  mutable std::atomic<bool> keys_stale_{false};                      // keys_ lag the names and aliases
  std::uint64_t version_ = 0, rewrites_ = 0;
};

}  // namespace polarmem::text
