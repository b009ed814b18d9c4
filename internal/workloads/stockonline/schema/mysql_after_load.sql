-- Statistics for the optimizer before the first query. AUTO_INCREMENT has
-- already moved past the loaded keys.
ANALYZE TABLE SubAccount, StockItem, StockHolding, StockTransaction;
