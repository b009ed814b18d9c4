-- ECperf 1.1 (Sun Microsystems 2001) for MySQL and MariaDB: the tables of the
-- Customer (c_), Orders (o_), Manufacturing (m_) and Supplier (s_) domains
-- and the key-block sequences (u_), per the schema contract of the port.
-- Deviations from the kit: money in cents (BIGINT) so every dialect computes
-- it exactly; entity tables carry a version column for the entity
-- container's optimistic concurrency; s_outbox is the transactional outbox
-- of purchase orders to publish.
-- Keys of new rows come from AUTO_INCREMENT, the dialect's sequence.
DROP TABLE IF EXISTS c_customer, c_supplier, c_site, c_parts, c_rule, c_discount,
    o_customer, o_orders, o_orderline, o_item,
    m_parts, m_bom, m_workorder, m_largeorder, m_inventory,
    s_component, s_supp_component, s_supplier, s_site, s_purchase_order,
    s_purchase_orderline, s_outbox, u_sequences;

CREATE TABLE c_customer (
    c_id           BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    c_first        VARCHAR(16) NOT NULL,
    c_last         VARCHAR(16) NOT NULL,
    c_street1      VARCHAR(20) NOT NULL,
    c_street2      VARCHAR(20) NOT NULL,
    c_city         VARCHAR(20) NOT NULL,
    c_state        CHAR(2)     NOT NULL,
    c_country      VARCHAR(10) NOT NULL,
    c_zip          VARCHAR(9)  NOT NULL,
    c_phone        VARCHAR(16) NOT NULL,
    c_contact      VARCHAR(25) NOT NULL,
    c_since        DATETIME(6) NOT NULL,
    c_balance      BIGINT      NOT NULL,
    c_credit       CHAR(2)     NOT NULL,
    c_credit_limit BIGINT      NOT NULL,
    c_ytd_payment  BIGINT      NOT NULL,
    version        BIGINT      NOT NULL DEFAULT 0
) ENGINE=InnoDB;
CREATE TABLE c_supplier (
    supp_id      BIGINT      PRIMARY KEY,
    supp_name    VARCHAR(16) NOT NULL,
    supp_street1 VARCHAR(20) NOT NULL,
    supp_street2 VARCHAR(20) NOT NULL,
    supp_city    VARCHAR(20) NOT NULL,
    supp_state   CHAR(2)     NOT NULL,
    supp_country VARCHAR(10) NOT NULL,
    supp_zip     VARCHAR(9)  NOT NULL,
    supp_phone   VARCHAR(16) NOT NULL,
    supp_contact VARCHAR(25) NOT NULL
) ENGINE=InnoDB;
CREATE TABLE c_site (
    site_id      BIGINT      PRIMARY KEY,
    site_name    VARCHAR(16) NOT NULL,
    site_street1 VARCHAR(20) NOT NULL,
    site_street2 VARCHAR(20) NOT NULL,
    site_city    VARCHAR(20) NOT NULL,
    site_state   CHAR(2)     NOT NULL,
    site_country VARCHAR(10) NOT NULL,
    site_zip     VARCHAR(9)  NOT NULL
) ENGINE=InnoDB;
CREATE TABLE c_parts (
    p_id      BIGINT       PRIMARY KEY,
    p_name    VARCHAR(10)  NOT NULL,
    p_desc    VARCHAR(100) NOT NULL,
    p_rev     VARCHAR(6)   NOT NULL,
    p_unit    VARCHAR(10)  NOT NULL,
    p_cost    BIGINT       NOT NULL,
    p_price   BIGINT       NOT NULL,
    p_planner INT          NOT NULL,
    p_type    INT          NOT NULL,
    p_ind     INT          NOT NULL,
    p_lomark  INT          NOT NULL,
    p_himark  INT          NOT NULL
) ENGINE=InnoDB;
CREATE TABLE c_rule (
    r_id   VARCHAR(20)  PRIMARY KEY,
    r_text VARCHAR(200) NOT NULL
) ENGINE=InnoDB;
CREATE TABLE c_discount (
    d_id      VARCHAR(20) PRIMARY KEY,
    d_percent INT         NOT NULL
) ENGINE=InnoDB;

