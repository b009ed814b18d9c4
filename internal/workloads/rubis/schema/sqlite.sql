-- RUBiS (Cecchet et al. 2002) for SQLite: the tables, columns and indexes
-- of the original database/rubis.sql, names unchanged; index names are
-- those of RUBiS's own PostgreSQL script, since SQLite, like PostgreSQL,
-- needs them unique in a database.
-- Types keep the original's names where SQLite understands them: FLOAT has
-- REAL affinity (a double, as on the other dialects here), and DATETIME is
-- declared so that the driver parses the stored text back into times.
-- Keys of new rows come from INTEGER PRIMARY KEY (the rowid); old_items
-- takes the ids of the items it archives.
-- Secondary indexes and the nickname constraint are built after the load
-- (below the marker).
DROP TABLE IF EXISTS categories;
DROP TABLE IF EXISTS regions;
DROP TABLE IF EXISTS users;
DROP TABLE IF EXISTS items;
DROP TABLE IF EXISTS old_items;
DROP TABLE IF EXISTS bids;
DROP TABLE IF EXISTS comments;
DROP TABLE IF EXISTS buy_now;
DROP TABLE IF EXISTS ids;

CREATE TABLE categories (
    id   INTEGER PRIMARY KEY,
    name VARCHAR(50)
);

CREATE TABLE regions (
    id   INTEGER PRIMARY KEY,
    name VARCHAR(25)
);

CREATE TABLE users (
    id            INTEGER PRIMARY KEY,
    firstname     VARCHAR(20),
    lastname      VARCHAR(20),
    nickname      VARCHAR(20) NOT NULL,
    password      VARCHAR(20) NOT NULL,
    email         VARCHAR(50) NOT NULL,
    rating        INTEGER,
    balance       FLOAT,
    creation_date DATETIME,
    region        INTEGER NOT NULL
);

CREATE TABLE items (
    id            INTEGER PRIMARY KEY,
    name          VARCHAR(100),
    description   TEXT,
    initial_price FLOAT NOT NULL,
    quantity      INTEGER NOT NULL,
    reserve_price FLOAT DEFAULT 0,
    buy_now       FLOAT DEFAULT 0,
    nb_of_bids    INTEGER DEFAULT 0,
    max_bid       FLOAT DEFAULT 0,
    start_date    DATETIME,
    end_date      DATETIME,
    seller        INTEGER NOT NULL,
    category      INTEGER NOT NULL
);

CREATE TABLE old_items (
    id            INTEGER PRIMARY KEY,
    name          VARCHAR(100),
    description   TEXT,
    initial_price FLOAT NOT NULL,
    quantity      INTEGER NOT NULL,
    reserve_price FLOAT DEFAULT 0,
    buy_now       FLOAT DEFAULT 0,
    nb_of_bids    INTEGER DEFAULT 0,
    max_bid       FLOAT DEFAULT 0,
    start_date    DATETIME,
    end_date      DATETIME,
    seller        INTEGER NOT NULL,
    category      INTEGER NOT NULL
);

CREATE TABLE bids (
    id      INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL,
    item_id INTEGER NOT NULL,
    qty     INTEGER NOT NULL,
    bid     FLOAT NOT NULL,
    max_bid FLOAT NOT NULL,
    date    DATETIME
);

CREATE TABLE comments (
    id           INTEGER PRIMARY KEY,
    from_user_id INTEGER NOT NULL,
    to_user_id   INTEGER NOT NULL,
    item_id      INTEGER NOT NULL,
    rating       INTEGER,
    date         DATETIME,
    comment      TEXT
);

CREATE TABLE buy_now (
    id       INTEGER PRIMARY KEY,
    buyer_id INTEGER NOT NULL,
    item_id  INTEGER NOT NULL,
    qty      INTEGER NOT NULL,
    date     DATETIME
);

CREATE TABLE ids (
    id       INTEGER NOT NULL PRIMARY KEY,
    category INTEGER NOT NULL,
    region   INTEGER NOT NULL,
    users    INTEGER NOT NULL,
    item     INTEGER NOT NULL,
    comment  INTEGER NOT NULL,
    bid      INTEGER NOT NULL,
    buyNow   INTEGER NOT NULL
);
-- @after-load
CREATE UNIQUE INDEX users_nickname_key ON users (nickname);
CREATE INDEX auth ON users (nickname, password);
CREATE INDEX region_id ON users (region);
CREATE INDEX seller_id ON items (seller);
CREATE INDEX category_id ON items (category);
CREATE INDEX old_seller_id ON old_items (seller);
CREATE INDEX old_category_id ON old_items (category);
CREATE INDEX bid_item ON bids (item_id);
CREATE INDEX bid_user ON bids (user_id);
CREATE INDEX from_user ON comments (from_user_id);
CREATE INDEX to_user ON comments (to_user_id);
-- Not the original's name "item": indexes share the schema's namespace with
-- tables here, and TPC-App has a table item.
CREATE INDEX comments_item ON comments (item_id);
CREATE INDEX buyer ON buy_now (buyer_id);
CREATE INDEX buy_now_item ON buy_now (item_id);
-- Statistics for the query planner before the first query.
ANALYZE;
