#include "structured/constraint.h"

#include <string_view>

namespace pagoda::structured {

Constraint::Constraint(std::shared_ptr<const CompiledGrammar> grammar, std::string trigger,
                       bool repeat)
    : grammar_(std::move(grammar)), trigger_(std::move(trigger)), repeat_(repeat) {
  if (trigger_.empty()) matcher_ = std::make_unique<Matcher>(grammar_);
}

std::unique_ptr<Constraint> Constraint::clone() const {
  auto copy = std::make_unique<Constraint>(grammar_, trigger_, repeat_);
  copy->matcher_ = matcher_ ? matcher_->clone() : nullptr;
  copy->tail_ = tail_;
  return copy;
}

bool Constraint::fill_mask(std::span<uint64_t> mask) {
  if (!matcher_) return false;
  matcher_->fill_mask(mask);
  return true;
}

Status Constraint::accept_token(int32_t token) {
  if (matcher_) {
    PAGODA_RETURN_IF_ERROR(matcher_->accept_token(token));
    // Repeat: a complete call returns the output to free text (the grammar's text ends with a
    // closing tag, so "may end" means "ended").
    if (repeat_ && !trigger_.empty() && !matcher_->is_finished() && matcher_->can_end()) {
      matcher_.reset();
      tail_.clear();
    }
    return Status();
  }
  const TokenTable& table = *grammar_->tokens();
  if (table.is_eog(token)) return Status();
  tail_ += table.text(token);  // a control token's text may be the trigger ([TOOL_CALLS])
  const size_t at = tail_.find(trigger_);
  if (at != std::string::npos) {
    const std::string_view rest = std::string_view(tail_).substr(at + trigger_.size());
    auto matcher = std::make_unique<Matcher>(grammar_);
    if (matcher->accept_bytes(rest)) {
      matcher_ = std::move(matcher);
      tail_.clear();
      if (repeat_ && matcher_->can_end()) matcher_.reset();
      return Status();
    }
    // The token ran past the trigger into text the grammar refuses: that call is not
    // constrained (its text stays what the model wrote); watch for the next trigger.
    tail_.erase(0, at + trigger_.size());
  }
  if (tail_.size() >= trigger_.size()) tail_.erase(0, tail_.size() - (trigger_.size() - 1));
  return Status();
}

}  // namespace pagoda::structured
