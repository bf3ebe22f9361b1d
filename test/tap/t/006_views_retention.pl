# Nothing lost silently: messages the broker deletes (retention) before a
# paused view reads them are reported in ssp.dead_letters and counted, and
# the view goes on from the oldest message there is.  A view resumed behind
# the reader of its stream's other views, past what the broker still has:
# it alone lost messages, and the views ahead of it count none twice; nor
# does a new view lose any that starts in one process with a view behind.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_broker(topics => ['small:1', 'shared:1', 'third:1']);
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

# A new view (ssp.start 'earliest') that starts in one process with a view
# behind what the broker still has: that process finds the one behind's
# offset gone, and records its loss; the new view starts at the oldest
# message there is and lost nothing (it recorded every message the broker
# had deleted before it was made)
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE s3 (id bigint, pad text, o bigint OPTIONS (meta 'offset')) SERVER kafka OPTIONS (topic 'third');
	CREATE VIEW behind3 WITH (ssp.continuous) AS SELECT count(*) AS n FROM s3;
	INSERT INTO s3 SELECT g, 'x' FROM generate_series(1, 100) g;
});
SspTest::wait_views($node, 'postgres', 'behind3');
$node->safe_psql('postgres', "SELECT ssp.pause('behind3')");
for my $i (0 .. 9)
{
	$node->safe_psql('postgres',
		"INSERT INTO s3 SELECT g, repeat('p', 1000) FROM generate_series(1, 1000) g");
}
my $oldest3 = $node->safe_psql('postgres', 'SELECT min(o) FROM s3');
ok($oldest3 > 100, "the broker deleted the oldest messages of third (oldest offset now $oldest3)");
$node->safe_psql('postgres', q{BEGIN;
	CREATE VIEW fresh3 WITH (ssp.continuous) AS SELECT count(*) AS n FROM s3;
	SELECT ssp.resume('behind3');
	COMMIT});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 2 AND count(DISTINCT worker_pid) = 1
	FROM ssp.views WHERE view IN ('behind3'::regclass, 'fresh3'::regclass)}),
	'the new view and the resumed one start in one process');
SspTest::wait_views($node, 'postgres', qw(behind3 fresh3));
my $kept3 = $node->safe_psql('postgres', 'SELECT count(*) FROM s3');
is($node->safe_psql('postgres', 'SELECT (SELECT n FROM fresh3), n FROM behind3'),
	"$kept3|" . (100 + $kept3), 'each counts the messages still there, and behind3 what it read before');
is($node->safe_psql('postgres', q{SELECT view, "offset", error FROM ssp.dead_letters
		WHERE view IN ('behind3'::regclass, 'fresh3'::regclass)}),
	"behind3|100|messages at offsets 100 to " . ($oldest3 - 1)
	  . " were deleted by the broker before the view read them",
	'only behind3 lost messages; the new view lost none');
is($node->safe_psql('postgres', q{SELECT string_agg(v.processed + v.dead_letters || '', ',' ORDER BY v.view::text)
		FROM ssp.views v WHERE view IN ('behind3'::regclass, 'fresh3'::regclass)}),
	"10100,$kept3", 'behind3 accounts for every message of the topic, fresh3 for those there when it started');

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

$node->stop;
done_testing();
