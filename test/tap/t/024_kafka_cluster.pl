# Exactly once through broker failures, on a real Apache Kafka cluster of
# three nodes (replication factor 3, min.insync.replicas 2).  A session
# produces orders into a topic of 6 partitions without pause, through ssp's
# INSERT (idempotent producer; ssp.broker_timeout 4 s, so that some
# INSERTs fail with part of their messages delivered, and the publisher of
# the output topic fails and publishes again), while one broker
# after another is killed with SIGKILL, kept down until the leaders of its
# partitions have moved and INSERTs have gone through without it, and
# started again.  The truth is what the topic holds at the end, read by a
# plain scan: every message of an INSERT that returned is there, each id
# once (no duplicate from the producer's retries), none from nowhere.  A
# grouped view, a windowed view and a view publishing its changes to an
# output topic each equal the same query over that scan: nothing lost,
# nothing counted twice, no dead letter, no late event; and on the output
# topic, with the repeats dropped as a consumer drops them, each key's
# changes chain from its insert to the view's row.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $k = SspTest::start_kafka(nodes => 3, partitions => 6);
SspTest::kafka($k, 'topics', '--create', '--topic', 'orders', '--partitions', '6',
	'--replication-factor', '3');
SspTest::kafka($k, 'topics', '--create', '--topic', 'region_changes', '--partitions', '3',
	'--replication-factor', '3');

# a short ssp.broker_timeout: INSERTs and the publisher of the output topic
# fail while a leader is gone, rather than wait for it to move
my $node = SspTest::new_node('cluster', conf => "ssp.broker_timeout = '4s'\n");
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$k->{bootstrap}');
	CREATE FOREIGN TABLE orders (id bigint, region text, amount numeric, ts timestamptz,
	    p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
	  SERVER kafka OPTIONS (topic 'orders', key 'id', timestamp 'ts');
	CREATE VIEW by_bucket WITH (ssp.continuous) AS
	  SELECT id % 64 AS bucket, count(*) AS n, sum(amount) AS total, sum(id) AS ids,
	         min(id) AS lo, max(id) AS hi
	  FROM orders GROUP BY 1;
	-- each partition gets its events in id order, 10 ms apart; one whose
	-- leader is down holds the watermark (it is quiet for less than
	-- ssp.idle_timeout), so no event is late
	CREATE VIEW per_minute WITH (ssp.continuous, ssp.grace = '5 minutes') AS
	  SELECT ssp.tumble(ts, '1 minute') AS minute, count(*) AS n, sum(amount) AS total
	  FROM orders GROUP BY 1;
	CREATE VIEW by_region WITH (ssp.continuous, ssp.output_topic = 'region_changes') AS
	  SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region;

	-- the producer: INSERTs of 1,000 orders until told to stop, each
	-- recorded with its error if it failed; ids are never used twice, so
	-- the topic tells which messages of a failed INSERT went out
	CREATE TABLE control (stop boolean NOT NULL);
	INSERT INTO control VALUES (false);
	CREATE TABLE attempts (first_id bigint, last_id bigint, error text, at timestamptz);
	CREATE PROCEDURE produce(size int) LANGUAGE plpgsql AS \$\$
	DECLARE
	  f bigint := 1;
	  err text;
	BEGIN
	  LOOP
	    EXIT WHEN (SELECT stop FROM control);
	    err := NULL;
	    BEGIN
	      INSERT INTO orders (id, region, amount, ts)
	        SELECT g, 'r' || g % 17, g % 1000, timestamptz '2024-01-01' + g * interval '10 ms'
	        FROM generate_series(f, f + size - 1) g;
	    EXCEPTION WHEN others THEN
	      err := SQLERRM;
	    END;
	    INSERT INTO attempts VALUES (f, f + size - 1, err, clock_timestamp());
	    COMMIT;
	    f := f + size;
	  END LOOP;
	END \$\$;
});

