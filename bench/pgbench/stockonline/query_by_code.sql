-- QueryByCode: 15 in 43. pgbench variables are numbers, so the server spells
-- the stock's four-letter code (tierbench's StockCode) from its id; the
-- lookup is tierbench's statement, by the unique code index.
\set stock random(1, :items)
SELECT current_value, high_value, low_value FROM StockItem WHERE stock_code = chr(65 + ((:stock - 1) / 17576) % 26) || chr(65 + ((:stock - 1) / 676) % 26) || chr(65 + ((:stock - 1) / 26) % 26) || chr(65 + (:stock - 1) % 26);
