-- ECperf 1.1 (Sun Microsystems 2001) for SQLite: the tables of the
-- Customer (c_), Orders (o_), Manufacturing (m_) and Supplier (s_) domains
-- and the key-block sequences (u_), per the schema contract of the port.
-- Deviations from the kit: money in cents (INTEGER) so every dialect computes
-- it exactly; entity tables carry a version column for the entity
-- container's optimistic concurrency; s_outbox is the transactional outbox
-- of purchase orders to publish.
-- New keys come from INTEGER PRIMARY KEY (the rowid), SQLite's sequence.
-- Timestamps are declared TIMESTAMP (NUMERIC affinity, stored as text) so
-- that the driver parses them back into times; a TEXT column scans as a
-- string only.
DROP TABLE IF EXISTS c_customer;
DROP TABLE IF EXISTS c_supplier;
DROP TABLE IF EXISTS c_site;
DROP TABLE IF EXISTS c_parts;
DROP TABLE IF EXISTS c_rule;
DROP TABLE IF EXISTS c_discount;
DROP TABLE IF EXISTS o_customer;
DROP TABLE IF EXISTS o_orders;
DROP TABLE IF EXISTS o_orderline;
DROP TABLE IF EXISTS o_item;
DROP TABLE IF EXISTS m_parts;
DROP TABLE IF EXISTS m_bom;
DROP TABLE IF EXISTS m_workorder;
DROP TABLE IF EXISTS m_largeorder;
DROP TABLE IF EXISTS m_inventory;
DROP TABLE IF EXISTS s_component;
DROP TABLE IF EXISTS s_supp_component;
DROP TABLE IF EXISTS s_supplier;
DROP TABLE IF EXISTS s_site;
DROP TABLE IF EXISTS s_purchase_order;
DROP TABLE IF EXISTS s_purchase_orderline;
DROP TABLE IF EXISTS s_outbox;
DROP TABLE IF EXISTS u_sequences;

CREATE TABLE c_customer (
    c_id           INTEGER PRIMARY KEY,
    c_first        TEXT      NOT NULL,
    c_last         TEXT      NOT NULL,
    c_street1      TEXT      NOT NULL,
    c_street2      TEXT      NOT NULL,
    c_city         TEXT      NOT NULL,
    c_state        TEXT      NOT NULL,
    c_country      TEXT      NOT NULL,
    c_zip          TEXT      NOT NULL,
    c_phone        TEXT      NOT NULL,
    c_contact      TEXT      NOT NULL,
    c_since        TIMESTAMP NOT NULL,
    c_balance      INTEGER   NOT NULL,
    c_credit       TEXT      NOT NULL,
    c_credit_limit INTEGER   NOT NULL,
    c_ytd_payment  INTEGER   NOT NULL,
    version        INTEGER   NOT NULL DEFAULT 0
);
CREATE TABLE c_supplier (
    supp_id      INTEGER PRIMARY KEY,
    supp_name    TEXT    NOT NULL,
    supp_street1 TEXT    NOT NULL,
    supp_street2 TEXT    NOT NULL,
    supp_city    TEXT    NOT NULL,
    supp_state   TEXT    NOT NULL,
    supp_country TEXT    NOT NULL,
    supp_zip     TEXT    NOT NULL,
    supp_phone   TEXT    NOT NULL,
    supp_contact TEXT    NOT NULL
);
CREATE TABLE c_site (
    site_id      INTEGER PRIMARY KEY,
    site_name    TEXT    NOT NULL,
    site_street1 TEXT    NOT NULL,
    site_street2 TEXT    NOT NULL,
    site_city    TEXT    NOT NULL,
    site_state   TEXT    NOT NULL,
    site_country TEXT    NOT NULL,
    site_zip     TEXT    NOT NULL
);
CREATE TABLE c_parts (
    p_id      INTEGER PRIMARY KEY,
    p_name    TEXT    NOT NULL,
    p_desc    TEXT    NOT NULL,
    p_rev     TEXT    NOT NULL,
    p_unit    TEXT    NOT NULL,
    p_cost    INTEGER NOT NULL,
    p_price   INTEGER NOT NULL,
    p_planner INTEGER NOT NULL,
    p_type    INTEGER NOT NULL,
    p_ind     INTEGER NOT NULL,
    p_lomark  INTEGER NOT NULL,
    p_himark  INTEGER NOT NULL
);
CREATE TABLE c_rule (
    r_id   TEXT NOT NULL PRIMARY KEY,
    r_text TEXT NOT NULL
);
CREATE TABLE c_discount (
    d_id      TEXT    NOT NULL PRIMARY KEY,
    d_percent INTEGER NOT NULL
);

