#include "polarmem/ann_graph.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <queue>
#include <thread>
#include <unordered_map>

#include "hnswlib/hnswlib.h"
#include "polarmem/error.hpp"
#include "polarmem/huge_pages.hpp"
#include "polarmem/simd.hpp"

namespace polarmem {
namespace {

using Graph = hnswlib::HierarchicalNSW<float>;

// A walk reads nodes scattered over the level-0 array: ask for huge pages there (huge_pages.hpp).
// Called after every (re)allocation of the array; pages already touched are collapsed later.
void advise_node_array(Graph& g) noexcept {
  advise_huge_pages(g.data_level0_memory_, g.max_elements_ * g.size_data_per_element_);
}

// A label no slot can have: a removed node keeps it while it waits to be reused.
constexpr hnswlib::labeltype kDeadLabel = std::numeric_limits<hnswlib::labeltype>::max();

// The graph keeps its own copy of every vector as int8 codes with one scale per row (the int8
// storage's quantiser: scale = max |x_i| / 127), laid out [scale: float][codes: dim bytes] after
// the node's links. A build or a walk is bound by reading the rows of the nodes it visits, each a
// likely miss: at d = 384 a row is 388 bytes (7 cache lines) against 768 as binary16 and 1,536 as
// fp32. The codes only order candidates (a cosine error of ~1e-3 at most); every hit is scored
// again with the exact path's kernel (Index::run_approximate).
constexpr std::size_t kScaleBytes = sizeof(float);

std::size_t row_bytes(std::size_t dim) { return kScaleBytes + dim; }

// A row as the graph stores it.
void to_row(const float* values, std::size_t dim, char* out) {
  float max_abs = 0.0f;
  for (std::size_t i = 0; i < dim; ++i) max_abs = std::max(max_abs, std::fabs(values[i]));
  const float scale = max_abs / 127.0f;
  std::memcpy(out, &scale, kScaleBytes);
  auto* codes = reinterpret_cast<std::int8_t*>(out + kScaleBytes);
  for (std::size_t i = 0; i < dim; ++i) {
    codes[i] = scale > 0.0f ? static_cast<std::int8_t>(std::clamp(std::lround(values[i] / scale), -127L, 127L)) : 0;
  }
}

float row_scale(const char* row) {
  float scale;
  std::memcpy(&scale, row, kScaleBytes);
  return scale;
}

const std::int8_t* row_codes(const char* row) { return reinterpret_cast<const std::int8_t*>(row + kScaleBytes); }

// hnswlib's inner-product space over those rows: both sides are stored rows while it links nodes.
class Int8InnerProductSpace : public hnswlib::SpaceInterface<float> {
 public:
  explicit Int8InnerProductSpace(std::size_t dim) : param_{dim, active_kernels().dot_i8_i8} {}
  std::size_t get_data_size() override { return row_bytes(param_.dim); }
  hnswlib::DISTFUNC<float> get_dist_func() override { return &distance; }
  void* get_dist_func_param() override { return &param_; }

 private:
  // The active level's kernel when the graph was made (every level gives the same integer).
  struct Param {
    std::size_t dim;
    std::int32_t (*dot)(const std::int8_t*, const std::int8_t*, std::size_t);
  };
  static float distance(const void* a, const void* b, const void* param) {
    const auto* p = static_cast<const Param*>(param);
    const char* ra = static_cast<const char*>(a);
    const char* rb = static_cast<const char*>(b);
    const std::int32_t dot = p->dot(row_codes(ra), row_codes(rb), p->dim);
    return 1.0f - row_scale(ra) * row_scale(rb) * static_cast<float>(dot);
  }
  Param param_;
};

// A query as a walk scores it against stored rows: int16 codes (as the int8 storage quantises a
// query: as fine as the int32 accumulator allows) and the exact integer kernel.
class QueryCodes {
 public:
  QueryCodes(const float* values, std::size_t dim) : codes_(dim), dim_(dim), dot_(active_kernels().dot_i8) {
    const double max_code = std::min(32767.0, std::floor(2147483647.0 / (127.0 * static_cast<double>(dim))));
    float max_abs = 0.0f;
    for (std::size_t i = 0; i < dim; ++i) max_abs = std::max(max_abs, std::fabs(values[i]));
    const double scale = static_cast<double>(max_abs) / max_code;
    for (std::size_t i = 0; i < dim; ++i) {
      const long code = scale > 0.0 ? std::lround(values[i] / scale) : 0;
      codes_[i] =
          static_cast<std::int16_t>(std::clamp(code, -static_cast<long>(max_code), static_cast<long>(max_code)));
    }
    scale_ = static_cast<float>(scale);
  }
  float distance(const char* row) const {
    return 1.0f - scale_ * row_scale(row) * static_cast<float>(dot_(codes_.data(), row_codes(row), dim_));
  }

