// NVTX ranges and marks as ptprof user ranges and marks. `ptprof run` sets
// NVTX_INJECTION64_PATH to the agent; the first NVTX call of the target
// loads it (already loaded: preloaded) and calls InitializeInjectionNvtx2,
// which fills NVTX's function tables with the callbacks below.
//
// nvtxRangePush/Pop (and the domain forms) nest per thread, as ptprof
// ranges do. nvtxRangeStart/End may end on another thread or out of order,
// which a per-thread range cannot express: a start is recorded as a mark.
#include <nvtx3/nvToolsExt.h>

#include <cstring>
#include <cwchar>
#include <forward_list>
#include <mutex>
#include <string>

#include "base/no_destructor.hpp"
#include "base/visibility.hpp"
#include "ptprof.h"

namespace ptprof::agent {
namespace {

// Registered strings and domain names: NVTX hands back the handles we
// return, so the text must live as long as the process. Few, never freed.
class Registry {
 public:
  const char* keep(std::string s) {
    std::lock_guard lock(mu_);
    return texts_.emplace_front(std::move(s)).c_str();
  }

 private:
  std::mutex mu_;
  std::forward_list<std::string> texts_;
};
Registry& registry() {
  static NoDestructor<Registry> r;
  return *r;
}

// UTF-8 of a wide string (NVTX's W functions).
std::string narrow(const wchar_t* w) {
  std::string out;
  if (!w) return out;
  for (; *w; ++w) {
    const auto c = static_cast<uint32_t>(static_cast<char32_t>(*w));
    if (c < 0x80) {
      out += char(c);
    } else if (c < 0x800) {
      out += char(0xC0 | (c >> 6));
      out += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += char(0xE0 | (c >> 12));
      out += char(0x80 | ((c >> 6) & 0x3F));
      out += char(0x80 | (c & 0x3F));
    } else {
      out += char(0xF0 | (c >> 18));
      out += char(0x80 | ((c >> 12) & 0x3F));
      out += char(0x80 | ((c >> 6) & 0x3F));
      out += char(0x80 | (c & 0x3F));
    }
  }
  return out;
}

// The message of an event's attributes; `storage` holds a converted one.
const char* message(const nvtxEventAttributes_t* a, std::string& storage) {
  if (!a) return nullptr;
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return a->message.ascii;
    case NVTX_MESSAGE_TYPE_UNICODE:
      storage = narrow(a->message.unicode);
      return storage.c_str();
    case NVTX_MESSAGE_TYPE_REGISTERED:
      // Our own handles: the registry's text (register_string_a below).
      return reinterpret_cast<const char*>(a->message.registered);
    default:
      return "";
  }
}

void mark_a(const char* m) { ptprof_mark(m); }
void mark_w(const wchar_t* m) { ptprof_mark(narrow(m).c_str()); }
void mark_ex(const nvtxEventAttributes_t* a) {
  std::string s;
  ptprof_mark(message(a, s));
}
nvtxRangeId_t start_a(const char* m) {
  ptprof_mark(m);
  return 0;
}
nvtxRangeId_t start_w(const wchar_t* m) {
  ptprof_mark(narrow(m).c_str());
  return 0;
}
nvtxRangeId_t start_ex(const nvtxEventAttributes_t* a) {
  mark_ex(a);
  return 0;
}
void range_end(nvtxRangeId_t) {}
int push_a(const char* m) {
  ptprof_range_push(m);
  return 0;
}
int push_w(const wchar_t* m) {
  ptprof_range_push(narrow(m).c_str());
  return 0;
}
int push_ex(const nvtxEventAttributes_t* a) {
  std::string s;
  ptprof_range_push(message(a, s));
  return 0;
}
int pop() {
  ptprof_range_pop();
  return 0;
}

void domain_mark_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) { mark_ex(a); }
nvtxRangeId_t domain_start_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) { return start_ex(a); }
void domain_range_end(nvtxDomainHandle_t, nvtxRangeId_t) {}
int domain_push_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) { return push_ex(a); }
int domain_pop(nvtxDomainHandle_t) { return pop(); }
nvtxStringHandle_t register_string_a(nvtxDomainHandle_t, const char* s) {
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<char*>(registry().keep(s ? s : "")));
}
nvtxStringHandle_t register_string_w(nvtxDomainHandle_t, const wchar_t* s) {
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<char*>(registry().keep(narrow(s))));
}
// A domain handle must be unique and non-null; the domain's name serves.
nvtxDomainHandle_t domain_create_a(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(const_cast<char*>(registry().keep(name ? name : "")));
}
nvtxDomainHandle_t domain_create_w(const wchar_t* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(const_cast<char*>(registry().keep(narrow(name))));
}
void domain_destroy(nvtxDomainHandle_t) {}

template <class Fn>
void set(NvtxFunctionTable table, unsigned int size, unsigned int id, Fn fn) {
  if (table && id < size && table[id]) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace
}  // namespace ptprof::agent

using namespace ptprof::agent;

// NOLINTNEXTLINE(readability-identifier-naming): NVTX looks it up by this name
PTPROF_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  if (!get_export_table) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (!callbacks || !callbacks->GetModuleFunctionTable) return 0;

  NvtxFunctionTable core = nullptr;
  unsigned int core_size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size)) return 0;
  set(core, core_size, NVTX_CBID_CORE_MarkEx, &mark_ex);
  set(core, core_size, NVTX_CBID_CORE_MarkA, &mark_a);
  set(core, core_size, NVTX_CBID_CORE_MarkW, &mark_w);
  set(core, core_size, NVTX_CBID_CORE_RangeStartEx, &start_ex);
  set(core, core_size, NVTX_CBID_CORE_RangeStartA, &start_a);
  set(core, core_size, NVTX_CBID_CORE_RangeStartW, &start_w);
  set(core, core_size, NVTX_CBID_CORE_RangeEnd, &range_end);
  set(core, core_size, NVTX_CBID_CORE_RangePushEx, &push_ex);
  set(core, core_size, NVTX_CBID_CORE_RangePushA, &push_a);
  set(core, core_size, NVTX_CBID_CORE_RangePushW, &push_w);
  set(core, core_size, NVTX_CBID_CORE_RangePop, &pop);

  NvtxFunctionTable core2 = nullptr;
  unsigned int core2_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size)) {
    set(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, &domain_mark_ex);
    set(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, &domain_start_ex);
    set(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, &domain_range_end);
    set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, &domain_push_ex);
    set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, &domain_pop);
    set(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, &register_string_a);
    set(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, &register_string_w);
    set(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, &domain_create_a);
    set(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, &domain_create_w);
    set(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, &domain_destroy);
  }
  return 1;
}
