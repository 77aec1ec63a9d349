-- The report's per-step table: each step span (per process and thread),
-- its wall time and the time of the ops and ranges directly in it. A step's
-- ops are its process's, so every part of the dataset gives whole rows;
-- steps.reduce.sql orders them.
WITH step_spans AS (
  SELECT run, id, step, pid, tid, dur_ns FROM steps WHERE role = 'step'
),
children AS (
  SELECT run, parent_id AS id, sum(dur_ns) AS ns
  FROM ops
  WHERE kind IN ('op', 'range') AND parent_id IN (SELECT id FROM step_spans)
  GROUP BY run, parent_id
)
SELECT s.step, s.pid, s.tid, s.dur_ns AS wall_ns, coalesce(c.ns, 0)::BIGINT AS operators_ns
FROM step_spans s LEFT JOIN children c ON c.run = s.run AND c.id = s.id
