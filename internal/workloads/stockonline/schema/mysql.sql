-- Stock-Online (Brebner & Ran 2001, section 3.2) for MySQL and MariaDB.
-- One deviation: SubAccount, StockItem and StockHolding carry a version
-- column for the entity container's optimistic concurrency (nothing else
-- reads or writes it).
-- Money is in cents (BIGINT) so that every dialect computes it exactly.
-- Keys of new accounts and transactions come from AUTO_INCREMENT, the
-- dialect's sequence.
DROP TABLE IF EXISTS StockTransaction, StockHolding, StockItem, SubAccount;
CREATE TABLE SubAccount (
    sub_accno   BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    sub_name    VARCHAR(64)  NOT NULL,
    sub_address VARCHAR(128) NOT NULL,
    sub_credit  BIGINT       NOT NULL,
    version     BIGINT       NOT NULL DEFAULT 0
) ENGINE=InnoDB;
CREATE TABLE StockItem (
    stock_id      BIGINT      NOT NULL PRIMARY KEY,
    stock_code    VARCHAR(8)  NOT NULL UNIQUE,
    company_name  VARCHAR(64) NOT NULL,
    current_value BIGINT      NOT NULL,
    high_value    BIGINT      NOT NULL,
    low_value     BIGINT      NOT NULL,
    version       BIGINT      NOT NULL DEFAULT 0
) ENGINE=InnoDB;
CREATE TABLE StockHolding (
    sub_accno BIGINT NOT NULL,
    stock_id  BIGINT NOT NULL,
    amount    BIGINT NOT NULL,
    version   BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (sub_accno, stock_id)
) ENGINE=InnoDB;
CREATE TABLE StockTransaction (
    trans_id   BIGINT   NOT NULL AUTO_INCREMENT PRIMARY KEY,
    trans_type CHAR(1)  NOT NULL,
    sub_accno  BIGINT   NOT NULL,
    stock_id   BIGINT   NOT NULL,
    amount     BIGINT   NOT NULL,
    price      BIGINT   NOT NULL,
    trans_date DATETIME NOT NULL
) ENGINE=InnoDB;
