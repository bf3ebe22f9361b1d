# Continuous views are exact: 200,000 messages over 32 partitions, produced
# while views of every kind consume, give each view exactly the result of
# its query over a plain-table copy of the messages.  (The copy is made from
# the same generator, not read back from the topic: the test broker keeps
# only about 5 MiB per partition.)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_broker(topics => ['orders:32']);
my $node = SspTest::new_node('correct');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE orders (order_id bigint, customer_id bigint, region text,
	    amount numeric, qty int, ok boolean)
	  SERVER kafka OPTIONS (topic 'orders');
});

# the views and the queries they must equal, over a table "t"
my %views = (
	filtered => "SELECT order_id, region, amount FROM t WHERE amount > 900",
	by_region => "SELECT region, count(*) AS n, sum(amount) AS total, avg(amount) AS mean,
	                     min(amount) AS lo, max(amount) AS hi, bool_and(ok) AS all_ok
	              FROM t GROUP BY region",
	by_region_customer => "SELECT region, customer_id % 50 AS c, count(*) AS n, sum(qty) AS units,
	                              stddev(qty) AS sd, var_samp(amount) AS v
	                       FROM t WHERE qty > 0 GROUP BY region, c",
	everything => "SELECT order_id, customer_id, region, amount, qty, ok FROM t",
	summary => "SELECT count(*) AS n, sum(amount) AS total, max(order_id) AS last FROM t",
);
for my $v (sort keys %views)
{
	(my $q = $views{$v}) =~ s/\bFROM t\b/FROM orders/;
	$node->safe_psql('postgres', "CREATE VIEW $v WITH (ssp.continuous) AS $q");
}

# produce while the views consume; keep a plain copy of what was produced
my $gen = "SELECT g, g % 997, 'region-' || g % 101, (g % 10000) * 0.1, g % 13, g % 17 <> 0";
$node->safe_psql('postgres', 'CREATE TABLE t (LIKE orders)');
for my $chunk (0 .. 19)
{
	my $from = $chunk * 10000 + 1;
	my $to = $from + 9999;
	$node->safe_psql('postgres', "INSERT INTO orders $gen FROM generate_series($from, $to) g");
	$node->safe_psql('postgres', "INSERT INTO t $gen FROM generate_series($from, $to) g");
}

SspTest::wait_views($node, 'postgres', sort keys %views);
is($node->safe_psql('postgres',
		"SELECT count(*), sum(next_offset) FROM ssp.offsets WHERE view = 'summary'::regclass"),
	'32|200000', 'offsets are kept for the 32 partitions, 200,000 messages in all');

for my $v (sort keys %views)
{
	is(SspTest::differences($node, 'postgres', "SELECT * FROM $v", $views{$v}), '0',
		"view $v equals its query over the messages");
}
is($node->safe_psql('postgres', 'SELECT n, last FROM summary'), '200000|200000',
	'every message counted once');
is($node->safe_psql('postgres',
		"SELECT bool_and(status = 'running'), sum(processed), sum(dead_letters) FROM ssp.views"),
	't|1000000|0', 'ssp.views: all running, every message processed, no dead letters');

# a view catching up on the messages in small batches shows how far it is,
# how fast it goes and how long it has left; then 100% and nothing left.
# (It starts at the oldest message the test broker still keeps.)
$node->safe_psql('postgres', q{CREATE VIEW late WITH (ssp.continuous, ssp.batch_size = 200) AS
	SELECT region, count(*) AS n FROM orders GROUP BY region});
ok($node->poll_query_until('postgres', q{
		SELECT status = 'catching up' AND progress > 0 AND progress < 100 AND rate > 0
		       AND time_left > interval '0' AND processed > 0 AND lag > 0
		FROM ssp.views WHERE view = 'late'::regclass}),
	'a view catching up shows its progress, rate and time left');
SspTest::wait_views($node, 'postgres', 'late');
ok($node->poll_query_until('postgres', q{
		SELECT progress = 100 AND time_left = interval '0' AND lag = 0
		       AND processed = (SELECT count(*) FROM orders) AND processed = (SELECT sum(n) FROM late)
		FROM ssp.views WHERE view = 'late'::regclass}),
	'and 100%, nothing left, every message there is applied, once it has caught up');

$node->stop;
done_testing();
