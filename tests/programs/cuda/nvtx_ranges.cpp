// NVTX from the toolkit's header-only nvtx3: nested push/pop ranges, a mark,
// a range of a domain with a registered string, a wide-string range.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>

int main() {
  nvtxRangePushA("outer");
  nvtxRangePushA("inner");
  nvtxMarkA("checkpoint");
  nvtxRangePop();
  nvtxRangePop();

  nvtxDomainHandle_t domain = nvtxDomainCreateA("my-domain");
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = nvtxDomainRegisterStringA(domain, "registered range");
  nvtxDomainRangePushEx(domain, &a);
  nvtxDomainRangePop(domain);
  nvtxRangePushW(L"wide \u00e9");
  nvtxRangePop();
  std::printf("nvtx done\n");
  return 0;
}
