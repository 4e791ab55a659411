// Concurrent text queries sharing the encoder's passes. A call that arrives while `max_runs`
// passes are running waits, and is encoded together with every call that arrived meanwhile in
// the next pass: each weight is read once for all of them (a short query's pass is bound by
// reading the weights, docs/performance.md "A realistic mix", round 9). An idle encoder runs a
// call at once, alone, so one call at a time pays nothing. A pass's vectors do not depend on
// what else is in it (the linear layers work per token, attention per text), so sharing changes
// no vector: the compiled front's answers stay the library's. A running pass's thread is weighted
// by the calls it carries and the calls queued behind it (call_weight.hpp). With a cache
// (encoding_cache.hpp), a text already encoded is answered from it and a new one is put there.
// The library's encoder and the compiled front each hold one over the same encoder and cache.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "polarmem/call_weight.hpp"
#include "polarmem/encoding_cache.hpp"
#include "polarmem/text_encoder.hpp"

namespace polarmem {

class SharedTextRuns {
 public:
  // max_runs: passes at once (at least 1); max_tokens: a pass stops taking calls past it (a call
  // longer than that still runs, alone). `share` false: each caller's texts run on its own
  // thread, in passes of at most max_tokens, never queued nor weighted (the cache still applies).
  SharedTextRuns(std::shared_ptr<const TextEncoder> encoder, std::size_t max_runs, std::size_t max_tokens = 1024,
                 std::shared_ptr<EncodingCache> cache = nullptr, bool share = true);

  // One text's token ids (its [CLS] ... [SEP]) -> out (dim() floats). Throws what the encoder
  // throws for this call's ids.
  void encode(const std::vector<std::int32_t>& ids, float* out) const;
  // Several texts (a short batch: a query's words, a write's new concept names) -> out
  // (texts.size() * dim() floats), queued together; throws the first text's error, if any.
  void encode_many(const std::vector<std::vector<std::int32_t>>& texts, float* out) const;

  std::size_t dim() const { return encoder_->dim(); }

 private:
  struct Call {
    const std::vector<std::int32_t>* ids;
    float* out;
    const void* caller;  // whose call (one caller may queue several texts): weights count callers
    bool done = false;
    std::exception_ptr error;
  };
  // Never throws: a pass's failure is each failing call's error.
  void run(const std::vector<Call*>& calls) const noexcept;
  // Queues `calls` and runs passes until every one of them is done; rethrows the first error.
  void submit(std::vector<Call>& calls) const;
  // `calls` in passes on this thread alone (share false).
  void run_alone(std::vector<Call>& calls) const;
  // Callers with a call in the queue (under mutex_).
  std::size_t waiting_callers() const;

  std::shared_ptr<const TextEncoder> encoder_;
  const std::shared_ptr<EncodingCache> cache_;
  const std::size_t max_runs_, max_tokens_;
  const bool share_;
  mutable std::mutex mutex_;
  mutable std::condition_variable finished_;
  mutable std::deque<Call*> waiting_;
  mutable std::size_t running_ = 0;
  struct Pass {
    ScopedCallWeight* weight;
    std::size_t callers;
  };
  mutable std::vector<Pass> passes_;  // the running passes, to re-weight as calls queue
};

}  // namespace polarmem
