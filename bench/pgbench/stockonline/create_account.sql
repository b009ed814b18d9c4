-- CreateAccount: 1 in Table 2's 43.
\set credit random(100000, 5000000)
INSERT INTO SubAccount (sub_name, sub_address, sub_credit) VALUES ('New subscriber', 'Market Street, Canberra', :credit) RETURNING sub_accno;
