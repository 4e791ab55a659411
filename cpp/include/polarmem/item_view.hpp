// An item as the API shows it: the serialised polarmem.v1.Item of a stored ItemRecord, concept
// ids named by the namespace's vocabulary and the states listed by polarity (has, not_has,
// uncertain: every state but HAS and NOT_HAS), the history with it when asked. What every answer
// that carries an item sends (Remember, GetItem, ListItems, Observe, UpdateItem, a Recall's
// include_items), for every door.
#pragma once

#include <string>
#include <string_view>

#include "polarmem/vocabulary.hpp"

namespace polarmem::layout {

// Throws Error(kInvalidArgument) for a record that is not well-formed, Error(kOutOfRange) for a
// concept id the vocabulary does not name.
std::string item_view(std::string_view item_record, const text::Vocabulary& vocabulary, bool history);

}  // namespace polarmem::layout
