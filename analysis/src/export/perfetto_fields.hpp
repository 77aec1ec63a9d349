// Field numbers of the Perfetto trace messages the export writes, from
// perfetto/protos/perfetto/trace/ (trace.proto, trace_packet.proto,
// track_event/*.proto, interned_data/interned_data.proto). The subset the
// tests decode with is tests/integration/perfetto_subset.proto.
#pragma once
#include <cstdint>

namespace ptprof::exporting::detail::perfetto {

namespace trace {
constexpr uint32_t kPacket = 1;
}

namespace packet {
constexpr uint32_t kTimestamp = 8;
constexpr uint32_t kTrustedPacketSequenceId = 10;
constexpr uint32_t kTrackEvent = 11;
constexpr uint32_t kInternedData = 12;
constexpr uint32_t kSequenceFlags = 13;
constexpr uint32_t kTrackDescriptor = 60;
constexpr uint64_t kSeqIncrementalStateCleared = 1;
constexpr uint64_t kSeqNeedsIncrementalState = 2;
}  // namespace packet

namespace track_event {
constexpr uint32_t kCategoryIids = 3;
constexpr uint32_t kDebugAnnotations = 4;
constexpr uint32_t kType = 9;
constexpr uint32_t kNameIid = 10;
constexpr uint32_t kTrackUuid = 11;
constexpr uint32_t kFlowIds = 47;             // repeated fixed64
constexpr uint32_t kTerminatingFlowIds = 48;  // repeated fixed64
constexpr uint64_t kTypeSliceBegin = 1;
constexpr uint64_t kTypeSliceEnd = 2;
constexpr uint64_t kTypeInstant = 3;
}  // namespace track_event

namespace debug_annotation {
constexpr uint32_t kNameIid = 1;
constexpr uint32_t kIntValue = 4;
constexpr uint32_t kDoubleValue = 5;
constexpr uint32_t kStringValue = 6;
constexpr uint32_t kStringValueIid = 17;
}  // namespace debug_annotation

namespace interned_data {
constexpr uint32_t kEventCategories = 1;
constexpr uint32_t kEventNames = 2;
constexpr uint32_t kDebugAnnotationNames = 3;
constexpr uint32_t kDebugAnnotationStringValues = 29;
// EventCategory, EventName, DebugAnnotationName and InternedString alike
// (InternedString calls field 2 `str`).
constexpr uint32_t kIid = 1;
constexpr uint32_t kName = 2;
}  // namespace interned_data

namespace track_descriptor {
constexpr uint32_t kUuid = 1;
constexpr uint32_t kName = 2;
constexpr uint32_t kProcess = 3;
constexpr uint32_t kThread = 4;
constexpr uint32_t kParentUuid = 5;
}  // namespace track_descriptor

namespace process_descriptor {
constexpr uint32_t kPid = 1;
constexpr uint32_t kCmdline = 2;
constexpr uint32_t kProcessName = 6;
}  // namespace process_descriptor

namespace thread_descriptor {
constexpr uint32_t kPid = 1;
constexpr uint32_t kTid = 2;
constexpr uint32_t kThreadName = 5;
}  // namespace thread_descriptor

}  // namespace ptprof::exporting::detail::perfetto
