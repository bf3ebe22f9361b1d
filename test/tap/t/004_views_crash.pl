# Exactly once across crashes: while messages are produced, view workers
# are killed with SIGKILL several times and Postgres is stopped with
# -m immediate; the views end exactly equal to their queries over the
# messages: nothing lost, nothing counted twice.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_broker(topics => ['orders:16']);
my $node = SspTest::new_node('crash');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE orders (order_id bigint, region text, amount numeric)
	  SERVER kafka OPTIONS (topic 'orders');
	-- small batches: many commits, so that kills land between and inside them
	CREATE VIEW by_region WITH (ssp.continuous, ssp.batch_size = 500, ssp.commit_interval = '5ms') AS
	  SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region;
	CREATE VIEW copy WITH (ssp.continuous, ssp.batch_size = 700, ssp.commit_interval = '5ms') AS
	  SELECT order_id, region, amount FROM orders;
});

sub worker_pids
{
	return split /\n/, $node->safe_psql('postgres',
		'SELECT worker_pid FROM ssp.views WHERE worker_pid IS NOT NULL ORDER BY view::text');
}

# wait until both views have a running worker
sub wait_workers
{
	$node->poll_query_until('postgres',
		'SELECT count(*) = 2 FROM ssp.views WHERE worker_pid IS NOT NULL')
	  or die 'workers did not start';
}

my $kills = 0;
my $gen = "SELECT g, 'r' || g % 11, g % 1000";
$node->safe_psql('postgres', 'CREATE TABLE t (LIKE orders)');
for my $chunk (0 .. 39)
{
	my $from = $chunk * 2500 + 1;
	my $to = $from + 2499;
	# the INSERT returns once the broker has every message; t keeps a copy
	$node->safe_psql('postgres', "INSERT INTO orders $gen FROM generate_series($from, $to) g");
	$node->safe_psql('postgres', "INSERT INTO t $gen FROM generate_series($from, $to) g");
	if ($chunk % 8 == 3)
	{
		# SIGKILL a worker mid-stream (Postgres then restarts every backend)
		wait_workers();
		my @pids = worker_pids();
		kill 'KILL', $pids[$kills % 2];
		$kills++;
		note "killed worker $pids[($kills - 1) % 2]";
		$node->poll_query_until('postgres', 'SELECT 1', '1') or die 'server did not come back';
	}
	elsif ($chunk == 21)
	{
		$node->stop('immediate');
		$node->start;
	}
}
wait_workers();
my @after = worker_pids();
is(scalar(@after), 2, 'both workers run again after the kills and the crash');
ok($kills >= 4, "workers were killed $kills times");

SspTest::wait_views($node, 'postgres', 'by_region', 'copy');
is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), '100000', '100,000 messages produced');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM by_region',
		'SELECT region, count(*), sum(amount) FROM t GROUP BY region'),
	'0', 'grouped view exact after crashes');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM copy',
		'SELECT order_id, region, amount FROM t'),
	'0', 'append-only view exact after crashes: nothing lost, nothing doubled');
is($node->safe_psql('postgres', 'SELECT sum(n) FROM by_region'), '100000', 'counts add up');

$node->stop;
done_testing();
