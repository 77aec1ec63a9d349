// CUDA graph replays attributed to the ops that captured them (#25, item 4).
// CUPTI's graph node callbacks (CUpti_ResourceData pointing to a
// CUpti_GraphData, as cupti_callbacks.h lays them out) and activity buffers
// with graph kernels (cupti_activity.h) go through the agent's conversions
// (cupti_graphs.cpp, cupti_activity.cpp) into synthetic rings, then through
// the launcher's collector into window traces, then into the report: every
// replayed kernel belongs to its capturing op, across windows too, and one
// whose node was made while ptprof did not record is "captured outside the
// window", not unmatched.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "collect/graph_captures.hpp"
#include "collector_fixtures.hpp"
#include "cupti/cupti_activity.hpp"
#include "cupti/cupti_graphs.hpp"
#include "cupti_buffers.hpp"
#include "ptprof/analysis/report.hpp"
#include "ptprof/analysis/report_format.hpp"

using namespace ptprof;
using launcher::CollectorOptions;
using launcher::ProcessCollector;
using ptprof::testing::MemorySink;
using ptprof::testing::SyntheticRegion;
using test::SyntheticBuffer;
using trace::EventKind;
using wire::BoundaryKind;
using wire::RecordType;

namespace {

// CUPTI's graph and node handles are opaque pointers; these stand-ins carry
// the ids cuptiGetGraphNodeId and cuptiGetGraphId would give.
struct FakeNode {
  uint64_t id;
};
struct FakeGraph {
  uint32_t id;
};
CUgraphNode handle(FakeNode& n) { return reinterpret_cast<CUgraphNode>(&n); }
CUgraph handle(FakeGraph& g) { return reinterpret_cast<CUgraph>(&g); }

CUptiResult node_id(CUgraphNode n, uint64_t* id) {
  if (!n) return CUPTI_ERROR_INVALID_PARAMETER;
  *id = reinterpret_cast<const FakeNode*>(n)->id;
  return CUPTI_SUCCESS;
}
CUptiResult graph_id(CUgraph g, uint32_t* id) {
  if (!g) return CUPTI_ERROR_INVALID_PARAMETER;
  *id = reinterpret_cast<const FakeGraph*>(g)->id;
  return CUPTI_SUCCESS;
}
constexpr agent::cupti::GraphIdFns kIds{node_id, graph_id};

// One resource callback as CUPTI makes it: the CUpti_ResourceData whose
// resourceDescriptor is the CUpti_GraphData.
agent::cupti::GraphRecord callback(CUpti_CallbackId cbid, CUpti_GraphData g, uint64_t op, uint64_t ts,
                                   wire::RingWriter& ring) {
  CUpti_ResourceData data{};
  data.resourceDescriptor = &g;
  return agent::cupti::graph_node_record(cbid, data, kIds, op, ts, ring);
}
CUpti_GraphData created(FakeGraph& graph, FakeNode& node) {
  CUpti_GraphData g{};
  g.graph = handle(graph);
  g.node = handle(node);
  g.nodeType = CU_GRAPH_NODE_TYPE_KERNEL;
  return g;
}
CUpti_GraphData cloned(FakeGraph& graph, FakeNode& node, FakeNode& original) {
  CUpti_GraphData g = created(graph, node);
  g.originalNode = handle(original);
  return g;
}

CUpti_ActivityKernel10 graph_kernel(const char* name, uint64_t start, uint64_t end, uint32_t corr, uint64_t node,
                                    uint32_t graph) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.correlationId = corr;
  k.deviceId = 0;
  k.streamId = 7;
  k.gridX = k.gridY = k.gridZ = 1;
  k.blockX = k.blockY = k.blockZ = 32;
  k.graphNodeId = node;
  k.graphId = graph;
  k.name = name;
  return k;
}

struct Fixture {
  SyntheticRegion region{2};
  CollectorOptions opts;
  clock::Converter conv{clock::Kind::Monotonic};
  MemorySink sink;
  std::unique_ptr<ProcessCollector> collector;
  uint32_t program = 0;  // the ring of the thread that captures; CUPTI's buffers go to the other one

