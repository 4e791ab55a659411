// A Recall plan: what the library decided for one shape of request (namespace, concepts, mode,
// k, filters: every field but the query vectors' values), so the compiled front can answer the
// next request of that shape with the same core search and the same response, without the
// interpreter. The library publishes a plan after answering such a request itself; nothing here
// decides semantics (vocabulary, rules, modes): it only replays the library's decision.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "polarmem/index.hpp"
#include "polarmem/item_ids.hpp"
#include "polarmem/v1/memory_service.pb.h"

namespace polarmem::front {

struct RecallPlan {
  std::shared_ptr<const Index> index;
  std::shared_ptr<const ItemIds> ids;
  // The core request the library built; each term's values are filled from the call's vectors.
  SearchRequest request;
  // Per term of request.vectors: how many values the call must send (the space's dimension).
  std::vector<std::size_t> dims;
  // The query's concepts whose states each hit reports: required first, then forbidden.
  std::vector<std::uint32_t> state_concepts;
  std::size_t required_count = 0;
  std::vector<std::string> concept_names;  // the names of state_concepts, in the same order
  // The library's response without hits and tier counts (parse, mode_used, mode_reason).
  v1::RecallResponse response_template;
};

// The key of a request's shape: the request with every query vector's values removed,
// serialised deterministically (map entries sorted), so equal shapes give equal keys.
std::string plan_key(const v1::RecallRequest& request);

// Answers `request` by `plan` into `response`. False when the request cannot be answered this
// way (a vector of the wrong length, a value the core refuses, slots renumbered throughout):
// the caller then hands it to the library, which answers it (or explains the error) itself.
bool answer(const RecallPlan& plan, const v1::RecallRequest& request, v1::RecallResponse* response);

}  // namespace polarmem::front
