# Joins, exactly once.  Of two streams: 100,000 orders and their payments,
# delayed by seconds to hours, some beyond the day's bound, some never
# made, produced over a week of event time into 16 partitions each, with
# payments before and after their orders, while the views' workers are
# killed and Postgres is stopped with -m immediate.  The inner join (the
# average time from order to payment by region) and the left join (every
# order with its payment or none) end exactly equal to their queries, and
# the buffer tables hold about a day of rows at any time, not the week.
# Through the same kills, a stream joined with a table (inner and left)
# and a table kept from the payments topic (latest row per order) end
# exactly equal to their queries too.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_any_broker(topics => ['orders:16', 'payments:16']);
my $node = SspTest::new_node('join');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE orders (order_id bigint, region text, amount numeric, ts timestamptz,
	    p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'orders', timestamp 'ts');
	CREATE FOREIGN TABLE payments (order_id bigint, region text, amount numeric, ts timestamptz,
	    p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'payments', timestamp 'ts');
	CREATE VIEW completion_time_by_region WITH (ssp.continuous, ssp.batch_size = 2000) AS
	  SELECT p.region, avg(p.ts - o.ts) AS avg_completion, count(*)
	  FROM orders o JOIN payments p
	    ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
	  GROUP BY p.region;
	CREATE VIEW order_payment WITH (ssp.continuous, ssp.batch_size = 3000) AS
	  SELECT o.order_id, o.amount, p.amount AS paid, p.ts - o.ts AS delay
	  FROM orders o LEFT JOIN payments p
	    ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
	  WHERE o.order_id > 0;

	-- what is produced, kept for the plain queries: an order every 6 s;
	-- no payment for every 10th; delays by order_id % 5: seconds, hours,
	-- one day to a day and 6 hours (one day exactly is in the bound), up to
	-- an hour, up to a day; every 25th order is paid twice
	CREATE TABLE o_all AS
	  SELECT g AS order_id, 'r' || g % 7 AS region, (g % 1000)::numeric AS amount,
	         timestamptz '2026-03-01 00:00+00' + g * interval '6 s' AS ts
	  FROM generate_series(1, 100000) g;
	CREATE TABLE p_all AS
	  SELECT order_id, region, amount, ts + CASE order_id % 5
	           WHEN 0 THEN (order_id % 50) * interval '1 s'
	           WHEN 1 THEN (order_id % 23 + 1) * interval '1 hour'
	           WHEN 2 THEN interval '1 day' + (order_id % 7) * interval '1 hour'
	           WHEN 3 THEN (order_id % 3600) * interval '1 s'
	           ELSE (order_id % 86400) * interval '1 s' END AS ts
	  FROM o_all WHERE order_id % 10 <> 0
	  UNION ALL
	  SELECT order_id, region, 1, ts + interval '90 s' FROM o_all WHERE order_id % 25 = 0;
	-- the other kinds of join, through the same kills: a stream with a table
	-- (inner and left), and a table kept from the payments (latest per key)
	CREATE TABLE managers (region text PRIMARY KEY, manager text);
	INSERT INTO managers SELECT 'r' || g, 'm' || g % 3 FROM generate_series(0, 5) g;
	CREATE VIEW revenue_by_manager WITH (ssp.continuous, ssp.batch_size = 1500) AS
	  SELECT m.manager, count(*) AS n, sum(o.amount) AS revenue
	  FROM orders o JOIN managers m ON m.region = o.region GROUP BY m.manager;
	CREATE VIEW orders_managed WITH (ssp.continuous, ssp.batch_size = 2500) AS
	  SELECT o.order_id, m.manager FROM orders o LEFT JOIN managers m ON m.region = o.region;
	CREATE VIEW latest_payment WITH (ssp.continuous, ssp.primary_key = 'order_id', ssp.batch_size = 1000) AS
	  SELECT order_id, amount, ts FROM payments;
	CREATE TABLE buffered (chunk int, left_rows bigint, right_rows bigint, watermark timestamptz, stale bigint);
});

