-- UpdateAccount: 1 in 43.
\set acc random(1, :accounts)
\set credit random(100000, 5000000)
UPDATE SubAccount SET sub_credit = :credit WHERE sub_accno = :acc;
