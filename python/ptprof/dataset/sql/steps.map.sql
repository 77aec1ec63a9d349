-- The report's per-step table: each step span (per process and thread),
-- its wall time and the time of the ops and ranges directly in it
-- (steps.operators_ns: the ops rows whose parent_id is the span's id,
-- summed at export; docs/dataset.md gives the same sum over ops). A step's
-- ops are its process's, so every part of the dataset gives whole rows;
-- steps.reduce.sql orders them.
SELECT step, pid, tid, dur_ns AS wall_ns, operators_ns
FROM steps
WHERE role = 'step'