 private:
  std::vector<std::int16_t> codes_;
  std::size_t dim_;
  float scale_ = 0.0f;
  std::int32_t (*dot_)(const std::int16_t*, const std::int8_t*, std::size_t);
};

// Admits the slots whose bit is set: the tier (or tier union) being searched.
class BitmapFilter final : public hnswlib::BaseFilterFunctor {
 public:
  BitmapFilter(const std::uint64_t* words, std::size_t word_count) : words_(words), word_count_(word_count) {}
  bool operator()(hnswlib::labeltype slot) override {
    const std::size_t w = slot / 64;
    return w < word_count_ && ((words_[w] >> (slot % 64)) & 1u);
  }

 private:
  const std::uint64_t* words_;
  std::size_t word_count_;
};

constexpr std::size_t kInitialCapacity = 1024;
// The most links a base-layer node can hold (2m, m <= 512: AnnConfig's bound).
constexpr std::size_t kMaxBaseLinks = 1024;

using DistanceNode = std::pair<float, hnswlib::tableint>;
using FarthestFirst = std::priority_queue<DistanceNode>;  // top() = the farthest
using NearestFirst = std::priority_queue<DistanceNode, std::vector<DistanceNode>, std::greater<DistanceNode>>;

// Which base-layer walk a search runs. "prefetch" (the default, prefetching_walk): hnswlib's rule
// (for a filtered search the ef list holds allowed nodes only, so the walk goes on until it has
// met ef allowed nodes) with each node's neighbours' rows fetched together. "hnswlib": hnswlib's
// own searchBaseLayerST (the same rule, one row fetched ahead; its query rounded to int8 like a row). "bounded"
// (FAISS's rule, filtered searches only): the ef list holds the nearest nodes visited, allowed or not, so the walk
// covers what an unfiltered walk with that ef covers. POLARMEM_ANN_WALK picks one for measurement
// (benchmarks/bench_ann.py --walks); read at each search (a getenv, ~0.1 us against a walk of ~0.2 ms) so one process
// can compare them on one graph.
enum class Walk { kPrefetch, kHnswlib, kBounded };

Walk chosen_walk() {
  const char* choice = std::getenv("POLARMEM_ANN_WALK");
  if (choice == nullptr) return Walk::kPrefetch;
  if (std::strcmp(choice, "bounded") == 0) return Walk::kBounded;
  if (std::strcmp(choice, "hnswlib") == 0) return Walk::kHnswlib;
  return Walk::kPrefetch;
}

// The filtered base-layer walk with FAISS's stop rule (see chosen_walk); up to `want` allowed,
// live nodes, nearest first in a farthest-first heap.
FarthestFirst bounded_search(const Graph& g, hnswlib::tableint entry, const QueryCodes& query, std::size_t ef,
                             std::size_t want, hnswlib::BaseFilterFunctor* allowed) {
  hnswlib::VisitedList* visited_list = g.visited_list_pool_->getFreeVisitedList();
  hnswlib::vl_type* visited = visited_list->mass;
  const hnswlib::vl_type tag = visited_list->curV;
  FarthestFirst nearest;  // the ef nearest nodes visited, allowed or not: the walk's bound
  NearestFirst frontier;  // nodes still to expand
  FarthestFirst found;    // the `want` nearest allowed live nodes
  auto consider_result = [&](float d, hnswlib::tableint node) {
    if (g.isMarkedDeleted(node) || !(*allowed)(g.getExternalLabel(node))) return;
    if (found.size() < want) {
      found.emplace(d, node);
    } else if (d < found.top().first) {
      found.pop();
      found.emplace(d, node);
    }
  };
  const float d0 = query.distance(g.getDataByInternalId(entry));
  nearest.emplace(d0, entry);
  frontier.emplace(d0, entry);
  consider_result(d0, entry);
  visited[entry] = tag;
  while (!frontier.empty()) {
    const auto [d, node] = frontier.top();
    if (d > nearest.top().first && nearest.size() >= ef) break;
    frontier.pop();
    hnswlib::linklistsizeint* links = g.get_linklist0(node);
    const std::size_t count = g.getListCount(links);
    const auto* neighbours = reinterpret_cast<const hnswlib::tableint*>(links + 1);
    for (std::size_t i = 0; i < count; ++i) {
      const hnswlib::tableint next = neighbours[i];
      if (i + 1 < count) {
        __builtin_prefetch(visited + neighbours[i + 1]);
        __builtin_prefetch(g.getDataByInternalId(neighbours[i + 1]));
      }
      if (visited[next] == tag) continue;
      visited[next] = tag;
      const float dn = query.distance(g.getDataByInternalId(next));
      if (nearest.size() < ef || dn < nearest.top().first) {
        frontier.emplace(dn, next);
        nearest.emplace(dn, next);
        if (nearest.size() > ef) nearest.pop();
      }
      consider_result(dn, next);
    }
  }
  g.visited_list_pool_->releaseVisitedList(visited_list);
  return found;
}

// hnswlib's base-layer walk (searchBaseLayerST without a stop condition: the same visiting
// order, bound and tie rules), but each expanded node's unvisited neighbours are gathered first
// and all their rows prefetched before any is scored. hnswlib prefetches one neighbour's first
// line ahead, so its walk waits on about one row miss at a time; requested together the misses
// overlap (up to 2m neighbours per node, d + 4 bytes per row): 1.3-1.6x faster per walk on the
// same graph (bench_ann.py --walks prefetch hnswlib, measured on binary16 rows). The query is
// scored as int16 codes (QueryCodes), finer than the rows. `kChecked`: deleted nodes and nodes the
// filter refuses route the walk but are never results, and the walk stops only with a full list,
// as hnswlib's checked walk does. `max_distances` > 0 (checked walks): the walk gives up
// (*gave_up) once it has scored that many rows, or sooner, once past its first ef rows, when at
// the rate it has met allowed nodes so far its list would not fill within them (a tier far from
// the query: the caller scans it instead).
template <bool kChecked>
FarthestFirst prefetching_walk(const Graph& g, hnswlib::tableint entry, const QueryCodes& query, std::size_t bytes,
                               std::size_t ef, BitmapFilter* allowed, std::size_t max_distances = 0,
                               bool* gave_up = nullptr) {
  hnswlib::VisitedList* visited_list = g.visited_list_pool_->getFreeVisitedList();
  hnswlib::vl_type* visited = visited_list->mass;
  const hnswlib::vl_type tag = visited_list->curV;
  auto admissible = [&](hnswlib::tableint node) {
    return !kChecked || (!g.isMarkedDeleted(node) && (allowed == nullptr || (*allowed)(g.getExternalLabel(node))));
  };
  auto distance = [&](hnswlib::tableint node) { return query.distance(g.getDataByInternalId(node)); };
  FarthestFirst top;      // up to ef admissible nodes, farthest on top
  NearestFirst frontier;  // nodes still to expand
  float bound = std::numeric_limits<float>::max();
  if (admissible(entry)) {
    const float d = distance(entry);
    bound = d;
    top.emplace(d, entry);
    frontier.emplace(d, entry);
  } else {
    frontier.emplace(bound, entry);
  }
  visited[entry] = tag;
  hnswlib::tableint pending[kMaxBaseLinks];
  float pending_distance[kMaxBaseLinks];
  std::size_t distances = 0;
  while (!frontier.empty()) {
    const auto [d, node] = frontier.top();
    if (d > bound && (!kChecked || top.size() == ef)) break;
    if (kChecked && max_distances > 0 &&
        (distances > max_distances ||
         (distances >= ef && distances * ef > max_distances * std::max<std::size_t>(top.size(), 1)))) {
      *gave_up = true;
      break;
    }
    frontier.pop();
    hnswlib::linklistsizeint* links = g.get_linklist0(node);
    const std::size_t count = std::min<std::size_t>(g.getListCount(links), kMaxBaseLinks);
    const auto* neighbours = reinterpret_cast<const hnswlib::tableint*>(links + 1);
    for (std::size_t i = 0; i < count; ++i) __builtin_prefetch(visited + neighbours[i]);
    std::size_t fresh = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const hnswlib::tableint next = neighbours[i];
      if (visited[next] == tag) continue;
      visited[next] = tag;
      pending[fresh++] = next;
      const char* row = g.getDataByInternalId(next);
      for (std::size_t line = 0; line < bytes; line += 64) __builtin_prefetch(row + line);
    }
    for (std::size_t i = 0; i < fresh; ++i) pending_distance[i] = distance(pending[i]);
    distances += fresh;
    for (std::size_t i = 0; i < fresh; ++i) {
      const float dn = pending_distance[i];
      if (top.size() >= ef && dn >= bound) continue;
      frontier.emplace(dn, pending[i]);
      if (admissible(pending[i])) top.emplace(dn, pending[i]);
      if (top.size() > ef) top.pop();
      if (!top.empty()) bound = top.top().first;
    }
  }
  g.visited_list_pool_->releaseVisitedList(visited_list);
  return top;
}

}  // namespace

