-- The report's step-time stragglers: a rank's time for a step is its
-- longest span of that step (its main process's threads; DataLoader and
-- compile workers left out); per step that two ranks or more recorded, the
-- slowest rank (ties: the lowest) and its lag behind the median.
WITH rank_steps AS (
  SELECT s.rank, s.step, max(s.dur_ns) AS ns
  FROM steps s
  JOIN processes p ON p.run = s.run AND p.pid = s.pid AND p.rank = s.rank
  WHERE s.role = 'step' AND s.rank IS NOT NULL AND p.role = 'trainer'
  GROUP BY s.rank, s.step
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