  Fixture() {
    opts.output_dir = "out";
    opts.host = "host";
    opts.grace = std::chrono::milliseconds(0);
    region.header().gpu_flush.store(1);  // CUPTI is in use: the launcher holds what is not yet joined
  }
  wire::RingWriter& program_ring() { return region.ring(program); }
  wire::RingWriter& cupti_ring() { return region.ring(1 - program); }
  void begin(uint64_t handle, const char* name, uint64_t ts) {
    wire::OpBeginPayload b{};
    b.handle = handle;
    b.seq_nr = -1;
    REQUIRE(wire::emit(program_ring(), RecordType::OpBegin, region.name(name), ts, b));
  }
  void end(uint64_t handle, uint64_t ts) {
    REQUIRE(wire::emit(program_ring(), RecordType::OpEnd, 0, ts, wire::OpEndPayload{handle}));
  }
  // CUPTI hands a completed buffer over (GPU ns = session ticks here).
  void hand_over(SyntheticBuffer& buf, uint64_t now) {
    agent::cupti::ActivityOutput out;
    out.ring = &cupti_ring();
    out.intern = [](void* ctx, const char* s) { return static_cast<SyntheticRegion*>(ctx)->name(s); };
    out.intern_ctx = &region;
    out.now_ticks = now;
    const auto n =
        agent::cupti::convert_buffer(buf.data(), buf.size(), SyntheticBuffer::next, nullptr, {0, 0, 1.0}, out);
    REQUIRE(n.dropped == 0);
    REQUIRE(n.written == n.records);
  }
  ProcessCollector& drain() {
    collector =
        std::make_unique<ProcessCollector>(region.take(), launcher::FileStem{"host", 4242, 0}, opts, conv, sink);
    collector->drain(100000);
    return *collector;
  }
  const trace::Trace& run_and_window(uint32_t index) {
    if (!collector) drain();
    collector->finish();
    const std::string path = "out/host.4242.w00" + std::to_string(index) + ".bin";
    INFO("window file " << path);
    REQUIRE(sink.traces.count(path) == 1);
    return sink.traces.at(path);
  }
};

// The program's side of a capture: torch.cuda.graph runs aten::mm and
// aten::relu on a capturing stream (each launch makes a kernel node, CUPTI
// says so inside the op), then instantiates the graph (every node copied).
// A copy CUPTI reports before the node it copies is ignored.
struct Graph7 {
  FakeGraph graph{7};
  FakeGraph exec{70};
  FakeNode mm{101}, relu{102}, mm_copy{201}, relu_copy{202}, stray_copy{299}, unknown{999};
};

void capture(Fixture& f, Graph7& g, uint64_t at) {
  using agent::cupti::GraphRecord;
  f.begin(9, "aten::mm", at);
  CHECK(callback(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, created(g.graph, g.mm), 9, at + 10, f.program_ring()) ==
        GraphRecord::Written);
  f.end(9, at + 20);
  f.begin(10, "aten::relu", at + 30);
  CHECK(callback(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, created(g.graph, g.relu), 10, at + 40, f.program_ring()) ==
        GraphRecord::Written);
  f.end(10, at + 50);
  // cudaGraphInstantiate, outside any op.
  for (auto [copy, original] : {std::pair{&g.mm_copy, &g.mm}, {&g.relu_copy, &g.relu}, {&g.stray_copy, &g.unknown}})
    CHECK(callback(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, cloned(g.exec, *copy, *original), 0, at + 60,
                   f.program_ring()) == GraphRecord::Written);
}

// Two replays of graph 7 (the copies' kernels, each replay under its own
// cudaGraphLaunch correlation id, which an op named graph_replay made), and
// one of graph 8, whose node ptprof never saw made.
void replay(Fixture& f, uint64_t at) {
  f.begin(77, "graph_replay", at);
  f.end(77, at + 10);
  SyntheticBuffer buf;
  buf.add(graph_kernel("mm_kernel", at + 100, at + 200, 500, 201, 7));
  buf.add(graph_kernel("relu_kernel", at + 200, at + 250, 500, 202, 7));
  buf.add(graph_kernel("mm_kernel", at + 1100, at + 1200, 501, 201, 7));
  buf.add(graph_kernel("relu_kernel", at + 1200, at + 1280, 501, 202, 7));
  buf.add(graph_kernel("old_kernel", at + 2000, at + 2040, 502, 301, 8));
  for (uint32_t corr : {500u, 501u, 502u}) {
    CUpti_ActivityExternalCorrelation e{};
    e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    e.externalKind = agent::cupti::kExternalKind;
    e.correlationId = corr;
    e.externalId = 77;  // the replaying op: not where the kernels belong
    buf.add(e);
  }
  f.hand_over(buf, at + 3000);
}

