# One view of a reader does not hold it up when its changes cannot be
# published: its output topic without a leader (the test broker's
# partitions of it have none), the reader waits for it at most a second,
# the view leaves it, not failed, to publish alone, in a worker of its own
# that fails it after ssp.broker_timeout, and the reader goes on with its
# other views, the same process,
# without a failure of theirs, exact; once the topic takes messages again,
# the view publishes every change (an unbroken chain per key, as a consumer
# keeps them) and joins the reader again (doc/internals.md, One reader per
# stream).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_broker(topics => ['orders:4', 'pub_changes:2']);
my $node = SspTest::new_node('publish', conf => "ssp.broker_timeout = '5s'\n");
my $with = "ssp.continuous, ssp.batch_size = 500, ssp.commit_interval = '20ms'";
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE orders (order_id bigint, region text, amount numeric)
	  SERVER kafka OPTIONS (topic 'orders');
	CREATE TABLE t (order_id bigint, region text, amount numeric);
	BEGIN;
	CREATE VIEW agg WITH ($with) AS
	  SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region;
	CREATE VIEW keyed WITH ($with) AS
	  SELECT order_id % 50 AS k, count(*) AS n, max(amount) AS top FROM orders GROUP BY k;
	CREATE VIEW pub WITH ($with, ssp.output_topic = 'pub_changes') AS
	  SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region;
	COMMIT;
});

my %truth = (
	agg => 'SELECT region, count(*) AS n, sum(amount) AS total FROM t GROUP BY region',
	keyed => 'SELECT order_id % 50 AS k, count(*) AS n, max(amount) AS top FROM t GROUP BY k',
	pub => 'SELECT region, count(*) AS n, sum(amount) AS total FROM t GROUP BY region',
);
my $produced = 0;

sub produce
{
	my ($n) = @_;
	my $gen = "SELECT g, 'r' || g % 7, (g * 37) % 100 FROM generate_series(@{[$produced + 1]}, @{[$produced + $n]}) g";
	$node->safe_psql('postgres', "INSERT INTO orders $gen; INSERT INTO t $gen");
	$produced += $n;
}

sub exact
{
	my ($label, @views) = @_;
	SspTest::equal_to_queries($node, 'postgres', "$label, $produced orders", \%truth, @views);
}

my $all = q{SELECT count(*) = 3 AND count(DISTINCT worker_pid) = 1 AND bool_and(attached)
	FROM ssp.views WHERE view IN ('agg'::regclass, 'keyed'::regclass, 'pub'::regclass)};
produce(300);
ok($node->poll_query_until('postgres', $all), 'the three views share one reader');
exact('before', qw(agg keyed pub));
my $reader = $node->safe_psql('postgres', "SELECT worker_pid FROM ssp.views WHERE view = 'agg'::regclass");

# the output topic's partitions without a leader: the broker refuses what
# the reader's producer sends, and the producer waits for a leader
SspTest::ctl($broker, "leader pub_changes $_ none") for 0 .. 1;
produce(300);
$node->wait_for_log(
	qr/continuous view "pub" leaves the reader of its streams to publish its changes alone\n.*DETAIL: .*not acknowledged within 1000 ms/);
pass('pub leaves the reader once its changes are not acknowledged within a second');
ok($node->poll_query_until('postgres', q{
		SELECT status = 'failed' AND last_error LIKE 'could not produce to topic "pub_changes": timed out%within 5000 ms%'
		FROM ssp.views WHERE view = 'pub'::regclass}),
	'pub fails alone, once ssp.broker_timeout has passed')
  or diag($node->safe_psql('postgres', 'SELECT view, status, worker_pid, attached, last_error FROM ssp.views'));
for my $round (1 .. 3)
{
	produce(200);
	exact("while pub fails, round $round", qw(agg keyed));
}
is($node->safe_psql('postgres', q{
		SELECT string_agg(view || ' ' || status || ' ' || (worker_pid IS NOT DISTINCT FROM } . $reader . q{) || ' ' || (coalesce(last_error, '') = ''), ', ' ORDER BY view::text)
		FROM ssp.views WHERE view IN ('agg'::regclass, 'keyed'::regclass)}),
	'agg running true true, keyed running true true',
	'agg and keyed stayed in the same reader, without a failure');
like($node->safe_psql('postgres', "SELECT last_error FROM ssp.views WHERE view = 'pub'::regclass"),
	qr/could not produce to topic "pub_changes"/, 'pub still fails while the topic has no leader');
ok(!$node->log_contains(qr/failed in the reader of its streams and leaves it: (?!could not produce to topic "pub_changes")/),
	'no other view failed in the reader');
ok(!$node->log_contains(qr/"pub" failed in the reader of its streams/),
	'pub did not fail in the reader, for the second it waited');
ok($node->log_contains(qr/"pub" failed in its worker: could not produce to topic "pub_changes": timed out/),
	'pub failed in its worker of its own');

# the topic takes messages again: pub publishes, alone, and joins the reader
SspTest::ctl($broker, "leader pub_changes $_ 1") for 0 .. 1;
produce(100);
ok($node->poll_query_until('postgres', q{
		SELECT c.published_seq > 0 AND NOT EXISTS (SELECT FROM pub_outbox)
		FROM ssp.continuous_views c WHERE c.view = 'pub'::regclass}, 't'),
	'pub published every change once the topic took messages');
ok($node->poll_query_until('postgres', $all), 'pub shares the reader again')
  or diag($node->safe_psql('postgres', 'SELECT view, status, worker_pid, attached, last_error FROM ssp.views'));
exact('after', qw(agg keyed pub));
SspTest::read_published($node, 'postgres', 'pub_changes');
SspTest::check_published($node, 'pub', 'output topic: ');
ok(!$node->log_contains(qr/terminated by signal/), 'no process crashed');

$node->stop;
done_testing();
