# Hopping windows at scale: 100,000 events, one-hour windows every minute
# (each event in 60 windows), produced while the view consumes; the view
# equals the plain query over ssp.hop_windows.  A tumbling view over the
# same events is checked too.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_broker(topics => ['events:16']);
my $node = SspTest::new_node('hopping');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE events (id bigint, region text, amount numeric, ts timestamptz)
	  SERVER kafka OPTIONS (topic 'events', timestamp 'ts');
	-- a grace of a day: events come in order per chunk, none is late
	CREATE VIEW hourly_every_minute WITH (ssp.continuous, ssp.grace = '1 day') AS
	  SELECT region, ssp.hop(ts, '1 hour', '1 minute') AS w, count(*) AS n, sum(amount) AS total
	  FROM events GROUP BY region, w;
	CREATE VIEW per_hour WITH (ssp.continuous, ssp.grace = '1 day') AS
	  SELECT region, ssp.tumble(ts, '1 hour') AS w, count(*) AS n, sum(amount) AS total
	  FROM events GROUP BY region, w;
	CREATE TABLE t (id bigint, region text, amount numeric, ts timestamptz);
});

my $gen = "SELECT g, 'r' || g % 5, g % 100, timestamptz '2024-01-01' + g * interval '1 s'";
for my $chunk (0 .. 9)
{
	my $from = $chunk * 10000 + 1;
	my $to = $from + 9999;
	$node->safe_psql('postgres', "INSERT INTO events $gen FROM generate_series($from, $to) g");
	$node->safe_psql('postgres', "INSERT INTO t $gen FROM generate_series($from, $to) g");
}
SspTest::wait_views($node, 'postgres', 'hourly_every_minute', 'per_hour');

is(SspTest::differences($node, 'postgres', 'SELECT * FROM hourly_every_minute',
		"SELECT region, w, count(*), sum(amount) FROM t, ssp.hop_windows(t.ts, '1 hour', '1 minute') AS w
		 GROUP BY region, w"),
	'0', 'hopping view equals the plain query over ssp.hop_windows');
is($node->safe_psql('postgres', 'SELECT sum(n) FROM hourly_every_minute'), '6000000',
	'each of the 100,000 events is in 60 windows');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM per_hour',
		"SELECT region, ssp.tumble(ts, '1 hour'), count(*), sum(amount) FROM t GROUP BY 1, 2"),
	'0', 'tumbling view equals its query');
is($node->safe_psql('postgres', 'SELECT sum(late_events) FROM ssp.views'), '0', 'no late events');

$node->stop;
done_testing();
