// ItemWrites (item_writes.hpp): a namespace's new items into the store, then into memory.
#include "polarmem/item_writes.hpp"

#include <algorithm>
#include <utility>

#include "polarmem/error.hpp"

namespace polarmem {
namespace {

// The store's per-namespace write count key, under "meta" (storage/local/store.py _WRITES).
std::string write_count_key(std::string_view ns) {
  std::string key = "writes";
  key.push_back('\0');
  key.append(ns);
  return key;
}

// One space's vectors of every item as the index takes them (index.hpp VectorInput): a single
// space's rows with a presence byte per item where some item has none; a multi space's rows
// concatenated with a count per item. The buffers stay in `held`.
struct SpaceRows {
  std::vector<float> values;
  std::vector<std::uint8_t> present;
  std::vector<std::int64_t> counts;
};

VectorInput space_input(const ItemWrites::Space& space, const std::vector<std::vector<layout::VectorRows>>& vectors,
                        SpaceRows* held) {
  VectorInput in;
  in.space = space.name;
  in.dim = space.dim;
  bool every = true;
  for (const auto& item : vectors) {
    const auto found = std::find_if(item.begin(), item.end(), [&](const auto& v) { return v.space == space.name; });
    const std::size_t rows = found == item.end() ? 0 : found->rows;
    if (found != item.end() && found->dim != space.dim)
      fail(ErrorCode::kInvalidArgument, "vectors['" + space.name + "']: expected dimension " +
                                            std::to_string(space.dim) + ", got " + std::to_string(found->dim));
    if (space.multi) {
      held->counts.push_back(static_cast<std::int64_t>(rows));
    } else if (rows > 1) {
      fail(ErrorCode::kInvalidArgument, "vectors['" + space.name + "']: a single-vector space takes one row");
    }
    if (rows == 0) {
      if (!space.multi) held->values.insert(held->values.end(), space.dim, 0.0f);
      every = false;
    } else {
      held->values.insert(held->values.end(), found->data, found->data + rows * space.dim);
    }
    held->present.push_back(rows == 0 ? 0 : 1);
  }
  in.values = held->values.data();
  in.rows = held->values.size() / std::max<std::size_t>(1, space.dim);
  if (space.multi) {
    in.counts = held->counts.data();
  } else if (!every) {
    in.present = held->present.data();
  }
  return in;
}

}  // namespace

ConceptGrades OwnedGrades::view() const {
  return {indptr.data(), ids.data(), grades.data(), confidence.empty() ? nullptr : confidence.data()};
}

ItemWrites::ItemWrites(std::string ns, std::shared_ptr<StoreWrites> store, std::shared_ptr<NamespaceItems> items,
                       std::shared_ptr<ConceptAppends> appends, std::vector<Space> spaces)
    : ns_(std::move(ns)),
      count_key_(write_count_key(ns_)),
      store_(std::move(store)),
      items_(std::move(items)),
      appends_(std::move(appends)),
      spaces_(std::move(spaces)) {}

void ItemWrites::add(const std::vector<std::string_view>& records,
                     const std::vector<std::vector<layout::VectorRows>>& vectors, const Grade& grade) {
  if (records.empty()) return;
  if (vectors.size() != records.size()) fail(ErrorCode::kInvalidArgument, "one vector list per record expected");
  // The index's inputs first: a vector it would refuse is refused before anything is written.
  std::vector<SpaceRows> held(spaces_.size());
  std::vector<VectorInput> inputs;
  inputs.reserve(spaces_.size());
  for (std::size_t s = 0; s < spaces_.size(); ++s) inputs.push_back(space_input(spaces_[s], vectors, &held[s]));
  for (const auto& item : vectors)
    for (const auto& v : item)
      if (std::none_of(spaces_.begin(), spaces_.end(), [&](const Space& s) { return s.name == v.space; }))
        fail(ErrorCode::kInvalidArgument, "vectors: unknown vector space '" + v.space + "'");

  KvBatch batch;
  std::vector<std::string> ids, index_records;
  ids.reserve(records.size());
  index_records.reserve(records.size());
  ConceptAppends::Pending pending = appends_->take();  // (nothing that may throw between this and the try)
  try {
    for (const auto& [concept_id, name] : pending) layout::put_concept(batch, ns_, concept_id, name);
    for (std::size_t i = 0; i < records.size(); ++i) {
      ids.push_back(layout::read_item(records[i]).id);
      index_records.push_back(layout::put_item(batch, ns_, records[i], vectors[i]));
    }
    store_->write(batch, "meta", count_key_, records.size());
  } catch (...) {
    appends_->put_back(std::move(pending));  // not written: the next write stores them
    throw;
  }

  std::optional<OwnedGrades> grades;
  if (grade) grades = grade(index_records);
  const std::vector<std::string_view> index_views(index_records.begin(), index_records.end());
  std::vector<std::string_view> kept;
  if (items_->records()) kept = records;
  items_->add(ids, index_views, inputs, grades ? grades->view() : ConceptGrades{}, kept);
}

}  // namespace polarmem