sub worker_pids
{
	return split /\n/, $node->safe_psql('postgres',
		'SELECT worker_pid FROM ssp.views WHERE worker_pid IS NOT NULL ORDER BY view::text');
}

sub wait_workers
{
	$node->poll_query_until('postgres',
		'SELECT count(*) = 5 FROM ssp.views WHERE worker_pid IS NOT NULL')
	  or die 'workers did not start';
}

# the week in 40 chunks of event time; in each, the payments of the chunk
# first (so a payment made seconds after its order arrives before it), then
# the orders; each topic stays in event-time order, and every partition
# gets some of each chunk (so the watermark moves with the chunks)
my $start = "timestamptz '2026-03-01 00:00+00'";
my $chunk_len = "interval '4 hours 10 minutes'";
my $kills = 0;
for my $chunk (0 .. 40)
{
	my $range = "ts >= $start + $chunk * $chunk_len"
	  . ($chunk < 40 ? " AND ts < $start + ($chunk + 1) * $chunk_len" : '');
	$node->safe_psql('postgres', "INSERT INTO payments (order_id, region, amount, ts, p)
		SELECT order_id, region, amount, ts, order_id % 16 FROM p_all WHERE $range ORDER BY ts");
	$node->safe_psql('postgres', "INSERT INTO orders (order_id, region, amount, ts, p)
		SELECT order_id, region, amount, ts, order_id % 16 FROM o_all WHERE $range ORDER BY ts");
	if ($chunk % 10 == 4)
	{
		wait_workers();
		my @pids = worker_pids();
		ok(kill('KILL', $pids[$kills % 5]), "SIGKILL to a view's worker");
		$kills++;
		SspTest::wait_restarted($node);
	}
	elsif ($chunk == 22)
	{
		$node->stop('immediate');
		$node->start;
	}
	SspTest::wait_views($node, 'postgres', 'completion_time_by_region');
	$node->safe_psql('postgres', "INSERT INTO buffered SELECT $chunk,
		(SELECT count(*) FROM completion_time_by_region_left),
		(SELECT count(*) FROM completion_time_by_region_right),
		w, (SELECT count(*) FROM completion_time_by_region_left WHERE ts + interval '1 day' < w - $chunk_len)
		FROM (SELECT watermark AS w FROM ssp.views WHERE view = 'completion_time_by_region'::regclass) x");
}
SspTest::wait_views($node, 'postgres', 'completion_time_by_region', 'order_payment',
	'revenue_by_manager', 'orders_managed', 'latest_payment');

my $orders = $node->safe_psql('postgres', 'SELECT count(*) FROM o_all');
my $payments = $node->safe_psql('postgres', 'SELECT count(*) FROM p_all');
cmp_ok($orders, '>=', 100000, "$orders orders produced");
is($node->safe_psql('postgres', "SELECT sum(processed), sum(late_events), sum(dead_letters) FROM ssp.views
		WHERE view IN ('completion_time_by_region'::regclass, 'order_payment'::regclass)"),
	2 * ($orders + $payments) . '|0|0', "every one of the $payments payments and the orders applied once, none late");

# the joins with a table, and the table kept from a topic
is(SspTest::differences($node, 'postgres', 'SELECT * FROM revenue_by_manager',
		'SELECT m.manager, count(*), sum(o.amount) FROM o_all o JOIN managers m ON m.region = o.region GROUP BY 1'),
	'0', 'stream-table inner join exact after kills and a crash');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM orders_managed',
		'SELECT o.order_id, m.manager FROM o_all o LEFT JOIN managers m ON m.region = o.region'),
	'0', 'stream-table left join exact after kills and a crash, region r6 without a manager');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM latest_payment',
		'SELECT * FROM (SELECT DISTINCT ON (order_id) order_id, amount, ts FROM p_all ORDER BY order_id, ts DESC) l'),
	'0', 'latest payment per order (paid twice: the later) exact after kills and a crash');
