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

void PlanCache::concepts_appended(const std::string& ns) {
  std::lock_guard guard(mutex_);
  const auto plans = by_namespace_.find(ns);
  if (plans == by_namespace_.end()) return;
  for (auto plan = plans->second.begin(); plan != plans->second.end();) {
    plan = plan->second->reads_vocabulary ? plans->second.erase(plan) : std::next(plan);
  }
}

void PlanCache::set_names(const std::string& ns, std::vector<std::string> names,
                          std::shared_ptr<const text::ConceptKeys> keys) {
  auto table = std::make_shared<ConceptNames>(std::move(names));
  std::lock_guard guard(mutex_);
  names_[ns] = std::move(table);
  keys_[ns] = std::move(keys);
}

std::optional<NameBinding> PlanCache::binding(const std::string& ns) const {
  std::lock_guard guard(mutex_);
  const auto names = names_.find(ns);
  const auto keys = keys_.find(ns);
  if (names == names_.end() || keys == keys_.end()) return std::nullopt;
  return NameBinding{keys->second, names->second};
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
  keys_.erase(ns);
  names_.erase(ns);
}

void PlanCache::clear() {
  std::lock_guard guard(mutex_);
  by_namespace_.clear();
  keys_.clear();
  names_.clear();
}

std::size_t PlanCache::size() const {
  std::lock_guard guard(mutex_);
  std::size_t total = 0;
  for (const auto& [ns, plans] : by_namespace_) total += plans.size();
  return total;
}

}  // namespace polarmem::front
