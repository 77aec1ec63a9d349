-- The report's collective arrivals from arrivals.map.sql's calls: a call
-- per rank, step and index; the last rank to start it (ties: the lowest) is
-- its straggler, the spread is the last start less the first. The name is
-- the lowest rank's; names_agree says whether every rank's call had it.
WITH ranked AS (
  SELECT step, index_in_step, rank, name, start_ns,
         row_number() OVER (PARTITION BY step, index_in_step ORDER BY start_ns DESC, rank) AS place,
         count(*) OVER (PARTITION BY step, index_in_step) AS ranks,
         min(start_ns) OVER (PARTITION BY step, index_in_step) AS first_ns
  FROM partial
),
rows AS (
  SELECT step, index_in_step, arg_min(name, rank) AS name, count(DISTINCT name) = 1 AS names_agree,
         list({'rank': rank, 'after_ns': start_ns - first_ns} ORDER BY rank) AS arrivals
  FROM ranked GROUP BY step, index_in_step
)
SELECT r.step, r.index_in_step AS "index", w.name, r.ranks, w.names_agree, r.rank AS last_rank,
       r.start_ns - r.first_ns AS spread_ns, w.arrivals
FROM ranked r JOIN rows w USING (step, index_in_step)
WHERE r.place = 1 AND r.ranks >= 2
ORDER BY r.step, "index"
