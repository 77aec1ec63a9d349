-- The report's collective arrivals: per step, each rank's Nth collective
-- call (c10d's, or the process group's work where a rank has no c10d call)
-- is the same collective; the last rank to start it (ties: the lowest) is
-- its straggler, the spread is the last start less the first.
WITH kinds AS (
  SELECT run, rank, bool_or(call = 'c10d') AS has_c10d FROM collectives WHERE rank IS NOT NULL GROUP BY run, rank
),
calls AS (
  SELECT c.* FROM collectives c JOIN kinds k USING (run, rank)
  WHERE c.index_in_step IS NOT NULL AND c.call = CASE WHEN k.has_c10d THEN 'c10d' ELSE 'work' END
),
ranked AS (
  SELECT step, index_in_step, rank, name, start_ns,
         row_number() OVER (PARTITION BY step, index_in_step ORDER BY start_ns DESC, rank) AS place,
         count(*) OVER (PARTITION BY step, index_in_step) AS ranks,
         min(start_ns) OVER (PARTITION BY step, index_in_step) AS first_ns
  FROM calls
)
SELECT step, index_in_step AS "index", ranks, rank AS last_rank, start_ns - first_ns AS spread_ns
FROM ranked
WHERE place = 1 AND ranks >= 2
ORDER BY step, "index"
