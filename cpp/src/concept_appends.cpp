#include "polarmem/concept_appends.hpp"

#include <iterator>

namespace polarmem {

ConceptAppends::ConceptAppends(std::shared_ptr<text::Vocabulary> vocabulary, std::shared_ptr<Index> index)
    : vocabulary_(std::move(vocabulary)), index_(std::move(index)) {}

std::vector<std::uint32_t> ConceptAppends::allocate(const std::vector<std::string>& names) {
  const std::lock_guard guard(mutex_);
  const std::size_t room = vocabulary_->size() + names.size();
  if (index_->num_concepts() < room) index_->ensure_concepts(room);
  std::vector<std::uint32_t> ids;
  ids.reserve(names.size());
  for (const auto& name : names) {
    const std::size_t known = vocabulary_->size();
    const std::uint32_t id = vocabulary_->bind(name);
    if (id == known) {
      std::string stored;
      vocabulary_->name(id, &stored);  // as the vocabulary keeps it (trimmed)
      pending_.emplace_back(id, std::move(stored));
    }
    ids.push_back(id);
  }
  return ids;
}

ConceptAppends::Pending ConceptAppends::take() {
  const std::lock_guard guard(mutex_);
  return std::exchange(pending_, {});
}

void ConceptAppends::put_back(Pending taken) {
  const std::lock_guard guard(mutex_);
  pending_.insert(pending_.begin(), std::make_move_iterator(taken.begin()), std::make_move_iterator(taken.end()));
}

}  // namespace polarmem
