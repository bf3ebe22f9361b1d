# What users' settings and sessions can do to the workers, and what they
# must not: a statement_timeout and a lock_timeout of 1 ms and SERIALIZABLE
# by default in postgresql.conf (meant for users' sessions) do not stop the
# workers; a user holding a lock on a view's table makes its worker wait,
# shown as "waiting for a lock" (as one starting while a session locks
# the view itself is), and it goes on when the lock goes; with no
# background worker slot free, a view that can share a reader joins it,
# another says so and starts when one frees;
# databases dropped with their views leave no slot of ssp's behind;
# ssp.wait refuses to wait where its snapshot could never see the view
# move.  Every view ends exactly equal to its query.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SspTest;

# the test's own sessions are users that have set these back
$ENV{PGOPTIONS} = '-c statement_timeout=0 -c lock_timeout=0 -c default_transaction_isolation=read\\ committed';

my $broker = SspTest::start_broker(topics => ['orders:8']);
# two slots for workers: the ssp launcher and this database's scheduler
# take two of the four
my $node = SspTest::new_node('sessions', conf => qq{
max_worker_processes = 4
max_logical_replication_workers = 0
max_parallel_workers = 0
statement_timeout = '1ms'
lock_timeout = '1ms'
default_transaction_isolation = 'serializable'
});

$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE orders (order_id bigint, region text, amount numeric,
	    p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'orders');
	INSERT INTO orders SELECT g, 'r' || g % 10, g % 100, g % 8 FROM generate_series(1, 20000) g;
	CREATE VIEW by_region WITH (ssp.continuous) AS
	  SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region;
	-- other batch settings: a worker of its own, not by_region's reader
	CREATE VIEW copy WITH (ssp.continuous, ssp.batch_size = 100000) AS SELECT order_id, region FROM orders;
});

sub equal_to_query
{
	my ($view, $query) = @_;
	return SspTest::differences($node, 'postgres', "SELECT * FROM $view", $query);
}

my %query = (
	by_region => 'SELECT region, count(*), sum(amount) FROM orders GROUP BY region',
	copy => 'SELECT order_id, region FROM orders',
	totals => 'SELECT count(*), sum(amount) FROM orders');

# timeouts and isolation meant for users do not apply to the workers
SspTest::wait_views($node, 'postgres', 'by_region', 'copy');
is(equal_to_query('by_region', $query{by_region}), '0',
	'a statement_timeout of 1 ms does not stop a worker');
is($node->safe_psql('postgres', 'SELECT count(*) FROM copy'), '20000', 'all 20,000 orders copied');

# a user locks the view's table: the worker waits and says so
my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN; LOCK TABLE by_region_mrel IN ACCESS EXCLUSIVE MODE');
$node->safe_psql('postgres',
	"INSERT INTO orders SELECT g, 'r' || g % 10, g % 100, g % 8 FROM generate_series(20001, 25000) g");
ok($node->poll_query_until('postgres',
		"SELECT status = 'waiting for a lock' FROM ssp.views WHERE view = 'by_region'::regclass"),
	'ssp.views says the worker waits for a lock');
is($node->safe_psql('postgres',
		"SELECT last_error IS NULL FROM ssp.views WHERE view = 'by_region'::regclass"),
	't', 'waiting is not an error');
my ($rc, $stdout, $stderr) = $node->psql('postgres',
	"BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT ssp.wait('by_region', '1 s'); COMMIT;");
like($stderr, qr/ssp.wait cannot wait in a REPEATABLE READ transaction/,
	'ssp.wait refuses to wait under a snapshot that cannot see the view move');
$locker->query_safe('ROLLBACK');
# a worker that starts while a session holds a lock on the view itself
$locker->query_safe('BEGIN; LOCK TABLE by_region IN ACCESS EXCLUSIVE MODE');
$node->safe_psql('postgres',
	"SELECT pg_terminate_backend(worker_pid) FROM ssp.views WHERE view = 'by_region'::regclass");