struct AnnGraph::Impl {
  Int8InnerProductSpace space;
  std::unique_ptr<Graph> graph;
  explicit Impl(std::size_t dim) : space(dim) {}
};

AnnGraph::AnnGraph(std::size_t dim, const AnnConfig& config)
    : dim_(dim), config_(config), impl_(std::make_unique<Impl>(dim)) {
  if (config_.m < 2 || config_.m > 512)
    fail(ErrorCode::kInvalidArgument, "ann.m must lie in [2, 512], got " + std::to_string(config_.m));
  if (config_.ef_construction < 1 || config_.ef_construction > 10000) {
    fail(ErrorCode::kInvalidArgument,
         "ann.ef_construction must lie in [1, 10000], got " + std::to_string(config_.ef_construction));
  }
  if (config_.ef_search < 1 || config_.ef_search > 10000) {
    fail(ErrorCode::kInvalidArgument, "ann.ef_search must lie in [1, 10000], got " + std::to_string(config_.ef_search));
  }
  if (!(config_.exact_factor >= 0.0)) fail(ErrorCode::kInvalidArgument, "ann.exact_factor must be >= 0");
  impl_->graph =
      std::make_unique<Graph>(&impl_->space, kInitialCapacity, config_.m, config_.ef_construction, 100, true);
  advise_node_array(*impl_->graph);
}

