// The texts a process's records refer to by number: its string arena, read
// as the agent appends to it (ProcessNames), and the shapes texts the
// collector decodes from operators' inputs (ShapeTexts). Window files map
// these ids to their own string ids (window_trace.hpp).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ptprof/shm_abi.hpp"
#include "ptprof/string_arena.hpp"

namespace ptprof::launcher {

class ProcessNames {
 public:
  ProcessNames(const wire::ProcessHeader& header, const uint8_t* arena) : arena_(header, arena) {}

  // Reads what the agent appended since the last call.
  void read_new();
  // Reads on when `id` is not known yet (a record names it).
  void learn(uint32_t id) {
    if (id >= texts_.size()) read_new();
  }
  size_t size() const { return texts_.size(); }
  bool known(uint32_t id) const { return id < texts_.size(); }
  const std::string& text(uint32_t id) const { return texts_[id]; }
  // Whether `id` names one of the agent's notes on CUDA (a mark of the
  // agent's, not the program's: not charged to it).
  bool is_cuda_note(uint32_t id) const { return id < cuda_notes_.size() && cuda_notes_[id]; }

 private:
  wire::StringArenaReader arena_;
  std::vector<std::string> texts_{std::string()};  // arena id -> text; 0: no name
  std::vector<bool> cuda_notes_{false};
};

// Shapes texts, interned: ids are 1-based so that 0 says "none".
class ShapeTexts {
 public:
  uint32_t intern(const std::string& text);
  size_t size() const { return texts_.size(); }
  const std::string& text(uint32_t id) const { return texts_[id - 1]; }

 private:
  std::vector<std::string> texts_;
  std::unordered_map<std::string, uint32_t> ids_;
};

}  // namespace ptprof::launcher
