#include "record/thread_state.hpp"

namespace ptprof::agent::detail {

constinit thread_local ThreadState* tls_thread = nullptr;

}  // namespace ptprof::agent::detail
