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
# the view is made and counts what comes.  A scan bounded by the messages'
# time is cancelled at its statement_timeout as well, and goes on without
# the offsets of its bound where the brokers do not give them in time.
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

# a scan bounded by the time of the messages (a column of meta
# 'timestamp': the event time of the stream's ts option is no bound on
# offsets) asks for that time's offsets the same way: cancelled at its
# statement_timeout; and where the brokers do not answer within
# ssp.broker_timeout, it goes on without them, and is not held for a
# minute a partition (on the test broker, a late answer holds up the
# fetches after it on its connection too: the scan then ends with the
# brokers' error, where a broker that answered its fetches would give the
# rows from the start)
sub kts_stream
{
	my ($broker, $s) = a_stream();
	$node->safe_psql('postgres', qq{
		CREATE FOREIGN TABLE ${s}_kts (id bigint, kts timestamptz OPTIONS (meta 'timestamp'))
		  SERVER $s OPTIONS (topic 'clock');
	});
	return ($broker, $s);
}
my $bound = "kts >= '2026-01-01 00:05:00+00'";
($broker, $s) = kts_stream();
late($broker, 2);
($err, $soon) = psql_within("SET statement_timeout = '1s'; SELECT count(*) FROM ${s}_kts WHERE $bound", 15);
like($err, qr/canceling statement due to statement timeout/,
	'a scan waiting for the offsets of its lower bound on the time is cancelled');
ok($soon, 'at its statement_timeout, within 15 s');

($broker, $s) = kts_stream();
late($broker, 3);
($err, $soon) = psql_within("SET ssp.broker_timeout = '3s'; SELECT count(*) FROM ${s}_kts WHERE $bound", 20);
like($err, qr/could not read messages of topic "clock"/,
	'a scan whose brokers hold back the offsets of its bound goes on without them, to the brokers\' error here');
ok($soon, 'within 20 s (ssp.broker_timeout 3 s), not a minute a partition');

$node->stop;
done_testing();
