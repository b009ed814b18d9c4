-- TPC-App for SQLite: the tables the reference names (country,
-- address, customer, author, item, stock, orders, order_line) and those the
-- background processes need (shipment, reorder, and the two transactional
-- outboxes). Money is in cents (BIGINT), so totals recompute exactly on
-- every dialect. Keys of new rows come from INTEGER PRIMARY KEY (the rowid), which moves past the loaded keys by itself.
-- The specification's schema: primary keys, plus the address lookup that
-- "store the address unless already present" needs. The seed's four
-- tuning indexes are schema/tuned.sql (--indexes tuned).
-- An index an earlier RUBiS load named item (now comments_item) would
-- stand where the item table goes: indexes and tables share one namespace.
DROP INDEX IF EXISTS item;
DROP TABLE IF EXISTS country;
DROP TABLE IF EXISTS address;
DROP TABLE IF EXISTS customer;
DROP TABLE IF EXISTS author;
DROP TABLE IF EXISTS item;
DROP TABLE IF EXISTS stock;
DROP TABLE IF EXISTS orders;
DROP TABLE IF EXISTS order_line;
DROP TABLE IF EXISTS shipment;
DROP TABLE IF EXISTS reorder;
DROP TABLE IF EXISTS ship_outbox;
DROP TABLE IF EXISTS reorder_outbox;

CREATE TABLE country (
    co_id       INTEGER PRIMARY KEY,
    co_name     VARCHAR(50) NOT NULL,
    co_exchange REAL NOT NULL,
    co_currency VARCHAR(18) NOT NULL,
    co_zone     INTEGER NOT NULL
);

CREATE TABLE address (
    addr_id      INTEGER PRIMARY KEY,
    addr_street1 VARCHAR(40) NOT NULL,
    addr_street2 VARCHAR(40) NOT NULL,
    addr_city    VARCHAR(30) NOT NULL,
    addr_state   VARCHAR(20) NOT NULL,
    addr_zip     VARCHAR(10) NOT NULL,
    addr_co_id   INTEGER NOT NULL
);

CREATE TABLE customer (
    c_id             INTEGER PRIMARY KEY,
    c_uname          VARCHAR(20) NOT NULL,
    c_passwd         VARCHAR(20) NOT NULL,
    c_business_name  VARCHAR(40) NOT NULL,
    c_business_info  VARCHAR(100) NOT NULL,
    c_contact_fname  VARCHAR(20) NOT NULL,
    c_contact_lname  VARCHAR(20) NOT NULL,
    c_contact_phone  VARCHAR(16) NOT NULL,
    c_contact_email  VARCHAR(50) NOT NULL,
    c_addr_id        BIGINT NOT NULL,
    c_payment_method CHAR(2) NOT NULL,
    c_cc_number      VARCHAR(16) NOT NULL,
    c_cc_name        VARCHAR(30) NOT NULL,
    c_cc_expiry      CHAR(5) NOT NULL,
    c_po_id          VARCHAR(20) NOT NULL,
    c_discount       INTEGER NOT NULL,
    c_since          TIMESTAMP NOT NULL
);

CREATE TABLE author (
    a_id    INTEGER PRIMARY KEY,
    a_fname VARCHAR(20) NOT NULL,
    a_lname VARCHAR(20) NOT NULL,
    a_mname VARCHAR(20) NOT NULL,
    a_dob   TIMESTAMP NOT NULL,
    a_bio   VARCHAR(500) NOT NULL
);

CREATE TABLE item (
    i_id         INTEGER PRIMARY KEY,
    i_title      VARCHAR(60) NOT NULL,
    i_a_id       INTEGER NOT NULL,
    i_pub_date   TIMESTAMP NOT NULL,
    i_publisher  VARCHAR(60) NOT NULL,
    i_subject    VARCHAR(60) NOT NULL,
    i_desc       VARCHAR(500) NOT NULL,
    i_srp        BIGINT NOT NULL,
    i_cost       BIGINT NOT NULL,
    i_isbn       CHAR(13) NOT NULL,
    i_page       INTEGER NOT NULL,
    i_backing    VARCHAR(15) NOT NULL,
    i_dimensions VARCHAR(25) NOT NULL,
    i_volume     INTEGER NOT NULL,
    i_image_size INTEGER NOT NULL,
    i_image      BLOB,
    i_image_path VARCHAR(200)
);

CREATE TABLE stock (
    s_i_id    INTEGER PRIMARY KEY,
    s_qty     INTEGER NOT NULL,
    s_pending INTEGER NOT NULL
);

CREATE TABLE orders (
    o_id             INTEGER PRIMARY KEY,
    o_c_id           BIGINT NOT NULL,
    o_date           TIMESTAMP NOT NULL,
    o_sub_total      BIGINT NOT NULL,
    o_discount       BIGINT NOT NULL,
    o_tax            BIGINT NOT NULL,
    o_ship_cost      BIGINT NOT NULL,
    o_total          BIGINT NOT NULL,
    o_ship_type      VARCHAR(10) NOT NULL,
    o_ship_addr_id   BIGINT NOT NULL,
    o_status         VARCHAR(16) NOT NULL,
    o_payment_method CHAR(2) NOT NULL,
    o_auth_code      VARCHAR(30) NOT NULL,
    o_ship_date      TIMESTAMP
);

CREATE TABLE order_line (
    ol_id     INTEGER PRIMARY KEY,
    ol_o_id   BIGINT NOT NULL,
    ol_i_id   INTEGER NOT NULL,
    ol_qty    INTEGER NOT NULL,
    ol_price  BIGINT NOT NULL,
    ol_status VARCHAR(16) NOT NULL
);

CREATE TABLE shipment (
    sh_o_id  BIGINT PRIMARY KEY,
    sh_date  TIMESTAMP NOT NULL,
    sh_lines INTEGER NOT NULL,
    -- 1 once SNE acknowledged the shipping notice
    sh_noticed SMALLINT NOT NULL DEFAULT 0
);

CREATE TABLE reorder (
    r_id        INTEGER PRIMARY KEY,
    r_i_id      INTEGER NOT NULL,
    r_qty       INTEGER NOT NULL,
    r_status    VARCHAR(10) NOT NULL,
    r_requested TIMESTAMP NOT NULL,
    r_received  TIMESTAMP
);

CREATE TABLE ship_outbox (
    so_o_id    BIGINT PRIMARY KEY,
    so_created TIMESTAMP NOT NULL
);

CREATE TABLE reorder_outbox (
    ro_r_id    BIGINT PRIMARY KEY,
    ro_created TIMESTAMP NOT NULL
);

-- @after-load
CREATE INDEX address_lookup ON address (addr_zip, addr_street1);
CREATE INDEX reorder_status ON reorder (r_status);
ANALYZE;
