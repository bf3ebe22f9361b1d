# One watermark rule for every view: partitions fed out of step make no
# event late that is on time within its own partition.  A windowed view
# over one stream (grace 10 s) is fed live, partition by partition, a
# second apart (the repro of the issue: 4,167 of 6,000 on-time events were
# counted late, because partitions with no message yet did not hold the
# watermark); another in bursts, partitions in a shuffled order with their
# event times drifting apart; another catches up on a backlog written
# partition by partition; and one with a partition that stays silent,
# which holds the watermark only until ssp.idle_timeout.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_broker(topics => ['steps:4', 'bursts:4', 'backlog:4', 'silent:4']);
my $node = SspTest::new_node('watermark');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE TABLE truth (topic text, id bigint, ts timestamptz, p int);
});
for my $topic ('steps', 'bursts', 'backlog', 'silent')
{
	$node->safe_psql('postgres', qq{
		CREATE FOREIGN TABLE $topic (id bigint, ts timestamptz, p int OPTIONS (meta 'partition'))
		  SERVER kafka OPTIONS (topic '$topic', timestamp 'ts')});
}

sub window_view
{
	my ($topic, $opts) = @_;
	$node->safe_psql('postgres', qq{
		CREATE VIEW w_$topic WITH (ssp.continuous, ssp.grace = '10 seconds', ssp.commit_interval = '20ms'$opts) AS
		  SELECT p, ssp.tumble(ts, '1 minute') AS w, count(*) AS n FROM $topic GROUP BY p, w});
}

# feed($topic, $p, $from, $n, $step): n events of partition p, ids from, event
# times 2024-01-01 + (from + i) * step seconds, in order
sub feed
{
	my ($topic, $p, $from, $n, $step) = @_;
	my $gen = "SELECT g, timestamptz '2024-01-01' + g * interval '$step s', $p
	           FROM generate_series($from, $from + $n - 1) g";
	$node->safe_psql('postgres', "INSERT INTO $topic (id, ts, p) $gen;
		INSERT INTO truth SELECT '$topic', * FROM ($gen) x");
}

sub check
{
	my ($topic, $what) = @_;
	SspTest::wait_views($node, 'postgres', "w_$topic");
	is($node->safe_psql('postgres', "SELECT late_events FROM ssp.views WHERE view = 'w_$topic'::regclass"),
		'0', "$what: no event late");
	is(SspTest::differences($node, 'postgres', "SELECT * FROM w_$topic",
			"SELECT p, ssp.tumble(ts, '1 minute'), count(*) FROM truth WHERE topic = '$topic' GROUP BY 1, 2"),
		'0', "$what: the view equals its query");
}

# live, partition by partition, a second apart: 1,500 events each over the
# same 25 minutes of event time
window_view('steps', '');
for my $p (0 .. 3)
{
	feed('steps', $p, 1, 1500, 1);
	sleep 1;
}
check('steps', 'partitions fed one after another');

# bursts of 100 in a shuffled order of partitions, each partition's clock
# moving at its own pace (1 to 4 s an event)
window_view('bursts', '');
my @next = (1, 1, 1, 1);
srand(20261201);
for my $round (1 .. 12)
{
	my @order = sort { rand() <=> 0.5 } (0 .. 3);
	for my $p (@order)
	{
		feed('bursts', $p, $next[$p], 100, $p + 1);
		$next[$p] += 100;
	}
	select(undef, undef, undef, 0.2);
}
check('bursts', 'bursts out of step');

# a backlog written partition by partition before the view exists
feed('backlog', $_, 1, 2000, 1) for (0 .. 3);
window_view('backlog', '');
check('backlog', 'a backlog caught up on');

# one partition never gets a message: it holds the watermark only until
# ssp.idle_timeout, then windows close (emit final shows them)
window_view('silent', ", ssp.idle_timeout = '3 seconds', ssp.emit = 'final'");
feed('silent', $_, 1, 600, 1) for (0 .. 2);
ok($node->poll_query_until('postgres',
		"SELECT watermark = timestamptz '2024-01-01' + interval '600 s' - interval '10 s' FROM ssp.views WHERE view = 'w_silent'::regclass"),
	'a silent partition stops holding the watermark after ssp.idle_timeout');
is($node->safe_psql('postgres', 'SELECT sum(n) FROM w_silent'), '1617',
	'and the windows it passed are final: 3 partitions x 9 minutes, less the first second');

$node->stop;
done_testing();
