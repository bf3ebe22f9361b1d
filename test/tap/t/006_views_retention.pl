# Nothing lost silently: messages the broker deletes (retention) before a
# paused view reads them are reported in ssp.dead_letters and counted, and
# the view goes on from the oldest message there is.  A view resumed behind
# the reader of its stream's other views, past what the broker still has:
# it alone lost messages, and the views ahead of it count none twice; nor
# does a new view lose any that shares a process with a view behind, and
# the one behind records its loss, whichever the process started with.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_broker(topics => ['small:1', 'shared:1', 'third:1', 'fourth:1', 'fifth:1', 'sixth:1', 'seventh:1']);
my $node = SspTest::new_node('retention');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE s (id bigint, pad text, o bigint OPTIONS (meta 'offset')) SERVER kafka OPTIONS (topic 'small');
	CREATE VIEW total WITH (ssp.continuous) AS SELECT count(*) AS n FROM s;
	INSERT INTO s SELECT g, 'x' FROM generate_series(1, 100) g;
});
SspTest::wait_views($node, 'postgres', 'total');
$node->safe_psql('postgres', "SELECT ssp.pause('total')");

# the test broker keeps about 5 MiB per partition: write 10 MiB
for my $i (0 .. 9)
{
	$node->safe_psql('postgres',
		"INSERT INTO s SELECT g, repeat('p', 1000) FROM generate_series(1, 1000) g");
}
my $oldest = $node->safe_psql('postgres', 'SELECT min(o) FROM s');
ok($oldest > 100, "the broker deleted the oldest messages (oldest offset now $oldest)");

$node->safe_psql('postgres', "SELECT ssp.resume('total')");
SspTest::wait_views($node, 'postgres', 'total');
my $kept = $node->safe_psql('postgres', 'SELECT count(*) FROM s');
is($node->safe_psql('postgres', 'SELECT n FROM total'), 100 + $kept,
	'the view has what it read before and every message still there');
is($node->safe_psql('postgres', q{SELECT "offset", error FROM ssp.dead_letters}),
	"100|messages at offsets 100 to " . ($oldest - 1)
	  . " were deleted by the broker before the view read them",
	'the loss is in ssp.dead_letters');
is($node->safe_psql('postgres', 'SELECT processed + dead_letters FROM ssp.views'),
	'10100', 'every message is either in the view or in the dead letters');

# A reader's views at different offsets.  behind is paused while ahead1
# and ahead2 read on; the broker deletes what behind had not read; resumed,
# behind joins their reader (it is near them), which goes back to behind's
# offset, finds it gone and moves on from the oldest message.  Only behind
# lost messages: ahead1 and ahead2 stay where they are.
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE s2 (id bigint, pad text, o bigint OPTIONS (meta 'offset')) SERVER kafka OPTIONS (topic 'shared');
	CREATE VIEW ahead1 WITH (ssp.continuous) AS SELECT count(*) AS n FROM s2;
	CREATE VIEW ahead2 WITH (ssp.continuous) AS SELECT count(*) AS n, sum(id) AS ids FROM s2;
	CREATE VIEW behind WITH (ssp.continuous) AS SELECT count(*) AS n FROM s2;
	INSERT INTO s2 SELECT g, 'x' FROM generate_series(1, 100) g;
});
SspTest::wait_views($node, 'postgres', qw(ahead1 ahead2 behind));
my $three = q{SELECT count(*) = 3 AND count(DISTINCT worker_pid) = 1 AND bool_and(attached)
	FROM ssp.views WHERE view IN ('ahead1'::regclass, 'ahead2'::regclass, 'behind'::regclass)};
ok($node->poll_query_until('postgres', $three), 'the three views share one reader');
$node->safe_psql('postgres', "SELECT ssp.pause('behind')");
for my $i (0 .. 9)
{
	$node->safe_psql('postgres',
		"INSERT INTO s2 SELECT g, repeat('p', 1000) FROM generate_series(1, 1000) g");
}
SspTest::wait_views($node, 'postgres', qw(ahead1 ahead2));
my $oldest2 = $node->safe_psql('postgres', 'SELECT min(o) FROM s2');
ok($oldest2 > 100, "the broker deleted the oldest messages of shared (oldest offset now $oldest2)");
$node->safe_psql('postgres', "SELECT ssp.resume('behind')");
ok($node->poll_query_until('postgres', $three), 'resumed, behind joins the reader of the others');
SspTest::wait_views($node, 'postgres', qw(behind ahead1 ahead2));
my $kept2 = $node->safe_psql('postgres', 'SELECT count(*) FROM s2');
is($node->safe_psql('postgres', 'SELECT n FROM behind'), 100 + $kept2,
	'behind has what it read before and every message still there');
is($node->safe_psql('postgres', 'SELECT (SELECT n FROM ahead1), n, ids FROM ahead2'),
	'10100|10100|5010050', 'the views ahead of it counted every message once');