is($node->safe_psql('postgres', "SELECT count(DISTINCT topic), count(*) FROM ssp.offsets
		WHERE view = 'completion_time_by_region'::regclass"),
	'2|32', 'the offsets of both topics, 32 partitions, commit with the view');

# the classic: exact averages and counts
is(SspTest::differences($node, 'postgres', 'SELECT * FROM completion_time_by_region',
		"SELECT p.region, avg(p.ts - o.ts), count(*) FROM o_all o JOIN p_all p
		   ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'
		 GROUP BY p.region"),
	'0', 'inner join exact after kills and a crash: averages and counts');
note $node->safe_psql('postgres', 'SELECT * FROM completion_time_by_region ORDER BY region');
is($node->safe_psql('postgres', 'SELECT sum(count) FROM completion_time_by_region'),
	$node->safe_psql('postgres', "SELECT count(*) FROM o_all o JOIN p_all p
		ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'"),
	'pairs counted once each');

# the buffers held about a day of rows, not the week
my ($max_left, $max_right, $last_left) = split /\|/, $node->safe_psql('postgres',
	'SELECT max(left_rows), max(right_rows), (SELECT left_rows FROM buffered ORDER BY chunk DESC LIMIT 1) FROM buffered');
note "buffered rows: at most $max_left orders and $max_right payments";
cmp_ok($max_left, '<=', 20000, 'left buffer bounded: a day of orders (14,400) and a chunk, not 100,000');
cmp_ok($max_right, '<=', 10000, 'right buffer bounded: payments wait only for the watermark');
cmp_ok($node->safe_psql('postgres', 'SELECT min(left_rows) FROM buffered WHERE chunk >= 10'),
	'>', 0, 'and it holds rows while they can still match');
is($node->safe_psql('postgres', 'SELECT sum(stale) FROM buffered'), '0',
	'no order stays once the bound has passed the watermark (by more than a batch)');

# the left join: unpaid orders come out once the bound has passed the
# watermark; a late event time in every partition of both topics moves it,
# and one more message makes a batch that sees it
$node->safe_psql('postgres', q{
	INSERT INTO orders (order_id, region, amount, ts, p) SELECT 0, 'x', 0, '2027-01-01', g FROM generate_series(0, 15) g;
	INSERT INTO payments (order_id, region, amount, ts, p) SELECT 0, 'x', 0, '2027-01-01', g FROM generate_series(0, 15) g;
});
SspTest::wait_views($node, 'postgres', 'order_payment');
$node->safe_psql('postgres', q{INSERT INTO orders (order_id, region, amount, ts, p) VALUES (0, 'x', 0, '2027-01-02', 0)});
SspTest::wait_views($node, 'postgres', 'order_payment', 'completion_time_by_region');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM order_payment',
		"SELECT o.order_id, o.amount, p.amount, p.ts - o.ts FROM o_all o LEFT JOIN p_all p
		   ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'"),
	'0', 'left join exact after kills and a crash: paid and unpaid orders');
is($node->safe_psql('postgres', 'SELECT count(*) FILTER (WHERE paid IS NULL) > 10000 FROM order_payment'),
	't', 'with the unpaid ones');
is($node->safe_psql('postgres', 'SELECT (SELECT count(*) FROM order_payment_left WHERE order_id > 0) +
		(SELECT count(*) FROM order_payment_right WHERE order_id > 0)'),
	'0', 'and nothing left in its buffers but the late markers');
my ($lost, $twice) = SspTest::lost_and_twice($node, 'postgres', 'SELECT * FROM order_payment',
	"SELECT o.order_id, o.amount, p.amount, p.ts - o.ts FROM o_all o LEFT JOIN p_all p
	   ON p.order_id = o.order_id AND p.ts BETWEEN o.ts AND o.ts + interval '1 day'");
SspTest::report(faults => $kills + 1,
	produced => $node->safe_psql('postgres', 'SELECT (SELECT count(*) FROM orders) + (SELECT count(*) FROM payments)'),
	applied => $node->safe_psql('postgres', "SELECT processed FROM ssp.views WHERE view = 'order_payment'::regclass"),
	dead_letters => $node->safe_psql('postgres', 'SELECT sum(dead_letters) FROM ssp.views'),
	lost => $lost, twice => $twice, broker => $broker->{kind});

$node->stop;
done_testing();
