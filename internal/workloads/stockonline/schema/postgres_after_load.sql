-- The loader wrote explicit keys: move the sequence past them, and give the
-- planner statistics before the first query.
SELECT setval(pg_get_serial_sequence('subaccount', 'sub_accno'), (SELECT MAX(sub_accno) FROM SubAccount));
ANALYZE SubAccount;
ANALYZE StockItem;
ANALYZE StockHolding;
ANALYZE StockTransaction;
