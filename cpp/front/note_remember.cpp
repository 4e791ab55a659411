// NamespaceViews::remember (namespace_view.hpp): a new note stored by the core, as the library's
// Remember stores it (library/memory.py remember_batch, writes.py build_new and fill_sem), from the
// same core pieces — content_id.hpp, concept_appends.hpp, new_item_record.hpp, item_writes.hpp,
// item_view.hpp — under the namespace's write lock. What the library does that this does not
// (verification, client evidence and its partition, the already-stored answer, its own words
// for bad input) is handed back to it whole.
#include <chrono>
#include <mutex>

#include "namespace_view.hpp"
#include "polarmem/content_id.hpp"
#include "polarmem/error.hpp"
#include "polarmem/item_view.hpp"
#include "polarmem/new_item_record.hpp"
#include "polarmem/request_checks.hpp"
#include "polarmem/text_evidence.hpp"
#include "polarmem/utf8.hpp"

namespace polarmem::front {
namespace {

constexpr std::int32_t kKindVisual = 1, kKindText = 2;  // common/v1 ItemKind
// How long a native write waits for a library write holding the namespace before handing the
// call over (the library then waits its own way, up to the call's deadline).
constexpr double kLockWaitSeconds = 0.5;

// The kind's name as the library hashes it into a content id (domain/items.py content_id).
std::string_view kind_name(std::int32_t kind) { return kind == kKindText ? "text" : "visual"; }

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int status_of(ErrorCode code) {  // grpc::StatusCode's numbers, as the library maps the core's errors
  switch (code) {                 // (cpp/bindings/module.cpp: an id out of range is an invalid argument)
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kOutOfRange: return 3;
    case ErrorCode::kFailedPrecondition: return 9;
    case ErrorCode::kResourceExhausted: return 8;
    case ErrorCode::kUnavailable: return 14;
  }
  return 13;
}

// The note's fields as the library checks them, or false where the library must answer: evidence
// of its own, a kind, id, metadata or vector it refuses (it words the refusal), an item whose id
// the library derives from its vectors.
struct Note {
  std::int32_t kind = kKindVisual;
  std::string id;
  std::vector<std::pair<std::string, std::string>> metadata;
  std::vector<layout::VectorRows> vectors;
};

bool read_note(const NamespaceView& view, const v1::ItemInput& item, Note* note) {
  if (item.scores_size() != 0 || item.states_size() != 0 || item.verify_concepts_size() != 0 || !item.content().empty())
    return false;
  note->kind = item.kind() == 0 ? kKindVisual : item.kind();
  if (note->kind != kKindVisual && note->kind != kKindText) return false;
  if (!item.text().empty() && utf8::shows_nothing(item.text())) return false;  // the library refuses it
  note->id = item.id();
  if (note->id.empty()) {
    if (item.text().empty() && item.uri().empty()) return false;
    note->id = content_id(kind_name(note->kind), item.text(), item.uri(), "", "");
  } else if (note->id.size() > checks::kMaxItemIdBytes || note->id.find('\0') != std::string::npos) {
    return false;
  }
  note->metadata.assign(item.metadata().begin(), item.metadata().end());
  if (!checks::metadata_problem("metadata", note->metadata).empty()) return false;
  for (const auto& [space, value] : item.vectors()) {
    const auto spec =
        std::find_if(view.spaces.begin(), view.spaces.end(), [&](const SpaceConfig& s) { return s.name == space; });
    if (spec == view.spaces.end() || spec->multi || value.rows() > 1) return false;
    const auto dim = static_cast<std::size_t>(value.values_size());
    if (dim != spec->dim ||
        !checks::vector_problem("vectors", space, spec->dim, false, {dim}, value.values().data(), dim).empty())
      return false;
    note->vectors.push_back({space, value.values().data(), 1, dim});
  }
  return true;
}

}  // namespace

RememberOutcome NamespaceViews::remember(const v1::RememberRequest& request, v1::RememberResponse* response,
                                         Refusal* failed) const {
  const auto view = find(request.namespace_());
  if (!view || !view->writer || !request.has_item()) return RememberOutcome::kLibrary;
  const NamespaceWriter& writer = *view->writer;
  const v1::ItemInput& item = request.item();
  Note note;
  if (!read_note(*view, item, &note)) return RememberOutcome::kLibrary;
  const bool reads_text = note.kind == kKindText && !item.text().empty();
  // A note already stored (a retry, the same content again) is the library's answer: found here
  // before its text is encoded for nothing, and again under the lock.
  if (writer.items->items()->slot(note.id)) return RememberOutcome::kLibrary;

  // `sem` from the note's own text, encoded before the lock is taken (no write waits for an
  // encoder pass): the library encodes a text item's text, any other item's serialised state.
  std::vector<float> sem;
  if (writer.note_encoder && item.vectors().count("sem") == 0) {
    std::vector<std::int32_t> tokens;
    if (!reads_text || !writer.tokenizer->encode(item.text(), &tokens)) return RememberOutcome::kLibrary;
    sem.resize(writer.note_encoder->dim());
    writer.note_encoder->encode(tokens, sem.data());
    note.vectors.push_back({"sem", sem.data(), 1, sem.size()});
  }

  if (!writer.lock->try_lock_for(kLockWaitSeconds)) return RememberOutcome::kLibrary;
  std::lock_guard<WriteLock> held(*writer.lock, std::adopt_lock);
  // A settings change or a deletion drops the view under this lock: a view replaced meanwhile
  // was made for other settings, and the library writes with the new ones.
  if (find(request.namespace_()) != view) return RememberOutcome::kLibrary;
  if (writer.items->items()->slot(note.id)) return RememberOutcome::kLibrary;  // the already-stored answer

  const text::Vocabulary& vocabulary = *view->binding.vocabulary;
  try {
    if (reads_text && view->open_vocabulary) {  // every content word a concept, bound before the text is read
      // as the library binds them (writes.py concept_ids): a word the vocabulary finds — a
      // concept, an alias, a plural — is not a new concept
      std::vector<std::string> unknown;
      for (auto& term : text::content_terms(item.text(), *writer.note_triggers))
        if (!vocabulary.lookup(term)) unknown.push_back(std::move(term));
      if (!unknown.empty()) writer.appends->allocate(unknown);
    }
    layout::NewItemRecord fields;
    fields.id = note.id;
    fields.kind = note.kind;
    fields.text = item.text();
    fields.uri = item.uri();
    fields.metadata = std::move(note.metadata);
    fields.model = item.model();
    fields.template_version = writer.template_version;
    fields.created_ms = now_ms();
    fields.source = item.source().empty() ? layout::kDefaultSource : item.source();
    // No evidence of its own: the lexical pathway decides every concept the note states.
    const layout::TextReading reading{&vocabulary, writer.note_triggers.get(), true, view->open_vocabulary};
    const std::string record = layout::encode_new_item_record(fields, reads_text ? &reading : nullptr);
    writer.items->add({record}, {note.vectors});
    const std::string shown = layout::item_view(record, vocabulary, false);
    if (!response->mutable_item()->ParseFromString(shown)) fail(ErrorCode::kInvalidArgument, "item view unreadable");
    response->set_already_stored(false);
  } catch (const Error& error) {
    response->Clear();
    failed->code = status_of(error.code());
    failed->message = checks::cut_message(error.what());
    return RememberOutcome::kFailed;
  }
  return RememberOutcome::kStored;
}

}  // namespace polarmem::front
