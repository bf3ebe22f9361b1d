# Views as streams: a view with ssp.output_topic publishes its changes while
# its worker (which is also its publisher) is killed with SIGKILL again and
# again mid-stream.  The topic holds every change: with the repeats a
# crash sends again dropped as a consumer drops them (a record whose number
# is not above the last one seen on its partition), each key's changes form
# an unbroken chain (each one's "before" is the previous one's row) that
# ends at the view's row; nothing of the outbox is left.  A second-stage
# view over the topic equals the plain query, and a windowed view with
# ssp.emit = 'final' publishes each closed window once, and no open one.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_broker(
	topics => ['orders:8', 'revenue_changes:4', 'minute_changes:4']);
my $node = SspTest::new_node('outbox');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE orders (order_id bigint, region text, amount numeric, ts timestamptz)
	  SERVER kafka OPTIONS (topic 'orders', timestamp 'ts');
	CREATE VIEW revenue WITH (ssp.continuous, ssp.output_topic = 'revenue_changes',
	    ssp.batch_size = 300, ssp.commit_interval = '5ms') AS
	  SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region HAVING count(*) > 50;
	CREATE VIEW per_minute WITH (ssp.continuous, ssp.output_topic = 'minute_changes', ssp.emit = 'final',
	    ssp.grace = '1 minute', ssp.batch_size = 400, ssp.commit_interval = '5ms') AS
	  SELECT ssp.tumble(ts, '1 minute') AS minute, region, count(*) AS n FROM orders GROUP BY 1, 2;
	CREATE TABLE t (order_id bigint, region text, amount numeric, ts timestamptz);
});

sub worker_pid
{
	my ($view) = @_;
	return $node->safe_psql('postgres',
		"SELECT worker_pid FROM ssp.views WHERE view = '$view'::regclass AND worker_pid IS NOT NULL");
}

my $gen = "SELECT g, 'r' || g % 13, g % 1000, timestamptz '2024-01-01' + g * interval '100 ms'";
my $kills = 0;
for my $chunk (0 .. 29)
{
	my $from = $chunk * 2000 + 1;
	my $to = $from + 1999;
	$node->safe_psql('postgres', "INSERT INTO orders $gen FROM generate_series($from, $to) g");
	$node->safe_psql('postgres', "INSERT INTO t $gen FROM generate_series($from, $to) g");
	next unless $chunk % 3 == 1;
	# kill the worker that writes and publishes, while it does
	my $view = $chunk % 2 ? 'revenue' : 'per_minute';
	my $pid;
	$node->poll_query_until('postgres',
		"SELECT worker_pid IS NOT NULL FROM ssp.views WHERE view = '$view'::regclass")
	  or die "no worker for $view";
	$pid = worker_pid($view);
	select(undef, undef, undef, 0.05 * ($chunk % 4));
	ok(kill('KILL', $pid), "SIGKILL to the worker and publisher of $view");
	$kills++;
	SspTest::wait_restarted($node);
}
SspTest::wait_views($node, 'postgres', 'revenue', 'per_minute');
ok($node->poll_query_until('postgres', q{
		SELECT (SELECT count(*) FROM revenue_outbox) = 0 AND (SELECT count(*) FROM per_minute_outbox) = 0}),
	'every change published, and the outboxes trimmed');

$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE revenue_changes (region text, n bigint, total numeric, _op text, _seq bigint,
	    _before jsonb, p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'), k text OPTIONS (meta 'key'))
	  SERVER kafka OPTIONS (topic 'revenue_changes');
	CREATE TABLE changes AS SELECT * FROM revenue_changes;
	-- what a consumer keeps: a record whose number is above the last one seen on its partition
	CREATE TABLE kept AS SELECT * FROM (
	  SELECT c.*, max(_seq) OVER (PARTITION BY p ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS seen
	  FROM changes c) x WHERE seen IS NULL OR _seq > seen;
});
my ($records, $distinct) = split /\|/, $node->safe_psql('postgres',
	'SELECT count(*), count(DISTINCT _seq) FROM changes');
cmp_ok($records, '>=', $distinct, "$records records, $distinct changes (the rest sent again after a crash)");
is($node->safe_psql('postgres', 'SELECT count(*) FROM kept'), $distinct,
	'dropping the records numbered no higher than the last seen keeps one of each change: in commit order per key');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM (SELECT _seq FROM changes GROUP BY _seq
	                      HAVING count(DISTINCT (region, n, total, _op, _before::text, k)) > 1) x}),
	'0', 'a change sent again is the same change');
is($node->safe_psql('postgres', q{SELECT count(*) FROM kept WHERE k <> jsonb_build_object('region', region)::text}),
	'0', 'each record is keyed by its group key');
SspTest::check_published($node, 'revenue', '');
my $query = 'SELECT region, count(*), sum(amount) FROM t GROUP BY region HAVING count(*) > 50';
is(SspTest::differences($node, 'postgres', 'SELECT * FROM revenue', $query), '0',
	'the view itself is exact');

