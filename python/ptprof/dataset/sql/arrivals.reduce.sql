-- The report's collective arrivals from arrivals.map.sql's calls. A step
-- whose every call torch numbered matches them by (process group, sequence
-- number), its rows in that order (a rank's first call of each); any other
-- step by each rank's Nth call. The last rank to start a collective (ties:
-- the lowest) is its straggler, the spread is the last start less the
-- first. The name is the lowest rank's; names_agree says whether every
-- rank's call had it.
WITH numbered AS (
  SELECT step, bool_and(seq IS NOT NULL) AS by_seq FROM partial GROUP BY step
),
keyed AS (
  SELECT p.step, p.rank, p.name, p.start_ns, n.by_seq,
         CASE WHEN n.by_seq THEN p.process_group END AS process_group,
         CASE WHEN n.by_seq THEN p.seq END AS seq,
         CASE WHEN n.by_seq THEN dense_rank() OVER (PARTITION BY p.step ORDER BY p.process_group, p.seq) - 1
              ELSE p.index_in_step END AS index_in_step
  FROM partial p JOIN numbered n USING (step)
),
calls AS (
  SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY step, index_in_step, rank ORDER BY start_ns) AS nth
                 FROM keyed)
  WHERE NOT by_seq OR nth = 1
),
ranked AS (
  SELECT step, index_in_step, rank, name, start_ns, process_group, seq,
         row_number() OVER (PARTITION BY step, index_in_step ORDER BY start_ns DESC, rank) AS place,
         count(*) OVER (PARTITION BY step, index_in_step) AS ranks,
         min(start_ns) OVER (PARTITION BY step, index_in_step) AS first_ns
  FROM calls
),
rows AS (
  SELECT step, index_in_step, arg_min(name, rank) AS name, count(DISTINCT name) = 1 AS names_agree,
         list({'rank': rank, 'after_ns': start_ns - first_ns} ORDER BY rank) AS arrivals
  FROM ranked GROUP BY step, index_in_step
)
SELECT r.step, r.index_in_step AS "index", w.name, r.ranks, w.names_agree, r.rank AS last_rank,
       r.start_ns - r.first_ns AS spread_ns, r.process_group, r.seq, w.arrivals
FROM ranked r JOIN rows w USING (step, index_in_step)
WHERE r.place = 1 AND r.ranks >= 2
ORDER BY r.step, "index"
