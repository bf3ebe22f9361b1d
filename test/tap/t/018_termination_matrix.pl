# At most one writer per view and partition, however ssp's processes end:
# every kind of process (the launcher, the scheduler, a view's worker, a
# parallel worker, the worker that publishes an output topic) is ended in
# every way (pg_terminate_backend, pg_cancel_backend, SIGKILL, SIGINT, an
# ERROR inside it), the settings are reloaded and a database with views is
# dropped, while messages are produced; the views end equal to their
# queries (counts of distinct values among them, kept in a table of their
# own), and no more worker processes run than the views have parts.
# First the repro of the issue: the scheduler and the launcher terminated
# three times (their successors must adopt the running workers, not start
# second ones).  Last, the fence itself: offsets moved under a running
# worker make its next batch roll back, and the worker resumes from them.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_any_broker(topics => ['orders:4']);
my $node = SspTest::new_node('matrix', conf => "ssp.broker_timeout = '5s'\n");
my $brokers = $broker->{bootstrap};

my $setup = qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$brokers');
	CREATE FOREIGN TABLE orders (order_id bigint, region text, amount numeric)
	  SERVER kafka OPTIONS (topic 'orders');
};
$node->safe_psql('postgres', $setup . q{
	CREATE ROLE vo;
	GRANT SELECT ON orders TO vo;
	GRANT CREATE ON SCHEMA public TO vo;
	CREATE TABLE t (order_id bigint, region text, amount numeric);
	SET ROLE vo;
	CREATE VIEW grouped WITH (ssp.continuous, ssp.batch_size = 300, ssp.commit_interval = '5ms') AS
	  SELECT region, count(*) AS n, sum(amount) AS total, count(DISTINCT order_id % 5000) AS ids
	  FROM orders GROUP BY region;
	CREATE VIEW par WITH (ssp.continuous, ssp.parallelism = 2, ssp.batch_size = 300,
	    ssp.commit_interval = '5ms') AS
	  SELECT region, count(*) AS n, sum(amount) AS total, count(DISTINCT order_id % 5000) AS ids
	  FROM orders GROUP BY region;
	CREATE VIEW pub WITH (ssp.continuous, ssp.output_topic = 'pub_changes', ssp.batch_size = 300,
	    ssp.commit_interval = '5ms') AS
	  SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region;
	RESET ROLE;
});
my @views = ('grouped', 'par', 'pub');
my %truth = (
	grouped => 'SELECT region, count(*), sum(amount), count(DISTINCT order_id % 5000) FROM t GROUP BY region',
	pub => 'SELECT region, count(*), sum(amount) FROM t GROUP BY region');
$truth{par} = $truth{grouped};
my $parts = 4;    # worker processes the views have
my $produced = 0;

# produce($n): n more orders, in the stream and in the table t
sub produce
{
	my ($n) = @_;
	my $from = $produced + 1;
	my $to = $produced + $n;
	my $gen = "SELECT g, 'r' || g % 7, g % 100 FROM generate_series($from, $to) g";
	$node->safe_psql('postgres', "INSERT INTO orders $gen; INSERT INTO t $gen");
	$produced = $to;
}

# no_extra_workers($what): wait until no more worker processes run than the
# views have parts; a second worker for a part would never leave
sub no_extra_workers
{
	my ($what) = @_;
	ok($node->poll_query_until('postgres',
			"SELECT count(*) <= $parts FROM pg_stat_activity WHERE backend_type = 'ssp worker' AND datname = 'postgres'"),
		"no second worker for any view after $what");
}

sub pid_of
{
	my ($kind) = @_;
	my %query = (
		launcher => "SELECT pid FROM pg_stat_activity WHERE backend_type = 'ssp launcher'",
		scheduler => "SELECT pid FROM pg_stat_activity WHERE backend_type = 'ssp scheduler' AND datname = 'postgres'",
		worker => "SELECT pid FROM ssp.worker_status() WHERE view = 'grouped'::regclass AND part = 0",
		'parallel worker' => "SELECT pid FROM ssp.worker_status() WHERE view = 'par'::regclass AND part = 1",
		publisher => "SELECT pid FROM ssp.worker_status() WHERE view = 'pub'::regclass AND part = 0");
	my $pid = '';
	$node->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($query{$kind}) p WHERE pid IS NOT NULL")
	  or die "no $kind runs";
	return $node->safe_psql('postgres', $query{$kind});
}

my $faults = 0;