# a second stage: the latest row per key, from the change topic
$node->safe_psql('postgres', q{
	CREATE VIEW revenue_copy WITH (ssp.continuous, ssp.primary_key = 'region') AS
	  SELECT region, n, total FROM revenue_changes WHERE _op <> 'delete'});
SspTest::wait_views($node, 'postgres', 'revenue_copy');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM revenue_copy', $query), '0',
	'a second-stage view over the change topic equals the plain query');

# emit final: each closed window once, no open one
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE minute_changes (minute timestamptz, region text, n bigint, _op text, _seq bigint,
	    p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
	  SERVER kafka OPTIONS (topic 'minute_changes');
	CREATE TABLE minutes_kept AS SELECT * FROM (
	  SELECT c.*, max(_seq) OVER (PARTITION BY p ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS seen
	  FROM minute_changes c) x WHERE seen IS NULL OR _seq > seen});
is(SspTest::differences($node, 'postgres', 'SELECT minute, region, n FROM per_minute',
		'SELECT minute, region, n FROM minutes_kept'),
	'0', 'emit final: the topic holds each closed window once, as the view shows it');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM minutes_kept WHERE _op <> 'insert'
	   OR minute + interval '1 minute' > (SELECT watermark FROM ssp.views WHERE view = 'per_minute'::regclass)}),
	'0', 'and no window still open');
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM minutes_kept'), '>', 50, 'many windows published');

# the output topic refusing the changes: the worker fails, ssp.views says
# why, and it publishes them once the broker takes them again
$node->safe_psql('postgres', "SELECT ssp.pause('revenue'), ssp.pause('per_minute')");
$node->safe_psql('postgres', "INSERT INTO orders $gen FROM generate_series(60001, 62000) g");
$node->safe_psql('postgres', "INSERT INTO t $gen FROM generate_series(60001, 62000) g");
SspTest::ctl($broker, 'errors Produce 3 TOPIC_AUTHORIZATION_FAILED');
$node->safe_psql('postgres', "SELECT ssp.resume('revenue')");
ok($node->poll_query_until('postgres', q{
		SELECT last_error LIKE '%could not produce to topic "revenue_changes"%'
		FROM ssp.views WHERE view = 'revenue'::regclass}),
	'a topic that refuses the changes: ssp.views says so');
# the refusal stops the view's producer (gapless): the error says so, and
# what the broker said
like($node->safe_psql('postgres', q{SELECT last_error FROM ssp.views WHERE view = 'revenue'::regclass}),
	qr/The producer of server "kafka" failed: .*Topic authorization failed/,
	'the stopped producer is the error, with the broker\'s reason');
$node->safe_psql('postgres', "SELECT ssp.resume('per_minute')");
SspTest::wait_views($node, 'postgres', 'revenue', 'per_minute');
ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM revenue_outbox'),
	'once the broker takes them, the changes held in the outbox are published');
$node->safe_psql('postgres', q{
	CREATE TABLE kept_after AS SELECT * FROM (
	  SELECT c.*, max(_seq) OVER (PARTITION BY p ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS seen
	  FROM revenue_changes c) x WHERE seen IS NULL OR _seq > seen});
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM (
	  SELECT _before, lag(jsonb_build_object('region', region, 'n', n, 'total', total))
	           OVER (PARTITION BY region ORDER BY _seq) AS prev
	  FROM kept_after) x WHERE _before IS DISTINCT FROM prev}),
	'0', "and each key's chain is still unbroken");
is(SspTest::differences($node, 'postgres', 'SELECT * FROM revenue',
		'SELECT * FROM (SELECT DISTINCT ON (region) region, n, total FROM kept_after ORDER BY region, _seq DESC) l'),
	'0', "each key's last change is the view's row");
is(SspTest::differences($node, 'postgres', 'SELECT * FROM revenue', $query), '0',
	'the view is exact');

# views dropped while their workers publish (30,000 changes, published
# 10,000 a transaction): the workers go quietly
for my $round (1 .. 4)
{
	$node->safe_psql('postgres', qq{
		CREATE VIEW short_lived WITH (ssp.continuous, ssp.output_topic = 'short_lived_$round') AS
		  SELECT order_id % 30000 AS g, count(*) FROM orders GROUP BY 1});
	SspTest::wait_views($node, 'postgres', 'short_lived');
	select(undef, undef, undef, 0.1 * $round);
	$node->safe_psql('postgres', 'DROP VIEW short_lived');
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM ssp.continuous_views'), '3',
	'four views dropped while publishing');
unlike(slurp_file($node->logfile), qr/terminated by signal (?!9:)/, 'and no process crashed (the only signals were the SIGKILLs)');

# messages: every order counted once in the view (each region passes HAVING)
my ($lost, $twice) = split /\|/, $node->safe_psql('postgres',
	'SELECT greatest(62000 - sum(n), 0), greatest(sum(n) - 62000, 0) FROM revenue');
SspTest::report(faults => $kills + 1, produced => 62000,
	applied => $node->safe_psql('postgres', 'SELECT sum(n) FROM revenue'),
	dead_letters => $node->safe_psql('postgres', 'SELECT sum(dead_letters) FROM ssp.views'),
	lost => $lost, twice => $twice);

$node->stop;
done_testing();