CREATE TABLE o_customer (
    c_id      BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    c_first   VARCHAR(16) NOT NULL,
    c_last    VARCHAR(16) NOT NULL,
    c_street1 VARCHAR(20) NOT NULL,
    c_street2 VARCHAR(20) NOT NULL,
    c_city    VARCHAR(20) NOT NULL,
    c_state   CHAR(2)     NOT NULL,
    c_country VARCHAR(10) NOT NULL,
    c_zip     VARCHAR(9)  NOT NULL,
    c_phone   VARCHAR(16) NOT NULL,
    c_contact VARCHAR(25) NOT NULL,
    c_since   DATETIME(6) NOT NULL,
    version   BIGINT      NOT NULL DEFAULT 0
) ENGINE=InnoDB;
CREATE TABLE o_orders (
    o_id         BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    o_c_id       BIGINT      NOT NULL,
    o_ol_cnt     INT         NOT NULL,
    o_discount   INT         NOT NULL,
    o_total      BIGINT      NOT NULL,
    o_status     INT         NOT NULL,
    o_entry_date DATETIME(6) NOT NULL,
    o_ship_date  DATETIME(6) NOT NULL,
    version      BIGINT      NOT NULL DEFAULT 0
) ENGINE=InnoDB;
CREATE INDEX o_orders_cust ON o_orders (o_c_id);
CREATE TABLE o_orderline (
    ol_o_id      BIGINT      NOT NULL,
    ol_id        INT         NOT NULL,
    ol_i_id      BIGINT      NOT NULL,
    ol_qty       INT         NOT NULL,
    ol_status    INT         NOT NULL,
    ol_ship_date DATETIME(6) NOT NULL,
    version      BIGINT      NOT NULL DEFAULT 0,
    PRIMARY KEY (ol_o_id, ol_id)
) ENGINE=InnoDB;
CREATE TABLE o_item (
    i_id       BIGINT       PRIMARY KEY,
    i_name     VARCHAR(20)  NOT NULL,
    i_desc     VARCHAR(100) NOT NULL,
    i_price    BIGINT       NOT NULL,
    i_discount INT          NOT NULL,
    version    BIGINT       NOT NULL DEFAULT 0
) ENGINE=InnoDB;

CREATE TABLE m_parts (
    p_id      BIGINT       PRIMARY KEY,
    p_name    VARCHAR(10)  NOT NULL,
    p_desc    VARCHAR(100) NOT NULL,
    p_rev     VARCHAR(6)   NOT NULL,
    p_planner INT          NOT NULL,
    p_type    INT          NOT NULL,
    p_ind     INT          NOT NULL,
    p_lomark  INT          NOT NULL,
    p_himark  INT          NOT NULL
) ENGINE=InnoDB;
CREATE TABLE m_bom (
    b_assembly_id BIGINT       NOT NULL,
    b_comp_id     BIGINT       NOT NULL,
    b_line_no     INT          NOT NULL,
    b_qty         INT          NOT NULL,
    b_ops         INT          NOT NULL,
    b_eng_change  VARCHAR(10)  NOT NULL,
    b_ops_desc    VARCHAR(100) NOT NULL,
    PRIMARY KEY (b_assembly_id, b_comp_id)
) ENGINE=InnoDB;
CREATE TABLE m_workorder (
    wo_number      BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    wo_o_id        BIGINT      NOT NULL,
    wo_ol_id       INT         NOT NULL,
    wo_status      INT         NOT NULL,
    wo_assembly_id BIGINT      NOT NULL,
    wo_orig_qty    INT         NOT NULL,
    wo_comp_qty    INT         NOT NULL,
    wo_due_date    DATETIME(6) NOT NULL,
    wo_start_date  DATETIME(6) NOT NULL,
    version        BIGINT      NOT NULL DEFAULT 0
) ENGINE=InnoDB;
CREATE TABLE m_largeorder (
    lo_id          BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    lo_o_id        BIGINT      NOT NULL,
    lo_ol_id       INT         NOT NULL,
    lo_assembly_id BIGINT      NOT NULL,
    lo_qty         INT         NOT NULL,
    lo_due_date    DATETIME(6) NOT NULL,
    version        BIGINT      NOT NULL DEFAULT 0
) ENGINE=InnoDB;
-- CancelOrder removes an order's large orders.
CREATE INDEX m_largeorder_order ON m_largeorder (lo_o_id);
-- The check finds a large order line's work order.
CREATE INDEX m_workorder_line ON m_workorder (wo_o_id, wo_ol_id);
CREATE TABLE m_inventory (
    in_p_id     BIGINT      PRIMARY KEY,
    in_qty      INT         NOT NULL,
    in_ordered  INT         NOT NULL,
    in_location VARCHAR(20) NOT NULL,
    in_acc_code INT         NOT NULL,
    in_act_date DATETIME(6) NOT NULL,
    version     BIGINT      NOT NULL DEFAULT 0
) ENGINE=InnoDB;

