// Trace files: writing (streaming, for windows of tens of millions of events)
// and reading (never trusting the bytes). The layout is docs/format.md.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptprof/status.hpp"
#include "ptprof/trace.hpp"

namespace ptprof::format {

// The format version this build writes and reads (trace::Header::version).
uint32_t format_version();

// Where one window's trace goes. TraceWriter writes it to a file; tests
// substitute one that keeps it in memory (TraceWriterForTesting), so the
// launcher's collector is tested without files.
class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual uint32_t intern(std::string_view s) = 0;            // string id (0 = "")
  virtual uint32_t add_process(const trace::Process& p) = 0;  // returns its index
  virtual uint32_t add_thread(const trace::Thread& t) = 0;    // returns its index; t.events ignored
  // Appends to Trace::cuda; returns its index (a CUDA event's arg is index + 1).
  // c.kernel_name: an id from intern().
  virtual uint32_t add_cuda(const trace::CudaInfo& c) = 0;
  virtual void set_thread_dropped(uint32_t thread, uint64_t dropped) = 0;
  virtual void set_losses(const trace::Losses& losses) = 0;
  virtual void set_window_end(int64_t end_ns) = 0;
  virtual void add_event(const trace::Event& e) = 0;  // e.name/e.shapes: ids from intern()
  // Appends to the Trace::memory table; returns its index (a Memory event's
  // arg is that + 1). Its string ids come from intern().
  virtual uint32_t add_memory(const trace::MemoryInfo& m) = 0;
  // Adds a call stack (frames innermost first, their string ids from
  // intern()); returns 1 + its index in Trace::stacks, the value of
  // Event::stack. Equal stacks get the same index.
  virtual uint32_t add_stack(const std::vector<trace::Frame>& frames) = 0;
  // Appends to Trace::collectives: the facts of an op event added earlier
  // (c.thread, c.start_ns), their string ids from intern().
  virtual void add_collective(const trace::CollectiveInfo& c) { (void)c; }
  // Appends to Trace::tensor_groups (g.thread added earlier).
  virtual void add_tensor_group(const trace::TensorGroup& g) { (void)g; }
  virtual Status finish() = 0;  // complete the trace
  virtual uint64_t bytes_written() const = 0;
  // Puts what was added so far where a reader finds it if the writer dies.
  virtual void flush() {}
  // Where the trace is (once finished) or goes; empty when not a file.
  virtual std::string path() const { return {}; }
  // What one event cost process `process` (Process::op_cost_ps and
  // record_cost_ps), known once its agent has measured it: the last call wins.
  virtual void set_process_cost(uint32_t process, uint32_t op_cost_ps, uint32_t record_cost_ps) {
    (void)process;
    (void)op_cost_ps;
    (void)record_cost_ps;
  }
  // Process `process`'s role (Process::role and role_index), when it was
  // told after the process was added (a 'spawn' DataLoader worker's agent
  // learns it from Python): the last call wins.
  virtual void set_process_role(uint32_t process, uint32_t role, int32_t role_index) {
    (void)process;
    (void)role;
    (void)role_index;
  }
  // Process `process`'s place in a distributed job (Process::rank,
  // local_rank, world_size), when it changed after the process was added (an
  // mp.spawn rank learns its rank when it initialises its process group):
  // the last call wins.
  virtual void set_process_distributed(uint32_t process, int32_t rank, int32_t local_rank, int32_t world_size) {
    (void)process;
    (void)rank;
    (void)local_rank;
    (void)world_size;
  }
  // The name the finished trace takes, when it changed since the sink was
  // opened (the file's name has the process's rank); before finish().
  virtual void rename_to(const std::string& path) { (void)path; }
};

