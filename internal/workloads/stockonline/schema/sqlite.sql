-- Stock-Online (Brebner & Ran 2001, section 3.2) for SQLite.
-- One deviation: SubAccount, StockItem and StockHolding carry a version
-- column for the entity container's optimistic concurrency (nothing else
-- reads or writes it).
-- Money is in cents (INTEGER) so that every dialect computes it exactly.
-- New keys come from INTEGER PRIMARY KEY (the rowid), SQLite's sequence.
DROP TABLE IF EXISTS StockTransaction;
DROP TABLE IF EXISTS StockHolding;
DROP TABLE IF EXISTS StockItem;
DROP TABLE IF EXISTS SubAccount;
CREATE TABLE SubAccount (
    sub_accno   INTEGER PRIMARY KEY,
    sub_name    TEXT    NOT NULL,
    sub_address TEXT    NOT NULL,
    sub_credit  INTEGER NOT NULL,
    version     INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE StockItem (
    stock_id      INTEGER PRIMARY KEY,
    stock_code    TEXT    NOT NULL UNIQUE,
    company_name  TEXT    NOT NULL,
    current_value INTEGER NOT NULL,
    high_value    INTEGER NOT NULL,
    low_value     INTEGER NOT NULL,
    version       INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE StockHolding (
    sub_accno INTEGER NOT NULL,
    stock_id  INTEGER NOT NULL,
    amount    INTEGER NOT NULL,
    version   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (sub_accno, stock_id)
) WITHOUT ROWID;
CREATE TABLE StockTransaction (
    trans_id   INTEGER PRIMARY KEY,
    trans_type TEXT    NOT NULL,
    sub_accno  INTEGER NOT NULL,
    stock_id   INTEGER NOT NULL,
    amount     INTEGER NOT NULL,
    price      INTEGER NOT NULL,
    trans_date TEXT    NOT NULL
);
