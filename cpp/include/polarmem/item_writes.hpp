// A namespace's new items written in the local backend, one implementation for every door that
// writes them (storage/local/backend.py for the library's Remember, RememberStream and batches;
// the compiled listener's native Remember, note_writes.hpp): the concept records the writes
// queued (concept_appends.hpp), each item's keys (item_layout.hpp put_item), one counted write
// through the store's failure policy (store_writes.hpp), then the namespace's items in memory
// (namespace_items.hpp), which a search sees from then on. A write the store refuses puts the
// concept records back for the next write and leaves memory as it was.
//
// Call under the namespace's write lock (write_lock.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "polarmem/concept_appends.hpp"
#include "polarmem/item_layout.hpp"
#include "polarmem/namespace_items.hpp"
#include "polarmem/store_writes.hpp"

namespace polarmem {

// Confidence grades that own their arrays (ConceptGrades points into them).
struct OwnedGrades {
  std::vector<std::int64_t> indptr;
  std::vector<std::uint32_t> ids;
  std::vector<std::int8_t> grades;
  std::vector<std::uint8_t> confidence;  // empty: none
  ConceptGrades view() const;
};

class ItemWrites {
 public:
  struct Space {
    std::string name;
    std::size_t dim = 0;
    bool multi = false;
  };
  // The grades of the written items from their index records; nullopt: none has any.
  using Grade = std::function<std::optional<OwnedGrades>(const std::vector<std::string>& index_records)>;

  ItemWrites(std::string ns, std::shared_ptr<StoreWrites> store, std::shared_ptr<NamespaceItems> items,
             std::shared_ptr<ConceptAppends> appends, std::vector<Space> spaces);

  // New items: their serialised records and, per item, its vectors (a single space one row, a
  // multi space any number; a space left out holds none). Throws what the store's write throws
  // (nothing written) or what the in-memory add throws (written, not indexed: the next start
  // indexes it). The store times the write (StoreWrites::write_times).
  void add(const std::vector<std::string_view>& records, const std::vector<std::vector<layout::VectorRows>>& vectors,
           const Grade& grade = {});

  // The namespace's items in memory (a writer looks up whether an id is stored).
  const std::shared_ptr<NamespaceItems>& items() const { return items_; }

 private:
  const std::string ns_;
  const std::string count_key_;  // the namespace's write count in "meta"
  std::shared_ptr<StoreWrites> store_;
  std::shared_ptr<NamespaceItems> items_;
  std::shared_ptr<ConceptAppends> appends_;
  const std::vector<Space> spaces_;
};

}  // namespace polarmem