std::vector<const trace::Event*> kernels(const trace::Trace& t) {
  std::vector<const trace::Event*> out;
  for (const auto& e : t.events)
    if (e.kind == EventKind::Kernel) out.push_back(&e);
  return out;
}

// Each kernel's attribution: "<kernel> <- <capture op> (<external id>)".
std::vector<std::string> attributions(const trace::Trace& t) {
  std::vector<std::string> out;
  for (const trace::Event* k : kernels(t)) {
    const trace::CudaInfo& ci = t.cuda.at(k->arg - 1);
    std::string by = ci.graph_capture == trace::GraphCapture::Recorded  ? t.strings.at(ci.capture_op)
                     : ci.graph_capture == trace::GraphCapture::Outside ? "outside"
                                                                        : "none";
    out.push_back(t.strings.at(k->name) + " <- " + by + " (" + std::to_string(ci.external_id) + ")");
  }
  std::sort(out.begin(), out.end());
  return out;
}

// JSON without its line breaks and indentation.
std::string squeeze(const std::string& json) {
  std::string out;
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] != '\n') {
      out += json[i];
      continue;
    }
    while (i + 1 < json.size() && json[i + 1] == ' ') ++i;
  }
  return out;
}

}  // namespace

TEST_CASE("cuda graphs: the agent turns CUPTI's graph node callbacks into ring records", "[cuda][graphs]") {
  using agent::cupti::GraphRecord;
  std::vector<uint8_t> bytes(4096);
  wire::RingControl ctl{};
  wire::RingWriter ring(&ctl, bytes.data(), bytes.size());
  Graph7 g;
  CHECK(callback(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, created(g.graph, g.mm), 9, 100, ring) == GraphRecord::Written);
  CHECK(callback(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, cloned(g.exec, g.mm_copy, g.mm), 33, 200, ring) ==
        GraphRecord::Written);
  // Other resource callbacks, a node CUPTI gives no id for, a copy of
  // nothing: no record.
  CHECK(callback(CUPTI_CBID_RESOURCE_GRAPH_CREATED, created(g.graph, g.mm), 9, 300, ring) == GraphRecord::Ignored);
  CHECK(callback(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, CUpti_GraphData{}, 9, 300, ring) == GraphRecord::Ignored);
  CUpti_GraphData orphan = created(g.exec, g.mm_copy);
  CHECK(callback(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, orphan, 9, 300, ring) == GraphRecord::Ignored);
  CUpti_ResourceData no_descriptor{};
  CHECK(agent::cupti::graph_node_record(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, no_descriptor, kIds, 9, 300, ring) ==
        GraphRecord::Ignored);

  std::vector<std::pair<uint64_t, wire::GraphNodePayload>> recs;
  wire::RingReader reader(&ctl, bytes.data(), bytes.size());
  reader.drain([&](const wire::RecordHeader& h) {
    REQUIRE(h.type == uint16_t(RecordType::GraphNode));
    REQUIRE(wire::record_size_ok(h));
    wire::GraphNodePayload p;
    std::memcpy(&p, reinterpret_cast<const uint8_t*>(&h) + sizeof h, sizeof p);
    recs.emplace_back(h.ts, p);
    return true;
  });
  REQUIRE(recs.size() == 2);
  CHECK(recs[0].first == 100);
  CHECK(recs[0].second.node_id == 101);
  CHECK(recs[0].second.original_id == 0);
  CHECK(recs[0].second.op == 9);
  CHECK(recs[0].second.graph_id == 7);
  CHECK(recs[1].first == 200);
  CHECK(recs[1].second.node_id == 201);
  CHECK(recs[1].second.original_id == 101);
  CHECK(recs[1].second.op == 0);  // a copy inherits its original's op; the instantiating op is not it
  CHECK(recs[1].second.graph_id == 70);
}

