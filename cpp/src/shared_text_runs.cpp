#include "polarmem/shared_text_runs.hpp"

#include <algorithm>
#include <cstring>

#include "polarmem/call_weight.hpp"
#include "polarmem/error.hpp"

namespace polarmem {

namespace {

template <typename Pointers>
std::size_t distinct(Pointers pointers) {
  std::sort(pointers.begin(), pointers.end());
  return static_cast<std::size_t>(std::unique(pointers.begin(), pointers.end()) - pointers.begin());
}

}  // namespace

SharedTextRuns::SharedTextRuns(std::shared_ptr<const TextEncoder> encoder, std::size_t max_runs, std::size_t max_tokens,
                               std::shared_ptr<EncodingCache> cache, bool share)
    : encoder_(std::move(encoder)),
      cache_(std::move(cache)),
      max_runs_(max_runs),
      max_tokens_(max_tokens),
      share_(share) {
  if (!encoder_) fail(ErrorCode::kInvalidArgument, "shared text runs need an encoder");
  if (max_runs_ < 1) fail(ErrorCode::kInvalidArgument, "max_runs must be at least 1");
  if (cache_ && cache_->dim() != encoder_->dim())
    fail(ErrorCode::kInvalidArgument, "the encoding cache's width is not the encoder's");
  passes_.reserve(std::min<std::size_t>(max_runs_, 256));  // a pass's entry is then never an allocation
}

void SharedTextRuns::encode(const std::vector<std::int32_t>& ids, float* out) const {
  if (cache_ && cache_->find(ids, out)) return;
  std::vector<Call> calls{Call{&ids, out, nullptr, false, nullptr}};
  share_ ? submit(calls) : run_alone(calls);
  if (cache_) cache_->put(ids, out);
}

void SharedTextRuns::encode_many(const std::vector<std::vector<std::int32_t>>& texts, float* out) const {
  const std::size_t dim = encoder_->dim();
  std::vector<Call> calls;
  calls.reserve(texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i)
    if (!cache_ || !cache_->find(texts[i], out + i * dim))
      calls.push_back(Call{&texts[i], out + i * dim, nullptr, false, nullptr});
  if (calls.empty()) return;
  share_ ? submit(calls) : run_alone(calls);
  if (cache_)
    for (const Call& call : calls) cache_->put(*call.ids, call.out);
}

void SharedTextRuns::run_alone(std::vector<Call>& mine) const {
  for (std::size_t first = 0; first < mine.size();) {
    std::vector<Call*> pass;
    std::size_t tokens = 0;
    while (first < mine.size() && (pass.empty() || tokens + mine[first].ids->size() <= max_tokens_)) {
      tokens += mine[first].ids->size();
      pass.push_back(&mine[first++]);
    }
    run(pass);
  }
  for (const Call& call : mine)
    if (call.error) std::rethrow_exception(call.error);
}

std::size_t SharedTextRuns::waiting_callers() const {
  std::vector<const void*> callers;
  callers.reserve(waiting_.size());
  for (const Call* call : waiting_) callers.push_back(call->caller);
  return distinct(std::move(callers));
}

void SharedTextRuns::submit(std::vector<Call>& mine) const {
  for (Call& call : mine) call.caller = &mine;
  const auto all_done = [&] {
    return std::all_of(mine.begin(), mine.end(), [](const Call& call) { return call.done; });
  };
  std::unique_lock lock(mutex_);
  try {
    for (Call& call : mine) waiting_.push_back(&call);
  } catch (...) {  // (out of memory) none of this caller's calls may stay queued
    waiting_.erase(
        std::remove_if(waiting_.begin(), waiting_.end(), [&](const Call* call) { return call->caller == &mine; }),
        waiting_.end());
    throw;
  }
  if (running_ >= max_runs_)
    for (const Pass& pass : passes_) pass.weight->carry(pass.callers + waiting_callers());
  while (!all_done()) {
    if (running_ >= max_runs_ || waiting_.empty()) {
      finished_.wait(lock);
      continue;
    }
    // A pass takes the waiting calls in arrival order (these may be among them, or wait for the
    // next pass if earlier calls fill this one).
    std::vector<Call*> calls;
    std::size_t tokens = 0;
    while (!waiting_.empty() && (calls.empty() || tokens + waiting_.front()->ids->size() <= max_tokens_)) {
      tokens += waiting_.front()->ids->size();
      calls.push_back(waiting_.front());
      waiting_.pop_front();
    }
    std::vector<const void*> callers;
    for (const Call* call : calls) callers.push_back(call->caller);
    const std::size_t carried = distinct(std::move(callers));
    ++running_;
    {
      // The pass runs for its callers and every caller that queues behind it meanwhile.
      ScopedCallWeight weight(carried + waiting_callers());
      passes_.push_back({&weight, carried});
      lock.unlock();
      run(calls);
      lock.lock();
      passes_.erase(
          std::find_if(passes_.begin(), passes_.end(), [&](const Pass& pass) { return pass.weight == &weight; }));
    }  // the thread's own weight back, under the lock: no arrival re-weights it after this
    --running_;
    for (Call* done : calls) done->done = true;
    finished_.notify_all();
  }
  for (const Call& call : mine)
    if (call.error) std::rethrow_exception(call.error);
}

void SharedTextRuns::run(const std::vector<Call*>& calls) const noexcept {
  try {
    std::vector<std::int32_t> ids, lengths;
    for (const Call* call : calls) {
      ids.insert(ids.end(), call->ids->begin(), call->ids->end());
      lengths.push_back(static_cast<std::int32_t>(call->ids->size()));
    }
    const std::size_t dim = encoder_->dim();
    if (calls.size() == 1) {
      encoder_->encode(ids.data(), lengths.data(), 1, calls[0]->out);
      return;
    }
    std::vector<float> out(calls.size() * dim);
    encoder_->encode(ids.data(), lengths.data(), calls.size(), out.data());
    for (std::size_t i = 0; i < calls.size(); ++i)
      std::memcpy(calls[i]->out, out.data() + i * dim, dim * sizeof(float));
  } catch (...) {
    // One call's bad ids fail the whole pass: each call is run again alone, so only it fails.
    for (Call* call : calls) {
      try {
        const std::int32_t length = static_cast<std::int32_t>(call->ids->size());
        encoder_->encode(call->ids->data(), &length, 1, call->out);
      } catch (...) {
        call->error = std::current_exception();
      }
    }
  }
}

}  // namespace polarmem
