// The concepts a namespace's writes add to its vocabulary (an open vocabulary's new words, a
// client's new concept names) until the store holds their records: each is bound at once — the
// index given room for it first, since the vocabulary is read live (the compiled front binds a
// question's words from it) and an id must never name a concept the index cannot look up — and
// its record goes into the next item write's batch, all or nothing with that write. Every door
// that writes a namespace's items calls it (storage/local/backend.py; a native Remember next).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "polarmem/index.hpp"
#include "polarmem/vocabulary.hpp"

namespace polarmem {

class ConceptAppends {
 public:
  using Pending = std::vector<std::pair<std::uint32_t, std::string>>;  // (id, name as stored)

  ConceptAppends(std::shared_ptr<text::Vocabulary> vocabulary, std::shared_ptr<Index> index);

  // The id of each name, binding those the vocabulary lacks (Vocabulary::bind refuses a name
  // that is not text) and queueing their records.
  std::vector<std::uint32_t> allocate(const std::vector<std::string>& names);
  // The queued records, for the next item write's batch; that write puts back what it failed to
  // store, so the write after it stores them.
  Pending take();
  void put_back(Pending taken);

 private:
  std::shared_ptr<text::Vocabulary> vocabulary_;
  std::shared_ptr<Index> index_;
  std::mutex mutex_;
  Pending pending_;
};

}  // namespace polarmem
