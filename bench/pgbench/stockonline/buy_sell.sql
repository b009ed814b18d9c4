-- BuyStock then its paired SellStock (same account, stock and amount): two
-- of Table 2's transactions per script, 3 + 3 in 43. The branches and round
-- trips follow tierbench's direct implementation: a refused buy rolls back; a
-- sell whose guarded decrement changed nothing probes the holding and rolls
-- back; the writes whose results are not needed are pipelined with COMMIT.
\set acc random(1, :accounts)
\set stock random(1, :items)
\set amount random(1, 100)
BEGIN;
SELECT a.sub_credit AS credit, i.current_value AS price FROM SubAccount a, StockItem i WHERE a.sub_accno = :acc AND i.stock_id = :stock \gset
\if :credit >= :price * :amount
\startpipeline
INSERT INTO StockHolding (sub_accno, stock_id, amount) VALUES (:acc, :stock, :amount) ON CONFLICT (sub_accno, stock_id) DO UPDATE SET amount = StockHolding.amount + excluded.amount;
INSERT INTO StockTransaction (trans_type, sub_accno, stock_id, amount, price, trans_date) VALUES ('B', :acc, :stock, :amount, :price, CURRENT_TIMESTAMP);
COMMIT;
\endpipeline
\else
ROLLBACK;
\endif
\set left -1
BEGIN;
UPDATE StockHolding SET amount = amount - :amount WHERE sub_accno = :acc AND stock_id = :stock AND amount >= :amount RETURNING amount AS left \aset
\if :left >= 0
\startpipeline
INSERT INTO StockTransaction (trans_type, sub_accno, stock_id, amount, price, trans_date) SELECT 'S', :acc, :stock, :amount, current_value, CURRENT_TIMESTAMP FROM StockItem WHERE stock_id = :stock;
COMMIT;
\endpipeline
\else
SELECT amount FROM StockHolding WHERE sub_accno = :acc AND stock_id = :stock;
ROLLBACK;
\endif
