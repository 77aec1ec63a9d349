#include "cupti/cupti_graphs.hpp"

#include "ptprof/record.hpp"
#include "ptprof/record_emit.hpp"

namespace ptprof::agent::cupti {

GraphRecord graph_node_record(CUpti_CallbackId cbid, const CUpti_ResourceData& data, const GraphIdFns& ids, uint64_t op,
                              uint64_t ts, wire::RingWriter& ring) {
  const bool created = cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED;
  if ((!created && cbid != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) || !ids.node_id || !data.resourceDescriptor)
    return GraphRecord::Ignored;
  const auto& g = *static_cast<const CUpti_GraphData*>(data.resourceDescriptor);
  wire::GraphNodePayload p{};
  if (!g.node || ids.node_id(g.node, &p.node_id) != CUPTI_SUCCESS || p.node_id == 0) return GraphRecord::Ignored;
  if (created) {
    p.op = op;
  } else if (!g.originalNode || ids.node_id(g.originalNode, &p.original_id) != CUPTI_SUCCESS || p.original_id == 0) {
    return GraphRecord::Ignored;  // a copy of nothing ptprof can name
  }
  // The graph's id is for the reader only: attribution needs the node's.
  if (g.graph && ids.graph_id && ids.graph_id(g.graph, &p.graph_id) != CUPTI_SUCCESS) p.graph_id = 0;
  return wire::emit(ring, wire::RecordType::GraphNode, 0, ts, p) ? GraphRecord::Written : GraphRecord::Dropped;
}

}  // namespace ptprof::agent::cupti
