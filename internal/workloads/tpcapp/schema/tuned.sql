-- The seed's four indexes (Asskildt 2007, section 4.1.3), --indexes tuned:
-- NewProducts' scan of item by subject and date, OrderStatus's orders of a
-- customer and lines of an order, and the lines of an item. The same text
-- on every dialect.
CREATE INDEX item_subject_pub_date ON item (i_subject, i_pub_date);
CREATE INDEX orders_customer ON orders (o_c_id);
CREATE INDEX order_line_order ON order_line (ol_o_id);
CREATE INDEX order_line_item ON order_line (ol_i_id);