is($node->safe_psql('postgres', q{SELECT view, "offset", error FROM ssp.dead_letters
		WHERE view IN ('ahead1'::regclass, 'ahead2'::regclass, 'behind'::regclass)}),
	"behind|100|messages at offsets 100 to " . ($oldest2 - 1)
	  . " were deleted by the broker before the view read them",
	'only behind lost messages, in ssp.dead_letters');
$node->safe_psql('postgres', 'INSERT INTO s2 SELECT g, NULL FROM generate_series(1, 10) g');
SspTest::wait_views($node, 'postgres', qw(behind ahead1 ahead2));
is($node->safe_psql('postgres', q{SELECT string_agg(v.processed + v.dead_letters || '', ',' ORDER BY v.view::text)
		FROM ssp.views v WHERE view IN ('ahead1'::regclass, 'ahead2'::regclass, 'behind'::regclass)}),
	'10110,10110,10110', 'and read on together: every message in each view or its dead letters');

# CREATE OR REPLACE of a view over a topic whose oldest messages are gone:
# the new definition, read from the log's start, could not count what the
# old one did: refused, unless the user says where it starts
my ($ret, $out, $err) = $node->psql('postgres', q{
	CREATE OR REPLACE VIEW total WITH (ssp.continuous) AS SELECT count(*) AS n FROM s WHERE id > 0});
like($err, qr/cannot replace continuous view "total": topic "small" no longer holds all its messages.*\n.*Partition 0 starts at offset $oldest/,
	'a replacement that would read the log from its start is refused');
$node->safe_psql('postgres', q{
	CREATE OR REPLACE VIEW total WITH (ssp.continuous, ssp.start = 'earliest') AS SELECT count(*) AS n FROM s WHERE id > 0});
ok($node->poll_query_until('postgres', "SELECT n = $kept FROM total"),
	'with ssp.start = earliest it is taken, and counts what the log holds once it has replaced the old one');