AnnGraph::~AnnGraph() = default;

void AnnGraph::upsert(const std::vector<std::pair<std::size_t, const float*>>& items, std::size_t threads) {
  if (deferred_) return;
  Graph& g = *impl_->graph;
  // The last row given for a slot wins, as in VectorSpace::assign.
  std::unordered_map<std::size_t, std::size_t> last;
  last.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) last[items[i].first] = i;
  std::vector<std::pair<std::size_t, const float*>> work;
  work.reserve(last.size());
  std::size_t fresh = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (last[items[i].first] != i) continue;
    work.push_back(items[i]);
    if (g.label_lookup_.find(items[i].first) == g.label_lookup_.end()) ++fresh;
  }
  const std::size_t vacant = g.deleted_elements.size();
  const std::size_t needed = g.cur_element_count + (fresh > vacant ? fresh - vacant : 0);
  if (needed > g.max_elements_) {
    g.resizeIndex(std::max(needed, g.max_elements_ + g.max_elements_ / 2));
    advise_node_array(g);
  }

  // A slot already in the graph is updated in place; a new one takes a removed node's storage
  // when there is one (hnswlib's replace_deleted) or a fresh node.
  auto insert = [&](std::size_t i, std::vector<char>& converted) {
    const auto [slot, row] = work[i];
    bool present;
    {
      std::lock_guard guard(g.label_lookup_lock);  // other threads insert other labels meanwhile
      present = g.label_lookup_.count(slot) > 0;
    }
    to_row(row, dim_, converted.data());
    g.addPoint(converted.data(), slot, !present);
  };
  const std::size_t workers = std::max<std::size_t>(1, std::min(threads, work.size() / 256));
  if (workers <= 1) {
    std::vector<char> converted(row_bytes(dim_));
    for (std::size_t i = 0; i < work.size(); ++i) insert(i, converted);
    return;
  }
  // Each label is written by one thread; hnswlib locks per node and per label.
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_lock;
  auto run = [&] {
    try {
      std::vector<char> converted(row_bytes(dim_));
      for (std::size_t i = next.fetch_add(1); i < work.size(); i = next.fetch_add(1)) insert(i, converted);
    } catch (...) {
      std::lock_guard guard(failure_lock);
      failure = std::current_exception();
      next = work.size();
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(run);
  run();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

void AnnGraph::erase(std::size_t slot) {
  if (deferred_) return;
  Graph& g = *impl_->graph;
  const auto it = g.label_lookup_.find(slot);
  if (it == g.label_lookup_.end()) return;
  const auto node = it->second;
  g.markDeletedInternal(node);  // queues the node for reuse (replace_deleted)
  g.label_lookup_.erase(it);
  g.setExternalLabel(node, kDeadLabel);
}

void AnnGraph::relabel(const std::vector<std::int64_t>& new_of_old) {
  Graph& g = *impl_->graph;
  g.label_lookup_.clear();
  for (std::size_t node = 0; node < g.cur_element_count; ++node) {
    if (g.isMarkedDeleted(static_cast<hnswlib::tableint>(node))) continue;
    const hnswlib::labeltype old = g.getExternalLabel(static_cast<hnswlib::tableint>(node));
    if (old >= new_of_old.size() || new_of_old[old] < 0) {
      fail(ErrorCode::kFailedPrecondition,
           "ann graph: slot " + std::to_string(old) + " was compacted away while still indexed");
    }
    const auto slot = static_cast<hnswlib::labeltype>(new_of_old[old]);
    g.setExternalLabel(static_cast<hnswlib::tableint>(node), slot);
    g.label_lookup_[slot] = static_cast<hnswlib::tableint>(node);
  }
}

std::vector<std::pair<std::size_t, float>> AnnGraph::search(const float* query_row, std::size_t k, std::size_t ef,
                                                            const std::uint64_t* allowed_words, std::size_t word_count,
                                                            std::size_t max_distances, bool* gave_up) const {
  const Graph& g = *impl_->graph;
  std::vector<std::pair<std::size_t, float>> out;
  if (gave_up != nullptr) *gave_up = false;
  const std::size_t budget = gave_up != nullptr ? max_distances : 0;  // (a budget needs somewhere to say it ran out)
  if (g.cur_element_count == 0 || g.cur_element_count == g.num_deleted_) return out;
  const QueryCodes query(query_row, dim_);
  BitmapFilter filter(allowed_words, word_count);
  // hnswlib's searchKnn with a per-call ef (its setEf is one shared value, not thread-safe).
  hnswlib::tableint current = g.enterpoint_node_;
  float current_distance = query.distance(g.getDataByInternalId(current));
  for (int level = g.maxlevel_; level > 0; --level) {
    bool changed = true;
    while (changed) {
      changed = false;
      unsigned int* links = g.get_linklist(current, level);
      const int size = g.getListCount(links);
      const auto* neighbours = reinterpret_cast<const hnswlib::tableint*>(links + 1);
      for (int i = 0; i < size; ++i) {
        const float d = query.distance(g.getDataByInternalId(neighbours[i]));
        if (d < current_distance) {
          current_distance = d;
          current = neighbours[i];
          changed = true;
        }
      }
    }
  }
  const std::size_t list = std::max(ef == 0 ? config_.ef_search : ef, k);
  // No filter when every live node is allowed (plain similarity over the whole space): hnswlib's
  // unchecked walk when nothing is deleted either.
  const bool everything = allowed_words == nullptr;
  auto emit = [&](auto& top) {
    while (top.size() > k) top.pop();
    out.resize(top.size());
    for (std::size_t i = top.size(); i-- > 0;) {
      out[i] = {g.getExternalLabel(top.top().second), 1.0f - top.top().first};
      top.pop();
    }
  };
  const Walk walk = chosen_walk();
  if (walk != Walk::kPrefetch && !everything && budget > 0) {
    *gave_up = true;  // (a measurement walk keeps no budget: the caller's scan, as without one)
    return out;
  }
  BitmapFilter* admit = everything ? nullptr : &filter;
  const bool unchecked = everything && g.num_deleted_ == 0;
  if (!everything && walk == Walk::kBounded) {
    auto top = bounded_search(g, current, query, list, k, &filter);
    emit(top);
  } else if (walk == Walk::kHnswlib) {
    // hnswlib scores a query in the stored rows' own form.
    std::vector<char> stored(row_bytes(dim_));
    to_row(query_row, dim_, stored.data());
    auto top = unchecked ? g.searchBaseLayerST<true>(current, stored.data(), list)
                         : g.searchBaseLayerST<false>(current, stored.data(), list, admit);
    emit(top);
  } else {
    auto top = unchecked ? prefetching_walk<false>(g, current, query, row_bytes(dim_), list, nullptr)
                         : prefetching_walk<true>(g, current, query, row_bytes(dim_), list, admit, budget, gave_up);
    if (budget > 0 && *gave_up) return {};
    emit(top);
  }
  return out;
}

std::size_t AnnGraph::size() const noexcept {
  const Graph& g = *impl_->graph;
  return g.cur_element_count - g.num_deleted_;
}

std::size_t AnnGraph::memory_bytes() const noexcept {
  const Graph& g = *impl_->graph;
  std::size_t upper = 0;
  for (std::size_t node = 0; node < g.cur_element_count; ++node) {
    upper += static_cast<std::size_t>(std::max(0, g.element_levels_[node])) * g.size_links_per_element_;
  }
  // Base layer (links + vector + label per node), upper layers, per-node lock and level, and
  // the label table.
  return g.max_elements_ * (g.size_data_per_element_ + sizeof(void*) + sizeof(int) + sizeof(std::mutex)) + upper +
         g.label_lookup_.size() * (sizeof(hnswlib::labeltype) + sizeof(hnswlib::tableint) + 2 * sizeof(void*));
}

void AnnGraph::save(const std::string& path) const { impl_->graph->saveIndex(path); }

void AnnGraph::load(const std::string& path) {
  auto loaded = std::make_unique<Graph>(&impl_->space, path, false, 0, true);
  // hnswlib takes the row size from the space, not the file: the file's own row size is the
  // gap between its links and its label in a node.
  if (loaded->label_offset_ - loaded->offsetData_ != row_bytes(dim_)) {
    fail(ErrorCode::kInvalidArgument,
         "ann graph file " + path +
             " holds vectors of another dimension or format (fp32 or "
             "binary16 graphs saved before the graph stored int8 rows): rebuild the graph");
  }
  // hnswlib maps every node's label, removed ones too: keep only live nodes.
  loaded->label_lookup_.clear();
  for (std::size_t node = 0; node < loaded->cur_element_count; ++node) {
    const auto id = static_cast<hnswlib::tableint>(node);
    if (!loaded->isMarkedDeleted(id)) loaded->label_lookup_[loaded->getExternalLabel(id)] = id;
  }
  advise_node_array(*loaded);
  impl_->graph = std::move(loaded);
  deferred_ = false;
}

std::vector<std::size_t> AnnGraph::slots() const {
  std::vector<std::size_t> out;
  out.reserve(impl_->graph->label_lookup_.size());
  for (const auto& [slot, node] : impl_->graph->label_lookup_) out.push_back(slot);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace polarmem
