#include "services_double.hpp"

#include <algorithm>
#include <cstring>

#include "record/services.hpp"

namespace ptprof::agent {

namespace testing {
ServicesDouble& services() {
  static ServicesDouble s;
  return s;
}
}  // namespace testing

bool agent_active() { return testing::services().active; }

ThreadState* register_calling_thread() {
  ++testing::services().register_calls;
  return testing::services().registered;
}

uint32_t intern_name(const char* s, const char** text) {
  testing::ServicesDouble& d = testing::services();
  ++d.intern_calls;
  if (!s) return 0;
  const std::string name(s, std::min<size_t>(std::strlen(s), d.max_bytes));
  for (size_t i = 0; i < d.names.size(); ++i) {
    if (d.names[i] == name) {
      *text = d.names[i].c_str();
      return uint32_t(i + 1);
    }
  }
  if (d.names.size() >= d.capacity) return 0;
  d.names.push_back(name);
  *text = d.names.back().c_str();
  return uint32_t(d.names.size());
}

}  // namespace ptprof::agent
