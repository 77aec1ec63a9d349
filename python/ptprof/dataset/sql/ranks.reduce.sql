-- The report's ranks from ranks.map.sql's processes. A rank's main process
-- is one whose parent is not among the rank's processes (DataLoader workers
-- are the main process's children, with its RANK); its host, pid and world
-- size are the rank's (of several: the last with steps, else the first),
-- and the rank's time for a step is its main processes' longest span of it.
WITH mains AS (
  SELECT p.*, len(p.steps) > 0 AS has_steps
  FROM partial p
  WHERE NOT EXISTS (SELECT 1 FROM partial o
                    WHERE o.rank = p.rank AND o.host = p.host AND o.pid = p.ppid
                      AND NOT (o.pid = p.pid AND o.start_ns = p.start_ns))
),
chosen AS (
  SELECT rank, host, pid, world_size
  FROM (SELECT *, row_number() OVER (PARTITION BY rank ORDER BY has_steps DESC,
                                     CASE WHEN has_steps THEN host END DESC, CASE WHEN has_steps THEN pid END DESC,
                                     CASE WHEN has_steps THEN start_ns END DESC, host, pid, start_ns) AS pick
        FROM mains)
  WHERE pick = 1
),
totals AS (
  SELECT rank, count(*) AS processes, sum(ops)::BIGINT AS ops, sum(op_ns)::BIGINT AS op_ns,
         sum(collective_calls)::BIGINT AS collective_calls, sum(collective_ns)::BIGINT AS collective_ns
  FROM partial GROUP BY rank
),
names AS (
  SELECT rank, list({'name': name, 'calls': calls, 'time_ns': ns} ORDER BY name) AS collectives
  FROM (SELECT rank, c.name AS name, sum(c.calls)::BIGINT AS calls, sum(c.time_ns)::BIGINT AS ns
        FROM (SELECT rank, unnest(collectives) AS c FROM partial)
        GROUP BY rank, c.name)
  GROUP BY rank
),
step_times AS (
  SELECT rank, list({'step': step, 'wall_ns': ns} ORDER BY step) AS steps
  FROM (SELECT rank, s.step AS step, max(s.wall_ns) AS ns
        FROM (SELECT rank, unnest(steps) AS s FROM mains)
        GROUP BY rank, s.step)
  GROUP BY rank
)
SELECT t.rank, c.world_size, c.host, c.pid, t.processes, t.ops, t.op_ns AS op_time_ns, t.collective_calls,
       t.collective_ns AS collective_time_ns, coalesce(n.collectives, []) AS collectives,
       coalesce(s.steps, []) AS steps
FROM totals t
JOIN chosen c USING (rank)
LEFT JOIN names n USING (rank)
LEFT JOIN step_times s USING (rank)
ORDER BY t.rank
