# Windows over joins of streams, exactly once.  20,000 orders and
# their payments (seconds to hours later, some beyond the day's bound, some
# never made) are produced over 33 hours of event time into 8 partitions
# each, the payments of each chunk before its orders, while the views'
# workers are killed and Postgres is stopped with -m immediate.  Then a
# late event time in every partition moves the watermark past everything.
#  - per hour of the order (inner join), hopping windows on the later of
#    the two times, and per hour of the payment with ssp.emit = 'final':
#    each equal to the plain query;
#  - a left join per hour of the order with ssp.emit = 'final' and an
#    output topic, a count of distinct values among its aggregates: equal
#    to the plain query (its unpaid orders included),
#    and each hour published once, with its final counts: no hour is
#    closed before the unpaid orders in it come out of the join;
#  - distinct values over pairs per hopping window of the order's time:
#    equal to the plain query;
#  - temporal joins of the orders with a changelog of rates per region
#    (a version every 10 minutes, each chunk's written newest first, some
#    deletes): per hour with ssp.emit = 'final', and every order with its
#    rate or none (a left join): each equal to the plain query, the latest
#    version at or before each order's time;
#  - a join of three streams, orders, payments and shipments (each
#    shipment bounded by its payment only, so by its order through it),
#    per hour of the order with ssp.emit = 'final' and every tuple: each
#    equal to the plain query, and every buffered row gone at the end.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_any_broker(topics => ['orders:8', 'payments:8', 'hourly_final:4', 'rates:3', 'shipments:8']);
my $node = SspTest::new_node('join_windows');
my $bound = "ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'";
my $ship_bound = "ON s.order_id = p.order_id AND s.ts BETWEEN p.ts AND p.ts + interval '1 day'";
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE orders (order_id bigint, region text, amount numeric, ts timestamptz,
	    p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'orders', timestamp 'ts');
	CREATE FOREIGN TABLE payments (order_id bigint, amount numeric, ts timestamptz,
	    p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'payments', timestamp 'ts');
	CREATE FOREIGN TABLE shipments (order_id bigint, ts timestamptz, p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'shipments', timestamp 'ts');
	CREATE FOREIGN TABLE rates (region text, factor numeric, ts timestamptz OPTIONS (meta 'timestamp'),
	    p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'rates', key 'region', changelog 'upsert');
	CREATE FOREIGN TABLE rates_raw (region text, v text, ts timestamptz OPTIONS (meta 'timestamp'),
	    p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'rates', key 'region', format 'text');
	CREATE VIEW priced_hour WITH (ssp.continuous, ssp.emit = 'final', ssp.batch_size = 1700) AS
	  SELECT ssp.tumble(o.ts, '1 hour') AS hour, count(*) AS n, sum(o.amount * r.factor) AS value
	  FROM orders o JOIN rates r ON r.region = o.region AND r.ts <= o.ts WHERE o.order_id > 0 GROUP BY 1;
	CREATE VIEW rated_left WITH (ssp.continuous, ssp.batch_size = 900) AS
	  SELECT o.order_id, r.factor, r.ts AS rate_ts
	  FROM orders o LEFT JOIN rates r ON r.region = o.region AND r.ts <= o.ts WHERE o.order_id > 0;
	CREATE VIEW shipped_hour WITH (ssp.continuous, ssp.emit = 'final', ssp.batch_size = 1300) AS
	  SELECT ssp.tumble(o.ts, '1 hour') AS hour, count(*) AS n, avg(s.ts - o.ts) AS delivery
	  FROM orders o JOIN payments p $bound JOIN shipments s $ship_bound WHERE o.order_id > 0 GROUP BY 1;
	CREATE VIEW shipped WITH (ssp.continuous, ssp.batch_size = 1100) AS
	  SELECT o.order_id, p.amount, s.ts AS sts
	  FROM orders o JOIN payments p $bound JOIN shipments s $ship_bound WHERE o.order_id > 0;
	CREATE VIEW by_order_hour WITH (ssp.continuous, ssp.batch_size = 1500) AS
	  SELECT ssp.tumble(o.ts, '1 hour') AS hour, o.region, count(*) AS n, avg(p.ts - o.ts) AS completion
	  FROM orders o JOIN payments p $bound WHERE o.order_id > 0 GROUP BY 1, 2;
	CREATE VIEW pair_hop WITH (ssp.continuous, ssp.batch_size = 2500) AS
	  SELECT ssp.hop(GREATEST(o.ts, p.ts), '2 hours', '30 minutes') AS w, count(*) AS n, sum(p.amount) AS paid
	  FROM orders o JOIN payments p $bound WHERE o.order_id > 0 GROUP BY 1;
	CREATE VIEW by_payment_final WITH (ssp.continuous, ssp.emit = 'final', ssp.batch_size = 1000) AS
	  SELECT ssp.tumble(p.ts, '1 hour') AS hour, count(*) AS n, max(p.ts - o.ts) AS slowest
	  FROM orders o JOIN payments p $bound WHERE o.order_id > 0 GROUP BY 1;
	CREATE VIEW hourly_final WITH (ssp.continuous, ssp.emit = 'final', ssp.output_topic = 'hourly_final',
	    ssp.batch_size = 2000) AS
	  SELECT ssp.tumble(o.ts, '1 hour') AS hour, count(*) AS orders, count(p.order_id) AS paid,
	         count(DISTINCT p.order_id) AS paid_orders
	  FROM orders o LEFT JOIN payments p $bound WHERE o.order_id > 0 GROUP BY 1;
	CREATE VIEW distinct_hop WITH (ssp.continuous, ssp.batch_size = 1200) AS
	  SELECT ssp.hop(o.ts, '3 hours', '1 hour') AS w, count(DISTINCT o.order_id) AS paid_orders,
	         count(DISTINCT o.region) AS regions, count(*) AS n
	  FROM orders o JOIN payments p $bound WHERE o.order_id > 0 GROUP BY 1;

	-- an order every 6 s; no payment for every 10th; delays by order_id %
	-- 5: seconds, hours, a day to a day and 6 hours, up to an hour, up to
	-- a day; every 25th order is paid twice
	CREATE TABLE o_all AS
	  SELECT g AS order_id, 'r' || g % 3 AS region, (g % 1000)::numeric AS amount,
	         timestamptz '2026-03-01 00:00+00' + g * interval '6 s' AS ts
	  FROM generate_series(1, 20000) g;
	CREATE TABLE p_all AS
	  SELECT order_id, amount, ts + CASE order_id % 5
	           WHEN 0 THEN (order_id % 50) * interval '1 s'
	           WHEN 1 THEN (order_id % 23 + 1) * interval '1 hour'
	           WHEN 2 THEN interval '1 day' + (order_id % 7) * interval '1 hour'
	           WHEN 3 THEN (order_id % 3600) * interval '1 s'
	           ELSE (order_id % 86400) * interval '1 s' END AS ts
	  FROM o_all WHERE order_id % 10 <> 0
	  UNION ALL
	  SELECT order_id, 1, ts + interval '90 s' FROM o_all WHERE order_id % 25 = 0;
	-- a shipment after each payment, by order_id % 4: 10 minutes, 5
	-- hours, 30 hours (no match), 20 hours; one for each unpaid order
	CREATE TABLE s_all AS
	  SELECT order_id, ts + CASE order_id % 4 WHEN 0 THEN interval '10 minutes' WHEN 1 THEN interval '5 hours'
	                               WHEN 2 THEN interval '30 hours' ELSE interval '20 hours' END AS ts
	  FROM p_all WHERE amount <> 1
	  UNION ALL
	  SELECT order_id, ts + interval '1 hour' FROM o_all WHERE order_id % 10 = 0;
	-- a rate per region every 10 minutes; every 6th of r2 a delete
	CREATE TABLE r_all AS
	  SELECT 'r' || k AS region, 1 + (m % 17) / 10.0 AS factor, k = 2 AND m % 6 = 5 AS deleted,
	         timestamptz '2026-03-01 00:00+00' + m * interval '10 minutes' + k * interval '1 minute' AS ts
	  FROM generate_series(0, 2) k, generate_series(0, 200) m;
	CREATE VIEW rated AS
	  SELECT o.order_id, o.amount, o.ts, v.factor, v.ts AS rate_ts, v.deleted FROM o_all o
	  LEFT JOIN LATERAL (SELECT * FROM r_all r WHERE r.region = o.region AND r.ts <= o.ts
	                     ORDER BY r.ts DESC LIMIT 1) v ON true;
	CREATE VIEW triples AS
	  SELECT o.order_id, o.ts AS ots, p.amount, s.ts AS sts
	  FROM o_all o JOIN p_all p $bound JOIN s_all s $ship_bound;
	CREATE VIEW pairs AS
	  SELECT o.order_id, o.region, o.ts AS ots, p.amount, p.ts AS pts
	  FROM o_all o JOIN p_all p $bound;
});
my @views = qw(by_order_hour pair_hop shipped_hour by_payment_final hourly_final distinct_hop priced_hour shipped rated_left);

