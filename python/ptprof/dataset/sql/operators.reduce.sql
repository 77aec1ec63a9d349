-- The report's operator table from operators.map.sql's parts: a row per
-- name, most self CPU time first.
SELECT name,
       sum(calls)::BIGINT AS calls,
       sum(self_cpu_ns)::BIGINT AS self_cpu_ns,
       sum(cpu_total_ns)::BIGINT AS cpu_total_ns,
       sum(self_cuda_ns)::BIGINT AS self_cuda_ns,
       sum(cuda_total_ns)::BIGINT AS cuda_total_ns,
       sum(cpu_memory_bytes)::BIGINT AS cpu_memory_bytes,
       sum(self_cpu_memory_bytes)::BIGINT AS self_cpu_memory_bytes,
       sum(cuda_memory_bytes)::BIGINT AS cuda_memory_bytes,
       sum(self_cuda_memory_bytes)::BIGINT AS self_cuda_memory_bytes
FROM partial
GROUP BY name
ORDER BY self_cpu_ns DESC, name
