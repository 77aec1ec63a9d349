-- The report's collective arrivals: per step, each rank's call of one
-- collective (c10d's, or the process group's work where a rank has no c10d
-- call), matched by (process group, sequence number) where torch numbered
-- every call of the step (record_param_comms: NCCL), else by order: each
-- rank's Nth call is the same collective; the last rank to start it (ties: the lowest) is
-- its straggler, the spread is the last start less the first.
--
-- The map half: the calls that count, from the part it is given (a rank's
-- calls are in one part); arrivals.reduce.sql matches them across ranks.
WITH kinds AS (
  SELECT run, rank, bool_or(call = 'c10d') AS has_c10d FROM collectives WHERE rank IS NOT NULL AND NOT nested GROUP BY run, rank
)
SELECT c.step, c.index_in_step, c.rank, c.name, c.start_ns, c.process_group, c.seq
FROM collectives c JOIN kinds k USING (run, rank)
WHERE c.index_in_step IS NOT NULL AND c.call = CASE WHEN k.has_c10d THEN 'c10d' ELSE 'work' END
