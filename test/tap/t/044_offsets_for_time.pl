# Offsets for a time: a view's ssp.start at a time (and a scan's bound on
# the event time) asks the brokers where that time begins, in one request
# for every partition, in slices (doc/guarantees.md, Brokers down).
# Checked against a test broker whose answer to that request comes a
# minute late (each section has a broker of its own: the delays it is
# given are answered in turn, and the watermarks asked first are not
# delayed): CREATE VIEW ... WITH (ssp.start = time) ends at its
# statement_timeout, not after ssp.broker_timeout a partition; a view
# whose start the brokers do not give within ssp.broker_timeout is
# refused, rather than started at the end of the topic; once they answer,
# the view is made and counts what comes.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use SspTest;

my $node = SspTest::new_node('offsets_for_time', conf => "ssp.broker_timeout = '60s'\n");
my $n = 0;

# a_stream(): a test broker of its own and a stream of 8 partitions on it,
# holding 400 events, one a second from 2026-01-01 00:00:01; its name
sub a_stream
{
	my $broker = SspTest::start_broker(topics => ['clock:8']);
	my $name = 'clock' . ++$n;
	$node->safe_psql('postgres', qq{
		CREATE SERVER $name FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
		CREATE FOREIGN TABLE $name (id bigint, ts timestamptz) SERVER $name
		  OPTIONS (topic 'clock', timestamp 'ts');
		INSERT INTO $name SELECT g, '2026-01-01 00:00:00+00'::timestamptz + g * interval '1 second'
		  FROM generate_series(1, 400) g;
	});
	return ($broker, $name);
}

# late($broker, $count): the two requests for the watermarks are answered at
# once, the next $count for offsets a minute late: as many as the slices
# of the request send before it ends (0.5 s, 1 s, then what is left of
# ssp.broker_timeout), since a late answer holds up the ones after it on
# its connection
sub late
{
	my ($broker, $count) = @_;
	SspTest::ctl($broker, 'delay ListOffsets 1 0') for 1 .. 2;
	SspTest::ctl($broker, 'delay ListOffsets 1 60000') for 1 .. $count;
}

# psql_within($sql, $seconds): the statement's error, and whether it ended
# within $seconds
sub psql_within
{
	my ($sql, $seconds) = @_;
	my $timed_out = 0;
	my $t0 = time;
	my ($rc, $out, $err) = $node->psql('postgres', $sql, timeout => 30, timed_out => \$timed_out);
	return ($err, !$timed_out && time - $t0 < $seconds);
}

# a view to start at a time, made while the answer is late
my ($broker, $s) = a_stream();
late($broker, 2);
my ($err, $soon) = psql_within("SET statement_timeout = '1s'; CREATE VIEW ${s}_n WITH (ssp.continuous, "
	  . "ssp.start = '2026-01-01 00:05:00+00') AS SELECT count(*) AS n FROM $s", 15);
like($err, qr/canceling statement due to statement timeout/, 'CREATE VIEW waiting for the offsets of its start is cancelled');
ok($soon, 'at its statement_timeout, within 15 s');

# the brokers do not give the start within ssp.broker_timeout: refused
($broker, $s) = a_stream();
late($broker, 3);
$node->safe_psql('postgres', "ALTER SYSTEM SET ssp.broker_timeout = '3s'; SELECT pg_reload_conf()");
($err, $soon) = psql_within("CREATE VIEW ${s}_n WITH (ssp.continuous, "
	  . "ssp.start = '2026-01-01 00:05:00+00') AS SELECT count(*) AS n FROM $s", 20);
like($err, qr/could not get the offsets for a time of topic "clock"/,
	'a view whose start the brokers do not give in time is refused');
ok($soon, 'after ssp.broker_timeout (3 s)');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_class WHERE relname = '${s}_n'"), '0',
	'and not made: it does not start at the end instead');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET ssp.broker_timeout; SELECT pg_reload_conf()');

# answered: made, and it counts what comes from then on (the test broker
# has no time index: a start at a time is the end of the topic there)
($broker, $s) = a_stream();
$node->safe_psql('postgres', "CREATE VIEW ${s}_n WITH (ssp.continuous, "
	  . "ssp.start = '2026-01-01 00:05:00+00') AS SELECT count(*) AS n FROM $s");
$node->safe_psql('postgres', "INSERT INTO $s SELECT g, now() FROM generate_series(401, 450) g");
SspTest::wait_views($node, 'postgres', "${s}_n");
is($node->safe_psql('postgres', "SELECT n FROM ${s}_n"), '50', 'the view, made once the brokers answer, counts what comes');

$node->stop;
done_testing();
