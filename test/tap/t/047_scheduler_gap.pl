# What is committed while a database has no scheduler (its scheduler was
# terminated, and the launcher has not started the next one yet) is seen
# by the next: an ssp.reset makes the view's process start again from the
# beginning (it went on with its stale offsets, and the view stayed empty
# until a message came), and a DROP VIEW stops the view's process and
# frees its slot (it ran on, holding a consumer, until a message came; its
# slot never).  Each view here reads a topic of its own that no message
# reaches after the first, so nothing but the scheduler can end them.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_broker(topics => ['quiet_a:2', 'quiet_b:2']);
my $node = SspTest::new_node('gap');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE quiet_a (id bigint) SERVER kafka OPTIONS (topic 'quiet_a');
	CREATE FOREIGN TABLE quiet_b (id bigint) SERVER kafka OPTIONS (topic 'quiet_b');
	INSERT INTO quiet_a SELECT g FROM generate_series(1, 200) g;
	INSERT INTO quiet_b SELECT g FROM generate_series(1, 200) g;
	CREATE VIEW counted WITH (ssp.continuous) AS SELECT count(*) AS n, sum(id) AS total FROM quiet_a;
	CREATE VIEW dropped WITH (ssp.continuous) AS SELECT count(*) AS n FROM quiet_b;
});
SspTest::wait_views($node, 'postgres', 'counted', 'dropped');
my $dropped = $node->safe_psql('postgres', "SELECT 'dropped'::regclass::oid");
my $scheduler = "SELECT pid FROM pg_stat_activity WHERE backend_type = 'ssp scheduler' AND datname = 'postgres'";

# terminate_scheduler($sql): terminate the scheduler and run $sql at once,
# before the launcher starts the next one; then wait for that one
sub terminate_scheduler
{
	my ($sql) = @_;
	my $old = $node->safe_psql('postgres', $scheduler);
	$node->safe_psql('postgres', "SELECT pg_terminate_backend($old); $sql");
	$node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'ssp scheduler'
		   AND datname = 'postgres' AND pid <> $old")
	  or die 'no new scheduler';
}

terminate_scheduler("SELECT ssp.reset('counted')");
is($node->safe_psql('postgres', "SELECT ssp.wait('counted', '30 s')"), 't',
	'a view reset while no scheduler ran catches up again');
is($node->safe_psql('postgres', 'SELECT n, total FROM counted'), '200|20100',
	'from the beginning, each message once');

my $pid = $node->safe_psql('postgres', "SELECT pid FROM ssp.worker_status() WHERE view = $dropped");
terminate_scheduler('DROP VIEW dropped');
ok($node->poll_query_until('postgres', "SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $pid"),
	'the process of a view dropped while no scheduler ran stops');
ok($node->poll_query_until('postgres', "SELECT count(*) = 0 FROM ssp.worker_status() WHERE view = $dropped"),
	'and its slot is freed');
ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'ssp worker'"),
	'one worker runs: the remaining view\'s');

$node->stop;
done_testing();
