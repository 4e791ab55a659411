#include "polarmem/shared_text_runs.hpp"

#include <algorithm>
#include <cstring>

#include "polarmem/call_weight.hpp"
#include "polarmem/error.hpp"

namespace polarmem {

SharedTextRuns::SharedTextRuns(std::shared_ptr<const TextEncoder> encoder, std::size_t max_runs, std::size_t max_tokens,
                               std::shared_ptr<EncodingCache> cache)
    : encoder_(std::move(encoder)), cache_(std::move(cache)), max_runs_(max_runs), max_tokens_(max_tokens) {
  if (!encoder_) fail(ErrorCode::kInvalidArgument, "shared text runs need an encoder");
  if (max_runs_ < 1) fail(ErrorCode::kInvalidArgument, "max_runs must be at least 1");
  if (cache_ && cache_->dim() != encoder_->dim())
    fail(ErrorCode::kInvalidArgument, "the encoding cache's width is not the encoder's");
}

void SharedTextRuns::encode(const std::vector<std::int32_t>& ids, float* out) const {
  if (cache_ && cache_->find(ids, out)) return;
  std::vector<Call> calls{Call{&ids, out, false, nullptr}};
  submit(calls);
  if (cache_) cache_->put(ids, out);
}

void SharedTextRuns::encode_many(const std::vector<std::vector<std::int32_t>>& texts, float* out) const {
  const std::size_t dim = encoder_->dim();
  std::vector<Call> calls;
  for (std::size_t i = 0; i < texts.size(); ++i)
    if (!cache_ || !cache_->find(texts[i], out + i * dim))
      calls.push_back(Call{&texts[i], out + i * dim, false, nullptr});
  if (calls.empty()) return;
  submit(calls);
  if (cache_)
    for (const Call& call : calls) cache_->put(*call.ids, call.out);
}

void SharedTextRuns::submit(std::vector<Call>& mine) const {
  const auto all_done = [&] {
    return std::all_of(mine.begin(), mine.end(), [](const Call& call) { return call.done; });
  };
  std::unique_lock lock(mutex_);
  for (Call& call : mine) waiting_.push_back(&call);
  if (running_ >= max_runs_)
    for (const Pass& pass : passes_) pass.weight->carry(pass.calls + waiting_.size());
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
    ++running_;
    {
      // The pass runs for its calls and every call that queues behind it meanwhile.
      ScopedCallWeight weight(calls.size() + waiting_.size());
      passes_.push_back({&weight, calls.size()});
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

void SharedTextRuns::run(const std::vector<Call*>& calls) const {
  std::vector<std::int32_t> ids, lengths;
  for (const Call* call : calls) {
    ids.insert(ids.end(), call->ids->begin(), call->ids->end());
    lengths.push_back(static_cast<std::int32_t>(call->ids->size()));
  }
  const std::size_t dim = encoder_->dim();
  try {
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