# metadata($topic): { partition => [leader, number of in-sync replicas] }, from kcat
sub metadata
{
	my ($topic) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'kcat', '-b', $k->{bootstrap}, '-L', '-t', $topic, '-m', '5' ],
		'>', \$out, '2>', \$err);
	my %parts;
	while ($out =~ /partition (\d+), leader (-?\d+), replicas: [\d,]+, isrs: ([\d,]*)/g)
	{
		$parts{$1} = [ $2, scalar(split /,/, $3) ];
	}
	return \%parts;
}

# poll($what, $sub): wait up to 3 minutes for $sub to say yes
sub poll
{
	my ($what, $sub) = @_;
	for (1 .. 360)
	{
		return 1 if $sub->();
		select(undef, undef, undef, 0.5);
	}
	diag("timed out waiting until $what");
	return 0;
}

sub all_in_sync
{
	for my $topic ('orders', 'region_changes')
	{
		my $m = metadata($topic);
		my $n = $topic eq 'orders' ? 6 : 3;
		return 0 unless keys %$m == $n && !grep { $_->[1] != 3 } values %$m;
	}
	return 1;
}

sub succeeded
{
	return $node->safe_psql('postgres', 'SELECT count(*) FROM attempts WHERE error IS NULL');
}

my $producer = $node->background_psql('postgres', timeout => 900);
$producer->query_until(qr/producing/,
	"\\echo producing\nCALL produce(1000);\n");
ok(poll('the first orders are produced', sub { succeeded() >= 5 }),
	'the producer runs');

# the faults: each node killed in turn (and the first once more), while
# the producer goes on
my $faults = 0;
for my $victim (1, 2, 3, 1)
{
	my $before = succeeded();
	poll('orders are produced before the next fault', sub { succeeded() >= $before + 5 });
	SspTest::kafka($k, 'kill', $victim);
	$faults++;
	ok(poll("node $victim leads no partition",
			sub {
				my $m = metadata('orders');
				keys %$m == 6 && !grep { $_->[0] == $victim || $_->[0] < 0 } values %$m;
			}),
		"fault $faults: node $victim killed, the leaders of its partitions move to the others");
	my $down = succeeded();
	ok(poll("INSERTs succeed with node $victim down", sub { succeeded() >= $down + 3 }),
		"fault $faults: with one node down, two replicas are in sync and INSERTs succeed");
	SspTest::kafka($k, 'restart', $victim);
	SspTest::kafka($k, 'wait', 3);
	ok(poll("node $victim is back in sync", \&all_in_sync),
		"fault $faults: node $victim restarted, every replica in sync again");
}

# enough produced after the last fault for the views to read past it
my $last = succeeded();
poll('orders are produced after the faults', sub { succeeded() >= $last + 5 });
$node->safe_psql('postgres', 'UPDATE control SET stop = true');
$producer->quit;
is($producer->{stderr}, '', 'the producer ended without error');
my ($tries, $failed) = split /\|/, $node->safe_psql('postgres',
	'SELECT count(*), count(error) FROM attempts');
note "$tries INSERTs of 1,000 orders, $failed failed: "
  . $node->safe_psql('postgres', q{SELECT string_agg(DISTINCT error, '; ') FROM attempts});

# the truth: what the topic holds
$node->safe_psql('postgres', 'CREATE TABLE produced AS SELECT * FROM orders');
my $produced = $node->safe_psql('postgres', 'SELECT count(*) FROM produced');
note "the topic holds $produced orders";
is($node->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM produced'), '0',
	'the topic holds each id at most once: no duplicate from the idempotent producer');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM (
	  SELECT g FROM attempts, generate_series(first_id, last_id) g WHERE error IS NULL
	  EXCEPT SELECT id FROM produced) x}),
	'0', 'every order of an INSERT that returned is in the topic: nothing acknowledged was lost');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM produced
	WHERE id < 1 OR id > (SELECT max(last_id) FROM attempts)}),
	'0', 'and nothing else');
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM (SELECT p, count(*), max(o) FROM produced GROUP BY p) x
	WHERE count <> max + 1}),
	'0', 'each partition holds its offsets without a gap');
