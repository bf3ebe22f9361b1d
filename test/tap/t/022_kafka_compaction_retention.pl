# On Apache Kafka, the broker's own deletions. Log compaction: a view kept
# from a compacted topic (ssp.primary_key) with updates, tombstones written
# by ssp and by kcat, keys deleted and created again, equals the latest row
# per key before the cleaner runs, after it has removed superseded messages
# and tombstones (offsets missing, fewer messages, deleted keys gone from
# the topic), and when created after compaction, reading the log with its
# offset gaps; a gap is no loss (no dead letter).  Retention: messages the
# broker deletes (by time) before a paused view reads them are one row per
# partition in ssp.dead_letters with the exact range, counted, warned about
# once; the view goes on with exactly what it had applied and what the
# topic still holds, and on with what comes next.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $k = SspTest::start_kafka(conf => ['log.cleaner.backoff.ms=500']);
my $node = SspTest::new_node('compaction');

# customers: compacted; no segment rolls (so nothing cleaned) until the test
# sets segment.ms
SspTest::kafka($k, 'topics', '--create', '--topic', 'customers', '--partitions', '2',
	'--config', 'cleanup.policy=compact', '--config', 'min.cleanable.dirty.ratio=0.01',
	'--config', 'delete.retention.ms=100');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$k->{bootstrap}');
	-- what the view reads: JSON values keyed by id
	CREATE FOREIGN TABLE customer_updates (id bigint, name text, segment text)
	  SERVER kafka OPTIONS (topic 'customers', key 'id');
	-- to write: a NULL doc is a null value, a tombstone
	CREATE FOREIGN TABLE customers_w (id bigint, doc text)
	  SERVER kafka OPTIONS (topic 'customers', format 'text', key 'id');
	-- to look at the topic as it is
	CREATE FOREIGN TABLE customers_raw (id bigint, doc text,
	    p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
	  SERVER kafka OPTIONS (topic 'customers', format 'text', key 'id');
	-- everything produced, in order; a NULL name is a tombstone
	CREATE TABLE produced (seq bigserial, id bigint, name text, segment text);
	CREATE VIEW live WITH (ssp.continuous, ssp.primary_key = 'id') AS
	  SELECT id, name, segment FROM customer_updates;
});
my $truth = q{SELECT id, name, segment FROM (SELECT DISTINCT ON (id) id, name, segment
	FROM produced ORDER BY id, seq DESC) l WHERE name IS NOT NULL};

# upsert($where, $name): rows for keys 1..220 matching $where, through ssp
sub upsert
{
	my ($where, $name) = @_;
	$node->safe_psql('postgres', qq{
		CREATE TEMP TABLE r AS SELECT g AS id, '$name' || g AS name, 's' || g % 5 AS segment
		  FROM generate_series(1, 220) g WHERE $where;
		INSERT INTO produced (id, name, segment) SELECT * FROM r ORDER BY id;
		INSERT INTO customers_w SELECT id, json_build_object('name', name, 'segment', segment)::text
		  FROM r ORDER BY id;
	});
}

# delete_ssp($where): tombstones written by ssp (a NULL text value)
sub delete_ssp
{
	my ($where) = @_;
	$node->safe_psql('postgres', qq{
		CREATE TEMP TABLE r AS SELECT g AS id FROM generate_series(1, 220) g WHERE $where;
		INSERT INTO produced (id) SELECT id FROM r ORDER BY id;
		INSERT INTO customers_w SELECT id, NULL FROM r ORDER BY id;
	});
}

# delete_kcat(@ids): tombstones written by kcat (-Z: an empty value is NULL)
sub delete_kcat
{
	my (@ids) = @_;
	my $in = join('', map { "$_:\n" } @ids);
	my ($out, $err) = ('', '');
	IPC::Run::run(['kcat', '-b', $k->{bootstrap}, '-P', '-t', 'customers', '-K:', '-Z'],
		'<', \$in, '>', \$out, '2>', \$err)
	  or die "kcat: $err";
	$node->safe_psql('postgres',
		'INSERT INTO produced (id) SELECT unnest(ARRAY[' . join(',', @ids) . ']::bigint[])');
}

sub produced_count { return $node->safe_psql('postgres', 'SELECT count(*) FROM produced') }

sub view_figures
{
	my ($view) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT processed, dead_letters, coalesce(last_error, ''),
		       (SELECT count(*) FROM ssp.dead_letters d WHERE d.view = '$view'::regclass)
		FROM ssp.views WHERE view = '$view'::regclass});
}

