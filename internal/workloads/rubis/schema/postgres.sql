-- RUBiS (Cecchet et al. 2002) for PostgreSQL: the tables, columns and
-- indexes of the original database/rubis.sql, names unchanged; index names
-- are those of RUBiS's own PostgreSQL script, since PostgreSQL needs them
-- unique in a schema where MySQL needs them unique per table only.
-- Types: FLOAT is double precision (MySQL's FLOAT would be single) so that
-- prices compare exactly across dialects; no UNSIGNED, which PostgreSQL
-- lacks. Keys of new rows come from the SERIAL sequences; old_items takes
-- the ids of the items it archives, so it has none.
-- Secondary indexes and the nickname constraint are built after the load
-- (below the marker), which is faster than maintaining them row by row.
DROP TABLE IF EXISTS categories, regions, users, items, old_items, bids, comments, buy_now, ids;

CREATE TABLE categories (
    id   SERIAL PRIMARY KEY,
    name VARCHAR(50)
);

CREATE TABLE regions (
    id   SERIAL PRIMARY KEY,
    name VARCHAR(25)
);

CREATE TABLE users (
    id            SERIAL PRIMARY KEY,
    firstname     VARCHAR(20),
    lastname      VARCHAR(20),
    nickname      VARCHAR(20) NOT NULL,
    password      VARCHAR(20) NOT NULL,
    email         VARCHAR(50) NOT NULL,
    rating        INTEGER,
    balance       FLOAT,
    creation_date TIMESTAMP,
    region        INTEGER NOT NULL
);

CREATE TABLE items (
    id            SERIAL PRIMARY KEY,
    name          VARCHAR(100),
    description   TEXT,
    initial_price FLOAT NOT NULL,
    quantity      INTEGER NOT NULL,
    reserve_price FLOAT DEFAULT 0,
    buy_now       FLOAT DEFAULT 0,
    nb_of_bids    INTEGER DEFAULT 0,
    max_bid       FLOAT DEFAULT 0,
    start_date    TIMESTAMP,
    end_date      TIMESTAMP,
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
    start_date    TIMESTAMP,
    end_date      TIMESTAMP,
    seller        INTEGER NOT NULL,
    category      INTEGER NOT NULL
);

CREATE TABLE bids (
    id      SERIAL PRIMARY KEY,
    user_id INTEGER NOT NULL,
    item_id INTEGER NOT NULL,
    qty     INTEGER NOT NULL,
    bid     FLOAT NOT NULL,
    max_bid FLOAT NOT NULL,
    date    TIMESTAMP
);

CREATE TABLE comments (
    id           SERIAL PRIMARY KEY,
    from_user_id INTEGER NOT NULL,
    to_user_id   INTEGER NOT NULL,
    item_id      INTEGER NOT NULL,
    rating       INTEGER,
    date         TIMESTAMP,
    comment      TEXT
);

CREATE TABLE buy_now (
    id       SERIAL PRIMARY KEY,
    buyer_id INTEGER NOT NULL,
    item_id  INTEGER NOT NULL,
    qty      INTEGER NOT NULL,
    date     TIMESTAMP
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
ALTER TABLE users ADD CONSTRAINT users_nickname_key UNIQUE (nickname);
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
-- The loader wrote explicit keys: move the sequences past them (setval of
-- an empty table's NULL maximum does nothing), and give the planner
-- statistics before the first query.
SELECT setval(pg_get_serial_sequence('categories', 'id'), MAX(id)) FROM categories;
SELECT setval(pg_get_serial_sequence('regions', 'id'), MAX(id)) FROM regions;
SELECT setval(pg_get_serial_sequence('users', 'id'), MAX(id)) FROM users;
SELECT setval(pg_get_serial_sequence('items', 'id'), MAX(id)) FROM items;
SELECT setval(pg_get_serial_sequence('bids', 'id'), MAX(id)) FROM bids;
SELECT setval(pg_get_serial_sequence('comments', 'id'), MAX(id)) FROM comments;
ANALYZE categories, regions, users, items, old_items, bids, comments, buy_now, ids;
