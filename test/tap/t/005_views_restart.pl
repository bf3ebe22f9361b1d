# Views resume by themselves after a restart, in every database with ssp,
# with no configuration beyond shared_preload_libraries; a database
# without ssp costs next to nothing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(gettimeofday tv_interval);
use SspTest;

my $broker = SspTest::start_broker(topics => ['a:4', 'b:4']);
my $node = SspTest::new_node('restart');
$node->safe_psql('postgres', 'CREATE DATABASE second');
# a database created after start, with ssp installed later: found too
$node->safe_psql('second', 'CREATE EXTENSION ssp');
for my $db ('postgres', 'second')
{
	my $topic = $db eq 'postgres' ? 'a' : 'b';
	$node->safe_psql($db, qq{
		CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
		CREATE FOREIGN TABLE s (id bigint) SERVER kafka OPTIONS (topic '$topic');
		CREATE VIEW total WITH (ssp.continuous) AS SELECT count(*) AS n, sum(id) AS s FROM s;
		INSERT INTO s SELECT g FROM generate_series(1, 1000) g;
	});
}
for my $db ('postgres', 'second')
{
	SspTest::wait_views($node, $db, 'total');
	is($node->safe_psql($db, 'SELECT n, s FROM total'), '1000|500500', "view in $db is maintained");
}

# a database without ssp: the scheduler started there finds no ssp and
# ends, and the launcher looks again every 10 s, not each time one ends
# (each look is a process start, and a transaction in that database)
$node->safe_psql('postgres', 'CREATE DATABASE plain');
sleep 2;
my $looks = "SELECT xact_commit FROM pg_stat_database WHERE datname = 'plain'";
my $before = $node->safe_psql('postgres', $looks);
sleep 6;
my $after = $node->safe_psql('postgres', $looks);
cmp_ok($after - $before, '<', 20, 'a database without ssp is looked at now and then, not in a loop');
# and CREATE EXTENSION there, just after a look, starts its scheduler at
# once, not at the next look 10 s later
$node->poll_query_until('postgres', "SELECT xact_commit > $after FROM pg_stat_database WHERE datname = 'plain'")
  or die 'no look at the database without ssp';
my $t0 = [gettimeofday];
$node->safe_psql('plain', 'CREATE EXTENSION ssp');
ok($node->poll_query_until('postgres', q{
		SELECT count(*) = 1 FROM pg_stat_activity WHERE datname = 'plain' AND backend_type = 'ssp scheduler'}),
	'a scheduler runs in a database once ssp is created there');
cmp_ok(tv_interval($t0), '<', 5, 'within 5 s of CREATE EXTENSION');

$node->restart;
for my $db ('postgres', 'second')
{
	$node->safe_psql($db, 'INSERT INTO s SELECT g FROM generate_series(1001, 2000) g');
}
for my $db ('postgres', 'second')
{
	SspTest::wait_views($node, $db, 'total');
	is($node->safe_psql($db, 'SELECT n, s FROM total'), '2000|2001000',
		"view in $db resumed after the restart");
	is($node->safe_psql($db, "SELECT status, worker_pid IS NOT NULL FROM ssp.views"),
		'running|t', "ssp.views in $db shows a running worker");
}

# a paused view stays paused across a restart, and resumes when asked
$node->safe_psql('second', "SELECT ssp.pause('total')");
$node->restart;
$node->safe_psql('second', 'INSERT INTO s VALUES (1)');
is($node->safe_psql('second', "SELECT ssp.wait('total', '2 s')"), 'f', 'paused view does not move');
is($node->safe_psql('second', "SELECT status FROM ssp.views"), 'paused', 'and says so');
$node->safe_psql('second', "SELECT ssp.resume('total')");
SspTest::wait_views($node, 'second', 'total');
is($node->safe_psql('second', 'SELECT n FROM total'), '2001', 'resumed view catches up');

$node->stop;
done_testing();
