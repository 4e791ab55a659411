// A Recall plan: one request as the library would run it (its core search, the concepts its
// hits cite, the run's settings, the response's parse), made by plan_recall (namespace_view.hpp)
// from the request and what the front holds of its namespace, and answered from the core by
// answer(), without the interpreter.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "polarmem/answer_recall.hpp"
#include "polarmem/index.hpp"
#include "polarmem/item_ids.hpp"
#include "polarmem/item_records.hpp"
#include "polarmem/metadata_postings.hpp"
#include "polarmem/recency.hpp"
#include "polarmem/rw_lock.hpp"
#include "polarmem/shared_text_runs.hpp"
#include "polarmem/text_parse.hpp"
#include "polarmem/v1/memory_service.pb.h"
#include "polarmem/vocabulary.hpp"
#include "polarmem/wordpiece.hpp"

namespace polarmem::front {

// What a plan for text queries holds beyond a vector plan's: the namespace's parse (its
// vocabulary, the library's query cue table) and its encoder with its tokenizer.
// The front parses each call's text, binds the concepts it names and embeds its affirmative
// part, as the library does (recall.py plan_query / run_recall).
struct TextPath {
  // The namespace's one vocabulary (the library's too): keys, names, live as writes append.
  std::shared_ptr<const text::Vocabulary> vocabulary;
  std::shared_ptr<const text::TriggerTable> triggers;
  // Null both in a namespace without an encoder: its texts give concepts only (no `sem` term, no
  // word mapped), as in the library.
  std::shared_ptr<const SharedTextRuns> encoder;  // concurrent calls share its passes
  std::shared_ptr<const WordPieceTokenizer> tokenizer;
  // In a closed vocabulary a word that names no concept maps to the most similar concept
  // (concept_mapping.hpp) by its embedding and the concept names' (the library's own vectors,
  // concept id = row, concept_count rows of the encoder's width); a call with such a word, made
  // after concepts were appended, goes to the library. In an open vocabulary the word is
  // reported as unknown.
  bool open_vocabulary = false;
  std::shared_ptr<const std::vector<float>> concept_vectors;
  std::size_t concept_count = 0;
  // The text's embedding fills the core request's `sem` term (RecallPlan::text_term).
};

// A backend that searches itself (Milvus): its searches and record reads for one call, which the
// library's servicer hands the core entry with the request (NamespaceViews::recall). The view holds
// no index; the core plans and runs the Recall and calls these as the store of its run.
struct BackendCalls {
  struct Hit {
    std::string id;
    int tier = 0;
    double score = 0.0;  // s_sem, as the backend scores it
    std::string record;  // the serialised record, where the search brought it ("": not brought)
  };
  struct Found {
    std::vector<Hit> hits;                             // in rank order
    std::array<std::int64_t, 3> tier_counts{0, 0, 0};  // conflict, neutral, entailed
  };
  // One search: the call's core request (vectors with their weights, concepts, mode, k, conflicts,
  // ranking, kinds, exactness) with its metadata filter; `absent_verified`: only items on which
  // every forbidden concept is NOT_HAS; `with_records`: bring the hits' records if the backend can.
  std::function<Found(const SearchRequest&, const std::vector<MetadataPair>&, bool absent_verified, bool with_records)>
      search;
  // The serialised records of `ids`, in order ("" for an item forgotten since its search).
  std::function<std::vector<std::string>(const std::vector<std::string>& ids)> records;
};

struct RecallPlan {
  std::shared_ptr<const Index> index;  // null where the backend searches itself (`backend`)
  std::shared_ptr<const ItemIds> ids;
  // The namespace's metadata postings: a request's metadata_equals becomes the search's
  // allow-list when the call is answered, in that moment's slots.
  std::shared_ptr<const MetadataPostings> metadata;
  // With `explain`: the hits are explained from their stored records (reasons, text, uri,
  // metadata), as the library explains them; a hit whose record the core does not hold sends
  // the call to the library.
  std::shared_ptr<const ItemRecords> records;
  bool explain = false;
  // The core request, without an allow-list (made per search); a text's term is filled with
  // its embedding.
  SearchRequest request;
  // The query's concepts whose states each hit reports (or, explained, whose evidence it
  // cites): required first, then forbidden.
  std::vector<std::uint32_t> state_concepts;
  std::size_t required_count = 0;
  std::vector<std::string> concept_names;  // the names of state_concepts, in the same order
  // The response before the call's hits and tier counts: its parse (a text's is the call's).
  v1::RecallResponse response_template;
  // Set for a text query: the concepts, states and parse come from the call's text (but for
  // explicit names), and the `sem` term from its encoding unless the request gives `sem` itself.
  std::shared_ptr<const TextPath> text;
  std::optional<std::size_t> text_term;  // the position in request.vectors of the term the text fills
  // The vocabulary the context names each hit's stated concepts by.
  std::shared_ptr<const text::Vocabulary> context_names;
  // Set (the notes to show, k) for an answer-mode question: the core's agent recall
  // (answer_recall.hpp) gathers, labels and explains the notes; `request` is its
  // plain-similarity search, whose vector, filters and exactness every search it makes shares.
  std::size_t answer_k = 0;
  answer::AnswerRule answer_rule = answer::kAgentRule;
  // The core runs the Recall (recall_run.hpp) with `request` as its search; these are what it
  // asks the run beyond that search. recency_k > 0: the recency term
  // (recency_half_life_s; hard or off, exact), the Recall's k being recency_k (`request`'s k is
  // set per search). adaptive: each call chooses hard or soft from its own probes of the index.
  // rule_words: the namespace's rule chose the mode ("<mode> (<why>)"); confidence_words: how
  // confidence ranks the hard searches ("" when it does not): mode_reason is written from them
  // per call.
  bool adaptive = false;
  std::size_t recency_k = 0;
  recency::Term recency;
  std::string rule_words, confidence_words;
  // The call's backend searches (a view without an index: Milvus); null: the index's.
  const BackendCalls* backend = nullptr;
};

// How a namespace's explicit concept names bind: by its vocabulary's lookup, the library's own.
struct NameBinding {
  std::shared_ptr<const text::Vocabulary> vocabulary;
};

// A Recall the core refuses: the gRPC status and what is wrong, naming the field and the fix.
struct Refusal {
  static constexpr int kInvalidArgument = 3;     // grpc::StatusCode's
  static constexpr int kFailedPrecondition = 9;
  int code = 0;  // 0: not refused
  std::string message;
  // Records the refusal; false, for a caller that answers "not answered" with it.
  bool refuse(std::string why, int status = kInvalidArgument) {
    code = status;
    message = std::move(why);
    return false;
  }
};

// Answers `request` by `plan` into `response`. False when it is not answered: refused where
// `*refused` says so (a text the compiled tokenizer declines, a text that leaves nothing to rank
// by); otherwise a passing state the library waits out (slots
// renumbered throughout, a concept or record the core does not hold yet, a search the core
// could not complete), and the caller asks again after it.
bool answer(RecallPlan plan, const v1::RecallRequest& request, v1::RecallResponse* response, Refusal* refused);

}  // namespace polarmem::front