TEST_CASE("cuda graphs: every replayed kernel is attributed to the op that captured its node", "[cuda][graphs]") {
  // Either ring may be drained first: the capture's or the kernels'.
  for (uint32_t program : {0u, 1u}) {
    INFO("capturing thread's ring: " << program);
    Fixture f;
    f.program = program;
    f.region.boundary(BoundaryKind::WindowBegin, 0, 0);
    Graph7 g;
    capture(f, g, 100);
    replay(f, 1000);
    const trace::Trace& t = f.run_and_window(0);
    CHECK(attributions(t) == std::vector<std::string>{
                                 "mm_kernel <- aten::mm (9)",
                                 "mm_kernel <- aten::mm (9)",
                                 "old_kernel <- outside (0)",
                                 "relu_kernel <- aten::relu (10)",
                                 "relu_kernel <- aten::relu (10)",
                             });

    const report::Report rep = report::compute_report({{"t.bin", &t}}, {});
    auto row = [&](const std::string& n) -> const report::Row& {
      for (const auto& x : rep.rows)
        if (x.name == n) return x;
      FAIL("no row " << n);
      throw;
    };
    CHECK(row("aten::mm").stats.self_cuda_ns == 200);
    CHECK(row("aten::relu").stats.self_cuda_ns == 130);
    CHECK(row("graph_replay").stats.self_cuda_ns == 0);
    CHECK(rep.gpu.unmatched_kernels == 0);
    CHECK(rep.gpu.graph_work == 5);
    CHECK(rep.gpu.graph_work_outside == 1);
    REQUIRE(rep.gpu.graphs.size() == 2);
    const report::GraphRow& g7 = rep.gpu.graphs[0];
    CHECK(g7.graph_id == 7);
    CHECK(g7.pid == 4242);
    CHECK(g7.replays == 2);
    CHECK(g7.kernels == 4);
    CHECK(g7.kernels_per_replay == 2.0);
    CHECK(g7.replay_ns.avg == 165.0);  // 150 and 180 ns from first start to last end
    CHECK(g7.kernel_ns == 330);
    REQUIRE(g7.ops.size() == 2);
    CHECK(g7.ops[0].op == "aten::mm");
    CHECK(g7.ops[0].kernels == 2);
    CHECK(g7.ops[1].op == "aten::relu");
    const report::GraphRow& g8 = rep.gpu.graphs[1];
    CHECK(g8.graph_id == 8);
    CHECK(g8.replays == 1);
    REQUIRE(g8.ops.size() == 1);
    CHECK(g8.ops[0].op == "captured outside the window");

    const std::string table = report::render_table(rep, 0);
    CHECK_THAT(table, Catch::Contains("CUDA graph replays\n"));
    CHECK_THAT(table, Catch::Contains("aten::mm (2), aten::relu (2)\n"));
    CHECK_THAT(table, Catch::Contains("CUDA graph work attributed to its capture: 5 (captured outside the window: 1)"));
    const std::string csv = report::render_csv(rep, 0);
    CHECK_THAT(csv, Catch::Contains("\n\nCUDA graph replays\n"
                                    "PID,Graph,Replays,Kernels,Kernels/replay,Time/replay avg (ns),Med (ns),Min (ns),"
                                    "Max (ns),Kernel time (ns),Ops\n"
                                    "4242,7,2,4,2.0,165.0,165.0,150,180,330,\"aten::mm (2), aten::relu (2)\"\n"
                                    "4242,8,1,1,1.0,40.0,40.0,40,40,40,captured outside the window (1)\n"));
    CHECK_THAT(csv, Catch::EndsWith("\n\nCUDA graph work attributed to its capture\n"
                                    "Attributed,Captured outside the window\n5,1\n"));
    const std::string json = squeeze(report::render_json(rep, 0));
    CHECK_THAT(json, Catch::Contains("\"graphs\": [{\"pid\": 4242, \"graph\": 7, \"replays\": 2, \"kernels\": 4, "
                                     "\"kernels_per_replay\": 2.000, \"replay_ns\": {\"count\": 2, \"total\": 330"));
    CHECK_THAT(json, Catch::Contains("\"ops\": [{\"op\": \"aten::mm\", \"kernels\": 2},{\"op\": \"aten::relu\", "
                                     "\"kernels\": 2}]}"));
    CHECK_THAT(json, Catch::Contains("\"graph_work\": 5,"));
  }
}