# 12 chunks of event time; in each, the chunk's shipments first, then its
# payments, then its
# rates newest first, then its orders, the others in event-time order and
# every partition given some of each chunk
my $start = "timestamptz '2026-03-01 00:00+00'";
my $chunk_len = "interval '3 hours'";
my $kills = 0;
for my $chunk (0 .. 11)
{
	my $range = "ts >= $start + $chunk * $chunk_len"
	  . ($chunk < 11 ? " AND ts < $start + ($chunk + 1) * $chunk_len" : '');
	$node->safe_psql('postgres', "INSERT INTO shipments (order_id, ts, p)
		SELECT order_id, ts, order_id % 8 FROM s_all WHERE $range ORDER BY ts");
	$node->safe_psql('postgres', "INSERT INTO payments (order_id, amount, ts, p)
		SELECT order_id, amount, ts, order_id % 8 FROM p_all WHERE $range ORDER BY ts");
	$node->safe_psql('postgres', "INSERT INTO rates (region, factor, ts, p)
		SELECT region, factor, ts, substr(region, 2)::int FROM r_all WHERE $range AND NOT deleted ORDER BY ts DESC;
		INSERT INTO rates_raw (region, v, ts, p)
		SELECT region, NULL, ts, substr(region, 2)::int FROM r_all WHERE $range AND deleted ORDER BY ts DESC");
	$node->safe_psql('postgres', "INSERT INTO orders (order_id, region, amount, ts, p)
		SELECT order_id, region, amount, ts, order_id % 8 FROM o_all WHERE $range ORDER BY ts");
	if ($chunk % 3 == 1 || $chunk == 2 || $chunk == 5 || $chunk == 9 || $chunk == 0 || $chunk == 11)
	{
		my $view = $views[$kills % @views];
		$node->poll_query_until('postgres',
			"SELECT worker_pid IS NOT NULL FROM ssp.views WHERE view = '$view'::regclass")
		  or die "no worker for $view";
		my $pid = $node->safe_psql('postgres', "SELECT worker_pid FROM ssp.views WHERE view = '$view'::regclass");
		select(undef, undef, undef, 0.1 * ($chunk % 4));
		ok(kill('KILL', $pid), "SIGKILL to the worker of $view mid-stream");
		$kills++;
		SspTest::wait_restarted($node);
	}
	elsif ($chunk == 6)
	{
		$node->stop('immediate');
		$node->start;
	}
}
SspTest::wait_views($node, 'postgres', @views);

# a late event time in every partition of both topics moves the watermark
# past every bound: with no message after it, a batch of nothing emits the
# unpaid orders and closes the last hours
$node->safe_psql('postgres', q{
	INSERT INTO orders (order_id, region, amount, ts, p) SELECT 0, 'x', 0, '2027-01-01', g FROM generate_series(0, 7) g;
	INSERT INTO payments (order_id, amount, ts, p) SELECT 0, 0, '2027-01-01', g FROM generate_series(0, 7) g;
	INSERT INTO rates (region, factor, ts, p) SELECT 'x', 0, '2027-01-01', g FROM generate_series(0, 2) g;
	INSERT INTO shipments (order_id, ts, p) SELECT 0, '2027-01-01', g FROM generate_series(0, 7) g;
});
SspTest::wait_views($node, 'postgres', @views);
ok($node->poll_query_until('postgres', q{
	SELECT bool_and(batch_watermark = '2027-01-01' AND watermark = '2027-01-01') FROM ssp.continuous_views}),
	'the watermark moves, and a batch of nothing follows it');

my $orders = $node->safe_psql('postgres', 'SELECT count(*) FROM o_all');
my $payments = $node->safe_psql('postgres', 'SELECT count(*) FROM p_all');
my $rates = $node->safe_psql('postgres', 'SELECT count(*) FROM r_all');
my $shipments = $node->safe_psql('postgres', 'SELECT count(*) FROM s_all');
is($node->safe_psql('postgres', "SELECT sum(processed), sum(late_events), sum(dead_letters) FROM ssp.views
		WHERE view::text NOT IN ('priced_hour', 'rated_left', 'shipped_hour', 'shipped')"),
	(@views - 4) * ($orders + $payments + 16) . '|0|0', "every one of the $orders orders and $payments payments applied once by each view, none late");
is($node->safe_psql('postgres', "SELECT sum(processed), sum(late_events), sum(dead_letters) FROM ssp.views
		WHERE view::text IN ('shipped_hour', 'shipped')"),
	2 * ($orders + $payments + $shipments + 24) . '|0|0',
	"every one of the $orders orders, $payments payments and $shipments shipments applied once by each join of three, none late");
is(SspTest::differences($node, 'postgres', 'SELECT * FROM shipped_hour',
		"SELECT ssp.tumble(ots, '1 hour'), count(*), avg(sts - ots) FROM triples GROUP BY 1"),
	'0', 'a join of three streams per hour of the order, emit final: exact after kills and a crash');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM shipped', 'SELECT order_id, amount, sts FROM triples'),
	'0', 'a join of three streams: every tuple once');
is($node->safe_psql('postgres', 'SELECT count(*) > 9000 FROM shipped'), 't', 'with many tuples');
is($node->safe_psql('postgres', "SELECT (SELECT count(*) FROM shipped_stream1) + (SELECT count(*) FROM shipped_stream2)
		+ (SELECT count(*) FROM shipped_stream3)"), '24', 'every buffered row gone but those of 2027');
is($node->safe_psql('postgres', "SELECT sum(processed), sum(late_events), sum(dead_letters) FROM ssp.views
		WHERE view::text IN ('priced_hour', 'rated_left')"),
	2 * ($orders + $rates + 11) . '|0|0', "every one of the $orders orders and $rates rates applied once by each temporal join, none late");
is(SspTest::differences($node, 'postgres', 'SELECT * FROM by_order_hour',
		"SELECT ssp.tumble(ots, '1 hour'), region, count(*), avg(pts - ots) FROM pairs GROUP BY 1, 2"),
	'0', 'per hour of the order: exact after kills and a crash');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM pair_hop',
		"SELECT w, count(*), sum(amount) FROM pairs
		   CROSS JOIN LATERAL ssp.hop_windows(GREATEST(ots, pts), '2 hours', '30 minutes') h(w) GROUP BY 1"),
	'0', 'hopping windows on the later of the two times: exact');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM by_payment_final',
		"SELECT ssp.tumble(pts, '1 hour'), count(*), max(pts - ots) FROM pairs GROUP BY 1"),
	'0', 'per hour of the payment, emit final: exact once the watermark has passed');
my $left = "SELECT ssp.tumble(o.ts, '1 hour'), count(*), count(p.order_id), count(DISTINCT p.order_id)
	FROM o_all o LEFT JOIN p_all p $bound GROUP BY 1";
is(SspTest::differences($node, 'postgres', 'SELECT * FROM hourly_final', $left),
	'0', 'left join per hour of the order, emit final: exact, unpaid orders included');
is($node->safe_psql('postgres', 'SELECT sum(orders) - sum(paid) > 2000 FROM hourly_final'), 't',
	'with the unpaid orders');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM distinct_hop',
		"SELECT w, count(DISTINCT order_id), count(DISTINCT region), count(*) FROM pairs
		   CROSS JOIN LATERAL ssp.hop_windows(ots, '3 hours', '1 hour') h(w) GROUP BY 1"),
	'0', 'distinct values over pairs, in hopping windows: exact');
is($node->safe_psql('postgres', 'SELECT count(*) FROM distinct_hop_distinct'), '0',
	'the values of every closed window gone');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM priced_hour',
		"SELECT ssp.tumble(ts, '1 hour'), count(*), sum(amount * factor) FROM rated WHERE NOT deleted GROUP BY 1"),
	'0', 'a temporal join per hour, emit final: exact, each order at the rate of its time');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM rated_left',
		"SELECT order_id, CASE WHEN NOT deleted THEN factor END, CASE WHEN NOT deleted THEN rate_ts END FROM rated"),
	'0', 'a temporal left join: every order once, with the rate of its time or none');
