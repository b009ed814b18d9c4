-- QueryById: 15 in 43.
\set stock random(1, :items)
SELECT current_value, high_value, low_value FROM StockItem WHERE stock_id = :stock;
