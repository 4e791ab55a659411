#include "plan_cache.hpp"

#include <iterator>

namespace polarmem::front {

void PlanCache::publish(const std::string& ns, std::string key, std::shared_ptr<const RecallPlan> plan) {
  std::lock_guard guard(mutex_);
  auto& plans = by_namespace_[ns];
  if (plans.size() >= max_per_namespace_) plans.clear();
  plans[std::move(key)] = std::move(plan);
}

std::shared_ptr<const RecallPlan> PlanCache::find(const std::string& ns, const std::string& key) const {
  std::lock_guard guard(mutex_);
  const auto plans = by_namespace_.find(ns);
  if (plans == by_namespace_.end()) return nullptr;
  const auto plan = plans->second.find(key);
  return plan == plans->second.end() ? nullptr : plan->second;
}

void PlanCache::set_vocabulary(const std::string& ns, std::shared_ptr<const Vocabulary> vocabulary) {
  std::lock_guard guard(mutex_);
  vocabularies_[ns] = std::move(vocabulary);
}

std::shared_ptr<const Vocabulary> PlanCache::vocabulary(const std::string& ns) const {
  std::lock_guard guard(mutex_);
  const auto found = vocabularies_.find(ns);
  return found == vocabularies_.end() ? nullptr : found->second;
}

void PlanCache::append_concepts(const std::string& ns, const Vocabulary::Names& added) {
  std::shared_ptr<const Vocabulary> current;
  {
    std::lock_guard guard(mutex_);
    const auto plans = by_namespace_.find(ns);
    if (plans != by_namespace_.end()) {
      for (auto plan = plans->second.begin(); plan != plans->second.end();) {
        plan = plan->second->reads_vocabulary ? plans->second.erase(plan) : std::next(plan);
      }
    }
    const auto found = vocabularies_.find(ns);
    if (found == vocabularies_.end() || added.empty()) return;
    current = found->second;
  }
  // Extended outside the mutex (now and then it copies every name: Vocabulary::with): native
  // calls keep binding with the current one meanwhile. The library calls this under the
  // namespace's write lock, which also guards set_vocabulary and forget, so nothing replaces
  // `current` meanwhile; if something did (clear), the one there now stays.
  auto extended = std::make_shared<const Vocabulary>(current->with(added));
  std::lock_guard guard(mutex_);
  const auto found = vocabularies_.find(ns);
  if (found != vocabularies_.end() && found->second == current) found->second = std::move(extended);
}

void PlanCache::set_names(const std::string& ns, std::vector<std::string> names) {
  auto table = std::make_shared<ConceptNames>(std::move(names));
  std::lock_guard guard(mutex_);
  names_[ns] = std::move(table);
}

std::shared_ptr<const ConceptNames> PlanCache::names(const std::string& ns) const {
  std::lock_guard guard(mutex_);
  const auto found = names_.find(ns);
  return found == names_.end() ? nullptr : found->second;
}

void PlanCache::append_names(const std::string& ns, std::size_t first, const std::vector<std::string>& names) {
  std::shared_ptr<ConceptNames> table;
  {
    std::lock_guard guard(mutex_);
    const auto found = names_.find(ns);
    if (found == names_.end()) return;
    table = found->second;
  }
  if (!table->append(first, names)) forget(ns);
}

void PlanCache::forget(const std::string& ns) {
  std::lock_guard guard(mutex_);
  by_namespace_.erase(ns);
  vocabularies_.erase(ns);
  names_.erase(ns);
}

void PlanCache::clear() {
  std::lock_guard guard(mutex_);
  by_namespace_.clear();
  vocabularies_.clear();
  names_.clear();
}

std::size_t PlanCache::size() const {
  std::lock_guard guard(mutex_);
  std::size_t total = 0;
  for (const auto& [ns, plans] : by_namespace_) total += plans.size();
  return total;
}

}  // namespace polarmem::front
