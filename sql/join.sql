-- Joins of a stream with tables and views, read in each batch's snapshot.
\getenv brokers SSP_BROKERS
\getenv run SSP_RUN_ID
CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers :'brokers');
\set topic join_orders_ :run
CREATE FOREIGN TABLE orders (order_id bigint, customer_id bigint, amount numeric,
    p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic');
\set topic join_payments_ :run
CREATE FOREIGN TABLE payments (order_id bigint, amount numeric) SERVER kafka OPTIONS (topic :'topic');
CREATE TABLE customers (id bigint PRIMARY KEY, name text, segment text);
CREATE TABLE segments (segment text PRIMARY KEY, manager text);
INSERT INTO customers SELECT g, 'c' || g, CASE WHEN g % 3 = 0 THEN 'retail' WHEN g % 3 = 1 THEN 'pro' END
  FROM generate_series(1, 50) g;
INSERT INTO segments VALUES ('retail', 'Ada'), ('pro', 'Grace');
CREATE VIEW big_customers AS SELECT id FROM customers WHERE id > 40;
CREATE TABLE tiers (customer_id bigint PRIMARY KEY, tier text);
INSERT INTO tiers SELECT g, CASE WHEN g % 2 = 0 THEN 'even' ELSE 'odd' END FROM generate_series(1, 50) g;
CREATE TABLE flagged (customer_id bigint);
INSERT INTO flagged VALUES (45), (46);

-- refused
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o JOIN payments p ON p.order_id = o.order_id;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT c.segment, count(*) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id GROUP BY 1;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT c.segment, count(*) FROM orders o FULL JOIN customers c ON o.customer_id = c.id GROUP BY 1;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT js.segment, count(*) FROM orders o JOIN customers c ON c.id = o.customer_id
  JOIN segments USING (segment) AS js GROUP BY 1;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o JOIN (SELECT * FROM payments) p ON p.order_id = o.order_id;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o WHERE EXISTS (SELECT FROM payments p WHERE p.order_id = o.order_id);
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o WHERE o.amount > (SELECT max(amount) FROM payments);
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o, LATERAL (SELECT * FROM customers c WHERE c.id = o.customer_id) c;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o, generate_series(1, 2) g;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT s.* FROM orders o JOIN (SELECT c.id, c.id FROM customers c) s ON true;
CREATE VIEW r WITH (ssp.continuous) AS
  SELECT count(*) FROM orders o JOIN customers b ON b.id = o.customer_id;

-- enrichment: inner and left joins, several tables, a view, a comma join
CREATE VIEW revenue_by_segment WITH (ssp.continuous) AS
  SELECT c.segment, s.manager, count(*) AS orders, sum(o.amount) AS revenue
  FROM orders o JOIN customers c ON c.id = o.customer_id
       JOIN segments s ON s.segment = c.segment
  GROUP BY c.segment, s.manager;
CREATE VIEW orders_named WITH (ssp.continuous) AS
  SELECT o.order_id, c.name, c.segment
  FROM orders o LEFT JOIN customers c ON c.id = o.customer_id;
CREATE VIEW big_customer_orders WITH (ssp.continuous) AS
  SELECT count(*) AS n, sum(o.amount) AS total
  FROM orders o, big_customers bc WHERE bc.id = o.customer_id;
-- joins written with USING (the merged column unqualified) and NATURAL JOIN
CREATE VIEW seg_using WITH (ssp.continuous) AS
  SELECT segment, manager, count(*) AS orders, sum(amount) AS revenue
  FROM orders o JOIN customers c ON c.id = o.customer_id JOIN segments USING (segment)
  GROUP BY segment, manager;
CREATE VIEW tier_totals WITH (ssp.continuous) AS
  SELECT tier, count(*) AS n, sum(amount) AS total FROM orders NATURAL JOIN tiers GROUP BY tier;
-- semi- and anti-joins with tables, and a subquery over tables in FROM,
-- read in each batch's snapshot as joined tables are
CREATE VIEW pro_orders WITH (ssp.continuous) AS
  SELECT count(*) AS n, sum(amount) AS total FROM orders o
  WHERE EXISTS (SELECT FROM customers c WHERE c.id = o.customer_id AND c.segment = 'pro');
CREATE VIEW orphan_orders WITH (ssp.continuous) AS
  SELECT o.customer_id, count(*) AS n FROM orders o
  WHERE NOT EXISTS (SELECT FROM customers c WHERE c.id = o.customer_id) GROUP BY 1;
CREATE VIEW big_in WITH (ssp.continuous) AS
  SELECT order_id, amount FROM orders WHERE customer_id IN (SELECT id FROM big_customers)
    AND customer_id NOT IN (SELECT customer_id FROM flagged) AND amount > (SELECT avg(id) FROM customers);
CREATE VIEW by_segment_sub WITH (ssp.continuous) AS
  SELECT s.seg, count(*) AS n, sum(o.amount) AS total
  FROM orders o JOIN (SELECT id, upper(segment) FROM customers WHERE segment IS NOT NULL) s(id, seg)
    ON s.id = o.customer_id
  GROUP BY s.seg;
-- a join with another continuous view
CREATE VIEW segment_totals WITH (ssp.continuous) AS
  SELECT o.customer_id, count(*) AS n FROM orders o GROUP BY o.customer_id;
\d+ revenue_by_segment
SELECT apply_sql FROM ssp.continuous_views WHERE view = 'orders_named'::regclass;

INSERT INTO orders (order_id, customer_id, amount)
  SELECT g, g % 60, g FROM generate_series(1, 600) g;
SELECT ssp.wait('revenue_by_segment'), ssp.wait('orders_named'), ssp.wait('big_customer_orders'),
       ssp.wait('seg_using'), ssp.wait('tier_totals');
CREATE TEMP TABLE all_orders AS SELECT * FROM orders;
SELECT count(*) AS differences FROM
  ((SELECT * FROM revenue_by_segment
    EXCEPT ALL SELECT c.segment, s.manager, count(*), sum(o.amount)
    FROM all_orders o JOIN customers c ON c.id = o.customer_id JOIN segments s ON s.segment = c.segment
    GROUP BY 1, 2)
   UNION ALL
   (SELECT c.segment, s.manager, count(*), sum(o.amount)
    FROM all_orders o JOIN customers c ON c.id = o.customer_id JOIN segments s ON s.segment = c.segment
    GROUP BY 1, 2 EXCEPT ALL SELECT * FROM revenue_by_segment)) d;
SELECT * FROM revenue_by_segment ORDER BY segment;
SELECT count(*), count(name), count(segment) FROM orders_named;
SELECT * FROM big_customer_orders;
SELECT count(*) AS differences FROM
  ((SELECT * FROM seg_using EXCEPT ALL SELECT * FROM revenue_by_segment)
   UNION ALL (SELECT * FROM revenue_by_segment EXCEPT ALL SELECT * FROM seg_using)) d;
SELECT count(*) AS differences FROM
  ((SELECT * FROM tier_totals
    EXCEPT ALL SELECT tier, count(*), sum(amount) FROM all_orders NATURAL JOIN tiers GROUP BY tier)
   UNION ALL
   (SELECT tier, count(*), sum(amount) FROM all_orders NATURAL JOIN tiers GROUP BY tier
    EXCEPT ALL SELECT * FROM tier_totals)) d;
SELECT * FROM tier_totals ORDER BY tier;
SELECT ssp.wait('pro_orders'), ssp.wait('orphan_orders'), ssp.wait('big_in'), ssp.wait('by_segment_sub');
SELECT * FROM pro_orders;
SELECT count(*) AS differences FROM
  ((SELECT * FROM pro_orders EXCEPT ALL SELECT count(*), sum(amount) FROM all_orders o
      WHERE EXISTS (SELECT FROM customers c WHERE c.id = o.customer_id AND c.segment = 'pro'))
   UNION ALL (SELECT count(*), sum(amount) FROM all_orders o
      WHERE EXISTS (SELECT FROM customers c WHERE c.id = o.customer_id AND c.segment = 'pro')
    EXCEPT ALL SELECT * FROM pro_orders)) d;
SELECT * FROM orphan_orders ORDER BY customer_id;
SELECT count(*) AS differences FROM
  ((SELECT * FROM orphan_orders EXCEPT ALL SELECT o.customer_id, count(*) FROM all_orders o
      WHERE NOT EXISTS (SELECT FROM customers c WHERE c.id = o.customer_id) GROUP BY 1)
   UNION ALL (SELECT o.customer_id, count(*) FROM all_orders o
      WHERE NOT EXISTS (SELECT FROM customers c WHERE c.id = o.customer_id) GROUP BY 1
    EXCEPT ALL SELECT * FROM orphan_orders)) d;
SELECT count(*) AS rows, min(amount), max(amount) FROM big_in;
SELECT count(*) AS differences FROM
  ((SELECT * FROM big_in EXCEPT ALL SELECT order_id, amount FROM all_orders
      WHERE customer_id IN (SELECT id FROM big_customers)
        AND customer_id NOT IN (SELECT customer_id FROM flagged) AND amount > (SELECT avg(id) FROM customers))
   UNION ALL (SELECT order_id, amount FROM all_orders
      WHERE customer_id IN (SELECT id FROM big_customers)
        AND customer_id NOT IN (SELECT customer_id FROM flagged) AND amount > (SELECT avg(id) FROM customers)
    EXCEPT ALL SELECT * FROM big_in)) d;
SELECT * FROM by_segment_sub ORDER BY seg;
SELECT count(*) AS differences FROM
  ((SELECT * FROM by_segment_sub EXCEPT ALL SELECT upper(c.segment), count(*), sum(o.amount)
      FROM all_orders o JOIN customers c ON c.id = o.customer_id WHERE c.segment IS NOT NULL GROUP BY 1)
   UNION ALL (SELECT upper(c.segment), count(*), sum(o.amount)
      FROM all_orders o JOIN customers c ON c.id = o.customer_id WHERE c.segment IS NOT NULL GROUP BY 1
    EXCEPT ALL SELECT * FROM by_segment_sub)) d;
-- a table read only in a subquery, renamed while the view runs: the view
-- reads it under its new name (a customer flagged there now loses its
-- new orders, another keeps them)
ALTER TABLE flagged RENAME TO "flagged ""; --";
INSERT INTO "flagged ""; --" SELECT min(id) FROM big_customers;
INSERT INTO orders (order_id, customer_id, amount)
  SELECT 900 + row_number() OVER (ORDER BY id), id, 100000 FROM big_customers;
SELECT ssp.wait('big_in');
SELECT count(*) AS new_rows FROM big_in WHERE order_id > 900;
SELECT count(*) AS differences FROM
  ((SELECT * FROM big_in WHERE order_id > 900 EXCEPT ALL SELECT order_id, amount FROM orders
      WHERE order_id > 900 AND customer_id IN (SELECT id FROM big_customers)
        AND customer_id NOT IN (SELECT customer_id FROM "flagged ""; --"))
   UNION ALL (SELECT order_id, amount FROM orders
      WHERE order_id > 900 AND customer_id IN (SELECT id FROM big_customers)
        AND customer_id NOT IN (SELECT customer_id FROM "flagged ""; --")
    EXCEPT ALL SELECT * FROM big_in WHERE order_id > 900)) d;
ALTER TABLE "flagged ""; --" RENAME TO flagged;
-- dropping what only a subquery reads needs CASCADE
DROP TABLE flagged;

-- the table as of each batch: changing it later does not rewrite the past
UPDATE customers SET segment = 'pro' WHERE segment = 'retail';
INSERT INTO orders (order_id, customer_id, amount) VALUES (601, 3, 1000);
SELECT ssp.wait('revenue_by_segment');
SELECT * FROM revenue_by_segment ORDER BY segment;

-- a view that reads another continuous view, kept in its own batches: it
-- sees that view's rows as committed when its own batch runs, so the other
-- view has its 600 orders first
SELECT ssp.wait('segment_totals');
CREATE VIEW frequent WITH (ssp.continuous) AS
  SELECT count(*) AS orders_of_frequent_customers
  FROM orders o JOIN segment_totals t ON t.customer_id = o.customer_id AND t.n >= 10;
INSERT INTO orders (order_id, customer_id, amount) VALUES (602, 5, 1), (603, 59, 1);
SELECT ssp.wait('segment_totals'), ssp.wait('frequent');
SELECT * FROM frequent;

-- a table kept from a compacted topic: the latest row per key, and a null
-- message (a tombstone) deletes its key
\set topic join_customers_ :run
CREATE FOREIGN TABLE customer_updates (id bigint OPTIONS (meta 'key'), name text, segment text,
    p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'json');
CREATE FOREIGN TABLE customer_raw (k text OPTIONS (meta 'key'), v text, p int OPTIONS (meta 'partition'))
  SERVER kafka OPTIONS (topic :'topic', format 'text');
CREATE VIEW r WITH (ssp.continuous, ssp.primary_key = 'id') AS
  SELECT segment, count(*) FROM customer_updates GROUP BY segment;
CREATE VIEW r WITH (ssp.continuous, ssp.primary_key = 'nope') AS SELECT id, name FROM customer_updates;
CREATE VIEW customers_live WITH (ssp.continuous, ssp.primary_key = 'id') AS
  SELECT id, name, segment FROM customer_updates;
CREATE VIEW pros_live WITH (ssp.continuous, ssp.primary_key = 'id') AS
  SELECT id, upper(name) AS name FROM customer_updates WHERE segment = 'pro';
INSERT INTO customer_raw VALUES
  ('1', '{"name": "Ann", "segment": "pro"}', 0),
  ('2', '{"name": "Bob", "segment": "retail"}', 0),
  ('3', '{"name": "Cy", "segment": "pro"}', 0),
  ('1', '{"name": "Ann B.", "segment": "pro"}', 0),
  (NULL, '{"name": "no key"}', 0);
SELECT ssp.wait('customers_live'), ssp.wait('pros_live');
SELECT * FROM customers_live ORDER BY id;
SELECT * FROM pros_live ORDER BY id;
-- Bob leaves; Cy moves to retail; Ann's record is deleted, then comes back
INSERT INTO customer_raw VALUES ('2', NULL, 0), ('3', '{"name": "Cy", "segment": "retail"}', 0);
INSERT INTO customer_raw VALUES ('1', NULL, 0);
SELECT ssp.wait('customers_live'), ssp.wait('pros_live');
SELECT * FROM customers_live ORDER BY id;
SELECT * FROM pros_live ORDER BY id;
INSERT INTO customer_raw VALUES ('1', '{"name": "Ann C.", "segment": "pro"}', 0);
SELECT ssp.wait('customers_live'), ssp.wait('pros_live');
SELECT * FROM customers_live ORDER BY id;
SELECT view, "offset", error FROM ssp.dead_letters WHERE view = 'customers_live'::regclass;
-- usable in joins like any table
CREATE VIEW revenue_by_live_segment WITH (ssp.continuous) AS
  SELECT c.segment, count(*) AS orders FROM orders o JOIN customers_live c ON c.id = o.customer_id
  GROUP BY c.segment;
INSERT INTO orders (order_id, customer_id, amount) VALUES (700, 1, 1), (701, 3, 1), (702, 2, 1);
SELECT ssp.wait('revenue_by_live_segment');
SELECT * FROM revenue_by_live_segment ORDER BY segment;

-- dropping a joined table needs CASCADE
DROP TABLE segments;
DROP SERVER kafka CASCADE;