is($node->safe_psql('postgres', 'SELECT count(*) FILTER (WHERE factor IS NULL) > 500, count(DISTINCT rate_ts) > 500 FROM rated_left'),
	't|t', 'with orders after deletes, and many versions');
is($node->safe_psql('postgres', 'SELECT count(*) FROM rated_left_right'), '6',
	'of the versions, the latest before the watermark per region and those of 2027 kept');

# what the left join published: each hour once, as the view shows it
ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM hourly_final_outbox'),
	'every closed hour published');
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE hourly_published (hour timestamptz, orders bigint, paid bigint, paid_orders bigint,
	    _op text, _seq bigint,
	    p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
	  SERVER kafka OPTIONS (topic 'hourly_final');
	CREATE TABLE hours_kept AS SELECT * FROM (
	  SELECT c.*, max(_seq) OVER (PARTITION BY p ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS seen
	  FROM hourly_published c) x WHERE seen IS NULL OR _seq > seen});
is(SspTest::differences($node, 'postgres', 'SELECT hour, orders, paid, paid_orders FROM hourly_final',
		'SELECT hour, orders, paid, paid_orders FROM hours_kept'),
	'0', 'the output topic holds each hour once, with its final counts (distinct ones too)');
is($node->safe_psql('postgres', "SELECT count(*) FROM hours_kept WHERE _op <> 'insert'"), '0',
	'each as an insert');

my ($lost, $twice) = SspTest::lost_and_twice($node, 'postgres', 'SELECT * FROM hourly_final', $left);
SspTest::report(faults => $kills + 1,
	produced => $node->safe_psql('postgres', 'SELECT (SELECT count(*) FROM orders) + (SELECT count(*) FROM payments)'),
	applied => $node->safe_psql('postgres', "SELECT processed FROM ssp.views WHERE view = 'hourly_final'::regclass"),
	dead_letters => $node->safe_psql('postgres', 'SELECT sum(dead_letters) FROM ssp.views'),
	lost => $lost, twice => $twice, broker => $broker->{kind});

$node->stop;
done_testing();