TEST_CASE("cuda graphs: a graph captured in one window and replayed in a later one keeps its ops", "[cuda][graphs]") {
  Fixture f;
  f.region.boundary(BoundaryKind::WindowBegin, 0, 0);
  Graph7 g;
  capture(f, g, 100);
  f.region.boundary(BoundaryKind::WindowEnd, 500, 0);
  f.region.boundary(BoundaryKind::GpuFlushed, 510, 0);
  f.region.boundary(BoundaryKind::WindowBegin, 900, 1);
  replay(f, 1000);
  const trace::Trace& t = f.run_and_window(1);
  // The capturing ops are in window 0's file; this one names them.
  CHECK(attributions(t) == std::vector<std::string>{
                               "mm_kernel <- aten::mm (9)",
                               "mm_kernel <- aten::mm (9)",
                               "old_kernel <- outside (0)",
                               "relu_kernel <- aten::relu (10)",
                               "relu_kernel <- aten::relu (10)",
                           });
  const report::Report rep = report::compute_report({{"t.bin", &t}}, {});
  CHECK(rep.gpu.unmatched_kernels == 0);
  REQUIRE(rep.gpu.graphs.size() == 2);
  CHECK(rep.gpu.graphs[0].replays == 2);
  REQUIRE(rep.gpu.graphs[0].ops.size() == 2);
  CHECK(rep.gpu.graphs[0].ops[0].op == "aten::mm");
  CHECK(rep.gpu.graphs[0].ops[1].op == "aten::relu");
}

TEST_CASE("cuda graphs: a replay of a graph captured outside any window is said so, not dropped", "[cuda][graphs]") {
  Fixture f;
  // No capture was recorded (CUPTI is not held outside windows): the
  // window holds only the replays.
  f.region.boundary(BoundaryKind::WindowBegin, 900, 0);
  replay(f, 1000);
  // Written as soon as the rings are drained past them, not held in memory
  // until the window ends (the window is still open here): the op and the
  // five kernels.
  CHECK(f.drain().events() == 6);
  const trace::Trace& t = f.run_and_window(0);
  CHECK(attributions(t) == std::vector<std::string>{
                               "mm_kernel <- outside (0)",
                               "mm_kernel <- outside (0)",
                               "old_kernel <- outside (0)",
                               "relu_kernel <- outside (0)",
                               "relu_kernel <- outside (0)",
                           });
  const report::Report rep = report::compute_report({{"t.bin", &t}}, {});
  CHECK(rep.gpu.unmatched_kernels == 0);
  CHECK(rep.gpu.graph_work_outside == 5);
  REQUIRE(rep.gpu.graphs.size() == 2);
  CHECK(rep.gpu.graphs[0].kernels == 4);
  REQUIRE(rep.gpu.graphs[0].ops.size() == 1);
  CHECK(rep.gpu.graphs[0].ops[0].op == "captured outside the window");
  CHECK(rep.gpu.graphs[0].ops[0].kernels == 4);
}

TEST_CASE("cuda graphs: a copy keeps its original's capture whichever CUPTI reports first", "[cuda][graphs]") {
  launcher::GraphCaptures g;
  g.created(101, {9, 3});
  // Instantiation: the copy reported as cloned, then as created on the
  // instantiating thread under another op; or created first, then cloned.
  g.cloned(201, 101);
  g.created(201, {77, 4});
  g.created(202, {77, 4});
  g.cloned(202, 101);
  g.cloned(203, 999);  // a copy of a node made before ptprof held CUPTI
  for (uint64_t node : {101u, 201u, 202u}) {
    INFO("node " << node);
    const launcher::GraphCaptures::Capture* c = g.find(node);
    REQUIRE(c != nullptr);
    CHECK(c->op == 9);
    CHECK(c->op_name == 3);
  }
  CHECK(g.find(203) == nullptr);
  CHECK(g.find(0) == nullptr);
  CHECK(g.size() == 3);
}