CREATE TABLE o_customer (
    c_id      INTEGER PRIMARY KEY,
    c_first   TEXT      NOT NULL,
    c_last    TEXT      NOT NULL,
    c_street1 TEXT      NOT NULL,
    c_street2 TEXT      NOT NULL,
    c_city    TEXT      NOT NULL,
    c_state   TEXT      NOT NULL,
    c_country TEXT      NOT NULL,
    c_zip     TEXT      NOT NULL,
    c_phone   TEXT      NOT NULL,
    c_contact TEXT      NOT NULL,
    c_since   TIMESTAMP NOT NULL,
    version   INTEGER   NOT NULL DEFAULT 0
);
CREATE TABLE o_orders (
    o_id         INTEGER PRIMARY KEY,
    o_c_id       INTEGER   NOT NULL,
    o_ol_cnt     INTEGER   NOT NULL,
    o_discount   INTEGER   NOT NULL,
    o_total      INTEGER   NOT NULL,
    o_status     INTEGER   NOT NULL,
    o_entry_date TIMESTAMP NOT NULL,
    o_ship_date  TIMESTAMP NOT NULL,
    version      INTEGER   NOT NULL DEFAULT 0
);
CREATE INDEX o_orders_cust ON o_orders (o_c_id);
CREATE TABLE o_orderline (
    ol_o_id      INTEGER   NOT NULL,
    ol_id        INTEGER   NOT NULL,
    ol_i_id      INTEGER   NOT NULL,
    ol_qty       INTEGER   NOT NULL,
    ol_status    INTEGER   NOT NULL,
    ol_ship_date TIMESTAMP NOT NULL,
    version      INTEGER   NOT NULL DEFAULT 0,
    PRIMARY KEY (ol_o_id, ol_id)
) WITHOUT ROWID;
CREATE TABLE o_item (
    i_id       INTEGER PRIMARY KEY,
    i_name     TEXT    NOT NULL,
    i_desc     TEXT    NOT NULL,
    i_price    INTEGER NOT NULL,
    i_discount INTEGER NOT NULL,
    version    INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE m_parts (
    p_id      INTEGER PRIMARY KEY,
    p_name    TEXT    NOT NULL,
    p_desc    TEXT    NOT NULL,
    p_rev     TEXT    NOT NULL,
    p_planner INTEGER NOT NULL,
    p_type    INTEGER NOT NULL,
    p_ind     INTEGER NOT NULL,
    p_lomark  INTEGER NOT NULL,
    p_himark  INTEGER NOT NULL
);
CREATE TABLE m_bom (
    b_assembly_id INTEGER NOT NULL,
    b_comp_id     INTEGER NOT NULL,
    b_line_no     INTEGER NOT NULL,
    b_qty         INTEGER NOT NULL,
    b_ops         INTEGER NOT NULL,
    b_eng_change  TEXT    NOT NULL,
    b_ops_desc    TEXT    NOT NULL,
    PRIMARY KEY (b_assembly_id, b_comp_id)
) WITHOUT ROWID;
CREATE TABLE m_workorder (
    wo_number      INTEGER PRIMARY KEY,
    wo_o_id        INTEGER   NOT NULL,
    wo_ol_id       INTEGER   NOT NULL,
    wo_status      INTEGER   NOT NULL,
    wo_assembly_id INTEGER   NOT NULL,
    wo_orig_qty    INTEGER   NOT NULL,
    wo_comp_qty    INTEGER   NOT NULL,
    wo_due_date    TIMESTAMP NOT NULL,
    wo_start_date  TIMESTAMP NOT NULL,
    version        INTEGER   NOT NULL DEFAULT 0
);
CREATE TABLE m_largeorder (
    lo_id          INTEGER PRIMARY KEY,
    lo_o_id        INTEGER   NOT NULL,
    lo_ol_id       INTEGER   NOT NULL,
    lo_assembly_id INTEGER   NOT NULL,
    lo_qty         INTEGER   NOT NULL,
    lo_due_date    TIMESTAMP NOT NULL,
    version        INTEGER   NOT NULL DEFAULT 0
);
-- CancelOrder removes an order's large orders.
CREATE INDEX m_largeorder_order ON m_largeorder (lo_o_id);
-- The check finds a large order line's work order.
CREATE INDEX m_workorder_line ON m_workorder (wo_o_id, wo_ol_id);
CREATE TABLE m_inventory (
    in_p_id     INTEGER   PRIMARY KEY,
    in_qty      INTEGER   NOT NULL,
    in_ordered  INTEGER   NOT NULL,
    in_location TEXT      NOT NULL,
    in_acc_code INTEGER   NOT NULL,
    in_act_date TIMESTAMP NOT NULL,
    version     INTEGER   NOT NULL DEFAULT 0
);

CREATE TABLE s_component (
    comp_id        INTEGER PRIMARY KEY,
    comp_name      TEXT    NOT NULL,
    comp_desc      TEXT    NOT NULL,
    comp_unit      TEXT    NOT NULL,
    comp_cost      INTEGER NOT NULL,
    qty_on_order   INTEGER NOT NULL,
    qty_demanded   INTEGER NOT NULL,
    lead_time      INTEGER NOT NULL,
    container_size INTEGER NOT NULL,
    version        INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE s_supp_component (
    sc_p_id     INTEGER NOT NULL,
    sc_supp_id  INTEGER NOT NULL,
    sc_price    INTEGER NOT NULL,
    sc_qty      INTEGER NOT NULL,
    sc_discount INTEGER NOT NULL,
    sc_del_date INTEGER NOT NULL,
    PRIMARY KEY (sc_p_id, sc_supp_id)
) WITHOUT ROWID;
CREATE TABLE s_supplier (
    supp_id      INTEGER PRIMARY KEY,
    supp_name    TEXT    NOT NULL,
    supp_street1 TEXT    NOT NULL,
    supp_street2 TEXT    NOT NULL,
    supp_city    TEXT    NOT NULL,
    supp_state   TEXT    NOT NULL,
    supp_country TEXT    NOT NULL,
    supp_zip     TEXT    NOT NULL,
    supp_phone   TEXT    NOT NULL,
    supp_contact TEXT    NOT NULL,
    supp_url     TEXT    NOT NULL
);
CREATE TABLE s_site (
    site_id      INTEGER PRIMARY KEY,
    site_name    TEXT    NOT NULL,
    site_street1 TEXT    NOT NULL,
    site_street2 TEXT    NOT NULL,
    site_city    TEXT    NOT NULL,
    site_state   TEXT    NOT NULL,
    site_country TEXT    NOT NULL,
    site_zip     TEXT    NOT NULL
);
CREATE TABLE s_purchase_order (
    po_number  INTEGER PRIMARY KEY,
    po_supp_id INTEGER   NOT NULL,
    po_site_id INTEGER   NOT NULL,
    po_status  INTEGER   NOT NULL,
    po_created TIMESTAMP NOT NULL,
    version    INTEGER   NOT NULL DEFAULT 0
);
CREATE INDEX s_po_status ON s_purchase_order (po_status);
CREATE TABLE s_purchase_orderline (
    pol_po_id   INTEGER   NOT NULL,
    pol_number  INTEGER   NOT NULL,
    pol_p_id    INTEGER   NOT NULL,
    pol_qty     INTEGER   NOT NULL,
    pol_balance INTEGER   NOT NULL,
    pol_deldate TIMESTAMP NOT NULL,
    pol_message TEXT      NOT NULL,
    version     INTEGER   NOT NULL DEFAULT 0,
    PRIMARY KEY (pol_po_id, pol_number)
) WITHOUT ROWID;
CREATE TABLE s_outbox (
    ob_po_number INTEGER PRIMARY KEY,
    ob_created   TIMESTAMP NOT NULL
);

CREATE TABLE u_sequences (
    s_id        TEXT    NOT NULL PRIMARY KEY,
    s_nextnum   INTEGER NOT NULL,
    s_blocksize INTEGER NOT NULL
);

-- @after-load
-- Statistics for the query planner before the first query.
ANALYZE;