# a second view like it, which the test pauses while the cleaner works
$node->safe_psql('postgres', q{
	CREATE VIEW resumed WITH (ssp.continuous, ssp.primary_key = 'id') AS
	  SELECT id, name, segment FROM customer_updates});
upsert('g <= 200', 'a');
upsert('g <= 200 AND g % 2 = 0', 'b');
delete_ssp('g <= 200 AND g % 7 = 0');
upsert('g <= 200 AND g % 3 = 0', 'd');    # multiples of 21 come back
delete_kcat((grep { $_ % 11 == 0 } 1 .. 200), 500);    # 500 never was
# the second view stops here: the updates after it are the cleaner's to
# remove (no tombstone, which it could miss once the cleaner drops it)
SspTest::wait_views($node, 'postgres', 'resumed');
$node->safe_psql('postgres', "SELECT ssp.pause('resumed')");
is(SspTest::differences($node, 'postgres', 'SELECT * FROM resumed', $truth), '0',
	'the second view equals the latest rows when it is paused');
upsert('g <= 200 AND g % 5 = 0', 'f');
upsert('g <= 200 AND g % 5 = 0', 'F');    # the cleaner drops the previous ones
my $n_before = produced_count();

SspTest::wait_views($node, 'postgres', 'live');
is($node->safe_psql('postgres', 'SELECT count(*) FROM customers_raw'), $n_before,
	"before compaction the topic holds all $n_before messages");
is($node->safe_psql('postgres',
		'SELECT count(*) FROM customers_raw WHERE doc IS NULL'),
	$node->safe_psql('postgres', 'SELECT count(*) FROM produced WHERE name IS NULL'),
	'the tombstones written by ssp and by kcat are null values');
is($node->safe_psql('postgres',
		'SELECT count(*) FROM (SELECT id FROM customers_raw GROUP BY id HAVING count(DISTINCT p) > 1) x'),
	'0', 'ssp and kcat put a key in the same partition');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM live', $truth), '0',
	'before compaction: the view is the latest row per key, deleted keys absent');
is(view_figures('live'), "$n_before|0||0", 'the view applied every message, no dead letter, no error');

# the cleaner at work: segments roll (segment.ms), are cleaned, and the
# tombstones (delete.retention.ms = 100) go in a later pass; an update of
# one key per partition now and then rolls and dirties each partition
SspTest::kafka($k, 'configs', '--alter', '--entity-type', 'topics', '--entity-name', 'customers',
	'--add-config', 'segment.ms=100');
my $ticks = $node->safe_psql('postgres',
	'SELECT string_agg(id::text, \',\') FROM (SELECT DISTINCT ON (p) id FROM customers_raw WHERE doc IS NOT NULL ORDER BY p, o DESC) t');
note "tick keys: $ticks";
my $cleaned = 0;
for my $tick (1 .. 180)
{
	upsert("g IN ($ticks)", "tick$tick-");
	select(undef, undef, undef, 0.5);
	# every partition compacted and no tombstone left
	$cleaned = $node->safe_psql('postgres', q{
		SELECT count(*) = 2 AND bool_and(n < m) AND bool_and(nulls = 0) FROM (
		  SELECT p, count(*) AS n, max(o) - min(o) + 1 AS m, count(*) FILTER (WHERE doc IS NULL) AS nulls
		  FROM customers_raw GROUP BY p) x}) eq 't';
	last if $cleaned;
}
ok($cleaned, 'the cleaner ran: each partition has offsets missing, and no tombstone is left');
my $n_compacted = produced_count();
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM customers_raw'), '<', $n_compacted,
	'a plain scan reads fewer messages than were produced');
is(SspTest::differences($node, 'postgres', 'SELECT DISTINCT id FROM customers_raw', "SELECT id FROM ($truth) t"),
	'0', 'the keys in the topic are the live keys: superseded messages, deleted keys and tombstones are gone');
SspTest::wait_views($node, 'postgres', 'live');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM live', $truth), '0',
	'after compaction: the view that read everything still equals the latest rows');

# the view paused while the cleaner worked goes on over the compacted log
$node->safe_psql('postgres', "SELECT ssp.resume('resumed')");
SspTest::wait_views($node, 'postgres', 'resumed');
my ($processed, $rest) = split /\|/, view_figures('resumed'), 2;
is(SspTest::differences($node, 'postgres', 'SELECT * FROM resumed', $truth), '0',
	'a view paused across compaction equals the latest rows');
cmp_ok($processed, '<', $n_compacted, "it read a compacted log ($processed messages of $n_compacted)");
is($rest, '0||0', 'its offset gaps are no dead letters, and no error');

