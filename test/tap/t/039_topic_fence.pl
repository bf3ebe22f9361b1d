# A continuous view reads the topic it was made with.  ALTER FOREIGN TABLE
# refuses a new topic for a stream that views read, by the dependency ssp
# records between them; a view restored paused has no such dependency
# until a worker loads it, so the new topic is taken.  Resumed, the view
# must then stop with an error that names both topics, not count a topic
# its stream no longer names; with the topic set back, it goes on, exactly
# once.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_any_broker(topics => ['quiet:2', 'loud:2']);
my $node = SspTest::new_node('topic_fence');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE quiet (region text) SERVER kafka OPTIONS (topic 'quiet');
	CREATE FOREIGN TABLE loud (region text) SERVER kafka OPTIONS (topic 'loud');
	CREATE VIEW quiet_n WITH (ssp.continuous) AS SELECT region, count(*) AS n FROM quiet GROUP BY region;
	INSERT INTO quiet SELECT 'r' || g % 3 FROM generate_series(1, 300) g;
	INSERT INTO loud SELECT 'x' FROM generate_series(1, 50) g;
});
SspTest::wait_views($node, 'postgres', 'quiet_n');
my ($ret, $out, $err) = $node->psql('postgres', "ALTER FOREIGN TABLE quiet OPTIONS (SET topic 'loud')");
like($err, qr/cannot change the topic of stream "quiet" while continuous views read it/,
	'a new topic is refused while a view reads the stream');

# dumped paused, restored
$node->safe_psql('postgres', "SELECT ssp.pause('quiet_n')");
my $dump = "${PostgreSQL::Test::Utils::tmp_check}/topic_fence.sql";
$node->command_ok(['pg_dump', '-d', $node->connstr('postgres'), '-f', $dump], 'pg_dump');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('restored'), '-f', $dump],
	'restore');
is($node->safe_psql('restored', 'SELECT sum(n) FROM quiet_n'), '300', 'the restored view holds its rows');

# the restored, paused view does not depend on its stream yet: the topic
# changes, and the view, resumed, stops and says why
$node->safe_psql('restored', "ALTER FOREIGN TABLE quiet OPTIONS (SET topic 'loud')");
$node->safe_psql('restored', "SELECT ssp.resume('quiet_n')");
ok($node->poll_query_until('restored', "SELECT status = 'failed' FROM ssp.views WHERE view = 'quiet_n'::regclass"),
	'the view stops');
like($node->safe_psql('restored', "SELECT last_error FROM ssp.views WHERE view = 'quiet_n'::regclass"),
	qr/continuous view "quiet_n" reads topic "quiet", but its stream "quiet" now names topic "loud"/,
	'and names both topics');
is($node->safe_psql('restored', 'SELECT sum(n) FROM quiet_n'), '300', 'the view applied nothing meanwhile');

# the topic set back: the view goes on from its offsets
$node->safe_psql('restored', "ALTER FOREIGN TABLE quiet OPTIONS (SET topic 'quiet')");
$node->safe_psql('restored', "INSERT INTO quiet SELECT 'r' || g % 3 FROM generate_series(301, 400) g");
SspTest::wait_views($node, 'restored', 'quiet_n');
is($node->safe_psql('restored', "SELECT string_agg(region || '=' || n, ' ' ORDER BY region) FROM quiet_n"),
	'r0=133 r1=134 r2=133', 'set back, the view counts its own topic, each message once');
($ret, $out, $err) = $node->psql('restored', "ALTER FOREIGN TABLE quiet OPTIONS (SET topic 'loud')");
like($err, qr/cannot change the topic of stream "quiet" while continuous views read it/,
	'and a new topic is refused again');

SspTest::report(faults => 1, produced => 450, applied => 400, lost => 0, twice => 0, broker => $broker->{kind});
$node->stop;
done_testing();
