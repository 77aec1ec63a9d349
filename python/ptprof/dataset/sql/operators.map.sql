-- The report's operator table (`ptprof report`, torch's key_averages()):
-- a row per name, over the calls the report counts: ops, ranges, steps
-- (as ProfilerStep*), CUDA API calls and marks from ops (a folded call is
-- part of its same-named parent's), and the GPU's kernels, copies and sets,
-- which have CUDA time and no CPU time, and `[memory]`: a call per memory
-- record the report counts that no op holds. Times in ns, memory in bytes.
--
-- It reads op_totals, the ops table's rows already summed per process (the
-- same sums over ops itself: docs/dataset.md, "op_totals"), so that it adds
-- up thousands of rows, not millions.
--
-- The map half: sums per name over the part of the dataset it is given (all
-- of it under DuckDB, a partition per task under Dask); operators.reduce.sql
-- adds up the parts (the view `partial`).
WITH calls AS (
  -- op_totals: the ops table summed per process, kind, key and folded
  SELECT key AS name, calls, self_ns, dur_ns, self_cuda_ns, cuda_total_ns, cpu_memory_bytes, self_cpu_memory_bytes,
         cuda_memory_bytes, self_cuda_memory_bytes
  FROM op_totals WHERE NOT folded
  UNION ALL
  SELECT name, 1, 0, 0, dur_ns, dur_ns, 0, 0, 0, 0
  FROM gpu WHERE kind IN ('kernel', 'memcpy', 'memset')
  UNION ALL
  -- c10::DeviceType: CPU 0, MKLDNN 2, IDEEP 5; CUDA 1, HIP 6, XPU 12, PrivateUse1 20
  SELECT '[memory]', 1, 0, 0, 0, 0, cpu, cpu, device, device
  FROM (SELECT CASE WHEN device_type IN (0, 2, 5) THEN bytes ELSE 0 END AS cpu,
               CASE WHEN device_type IN (1, 6, 12, 20) THEN bytes ELSE 0 END AS device
        FROM memory WHERE in_report AND NOT in_op)
)
SELECT name,
       sum(calls)::BIGINT AS calls,
       sum(self_ns)::BIGINT AS self_cpu_ns,
       sum(dur_ns)::BIGINT AS cpu_total_ns,
       sum(self_cuda_ns)::BIGINT AS self_cuda_ns,
       sum(cuda_total_ns)::BIGINT AS cuda_total_ns,
       sum(cpu_memory_bytes)::BIGINT AS cpu_memory_bytes,
       sum(self_cpu_memory_bytes)::BIGINT AS self_cpu_memory_bytes,
       sum(cuda_memory_bytes)::BIGINT AS cuda_memory_bytes,
       sum(self_cuda_memory_bytes)::BIGINT AS self_cuda_memory_bytes
FROM calls
GROUP BY name