# more changes on the compacted log
delete_ssp('g <= 200 AND g % 13 = 0');
delete_kcat(grep { $_ % 17 == 0 } 1 .. 200);
upsert('g % 4 = 0', 'g');    # with new keys 201..220
my $n_all = produced_count();
SspTest::wait_views($node, 'postgres', 'live');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM live', $truth), '0',
	'and after more updates and tombstones');
is(view_figures('live'), "$n_all|0||0", 'it applied every message, no dead letter, no error');
SspTest::wait_views($node, 'postgres', 'resumed');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM resumed', $truth), '0',
	'so does the view that was paused');

# a view created on the compacted log
my $scan_before = $node->safe_psql('postgres', 'SELECT count(*) FROM customers_raw');
$node->safe_psql('postgres', q{
	CREATE VIEW late WITH (ssp.continuous, ssp.primary_key = 'id') AS
	  SELECT id, name, segment FROM customer_updates});
SspTest::wait_views($node, 'postgres', 'late');
my $scan_after = $node->safe_psql('postgres', 'SELECT count(*) FROM customers_raw');
($processed, $rest) = split /\|/, view_figures('late'), 2;
is(SspTest::differences($node, 'postgres', 'SELECT * FROM late', $truth), '0',
	'a view created after compaction equals the latest rows');
ok($processed >= $scan_after && $processed <= $scan_before,
	"it read the messages the topic holds ($processed; a scan read $scan_before before, $scan_after after)");
is($rest, '0||0', 'its offset gaps are no dead letters, and no error');

# --- retention ---------------------------------------------------------
# events: partition 0 gets 100 old messages the view applies, then 1000 old
# ones and 200 new ones while it is paused; partition 1 only new ones;
# partition 2 nothing before the pause, 50 old ones during it.  Then a day's
# retention: the broker deletes the old segments.
SspTest::kafka($k, 'topics', '--create', '--topic', 'events', '--partitions', '3',
	'--config', 'segment.ms=100');
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE events (id bigint, ts timestamptz,
	    p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
	  SERVER kafka OPTIONS (topic 'events', timestamp 'ts');
	CREATE TABLE ev_produced (id bigint, p int, ts timestamptz);
	CREATE VIEW ev_rows WITH (ssp.continuous) AS SELECT id, p FROM events;
	CREATE VIEW ev_sums WITH (ssp.continuous) AS SELECT p, count(*) AS n, sum(id) AS total FROM events GROUP BY p;
});

# produce($from, $to, $partition, $ts): ids from..to, stamped ts
sub produce
{
	my ($from, $to, $p, $ts) = @_;
	$node->safe_psql('postgres', qq{
		INSERT INTO ev_produced SELECT g, $p, $ts FROM generate_series($from, $to) g;
		INSERT INTO events (id, ts, p) SELECT id, ts, p FROM ev_produced WHERE id BETWEEN $from AND $to ORDER BY id;
	});
}
my $old = q{timestamptz '2020-01-01' + g * interval '1 second'};
produce(1, 100, 0, $old);
produce(2001, 2100, 1, 'now()');
SspTest::wait_views($node, 'postgres', 'ev_rows', 'ev_sums');
my $offsets = q{SELECT string_agg(format('%s:%s:%s', view, partition, next_offset), ' ' ORDER BY view::text, partition)
	FROM ssp.offsets WHERE topic = 'events'};
my $at = 'ev_rows:0:100 ev_rows:1:100 ev_rows:2:0 ev_sums:0:100 ev_sums:1:100 ev_sums:2:0';
# ssp.wait does not wait for an empty partition: its end, offset 0, is
# stored by the batch that sees it
ok($node->poll_query_until('postgres', $offsets, $at), 'the views read partitions 0 and 1 to offset 100, 2 to 0');
$node->safe_psql('postgres', "SELECT ssp.pause('ev_rows'), ssp.pause('ev_sums')");
ok($node->poll_query_until('postgres', q{
		SELECT count(*) = 2 FROM ssp.views WHERE view IN ('ev_rows'::regclass, 'ev_sums'::regclass)
		  AND status = 'paused' AND worker_pid IS NULL}),
	'the views are paused');
is($node->safe_psql('postgres', $offsets), $at, 'and stay there');
$node->safe_psql('postgres', 'CREATE TABLE applied_before AS SELECT * FROM ev_rows');

