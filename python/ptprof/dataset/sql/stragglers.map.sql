-- The report's step-time stragglers: a rank's time for a step is its
-- longest span of that step (its main process's threads; DataLoader and
-- compile workers left out); per step that two ranks or more recorded, the
-- slowest rank (ties: the lowest) and its lag behind the median.
--
-- The map half: each rank's time per step in the part it is given (a rank's
-- processes are in one part); stragglers.reduce.sql compares the ranks.
SELECT s.rank, s.step, max(s.dur_ns) AS ns
FROM steps s
JOIN processes p ON p.run = s.run AND p.pid = s.pid AND p.rank = s.rank
WHERE s.role = 'step' AND s.rank IS NOT NULL AND p.role = 'trainer'
GROUP BY s.rank, s.step
