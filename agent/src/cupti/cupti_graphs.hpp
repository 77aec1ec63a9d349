// CUPTI's resource callbacks for CUDA graph nodes -> GraphNode ring records.
//
// A kernel replayed from a CUDA graph carries the correlation id of the
// cudaGraphLaunch that replayed it, not of the launch that was captured, so
// the external correlation joins it to whatever op replayed the graph (often
// none). What ties it to the op that captured it is its graphNodeId: CUPTI
// reports each node as it is made (GRAPHNODE_CREATED: during stream capture
// or cudaGraphAdd*Node, synchronously on the thread that makes it, so the op
// open there is the capturing op) and as it is copied (GRAPHNODE_CLONED:
// cudaGraphInstantiate copies every node, and a replay's kernels name the
// copy). The launcher maps node -> op with these records
// (launcher/collect/graph_captures.hpp).
//
// Pure, like cupti_activity.hpp: the caller passes CUPTI's id functions, the
// op and the ring, so tests feed it callback data laid out as
// cupti_callbacks.h defines it.
#pragma once
#include <cupti_activity.h>
#include <cupti_callbacks.h>

#include <cstdint>

#include "ptprof/ring.hpp"

namespace ptprof::agent::cupti {

// The resource-domain callbacks ptprof enables (only while it holds CUPTI).
inline constexpr CUpti_CallbackId kGraphCallbacks[] = {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
                                                       CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED};

// cuptiGetGraphNodeId and cuptiGetGraphId.
struct GraphIdFns {
  CUptiResult (*node_id)(CUgraphNode, uint64_t*) = nullptr;
  CUptiResult (*graph_id)(CUgraph, uint32_t*) = nullptr;
};

enum class GraphRecord { Written, Dropped, Ignored };

// One resource callback (`cbid`, its CUpti_ResourceData; for graph node
// callbacks resourceDescriptor points to a CUpti_GraphData): a GraphNode
// record at `ts` naming `op` (the handle of the innermost op open on the
// calling thread, 0 = none). Ignored: not a node callback ptprof keeps, or
// CUPTI gave no id for the node.
GraphRecord graph_node_record(CUpti_CallbackId cbid, const CUpti_ResourceData& data, const GraphIdFns& ids, uint64_t op,
                              uint64_t ts, wire::RingWriter& ring);

}  // namespace ptprof::agent::cupti
