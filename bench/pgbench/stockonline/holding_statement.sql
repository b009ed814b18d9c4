-- GetHoldingStatement: 5 in 43.
\set acc random(1, :accounts)
SELECT stock_id, amount FROM StockHolding WHERE sub_accno = :acc AND amount > 0 ORDER BY stock_id LIMIT 20;