CREATE TABLE s_component (
    comp_id        BIGINT       PRIMARY KEY,
    comp_name      VARCHAR(10)  NOT NULL,
    comp_desc      VARCHAR(100) NOT NULL,
    comp_unit      VARCHAR(10)  NOT NULL,
    comp_cost      BIGINT       NOT NULL,
    qty_on_order   INT          NOT NULL,
    qty_demanded   INT          NOT NULL,
    lead_time      INT          NOT NULL,
    container_size INT          NOT NULL,
    version        BIGINT       NOT NULL DEFAULT 0
) ENGINE=InnoDB;
CREATE TABLE s_supp_component (
    sc_p_id     BIGINT NOT NULL,
    sc_supp_id  BIGINT NOT NULL,
    sc_price    BIGINT NOT NULL,
    sc_qty      INT    NOT NULL,
    sc_discount INT    NOT NULL,
    sc_del_date INT    NOT NULL,
    PRIMARY KEY (sc_p_id, sc_supp_id)
) ENGINE=InnoDB;
CREATE TABLE s_supplier (
    supp_id      BIGINT       PRIMARY KEY,
    supp_name    VARCHAR(16)  NOT NULL,
    supp_street1 VARCHAR(20)  NOT NULL,
    supp_street2 VARCHAR(20)  NOT NULL,
    supp_city    VARCHAR(20)  NOT NULL,
    supp_state   CHAR(2)      NOT NULL,
    supp_country VARCHAR(10)  NOT NULL,
    supp_zip     VARCHAR(9)   NOT NULL,
    supp_phone   VARCHAR(16)  NOT NULL,
    supp_contact VARCHAR(25)  NOT NULL,
    supp_url     VARCHAR(100) NOT NULL
) ENGINE=InnoDB;
CREATE TABLE s_site (
    site_id      BIGINT      PRIMARY KEY,
    site_name    VARCHAR(16) NOT NULL,
    site_street1 VARCHAR(20) NOT NULL,
    site_street2 VARCHAR(20) NOT NULL,
    site_city    VARCHAR(20) NOT NULL,
    site_state   CHAR(2)     NOT NULL,
    site_country VARCHAR(10) NOT NULL,
    site_zip     VARCHAR(9)  NOT NULL
) ENGINE=InnoDB;
CREATE TABLE s_purchase_order (
    po_number  BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    po_supp_id BIGINT      NOT NULL,
    po_site_id BIGINT      NOT NULL,
    po_status  INT         NOT NULL,
    po_created DATETIME(6) NOT NULL,
    version    BIGINT      NOT NULL DEFAULT 0
) ENGINE=InnoDB;
CREATE INDEX s_po_status ON s_purchase_order (po_status);
CREATE TABLE s_purchase_orderline (
    pol_po_id   BIGINT       NOT NULL,
    pol_number  INT          NOT NULL,
    pol_p_id    BIGINT       NOT NULL,
    pol_qty     INT          NOT NULL,
    pol_balance INT          NOT NULL,
    pol_deldate DATETIME(6)  NOT NULL,
    pol_message VARCHAR(100) NOT NULL,
    version     BIGINT       NOT NULL DEFAULT 0,
    PRIMARY KEY (pol_po_id, pol_number)
) ENGINE=InnoDB;
CREATE TABLE s_outbox (
    ob_po_number BIGINT NOT NULL PRIMARY KEY,
    ob_created   DATETIME(6) NOT NULL
) ENGINE=InnoDB;

CREATE TABLE u_sequences (
    s_id        VARCHAR(20) PRIMARY KEY,
    s_nextnum   BIGINT      NOT NULL,
    s_blocksize INT         NOT NULL
) ENGINE=InnoDB;

-- @after-load
-- Statistics for the optimizer before the first query. AUTO_INCREMENT has
-- already moved past the loaded keys.
ANALYZE TABLE c_customer, c_supplier, c_site, c_parts, c_rule, c_discount,
    o_customer, o_orders, o_orderline, o_item,
    m_parts, m_bom, m_workorder, m_largeorder, m_inventory,
    s_component, s_supp_component, s_supplier, s_site, s_purchase_order,
    s_purchase_orderline, s_outbox, u_sequences;