is($node->safe_psql('postgres', 'SELECT count(DISTINCT p) FROM produced'), '6',
	'the orders are spread over the 6 partitions');

# the views: each equal to its query over what the topic holds
SspTest::wait_views($node, 'postgres', 'by_bucket', 'per_minute', 'by_region');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM by_bucket', q{
	SELECT id % 64, count(*), sum(amount), sum(id), min(id), max(id) FROM produced GROUP BY 1}),
	'0', 'grouped view: equal to the query over the topic');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM per_minute', q{
	SELECT ssp.tumble(ts, '1 minute'), count(*), sum(amount) FROM produced GROUP BY 1}),
	'0', 'windowed view: equal to the query over the topic');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM by_region', q{
	SELECT region, count(*), sum(amount) FROM produced GROUP BY region}),
	'0', 'view with an output topic: equal to the query over the topic');
is($node->safe_psql('postgres', qq{
	SELECT string_agg(view::text || ' ' || processed, ', ' ORDER BY view::text)
	FROM ssp.views WHERE processed <> $produced}),
	'', 'each view has processed every message of the topic, once');
is($node->safe_psql('postgres', 'SELECT sum(late_events) FROM ssp.views'), '0', 'no late event');
is($node->safe_psql('postgres', 'SELECT count(*) FROM ssp.dead_letters'), '0', 'no dead letter');
is($node->safe_psql('postgres', qq{
	SELECT count(*) FROM ssp.offsets o
	  JOIN (SELECT p, max(o) + 1 AS next FROM produced GROUP BY p) t ON t.p = o.partition
	WHERE o.topic = 'orders' AND o.next_offset <> t.next}),
	'0', 'each view stands at the end of each partition');

# the output topic: the last change per key is the view's row
ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM by_region_outbox'),
	'every change published, and the outbox trimmed');
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE region_changes (region text, n bigint, total numeric, _op text, _seq bigint,
	    _before jsonb, p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
	  SERVER kafka OPTIONS (topic 'region_changes');
	CREATE TABLE changes AS SELECT * FROM region_changes;
	-- what a consumer keeps: a record numbered above the last one seen on its partition
	CREATE TABLE kept AS SELECT * FROM (
	  SELECT c.*, max(_seq) OVER (PARTITION BY p ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS seen
	  FROM changes c) x WHERE seen IS NULL OR _seq > seen;
});
my ($records, $distinct) = split /\|/, $node->safe_psql('postgres',
	'SELECT count(*), count(DISTINCT _seq) FROM changes');
note "output topic: $records records, $distinct changes";
is($node->safe_psql('postgres', 'SELECT count(*) FROM kept'), $distinct,
	'output topic: dropping the records numbered no higher than the last seen keeps one of each change');
SspTest::check_published($node, 'by_region', 'output topic: ');

my $log = slurp_file($node->logfile);
note 'the publisher failed ' . (() = $log =~ /ERROR:  could not produce to topic "region_changes"/g) . ' times';
unlike($log, qr/terminated by signal/, 'no Postgres process crashed');
unlike($log, qr/is past its end|was reported out of range/, 'no view read a partition again from its start');

# lost and twice: per bucket, the orders the view lacks or has beyond the topic
my ($lost, $twice) = split /\|/, $node->safe_psql('postgres', q{
	SELECT coalesce(sum(greatest(coalesce(t.n, 0) - coalesce(v.n, 0), 0)), 0),
	       coalesce(sum(greatest(coalesce(v.n, 0) - coalesce(t.n, 0), 0)), 0)
	FROM by_bucket v FULL JOIN (SELECT id % 64 AS bucket, count(*) AS n FROM produced GROUP BY 1) t
	  ON t.bucket = v.bucket});
SspTest::report(faults => $faults, produced => $produced,
	applied => $node->safe_psql('postgres', 'SELECT sum(n) FROM by_bucket'),
	dead_letters => $node->safe_psql('postgres', 'SELECT count(*) FROM ssp.dead_letters'),
	lost => $lost, twice => $twice, broker => 'apache');

$node->stop;
done_testing();
