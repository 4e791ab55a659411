// The concepts a namespace's writes bind (concept_appends.hpp): new names bound at once with room
// in the index first, known names and aliases not queued, the queue taken by a write and put back
// in front by a write that failed.
#include <memory>
#include <string>
#include <vector>

#include "check.hpp"
#include "polarmem/concept_appends.hpp"

using polarmem::ConceptAppends;
using polarmem::Index;
using polarmem::SpaceConfig;
using polarmem::Storage;
using polarmem::text::Vocabulary;

namespace {

std::shared_ptr<Index> index_of() {
  return std::make_shared<Index>(std::vector<SpaceConfig>{SpaceConfig{"sem", 4, false, Storage::kF32, {}}}, 1);
}

}  // namespace

POLARMEM_TEST(new_names_are_bound_with_room_in_the_index_and_queued_once) {
  auto vocabulary = std::make_shared<Vocabulary>();
  vocabulary->bind("dog");
  auto index = index_of();
  ConceptAppends appends(vocabulary, index);
  const auto ids = appends.allocate({"dog", " cat ", "bird", "cat"});
  CHECK((ids == std::vector<std::uint32_t>{0, 1, 2, 1}));
  CHECK(index->num_concepts() >= vocabulary->size());  // every id the vocabulary names, the index holds
  const auto taken = appends.take();
  CHECK(taken.size() == 2 && taken[0] == std::make_pair(1u, std::string("cat")) && taken[1].second == "bird");
  CHECK(appends.take().empty());
}

POLARMEM_TEST(a_failed_write_puts_its_concepts_back_in_front) {
  auto vocabulary = std::make_shared<Vocabulary>();
  ConceptAppends appends(vocabulary, index_of());
  appends.allocate({"dog"});
  auto taken = appends.take();
  appends.allocate({"cat"});
  appends.put_back(std::move(taken));
  const auto next = appends.take();
  CHECK(next.size() == 2 && next[0].second == "dog" && next[1].second == "cat");
}

int main() { return polarmem::testing::run_all(); }