# A view with an offset on a partition and a new view (ssp.start
# 'earliest') in one process, the broker having deleted what the first had
# not read.  The process reads from the oldest message there is for the
# new view; the other lost what was deleted, and records it, whichever of
# the two the process started with.  The process's first fetch waits 15 s
# at the broker, so that it has read nothing of the partition yet when the
# second view joins it (the order is the test's, not the scheduler's); the
# other views are paused, so that no other fetch takes that wait.  New view
# first: the process reads from the oldest message, where the view behind
# used to skip the deleted messages without a dead letter.  View behind
# first: its fetch, still waiting when the process moves to the oldest
# message for the new view, then fails too; the loss is recorded once.
sub behind_and_new
{
	my ($topic, $first, $down) = @_;	# $down: wait, kill or drop, or none
	my ($stream, $behind, $new) = ("s_$topic", "behind_$topic", "new_$topic");

	$node->safe_psql('postgres', qq{
		CREATE FOREIGN TABLE $stream (id bigint, pad text, o bigint OPTIONS (meta 'offset')) SERVER kafka OPTIONS (topic '$topic');
		CREATE VIEW $behind WITH (ssp.continuous) AS SELECT count(*) AS n FROM $stream;
		INSERT INTO $stream SELECT g, 'x' FROM generate_series(1, 100) g;
	});
	SspTest::wait_views($node, 'postgres', $behind);
	$node->safe_psql('postgres', "SELECT ssp.pause('$behind')");
	for my $i (0 .. 9)
	{
		$node->safe_psql('postgres',
			"INSERT INTO $stream SELECT g, repeat('p', 1000) FROM generate_series(1, 1000) g");
	}
	my $oldest = $node->safe_psql('postgres', "SELECT min(o) FROM $stream");
	ok($oldest > 100, "$topic: the broker deleted the oldest messages (oldest offset now $oldest)");

	SspTest::ctl($broker, 'delay Fetch 1 15000');
	my $reading = qq{SELECT count(*) = 1 FROM ssp.readers r JOIN ssp.views v ON v.worker_pid = r.pid
		WHERE r.streams = ARRAY['$stream'::regclass] AND r.partitions = 1};
	if ($first eq 'new')
	{
		$node->safe_psql('postgres',
			"CREATE VIEW $new WITH (ssp.continuous) AS SELECT count(*) AS n FROM $stream");
		ok($node->poll_query_until('postgres', $reading), "$topic: the new view's process reads the stream");
		SspTest::ctl($broker, 'down all') if $down;
		$node->safe_psql('postgres', "SELECT ssp.resume('$behind')");
	}
	else
	{
		$node->safe_psql('postgres', "SELECT ssp.resume('$behind')");
		ok($node->poll_query_until('postgres', $reading), "$topic: the resumed view's process reads the stream");
		$node->safe_psql('postgres',
			"CREATE VIEW $new WITH (ssp.continuous) AS SELECT count(*) AS n FROM $stream");
	}
	ok($node->poll_query_until('postgres', qq{SELECT count(*) = 2 AND count(DISTINCT worker_pid) = 1
			AND bool_and(attached) AND sum(processed) = 100
		FROM ssp.views WHERE view IN ('$behind'::regclass, '$new'::regclass)}),
		"$topic: the $first view's process took the other before it read a message");
	if ($down)
	{
		# it cannot learn where the partition starts: both views wait for
		# the broker, past ssp.broker_timeout, reading nothing, and fail not
		my $pid = $node->safe_psql('postgres', "SELECT worker_pid FROM ssp.views WHERE view = '$new'::regclass");
		my $state = qq{SELECT string_agg(status || ':' || CASE WHEN worker_pid = $pid THEN 'same' ELSE 'other' END
				|| ':' || processed, ',' ORDER BY view::text)
			FROM ssp.views WHERE view IN ('$behind'::regclass, '$new'::regclass)};
		my $waiting = 'waiting for broker:same:100,waiting for broker:same:0';
		ok($node->poll_query_until('postgres', $state, $waiting), "$topic: with the broker down, both wait for it");
		my %seen;
		for (1 .. 16)
		{
			$seen{ $node->safe_psql('postgres', $state) } = 1;
			select(undef, undef, undef, 0.5);
		}
		is(join(' | ', sort keys %seen), $waiting,
			"$topic: ... for 8 s, past ssp.broker_timeout, in one process, reading nothing, failing not");
		if ($down eq 'kill')
		{
			# the process terminated while it waits: a new one starts with
			# one of the views and waits for the broker too (the scheduler
			# holds the other until a process reads the stream); whichever
			# view it starts with, the loss is recorded once
			$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
			ok($node->poll_query_until('postgres', qq{SELECT count(*) = 2 AND count(worker_pid) >= 1
					AND bool_and(worker_pid IS DISTINCT FROM $pid)
					AND bool_and(status = 'waiting for broker') AND sum(processed) = 100
				FROM ssp.views WHERE view IN ('$behind'::regclass, '$new'::regclass)}),
				"$topic: terminated while it waits, a new process waits for the broker in its place");
		}
		elsif ($down eq 'drop')
		{
			# the view behind dropped while it waits: DROP VIEW does not wait
			# for the broker, and the new view goes on alone, with no loss
			$node->safe_psql('postgres', "SET statement_timeout = '5s'; DROP VIEW $behind");
			pass("$topic: DROP VIEW $behind returned while its process waits for the broker");
		}
		SspTest::ctl($broker, 'up all');
	}
	if ($down && $down eq 'drop')
	{
		SspTest::wait_views($node, 'postgres', $new);
		my $kept = $node->safe_psql('postgres', "SELECT count(*) FROM $stream");
		is($node->safe_psql('postgres', "SELECT n FROM $new"), $kept,
			"$topic: $new counts the messages still there");
		is($node->safe_psql('postgres', qq{SELECT count(*) FROM ssp.dead_letters d
				WHERE d.view = '$new'::regclass OR NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = d.view)}), '0',
			"$topic: no dead letter for $new, nor one left of $behind");
		is($node->safe_psql('postgres', qq{SELECT processed, dead_letters, attached FROM ssp.views WHERE view = '$new'::regclass}),
			"$kept|0|f", "$topic: $new read each message once, alone (attached to no other view)");
		$node->safe_psql('postgres', "DROP VIEW $new");
		ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM ssp.readers'), "$topic: no reader left");
		return;
	}

	SspTest::wait_views($node, 'postgres', $behind, $new);
	my $kept = $node->safe_psql('postgres', "SELECT count(*) FROM $stream");
	is($node->safe_psql('postgres', "SELECT (SELECT n FROM $new), n FROM $behind"),
		"$kept|" . (100 + $kept), "$topic: each counts the messages still there, and $behind what it read before");
	is($node->safe_psql('postgres', qq{SELECT view, "offset", error FROM ssp.dead_letters
			WHERE view IN ('$behind'::regclass, '$new'::regclass)}),
		"$behind|100|messages at offsets 100 to " . ($oldest - 1)
		  . " were deleted by the broker before the view read them",
		"$topic: only $behind lost messages; the new view lost none");
	is($node->safe_psql('postgres', qq{SELECT string_agg(v.processed + v.dead_letters || '', ',' ORDER BY v.view::text)
			FROM ssp.views v WHERE view IN ('$behind'::regclass, '$new'::regclass)}),
		"10100,$kept", "$topic: $behind accounts for every message of the topic, $new for those there when it started");
	# and out of the way of the next case's wait
	$node->safe_psql('postgres', "DROP VIEW $behind, $new");
	ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM ssp.readers'), "$topic: no reader left");
}
$node->safe_psql('postgres', "SELECT ssp.pause(v) FROM unnest(ARRAY['total', 'ahead1', 'ahead2', 'behind']::regclass[]) v");
ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM ssp.readers'), 'the other views are paused');
behind_and_new('third', 'new');
behind_and_new('fourth', 'behind');
# and the broker down when the view behind joins (ssp.broker_timeout 2 s)
$node->append_conf('postgresql.conf', "ssp.broker_timeout = '2s'");
$node->reload;
behind_and_new('fifth', 'new', 'wait');
behind_and_new('sixth', 'new', 'kill');
behind_and_new('seventh', 'new', 'drop');

$node->stop;
done_testing();