# the repro: scheduler and launcher terminated three times while orders come
produce(5000);
SspTest::wait_views($node, 'postgres', @views);
for my $round (1 .. 3)
{
	$node->safe_psql('postgres', q{
		SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		 WHERE backend_type IN ('ssp scheduler', 'ssp launcher')});
	$faults += 2;
	produce(5000);
	# the launcher comes back after 5 s, then a scheduler
	$node->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type IN ('ssp scheduler', 'ssp launcher')")
	  or die 'launcher and scheduler did not come back';
	no_extra_workers("scheduler and launcher terminated ($round)");
}
SspTest::wait_views($node, 'postgres', @views);
is($node->safe_psql('postgres', 'SELECT sum(n) FROM grouped'), $produced,
	"the repro: $produced orders counted once after the scheduler and launcher were terminated three times");

# the matrix
for my $kind ('launcher', 'scheduler', 'worker', 'parallel worker', 'publisher')
{
	for my $how ('pg_terminate_backend', 'pg_cancel_backend', 'SIGKILL', 'SIGINT', 'ERROR')
	{
		next if $how eq 'ERROR' && $kind =~ /launcher|scheduler/;
		produce(1000);
		my $pid = pid_of($kind);
		if ($how =~ /^pg_/)
		{
			$node->safe_psql('postgres', "SELECT $how($pid)");
		}
		elsif ($how eq 'ERROR')
		{
			# the worker's owner may no longer read the stream: its next batch fails
			$node->safe_psql('postgres', 'REVOKE SELECT ON orders FROM vo');
			produce(1000);
			my $view = { worker => 'grouped', 'parallel worker' => 'par', publisher => 'pub' }->{$kind};
			$node->poll_query_until('postgres',
				"SELECT last_error LIKE 'permission denied%' FROM ssp.views WHERE view = '$view'::regclass")
			  or die "no error in $view";
			$node->safe_psql('postgres', 'GRANT SELECT ON orders TO vo');
		}
		else
		{
			kill(substr($how, 3), $pid) or die "kill $how $pid: $!";
			SspTest::wait_restarted($node) if $how eq 'SIGKILL';
		}
		$faults++;
		produce(1000);
		no_extra_workers("$how of the $kind");
	}
}

# settings reloaded (every ssp process gets SIGHUP), twice
for my $timeout ('4s', '6s')
{
	produce(1000);
	$node->safe_psql('postgres', "ALTER SYSTEM SET ssp.broker_timeout = '$timeout'; SELECT pg_reload_conf()");
	$faults++;
	produce(1000);
	no_extra_workers("a reload");
}

# another database with a running view dropped, twice
for my $round (1 .. 2)
{
	$node->safe_psql('postgres', 'CREATE DATABASE other');
	$node->safe_psql('other', 'CREATE EXTENSION ssp;' . $setup . q{
		CREATE VIEW o WITH (ssp.continuous) AS SELECT count(*) AS n FROM orders});
	SspTest::wait_views($node, 'other', 'o');
	produce(1000);
	$node->safe_psql('postgres', 'DROP DATABASE other WITH (FORCE)');
	$faults++;
	produce(1000);
	no_extra_workers("DROP DATABASE of another database");
}

SspTest::wait_views($node, 'postgres', @views);
my ($lost, $twice) = (0, 0);
for my $v (@views)
{
	my ($l, $t) = SspTest::lost_and_twice($node, 'postgres', "SELECT * FROM $v", $truth{$v});
	is("$l $t", '0 0', "$v equals its query after $faults faults");
	$lost += $l;
	$twice += $t;
}
my $applied = $node->safe_psql('postgres', 'SELECT sum(n) FROM grouped');
is($applied, $produced, "$produced orders, each counted once");
SspTest::report(faults => $faults, produced => $produced, applied => $applied,
	lost => $lost, twice => $twice, broker => $broker->{kind});

# The fence: a DBA moves the offsets back under the running worker of
# grouped, by 10 on every partition (the producer's sticky partitioner may
# send the next messages to any one of them).  Its next batch began from the
# old offsets, so it rolls back and the worker stops; the next worker
# resumes from the moved offsets, and those messages count again: exactly
# what the DBA asked.  Without the fence, the worker would overwrite them.
my $moved = $node->safe_psql('postgres', q{
	WITH m AS (UPDATE ssp.offsets SET next_offset = next_offset - 10
	            WHERE view = 'grouped'::regclass RETURNING 1)
	SELECT count(*) FROM m});
cmp_ok($moved, '>=', 2, "the offsets of $moved partitions moved back");
produce(2000);
ok($node->poll_query_until('postgres', q{
		SELECT last_error LIKE '%was written by another process: ssp.offsets no longer holds%' FROM ssp.views WHERE view = 'grouped'::regclass}),
	'a batch that began from offsets moved under it fails, and says so');
SspTest::wait_views($node, 'postgres', 'grouped');
is($node->safe_psql('postgres', 'SELECT sum(n) FROM grouped'), $produced + 10 * $moved,
	"the worker resumed from the moved offsets: the 10 messages before each of the $moved count again");

$node->stop;
done_testing();
