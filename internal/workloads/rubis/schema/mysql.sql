-- RUBiS (Cecchet et al. 2002) for MySQL and MariaDB: the tables, columns
-- and indexes of the original database/rubis.sql, names unchanged.
-- Deviations: FLOAT is DOUBLE (the original's single-precision FLOAT would
-- round prices differently from the other dialects); no UNSIGNED, so that a
-- statement that goes below zero behaves as on PostgreSQL and SQLite; the
-- original's UNIQUE on every id, redundant with its PRIMARY KEY, is left out.
-- Keys of new rows come from AUTO_INCREMENT, which moves past the loaded
-- keys by itself; old_items takes the ids of the items it archives.
-- Secondary indexes and the nickname key are built after the load (below
-- the marker): InnoDB builds them by sorting, faster than row by row.
DROP TABLE IF EXISTS categories, regions, users, items, old_items, bids, comments, buy_now, ids;

CREATE TABLE categories (
    id   INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name VARCHAR(50)
) ENGINE=InnoDB;

CREATE TABLE regions (
    id   INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name VARCHAR(25)
) ENGINE=InnoDB;

CREATE TABLE users (
    id            INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    firstname     VARCHAR(20),
    lastname      VARCHAR(20),
    nickname      VARCHAR(20) NOT NULL,
    password      VARCHAR(20) NOT NULL,
    email         VARCHAR(50) NOT NULL,
    rating        INT,
    balance       DOUBLE,
    creation_date DATETIME,
    region        INT NOT NULL
) ENGINE=InnoDB;

CREATE TABLE items (
    id            INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    name          VARCHAR(100),
    description   TEXT,
    initial_price DOUBLE NOT NULL,
    quantity      INT NOT NULL,
    reserve_price DOUBLE DEFAULT 0,
    buy_now       DOUBLE DEFAULT 0,
    nb_of_bids    INT DEFAULT 0,
    max_bid       DOUBLE DEFAULT 0,
    start_date    DATETIME,
    end_date      DATETIME,
    seller        INT NOT NULL,
    category      INT NOT NULL
) ENGINE=InnoDB;

CREATE TABLE old_items (
    id            INT NOT NULL PRIMARY KEY,
    name          VARCHAR(100),
    description   TEXT,
    initial_price DOUBLE NOT NULL,
    quantity      INT NOT NULL,
    reserve_price DOUBLE DEFAULT 0,
    buy_now       DOUBLE DEFAULT 0,
    nb_of_bids    INT DEFAULT 0,
    max_bid       DOUBLE DEFAULT 0,
    start_date    DATETIME,
    end_date      DATETIME,
    seller        INT NOT NULL,
    category      INT NOT NULL
) ENGINE=InnoDB;

CREATE TABLE bids (
    id      INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    user_id INT NOT NULL,
    item_id INT NOT NULL,
    qty     INT NOT NULL,
    bid     DOUBLE NOT NULL,
    max_bid DOUBLE NOT NULL,
    date    DATETIME
) ENGINE=InnoDB;

CREATE TABLE comments (
    id           INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    from_user_id INT NOT NULL,
    to_user_id   INT NOT NULL,
    item_id      INT NOT NULL,
    rating       INT,
    date         DATETIME,
    comment      TEXT
) ENGINE=InnoDB;

CREATE TABLE buy_now (
    id       INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    buyer_id INT NOT NULL,
    item_id  INT NOT NULL,
    qty      INT NOT NULL,
    date     DATETIME
) ENGINE=InnoDB;

CREATE TABLE ids (
    id       INT NOT NULL PRIMARY KEY,
    category INT NOT NULL,
    region   INT NOT NULL,
    users    INT NOT NULL,
    item     INT NOT NULL,
    comment  INT NOT NULL,
    bid      INT NOT NULL,
    buyNow   INT NOT NULL
) ENGINE=InnoDB;
-- @after-load
ALTER TABLE users ADD UNIQUE KEY nickname (nickname), ADD INDEX auth (nickname, password), ADD INDEX region_id (region);
ALTER TABLE items ADD INDEX seller_id (seller), ADD INDEX category_id (category);
ALTER TABLE old_items ADD INDEX seller_id (seller), ADD INDEX category_id (category);
ALTER TABLE bids ADD INDEX item (item_id), ADD INDEX user (user_id);
ALTER TABLE comments ADD INDEX from_user (from_user_id), ADD INDEX to_user (to_user_id), ADD INDEX item (item_id);
ALTER TABLE buy_now ADD INDEX buyer (buyer_id), ADD INDEX item (item_id);
ANALYZE TABLE categories, regions, users, items, old_items, bids, comments, buy_now, ids;
