# Lag tools see each view on Apache Kafka: a view's worker commits to the
# consumer group ssp.DATABASE.VIEWOID what Postgres has committed, after
# Postgres has committed it, so kafka-consumer-groups --describe shows the
# view's position and lag.  Postgres stays the truth: the group never runs
# ahead of ssp.offsets, and a view reads from ssp.offsets, not from the
# group (a group moved by hand changes nothing).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $k = SspTest::start_kafka(partitions => 3);
my $node = SspTest::new_node('lag');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$k->{bootstrap}');
	CREATE FOREIGN TABLE orders (id bigint, region text) SERVER kafka OPTIONS (topic 'orders', key 'id');
	INSERT INTO orders SELECT g, 'r' || g % 5 FROM generate_series(1, 3000) g;
	CREATE VIEW by_region WITH (ssp.continuous) AS SELECT region, count(*) AS n FROM orders GROUP BY region;
});
SspTest::wait_views($node, 'postgres', 'by_region');
my $group = $node->safe_psql('postgres',
	"SELECT 'ssp.' || current_database() || '.' || 'by_region'::regclass::oid");

# partition => [current offset, log end offset, lag] as the tool prints them
sub describe
{
	my %rows;
	for my $line (split /\n/, SspTest::kafka($k, 'groups', '--describe', '--group', $group))
	{
		my @f = split ' ', $line;
		next unless @f >= 6 && $f[0] eq $group && $f[1] eq 'orders';
		$rows{ $f[2] } = [ @f[ 3 .. 5 ] ];
	}
	return \%rows;
}

# the committed offsets reach Kafka asynchronously: wait until they show
sub wait_group
{
	my ($want) = @_;
	for (1 .. 300)
	{
		my $rows = describe();
		my $got = join ',', map { "$_:$rows->{$_}[0]" } sort keys %$rows;
		return $got if $got eq $want;
		select(undef, undef, undef, 0.2);
	}
	return join ',', map { "$_:" . describe()->{$_}[0] } sort keys %{ describe() };
}

my $stored = $node->safe_psql('postgres',
	"SELECT string_agg(partition || ':' || next_offset, ',' ORDER BY partition) FROM ssp.offsets");
is(wait_group($stored), $stored, 'the group holds the offsets the view committed in Postgres');
my $rows = describe();
is(join(',', map { $rows->{$_}[2] } sort keys %$rows), '0,0,0', 'and a lag of 0 in each partition');
is(join(',', map { "$_:$rows->{$_}[1]" } sort keys %$rows), $stored, 'the log end offsets are those positions');
cmp_ok(scalar(grep { $rows->{$_}[1] > 0 } keys %$rows), '==', 3, 'every partition has messages');

# paused, the view falls behind, and the tool says by how much
$node->safe_psql('postgres', q{
	SELECT ssp.pause('by_region');
	INSERT INTO orders SELECT g, 'r' || g % 5 FROM generate_series(3001, 3600) g;
});
$rows = describe();
my $lag = 0;
$lag += $rows->{$_}[2] for keys %$rows;
is($lag, 600, 'a paused view shows the 600 messages it has not read as lag');

# the group is only a mirror: moved to the end by hand, the view still
# reads from ssp.offsets and counts every message once
SspTest::kafka($k, 'groups', '--reset-offsets', '--group', $group, '--topic', 'orders',
	'--to-latest', '--execute');
$node->safe_psql('postgres', "SELECT ssp.resume('by_region')");
SspTest::wait_views($node, 'postgres', 'by_region');
is($node->safe_psql('postgres', 'SELECT sum(n) FROM by_region'), '3600',
	'a group moved by hand changes nothing: the view counts all 3,600 messages once');
$stored = $node->safe_psql('postgres',
	"SELECT string_agg(partition || ':' || next_offset, ',' ORDER BY partition) FROM ssp.offsets");
is(wait_group($stored), $stored, 'and the group follows the view again');

# never ahead of Postgres: a batch that rolls back (the view's table
# locked, the worker terminated while it waits) commits nothing to Kafka
$node->safe_psql('postgres', 'INSERT INTO orders SELECT g, \'r\' || g % 5 FROM generate_series(3601, 3700) g');
SspTest::wait_views($node, 'postgres', 'by_region');
$stored = $node->safe_psql('postgres',
	"SELECT string_agg(partition || ':' || next_offset, ',' ORDER BY partition) FROM ssp.offsets");
is(wait_group($stored), $stored, 'after more batches the group is where Postgres is');
my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN; LOCK TABLE by_region_mrel IN SHARE MODE');
$node->safe_psql('postgres', 'INSERT INTO orders SELECT g, \'r\' || g % 5 FROM generate_series(3701, 3800) g');
$node->poll_query_until('postgres',
	"SELECT EXISTS (SELECT FROM pg_locks WHERE relation = 'by_region_mrel'::regclass AND NOT granted)")
  or die 'the batch did not wait for the lock';
$node->safe_psql('postgres',
	"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'ssp worker'");
$rows = describe();
is(join(',', map { "$_:$rows->{$_}[0]" } sort keys %$rows), $stored,
	'a batch that did not commit in Postgres is not committed to the group');
$locker->query_safe('COMMIT');
$locker->quit;
SspTest::wait_views($node, 'postgres', 'by_region');
is($node->safe_psql('postgres', 'SELECT sum(n) FROM by_region'), '3800',
	'the restarted worker applies that batch once');

$node->stop;
done_testing();
