-- The report's per-step table from steps.map.sql's parts.
SELECT step, pid, tid, wall_ns, operators_ns FROM partial ORDER BY step, pid, tid
