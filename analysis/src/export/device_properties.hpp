// A GPU's deviceProperties entry (Trace::gpu_devices), as the exports use it:
// checked and written again as JSON (a mark's name comes from the traced
// process, and no name may break the file), and what the occupancy
// calculator reads of it (kernel_occupancy.hpp).
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "export/kernel_occupancy.hpp"

namespace ptprof::exporting::detail {

struct DeviceProperties {
  std::string json;                       // compact, keys and scalars as given, strings re-escaped
  std::optional<OccupancyDevice> limits;  // nothing when a field the calculator needs is missing
};

// Reads a flat JSON object of strings, numbers and literals (Kineto's keys:
// "id", "name", "numSms", ...); nothing when the text is not one.
std::optional<DeviceProperties> read_device_properties(std::string_view json);

}  // namespace ptprof::exporting::detail
