-- Statistics for the query planner before the first query.
ANALYZE;