// Writes a trace file incrementally. Events are encoded as they arrive and
// flushed every ~64K, and by flush(); metadata (strings, processes, threads)
// is written ahead of the first event chunk that may use it. Output goes to
// `path + ".tmp"`, renamed to `path` by finish(), so a file under its final
// name is complete. A writer destroyed without finish() leaves the .tmp file,
// which reads as a truncated trace: after a launcher crash the events up to
// the last flush are still there.
//
// The directory may be writable by others: the .tmp is created with
// O_EXCL|O_NOFOLLOW (mode 0644 less the umask), and the rename never replaces
// anything. When a name is taken (a leftover, another run's file, a planted
// symlink) the trace goes to "NAME-1.bin", "NAME-2.bin"...; path() says where.
//
// Misuse (an index out of range, an I/O error) does not throw: the first such
// error is kept, and finish() returns it as its Status.
class TraceWriter final : public TraceSink {
 public:
  // h.version is ignored: the file gets format_version().
  static Result<std::unique_ptr<TraceWriter>> create(const std::string& path, const trace::Header& h);
  ~TraceWriter() override;
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  uint32_t intern(std::string_view s) override;            // file-level string id (0 = "")
  uint32_t add_process(const trace::Process& p) override;  // returns its index
  uint32_t add_thread(const trace::Thread& t) override;    // returns its index; t.events ignored
  uint32_t add_cuda(const trace::CudaInfo& c) override;
  void set_thread_dropped(uint32_t thread, uint64_t dropped) override;
  void set_losses(const trace::Losses& losses) override;  // stored in the footer
  // The window's end is often known only when it closes; this overrides the
  // Header's value (stored in the footer).
  void set_window_end(int64_t end_ns) override;
  void add_event(const trace::Event& e) override;  // e.name/e.shapes: ids from intern()
  uint32_t add_memory(const trace::MemoryInfo& m) override;
  void add_collective(const trace::CollectiveInfo& c) override;
  void add_tensor_group(const trace::TensorGroup& g) override;
  uint32_t add_stack(const std::vector<trace::Frame>& frames) override;
  Status finish() override;  // flush, footer, close, rename
  void flush() override;     // a partial event chunk and the stdio buffer to the file
  std::string path() const override;
  void set_process_cost(uint32_t process, uint32_t op_cost_ps, uint32_t record_cost_ps) override;
  // Writes another PROCESS_ATTRIBUTES record when the role changed (a reader
  // keeps a process's last record).
  void set_process_role(uint32_t process, uint32_t role, int32_t role_index) override;
  // Likewise when the rank, local rank or world size changed.
  void set_process_distributed(uint32_t process, int32_t rank, int32_t local_rank, int32_t world_size) override;
  // finish() renames the .tmp to `path` (or an alternative name of it, as
  // create() chose for the name it was given).
  void rename_to(const std::string& path) override;

  uint64_t bytes_written() const override;
  uint64_t events_written() const;

 private:
  struct Impl;
  explicit TraceWriter(std::unique_ptr<Impl> impl);  // only create() makes one

  std::unique_ptr<Impl> impl_;
};

// Reads a whole trace. An error ("FILE: chunk at byte N: ...")
// when the file is not a trace or is damaged; a file cut short after good
// chunks yields what was read plus a warning ("truncated at byte N; M events
// read"). Thread::events counts the events actually read.
Result<trace::Trace> read_trace(const std::string& path, std::vector<std::string>* warnings);

// Reads a trace chunk by chunk, for consumers that must not hold every event
// (exports of traces of any size): `on_events` gets each event chunk's events
// with the metadata read so far (writers put metadata ahead of the events that
// use it). Returns the trace without events; errors, warnings and counts as
// read_trace. Events already delivered stay delivered when a later chunk fails.
using EventChunkSink = std::function<void(const trace::Trace& metadata, const std::vector<trace::Event>& events)>;
Result<trace::Trace> read_trace_streaming(const std::string& path, const EventChunkSink& on_events,
                                          std::vector<std::string>* warnings);
// The same for a consumer that may learn early that it needs no more:
// reading stops after a chunk for which `on_events` returns false, and what
// is returned then is the metadata read so far, without counts or warnings.
using EventChunkFilter = std::function<bool(const trace::Trace& metadata, const std::vector<trace::Event>& events)>;
Result<trace::Trace> read_trace_streaming_while(const std::string& path, const EventChunkFilter& on_events,
                                                std::vector<std::string>* warnings);

// The event chunks of a trace that read_trace_streaming has read without
// error, last chunk first, decoded against `metadata` (the trace it returned,
// its events cleared): for consumers that want each thread's events latest
// first, as a parent is then ahead of its children. `on_events` gets each
// chunk's events in file order.
Status read_events_backwards(const std::string& path, trace::Trace& metadata, const EventChunkSink& on_events);

// Header, strings, processes, threads and the footer's per-thread counts,
// without decoding events (Trace::events stays empty): what `ptprof info`
// needs, at the cost of a few reads. A file without a footer is decoded fully
// to count its events.
Result<trace::Trace> read_trace_summary(const std::string& path, std::vector<std::string>* warnings);

// Expands files and directories (the *.bin files inside, sorted by name) into
// a list of files, in argument order. An error when a path does not exist or
// a directory holds no trace file. Unfinished *.bin.tmp files (a window being
// written, or left by a launcher that was killed) are read only when named;
// `notes` gets a line for each directory that holds some.
Result<std::vector<std::string>> expand_trace_paths(const std::vector<std::string>& paths,
                                                    std::vector<std::string>* notes = nullptr);

}  // namespace ptprof::format