ok($node->poll_query_until('postgres',
		"SELECT status = 'waiting for a lock' AND pg_catalog.cardinality(pg_blocking_pids(worker_pid)) > 0
		   FROM ssp.views WHERE view = 'by_region'::regclass"),
	'a worker that waits for a lock on its view as it starts says so too');
$locker->query_safe('ROLLBACK');
$locker->quit;
SspTest::wait_views($node, 'postgres', 'by_region', 'copy');
is(equal_to_query('by_region', $query{by_region}), '0',
	'once the lock goes, the view catches up exactly');
is($node->safe_psql('postgres', 'SELECT count(*) FROM copy'), '25000', 'all 25,000 orders copied');

# no slot free for a third worker: a view that can share by_region's
# reader needs none (the scheduler hands it to the reader); one that
# cannot says why, and starts when a slot frees
$node->safe_psql('postgres', 'CREATE VIEW shared_totals WITH (ssp.continuous) AS
	SELECT count(*) AS n, sum(amount) AS total FROM orders');
SspTest::wait_views($node, 'postgres', 'shared_totals');
is(equal_to_query('shared_totals', $query{totals}), '0',
	'with no worker slot free, a view that can share a reader joins it, and is exact');
is($node->safe_psql('postgres', q{
		SELECT v.attached AND v.worker_pid = b.worker_pid
		FROM ssp.views v, ssp.views b
		WHERE v.view = 'shared_totals'::regclass AND b.view = 'by_region'::regclass}),
	't', 'it is applied by by_region\'s reader');
$node->safe_psql('postgres', 'DROP VIEW shared_totals');
# its own batch size: a reader of its own
$node->safe_psql('postgres', q{CREATE VIEW totals WITH (ssp.continuous, ssp.batch_size = 50000) AS
	SELECT count(*) AS n, sum(amount) AS total FROM orders});
ok($node->poll_query_until('postgres',
		"SELECT status = 'failed' AND last_error LIKE '%no background worker slot free%max_worker_processes%'
		   FROM ssp.views WHERE view = 'totals'::regclass"),
	'a view without a worker slot says so');
is($node->safe_psql('postgres', "SELECT processed FROM ssp.views WHERE view = 'totals'::regclass"),
	'0', 'and has applied nothing');
$node->safe_psql('postgres', 'DROP VIEW copy');
SspTest::wait_views($node, 'postgres', 'totals');
is(equal_to_query('totals', $query{totals}), '0', 'it starts once a slot is free, and is exact');
is($node->safe_psql('postgres', "SELECT status FROM ssp.views WHERE view = 'totals'::regclass"),
	'running', 'and runs');

# a database dropped with a running view, six times: each time a new
# database's view starts (the launcher frees what a dropped database's
# views held in shared memory).  No FORCE is needed: ssp's processes leave
# a database for DROP DATABASE, as they do for ALTER DATABASE ... RENAME
# TO and CREATE DATABASE ... TEMPLATE, and come back after those
$node->safe_psql('postgres', 'DROP VIEW totals, by_region');
my $orders = 25000;
for my $round (1 .. 6)
{
	$node->safe_psql('postgres', "CREATE DATABASE gone$round");
	$node->safe_psql("gone$round", qq{
		CREATE EXTENSION ssp;
		CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
		CREATE FOREIGN TABLE orders (order_id bigint, region text, amount numeric) SERVER kafka
		  OPTIONS (topic 'orders');
		CREATE VIEW n WITH (ssp.continuous) AS SELECT count(*) AS n FROM orders});
	my $started = $node->poll_query_until("gone$round",
		"SELECT n = $orders FROM n");
	ok($started, "round $round: the view of a new database starts and catches up");
	last unless $started;
	if ($round == 1)
	{
		# (one database's scheduler and worker at a time: the slots)
		my $old = $node->safe_psql('gone1', q{SELECT worker_pid FROM ssp.views WHERE view = 'n'::regclass});
		my $oid = $node->safe_psql('postgres', q{SELECT oid FROM pg_database WHERE datname = 'gone1'});

		# 5,000 more orders, 100 a statement, sent while the rename stops
		# the worker (mid-batch or not) and while its transaction keeps the
		# database held
		my $producer = $node->background_psql('postgres');
		$producer->query_until(qr/sending/, q{\echo sending
			DO $$ BEGIN FOR i IN 0 .. 49 LOOP
			  INSERT INTO orders SELECT g, 'r' || g % 10, g % 100, g % 8
			  FROM generate_series(25001 + i * 100, 25100 + i * 100) g;
			  PERFORM pg_sleep(0.02);
			END LOOP; END $$;
});
		$orders += 5000;
		my $renamer = $node->background_psql('postgres');
		$renamer->query_safe('BEGIN');
		my $t0 = time;
		$renamer->query_safe('ALTER DATABASE gone1 RENAME TO gone1r');
		my $took = time - $t0;
		# (without the hold, the launcher starts a scheduler there again and
		# again, and the rename waits 30 s for ssp's processes to leave)
		ok($took < 15, sprintf("round 1: the rename does not wait for ssp's processes to come back (took %.2f s)", $took));
		$producer->quit;
		is($node->safe_psql('postgres', qq{SELECT count(*) FROM pg_stat_activity
			WHERE datid = $oid AND backend_type LIKE 'ssp %'}),
			'0', 'round 1: while the rename is open, no process of ssp is in the database');
		$renamer->query_safe('COMMIT');
		$renamer->quit;
		my $runs = qq{SELECT v.status = 'running' AND v.worker_pid <> $old AND n.n = $orders
			FROM ssp.views v, n WHERE v.view = 'n'::regclass};
		ok($node->poll_query_until('gone1r', $runs),
			'round 1: renamed, the view runs again and counts the orders sent meanwhile exactly once');
		$node->safe_psql('postgres', 'CREATE DATABASE gone1c TEMPLATE gone1r');
		$node->safe_psql('postgres', 'DROP DATABASE gone1r');
		ok($node->poll_query_until('gone1c', $runs), 'round 1: copied, the copy of the view runs, exact');
		$node->safe_psql('postgres', 'DROP DATABASE gone1c');
		next;
	}
	$node->safe_psql('postgres', $round % 2 ? "DROP DATABASE gone$round" : "DROP DATABASE gone$round WITH (FORCE)");
}
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_database WHERE datname LIKE 'gone%'}), '0',
	'every one dropped');

$node->stop;
done_testing();