# while they are paused: what retention will delete, and what it keeps
produce(101 + 100 * $_, 200 + 100 * $_, 0, $old) for 0 .. 9;    # offsets 100..1099
produce(3001, 3050, 2, $old);                                   # partition 2: 0..49
produce(1101, 1300, 0, 'now()');                                # offsets 1100..1299
produce(2101, 2200, 1, 'now()');
SspTest::kafka($k, 'configs', '--alter', '--entity-type', 'topics', '--entity-name', 'events',
	'--add-config', 'retention.ms=86400000');
ok($node->poll_query_until('postgres', q{
		SELECT string_agg(format('%s:%s-%s', p, lo, hi), ' ' ORDER BY p)
		FROM (SELECT p, min(o) AS lo, max(o) AS hi FROM events GROUP BY p) x},
		'0:1100-1299 1:0-199'),
	'the broker deleted the old segments: partition 0 begins at offset 1100, partition 2 is empty');

$node->safe_psql('postgres', "SELECT ssp.resume('ev_rows'), ssp.resume('ev_sums')");
SspTest::wait_views($node, 'postgres', 'ev_rows', 'ev_sums');
my $expected = q{SELECT id, p FROM ev_produced
	WHERE NOT (p = 0 AND id BETWEEN 101 AND 1100) AND NOT (p = 2 AND id BETWEEN 3001 AND 3050)};
is(SspTest::differences($node, 'postgres', 'SELECT id, p FROM ev_rows',
		'SELECT * FROM (SELECT id, p FROM applied_before UNION SELECT id, p FROM events) e'),
	'0', 'the view has what it applied before and every message the topic still holds');
is(SspTest::differences($node, 'postgres', 'SELECT id, p FROM ev_rows', $expected), '0',
	'that is: everything produced but offsets 100..1099 of partition 0 and 0..49 of partition 2');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM ev_sums',
		"SELECT p, count(*), sum(id) FROM ($expected) e GROUP BY p"),
	'0', 'the aggregate view too');
my $lost_rows = "0|100|messages at offsets 100 to 1099 were deleted by the broker before the view read them\n"
  . "2|0|messages at offsets 0 to 49 were deleted by the broker before the view read them";
for my $v ('ev_rows', 'ev_sums')
{
	is($node->safe_psql('postgres', qq{
			SELECT partition, "offset", error FROM ssp.dead_letters
			WHERE view = '$v'::regclass AND topic = 'events' ORDER BY partition}),
		$lost_rows, "$v: one row per partition in ssp.dead_letters for the deleted range");
	is(view_figures($v), "500|1050||2", "$v: 500 messages applied, 1050 lost and counted, no error");
}

# no error loop: the loss is warned about once, and the views go on
produce(1301, 1400, 0, 'now()');
produce(2201, 2300, 1, 'now()');
produce(3051, 3100, 2, 'now()');
SspTest::wait_views($node, 'postgres', 'ev_rows', 'ev_sums');
is(SspTest::differences($node, 'postgres', 'SELECT id, p FROM ev_rows', $expected), '0',
	'the view goes on with what comes next');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM ev_sums',
		"SELECT p, count(*), sum(id) FROM ($expected) e GROUP BY p"),
	'0', 'the aggregate view too');
for my $v ('ev_rows', 'ev_sums')
{
	is(view_figures($v), "750|1050||2", "$v: 750 applied, still 1050 lost in 2 rows, no error");
	my $log = slurp_file($node->logfile);
	my @warned = ($log =~ /WARNING:  continuous view "$v" lost messages (\d+ to \d+ of partition \d)/g);
	is(join(', ', @warned), '100 to 1099 of partition 0, 0 to 49 of partition 2',
		"$v: one WARNING per partition with a loss");
}

# a view created now replays what the topic holds: nothing lost for it
$node->safe_psql('postgres', 'CREATE VIEW ev_new WITH (ssp.continuous) AS SELECT id, p FROM events');
SspTest::wait_views($node, 'postgres', 'ev_new');
is(SspTest::differences($node, 'postgres', 'SELECT id, p FROM ev_new', 'SELECT id, p FROM events'), '0',
	'a view created after the deletion has every message the topic holds');
is(view_figures('ev_new'), '650|0||0', 'and no dead letter');

my ($lost, $twice) = SspTest::lost_and_twice($node, 'postgres', 'SELECT id, p FROM ev_rows', $expected);
SspTest::report(produced => $node->safe_psql('postgres', 'SELECT count(*) FROM ev_produced'),
	applied => 750, dead_letters => 1050, lost => $lost, twice => $twice, broker => 'apache');

$node->stop;
done_testing();
