-- The report's ranks: per rank, its processes, ops and their time, its
-- collectives and its step times. A rank's processes are in one part of
-- the dataset, but which of them is its main process needs them all: the
-- map half gives a row per process of a rank (its totals, its collectives
-- by name and its step times as lists), ranks.reduce.sql makes the ranks.
WITH collective_ops AS (
  -- every collective op (report_ranks.cpp's is_collective), nested or not
  SELECT run, pid, start_ns, dur_ns, name, nested
  FROM collectives
  WHERE rank IS NOT NULL
),
process_ops AS (
  -- op time: the outermost ops of each thread (export marks them, and
  -- op_totals sums them), so that no time is counted twice; an async op
  -- spans threads: counted, not timed
  SELECT run, pid, sum(calls) AS ops, sum(outermost_ns) AS op_ns
  FROM op_totals WHERE kind = 'op' AND rank IS NOT NULL
  GROUP BY run, pid
),
collective_time AS (
  -- the union of the process's collective intervals: gloo's and NCCL's work
  -- need not nest in c10d's op
  SELECT run, pid,
         sum(CASE WHEN before_end IS NULL THEN e - b WHEN e <= before_end THEN 0 ELSE e - greatest(b, before_end) END)
           AS collective_ns
  FROM (SELECT run, pid, start_ns AS b, start_ns + dur_ns AS e,
               max(start_ns + dur_ns) OVER (PARTITION BY run, pid ORDER BY start_ns, start_ns + dur_ns
                                            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_end
        FROM collective_ops)
  GROUP BY run, pid
),
collective_names AS (
  SELECT run, pid, list({'name': name, 'calls': calls, 'time_ns': ns} ORDER BY name) AS collectives
  FROM (SELECT run, pid, name, count(*) AS calls, sum(dur_ns) AS ns FROM collective_ops GROUP BY run, pid, name)
  GROUP BY run, pid
),
collective_calls AS (
  -- the calls not nested in another collective of their thread
  SELECT run, pid, count(*) AS collective_calls FROM collective_ops WHERE NOT nested GROUP BY run, pid
),
step_times AS (
  SELECT run, pid, list({'step': step, 'wall_ns': ns} ORDER BY step) AS steps
  FROM (SELECT run, pid, step, max(dur_ns) AS ns FROM steps WHERE role = 'step' GROUP BY run, pid, step)
  GROUP BY run, pid
)
SELECT p.run, p.rank, p.host, p.pid, p.ppid, p.start_ns, coalesce(p.world_size, -1) AS world_size,
       coalesce(o.ops, 0) AS ops, coalesce(o.op_ns, 0) AS op_ns,
       coalesce(cc.collective_calls, 0) AS collective_calls, coalesce(ct.collective_ns, 0) AS collective_ns,
       coalesce(cn.collectives, []) AS collectives, coalesce(s.steps, []) AS steps
FROM processes p
LEFT JOIN process_ops o USING (run, pid)
LEFT JOIN collective_time ct USING (run, pid)
LEFT JOIN collective_names cn USING (run, pid)
LEFT JOIN collective_calls cc USING (run, pid)
LEFT JOIN step_times s USING (run, pid)
WHERE p.rank IS NOT NULL
