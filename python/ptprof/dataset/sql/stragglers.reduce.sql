-- The report's step-time stragglers from stragglers.map.sql's parts: per
-- step that two ranks or more recorded, the slowest rank (ties: the lowest)
-- and its lag behind the median.
WITH rank_steps AS (
  -- a rank recorded in two runs: its longer time
  SELECT rank, step, max(ns) AS ns FROM partial GROUP BY rank, step
),
ranked AS (
  SELECT step, rank, ns,
         row_number() OVER (PARTITION BY step ORDER BY ns DESC, rank) AS place,
         count(*) OVER (PARTITION BY step) AS ranks,
         row_number() OVER (PARTITION BY step ORDER BY ns) AS up
  FROM rank_steps
),
medians AS (
  -- the middle one, or the two middle ones' mean rounded down (as the report)
  SELECT step, floor(avg(ns))::BIGINT AS median_ns
  FROM ranked
  WHERE up IN ((ranks + 1) // 2, ranks // 2 + 1)
  GROUP BY step
)
SELECT r.step, r.ranks, r.rank AS slowest_rank, r.ns AS slowest_ns, m.median_ns, r.ns - m.median_ns AS lag_ns
FROM ranked r JOIN medians m USING (step)
WHERE r.place = 1 AND r.ranks >= 2
ORDER BY r.step
