#include "collect/process_names.hpp"

#include "ptprof/cuda_status.hpp"

namespace ptprof::launcher {

void ProcessNames::read_new() {
  arena_.read_new([this](std::string_view s) {
    texts_.emplace_back(s);
    cuda_notes_.push_back(s.starts_with(wire::kCudaNotePrefix));
  });
}

uint32_t ShapeTexts::intern(const std::string& text) {
  auto [it, inserted] = ids_.try_emplace(text, uint32_t(texts_.size()));
  if (inserted) texts_.push_back(text);
  return it->second + 1;
}

}  // namespace ptprof::launcher
