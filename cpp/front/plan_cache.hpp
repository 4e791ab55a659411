// The plans the library has published, by namespace and request shape. The library drops a
// namespace's plans whenever what they depend on changes (settings, rule, an alias, deletion:
// domain/namespace.py ChangeLock), so a plan never outlives the state it was made from; a write
// that only appends concepts keeps them and extends the names. A full namespace starts over
// rather than tracking use, since plans are cheap to make again (one call through the library each).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "recall_plan.hpp"

namespace polarmem::front {

class PlanCache {
 public:
  explicit PlanCache(std::size_t max_per_namespace = 4096) : max_per_namespace_(max_per_namespace) {}

  void publish(const std::string& ns, std::string key, std::shared_ptr<const RecallPlan> plan);
  std::shared_ptr<const RecallPlan> find(const std::string& ns, const std::string& key) const;
  // Concepts were appended to the namespace (nothing else changed): drops the plans that read
  // the whole vocabulary.
  void concepts_appended(const std::string& ns);
  // The namespace's concept names by id and its lookup keys, which its text plans and the
  // explicit names of generic plans bind by (dropped with its plans).
  void set_names(const std::string& ns, std::vector<std::string> names, std::shared_ptr<const text::ConceptKeys> keys);
  std::shared_ptr<const ConceptNames> names(const std::string& ns) const;
  std::optional<NameBinding> binding(const std::string& ns) const;
  // Names of concepts appended from id `first` on. A table that does not end at `first` (which
  // the library's write lock rules out) is not trusted: the namespace's plans and names go.
  void append_names(const std::string& ns, std::size_t first, const std::vector<std::string>& names);
  // Drops the namespace's plans, names and keys.
  void forget(const std::string& ns);
  void clear();
  std::size_t size() const;

 private:
  using Plans = std::unordered_map<std::string, std::shared_ptr<const RecallPlan>>;
  const std::size_t max_per_namespace_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Plans> by_namespace_;
  std::unordered_map<std::string, std::shared_ptr<const text::ConceptKeys>> keys_;
  std::unordered_map<std::string, std::shared_ptr<ConceptNames>> names_;
};

}  // namespace polarmem::front
