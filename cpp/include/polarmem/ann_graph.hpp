// An approximate nearest-neighbour graph (HNSW, from the vendored hnswlib) over one single-vector
// space, keyed by slot. It only ever answers "the best slots among these": the caller passes the
// allowed slots as a bitmap (one logic tier at a time), so the graph orders candidates within a
// tier and never decides between tiers. hnswlib stays inside ann_graph.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace polarmem {

// Per-space settings of the approximate index (Index builds one graph per single-vector space
// when `enabled`).
struct AnnConfig {
  bool enabled = false;
  std::size_t m = 16;                 // links per node (2m on the base layer)
  std::size_t ef_construction = 200;  // candidate list while inserting
  std::size_t ef_search = 64;         // candidate list while searching (a query may raise it)
  // A tier is scanned exactly when it holds at most max(exact_below, ef) items. Up to
  // count^2 <= exact_factor * ef * m * graph size a filtered graph walk over a tier spread through
  // the graph visits roughly ef * m / selectivity nodes, more rows than the tier's scan reads: such
  // a tier is walked within a budget first (a tier around the query fills the walk's list in a few
  // hundred rows) and scanned when the walk gives up (Index::run_approximate).
  std::size_t exact_below = 2048;
  double exact_factor = 4.0;  // break-even of a filtered walk vs the tier scan: bench_ann.py
};

class AnnGraph {
 public:
  AnnGraph(std::size_t dim, const AnnConfig& config);
  ~AnnGraph();
  AnnGraph(const AnnGraph&) = delete;
  AnnGraph& operator=(const AnnGraph&) = delete;

  const AnnConfig& config() const noexcept { return config_; }

  // Inserts or replaces slots' vectors ((slot, L2-normalised row of dim floats) pairs; the last
  // pair of a repeated slot wins); inserts run on up to `threads` threads.
  void upsert(const std::vector<std::pair<std::size_t, const float*>>& items, std::size_t threads);
  // Drops a slot (no-op when absent); its node stays in the graph as a deleted waypoint and
  // its storage is reused by a later insert.
  void erase(std::size_t slot);
  // Renumbers slots after Index::compact (every slot still in the graph must map to >= 0).
  void relabel(const std::vector<std::int64_t>& new_of_old);
  // Up to k (slot, cosine) pairs, best first by the graph's int8 rows (cosines within their
  // quantisation error), among the slots whose bit is set in `allowed_words` (slot s is bit s % 64
  // of word s / 64; `word_count` words; nullptr = every slot in the graph). ef = 0 takes the
  // configured ef_search; the search list holds max(ef, k) entries (Index asks for 2k candidates
  // with ef >= 2k, and re-scores them exactly). With `gave_up` and `max_distances` > 0, a filtered
  // walk stops once it has scored that many rows, or once its rate of meeting allowed slots says its
  // list would not fill within them: *gave_up, nothing returned. The measurement walks of
  // POLARMEM_ANN_WALK keep no budget: they give up at once, so the caller scans as it would have.
  std::vector<std::pair<std::size_t, float>> search(const float* query, std::size_t k, std::size_t ef,
                                                    const std::uint64_t* allowed_words, std::size_t word_count,
                                                    std::size_t max_distances = 0, bool* gave_up = nullptr) const;

  std::size_t size() const noexcept;  // slots in the graph (live nodes)
  std::size_t memory_bytes() const noexcept;
  // The graph as a file (hnswlib's format) and back; load replaces this graph (and ends a
  // deferral).
  void save(const std::string& path) const;
  void load(const std::string& path);
  // Stops taking writes until load() replaces the graph: a start-up that will load a saved graph
  // adds the stored items without building one. Searches meanwhile see an empty graph.
  void defer() noexcept { deferred_ = true; }
  // The slots the graph holds, ascending.
  std::vector<std::size_t> slots() const;

 private:
  struct Impl;
  std::size_t dim_;
  AnnConfig config_;
  bool deferred_ = false;
  std::unique_ptr<Impl> impl_;
};

}  // namespace polarmem
