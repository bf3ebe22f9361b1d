# On Apache Kafka, topics that change under running views.  A topic deleted
# under a view: ssp.views says so (waiting for broker, the broker's reason),
# Postgres runs on, and the same worker waits without spinning.  Created
# again and written, ssp.reset replays the new topic and the view equals
# it exactly.  Created again empty: a WARNING says each partition is read
# from 0, the offsets stored are those read, and a worker started again
# misses nothing.
# Partitions added to a topic are read from their first message, within
# the metadata refresh interval, without a restart, exactly once.  A 10 MB
# message, with the limits raised (the topic's max.message.bytes, the
# server's librdkafka properties), goes through INSERT, a view and a scan
# exactly; one over the topic's limit is refused at INSERT with the
# broker's reason and a hint, as is one over the server's
# message.max.bytes, and the session's producer goes on.
use strict;
use warnings;
use POSIX ();
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $k = SspTest::start_kafka(partitions => 4);
my $node = SspTest::new_node('topics');
my $b = $k->{bootstrap};

sub sql { return $node->safe_psql('postgres', $_[0]); }

# view_state($view): status|last_error|processed|worker_pid of the view
sub view_state
{
	my ($v) = @_;
	return sql("SELECT status, last_error, processed, worker_pid FROM ssp.views WHERE view = '$v'::regclass");
}

# cpu_seconds($pid): user and system time of a process (all its threads)
sub cpu_seconds
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/stat") or return -1;
	my @f = split ' ', (<$fh> =~ s/.*\) //r);
	return ($f[11] + $f[12]) / POSIX::sysconf(POSIX::_SC_CLK_TCK());
}

# delete_topic($t), create_topic($t, @args): kafka-topics; a topic marked
# for deletion cannot be created again until the broker has deleted it
sub delete_topic
{
	SspTest::kafka($k, 'topics', '--delete', '--topic', $_[0]);
}

sub create_topic
{
	my ($t, @args) = @_;
	for (1 .. 60)
	{
		return if eval { SspTest::kafka($k, 'topics', '--create', '--topic', $t, @args); 1 };
		note "creating $t: $@";
		sleep 1;
	}
	die "topic $t could not be created again";
}

# wait_log($regex, $from): the server log, from byte $from, matches
sub wait_log
{
	my ($re, $from) = @_;
	for (1 .. 1800)
	{
		return 1 if substr(slurp_file($node->logfile), $from) =~ $re;
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

# restart_worker($view): pause the view until its worker is gone, resume it
sub restart_worker
{
	my ($v) = @_;
	sql("SELECT ssp.pause('$v')");
	$node->poll_query_until('postgres',
		"SELECT status = 'paused' AND worker_pid IS NULL FROM ssp.views WHERE view = '$v'::regclass")
	  or die "the worker of $v did not stop";
	sql("SELECT ssp.resume('$v')");
}

# ------------------------------------------------------------------
# 1. A topic deleted under a running view, and created again
# ------------------------------------------------------------------
create_topic('events', '--partitions', '2');
sql(qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$b');
	CREATE FOREIGN TABLE events (id int, part int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'events');
	-- what was written, by generation of the topic
	CREATE TABLE produced (gen int, id int, part int);
	CREATE VIEW ev WITH (ssp.continuous) AS SELECT part, count(*) AS n, sum(id) AS s FROM events GROUP BY part;
});

# write_events($gen, $n0, $n1): $n0 messages to partition 0 and $n1 to partition 1
sub write_events
{
	my ($gen, $n0, $n1) = @_;
	my $base = $gen * 100000;
	sql(qq{
		INSERT INTO produced SELECT $gen, $base + g, CASE WHEN g <= $n0 THEN 0 ELSE 1 END
		  FROM generate_series(1, $n0 + $n1) g;
		INSERT INTO events (id, part) SELECT id, part FROM produced WHERE gen = $gen ORDER BY id;
	});
}

# the view against the messages of the generations given
sub ev_differences
{
	my ($gens) = @_;
	return SspTest::differences($node, 'postgres', 'SELECT part, n, s FROM ev',
		"SELECT part, count(*), sum(id) FROM produced WHERE gen IN ($gens) GROUP BY part");
}

sub offsets
{
	return sql(q{SELECT string_agg(partition || ':' || next_offset, ' ' ORDER BY partition)
		FROM ssp.offsets WHERE view = 'ev'::regclass});
}

write_events(1, 600, 400);
SspTest::wait_views($node, 'postgres', 'ev');
is(ev_differences('1'), '0', 'the view holds the topic: 600 messages in partition 0, 400 in 1');

# deleted under the running view
my $pid = (split /\|/, view_state('ev'))[3];
delete_topic('events');
ok($node->poll_query_until('postgres',
		"SELECT status = 'waiting for broker' FROM ssp.views WHERE view = 'ev'::regclass"),
	'topic deleted: the view is waiting for broker');
like((split /\|/, view_state('ev'))[1],
	qr/^events \[[01]\]: topic does not exist \(Broker: Unknown topic or partition\)$/,
	'last_error gives the broker\'s reason: the topic does not exist');
my $cpu = cpu_seconds($pid);
sleep 10;
my $spent = cpu_seconds($pid) - $cpu;
cmp_ok($spent, '<', 2, "the waiting worker does not spin ($spent s of CPU in 10 s)");
my @st = split /\|/, view_state('ev');
is("$st[0]|$st[2]|$st[3]", "waiting for broker|1000|$pid",
	'the same worker waits (no restarts), nothing more applied');
is(ev_differences('1'), '0', 'the view keeps what it had');
is(sql('SELECT 1'), '1', 'Postgres runs on');

# created again and written: without topic ids (librdkafka 2.0.2 has
# none) nothing tells the new topic from the old one where it holds more
# messages than the view had read, so the documented way on is ssp.reset
# once the topic is back (doc/operating.md, Topics that change)
my @gens = (1);
create_topic('events', '--partitions', '2');
write_events(2, 200, 700);
push @gens, 2;

# the documented way on: reset, and the view replays the new topic
my $last = $gens[-1];
my $ends = sql("SELECT string_agg(part || ':' || count, ' ' ORDER BY part)
	FROM (SELECT part, count(*) FROM produced WHERE gen = $last GROUP BY part) c");
my $n_last = sql("SELECT count(*) FROM produced WHERE gen = $last");
sql("SELECT ssp.reset('ev')");
SspTest::wait_views($node, 'postgres', 'ev');
is(ev_differences($last), '0', 'after ssp.reset the view equals the new topic exactly');
is(view_state('ev') =~ s/\|\d+$//r, "running||$n_last", "running, no error, $n_last messages applied");
is(offsets(), $ends, 'its offsets are the new topic\'s ends');

# deleted again, and created empty: the worker reads it from its start
my $log_from = -s $node->logfile;
delete_topic('events');
ok($node->poll_query_until('postgres',
		"SELECT status = 'waiting for broker' FROM ssp.views WHERE view = 'ev'::regclass"),
	'deleted again: waiting for broker');
create_topic('events', '--partitions', '2');
for my $p (map { [split /:/] } split / /, $ends)
{
	ok(wait_log(qr/WARNING:  continuous view "ev": offset $p->[1] of partition $p->[0] of topic "events" is past its end \(0\); reading from 0\n.*DETAIL:  The topic may have been deleted and created again\./,
			$log_from),
		"created again empty: a WARNING says partition $p->[0] is read from 0");
}
write_events(5, 150, 250);
ok($node->poll_query_until('postgres',
		"SELECT processed = $n_last + 400 FROM ssp.views WHERE view = 'ev'::regclass"),
	'the new messages are applied');
is(ev_differences("$last, 5"), '0', 'the view holds the new topic on top of what it had');
is(offsets(), '0:150 1:250', 'the offsets stored are those read in the new topic');

# a worker started again goes on from there, missing nothing
restart_worker('ev');
write_events(6, 100, 100);
SspTest::wait_views($node, 'postgres', 'ev');
is(ev_differences("$last, 5, 6"), '0', 'after a pause and resume, the next messages are all applied')
  or diag('view: ' . sql("SELECT string_agg(part || ':' || n, ' ' ORDER BY part) FROM ev")
	  . '; offsets: ' . offsets() . ' (topic: 250 in partition 0, 350 in partition 1)');
sql("SELECT ssp.reset('ev')");
SspTest::wait_views($node, 'postgres', 'ev');
is(ev_differences('5, 6'), '0', 'and ssp.reset replays it exactly');
unlike(slurp_file($node->logfile), qr/terminated by signal|was terminated/, 'no process of Postgres crashed');

# ------------------------------------------------------------------
# 2. Partitions added to a topic under a running view
# ------------------------------------------------------------------
create_topic('grow', '--partitions', '2');
sql(qq{
	CREATE SERVER kmeta FOREIGN DATA WRAPPER ssp_kafka
	  OPTIONS (brokers '$b', "topic.metadata.refresh.interval.ms" '2000');
	CREATE FOREIGN TABLE grow (id int, part int OPTIONS (meta 'partition')) SERVER kmeta OPTIONS (topic 'grow');
	CREATE VIEW gr WITH (ssp.continuous) AS SELECT part, count(*) AS n, sum(id) AS s FROM grow GROUP BY part;
	INSERT INTO grow (id, part) SELECT g, g % 2 FROM generate_series(1, 1000) g;
});
my $gr_truth = 'SELECT part, count(*), sum(id) FROM grow GROUP BY part';
SspTest::wait_views($node, 'postgres', 'gr');
is(SspTest::differences($node, 'postgres', 'SELECT part, n, s FROM gr', $gr_truth), '0',
	'two partitions: the view holds the topic');
SspTest::kafka($k, 'topics', '--alter', '--topic', 'grow', '--partitions', '4');
sql('INSERT INTO grow (id, part) SELECT g, g % 4 FROM generate_series(1001, 2000) g');
is(sql("SELECT count(*) FROM grow WHERE part >= 2"), '500', '500 messages written to the two new partitions');
# the metadata is refreshed every 2 s: a generous minute
is(sql("SELECT ssp.wait('gr', '60 s')"), 't', 'partitions added: the view reads them without a restart');
is(SspTest::differences($node, 'postgres', 'SELECT part, n, s FROM gr', $gr_truth), '0',
	'the view equals the topic over its four partitions')
  or diag('view: ' . sql("SELECT string_agg(part || ':' || n, ' ' ORDER BY part) FROM gr"));
is(view_state('gr') =~ s/\|\d+$//r, 'running||2000', 'running, every message once');
restart_worker('gr');
sql('INSERT INTO grow (id, part) SELECT g, g % 4 FROM generate_series(2001, 2400) g');
SspTest::wait_views($node, 'postgres', 'gr');
is(SspTest::differences($node, 'postgres', 'SELECT part, n, s FROM gr', $gr_truth), '0',
	'after a pause and resume, exactly once over the four partitions');
is(sql(q{SELECT string_agg(partition || ':' || next_offset, ' ' ORDER BY partition)
		FROM ssp.offsets WHERE view = 'gr'::regclass}), '0:850 1:850 2:350 3:350',
	'its offsets are the four partitions\' ends');

# ------------------------------------------------------------------
# 3. A 10 MB message, with the limits raised
# ------------------------------------------------------------------
create_topic('big', '--partitions', '1', '--config', 'max.message.bytes=16777216');
create_topic('small', '--partitions', '1', '--config', 'max.message.bytes=1048576');
sql(qq{
	CREATE SERVER kbig FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$b',
	  "message.max.bytes" '16777216', "fetch.max.bytes" '33554432',
	  "max.partition.fetch.bytes" '16777216', "receive.message.max.bytes" '40000000');
	CREATE FOREIGN TABLE big (id int, payload text) SERVER kbig OPTIONS (topic 'big');
	CREATE FOREIGN TABLE small (id int, payload text) SERVER kbig OPTIONS (topic 'small');
	-- the same topic through the server without the raised limits
	CREATE FOREIGN TABLE big_default (id int, payload text) SERVER kafka OPTIONS (topic 'big');
	CREATE VIEW bigv WITH (ssp.continuous) AS
	  SELECT count(*) AS n, sum(length(payload)) AS bytes, max(md5(payload)) AS digest FROM big;
	CREATE VIEW smallv WITH (ssp.continuous) AS SELECT count(*) AS n, sum(id) AS ids FROM small;
	-- 10 MiB of hex digits
	CREATE TABLE ten (payload text);
	INSERT INTO ten SELECT string_agg(md5(g::text), '') FROM generate_series(1, 327680) g;
});
my $digest = sql('SELECT md5(payload) FROM ten');
sql('INSERT INTO big SELECT 1, payload FROM ten');
SspTest::wait_views($node, 'postgres', 'bigv');
is(sql('SELECT n, bytes, digest FROM bigv'), "1|10485760|$digest", 'a 10 MB message: the view has it exactly');
is(view_state('bigv') =~ s/\|\d+$//r, 'running||1', 'bigv: running, no error, one message applied');
is(sql('SELECT id, length(payload), md5(payload) FROM big'), "1|10485760|$digest", 'a scan reads it exactly');

# ------------------------------------------------------------------
# 4. Messages over a limit are refused at INSERT, saying which
# ------------------------------------------------------------------
my $hint = "HINT:  The message is larger than the topic's max.message.bytes, or than the server's message.max.bytes property.";
my ($out, $err) = ('', '');
$node->psql('postgres', q{
	INSERT INTO small SELECT 1, repeat('y', 2000000);
	INSERT INTO small SELECT 2, 'fits';
	INSERT INTO big_default SELECT 3, payload FROM ten;
	INSERT INTO small SELECT 4, repeat('y', 1000000);
}, stdout => \$out, stderr => \$err, on_error_stop => 0);
note $err;
my @errors = map { s/\n+$//r } split /(?=psql:<stdin>:\d+: ERROR)/, $err;
is(scalar(@errors), 2, 'two INSERTs of four refused');
is($errors[0], qq{psql:<stdin>:2: ERROR:  could not produce to topic "small"
DETAIL:  The broker refused 1 message: Broker: Message size too large
$hint}, '2 MB over the topic\'s 1 MiB max.message.bytes: refused by the broker, with its reason and the hint');
like($errors[1] // '', qr/^psql:<stdin>:4: ERROR:  could not produce to topic "big"\nDETAIL:  .*Message size too large\n\Q$hint\E$/,
	'10 MB over the server\'s message.max.bytes (librdkafka\'s default, 1,000,000): refused, with the hint');
SspTest::wait_views($node, 'postgres', 'smallv', 'bigv');
is(sql('SELECT n, ids FROM smallv'), '2|6', 'the same session\'s producer went on: the two that fit are in the view');
is(sql('SELECT string_agg(id::text, \',\' ORDER BY id) FROM small'), '2,4', 'and the topic holds only them');
is(sql('SELECT n, bytes FROM bigv'), '1|10485760', 'nothing of the refused 10 MB in big');

# a view's change too large for its output topic (max.message.bytes) is
# never sent: the view fails, naming the topic's limit, and publishes it
# once the topic takes it; no change after it reaches the topic first (a
# new producer's first batch refused, the broker appended the next, and a
# consumer that skips the numbers it has passed then dropped the refused
# change; the view retries twice before the limit is raised, each time
# with a new producer, as that took)
create_topic('gapless_in', '--partitions', '1');
create_topic('gapless_out', '--partitions', '1', '--config', 'max.message.bytes=1048576');
sql(q{
	CREATE FOREIGN TABLE gapless_in (g text, s text) SERVER kbig OPTIONS (topic 'gapless_in');
	CREATE VIEW gapless WITH (ssp.continuous, ssp.output_topic = 'gapless_out') AS
	  SELECT g, count(*) AS n, max(s) AS s FROM gapless_in GROUP BY g;
	INSERT INTO gapless_in VALUES ('big', repeat('a', 600000));
});
SspTest::wait_views($node, 'postgres', 'gapless');
sql(q{SELECT ssp.pause('gapless')});
# one batch: the big group's change (its new and old row: 1.2 MB) among 300 small ones
sql(q{INSERT INTO gapless_in SELECT 's' || g, 'x' FROM generate_series(1, 150) g
	UNION ALL SELECT 'big', repeat('b', 600000)
	UNION ALL SELECT 's' || g, 'x' FROM generate_series(151, 300) g});
$log_from = -s $node->logfile;
sql(q{SELECT ssp.resume('gapless')});
ok($node->poll_query_until('postgres',
	q{SELECT status = 'failed' AND last_error ~ 'gapless_out' FROM ssp.views WHERE view = 'gapless'::regclass}),
	'the view whose change its output topic refuses fails, naming the topic')
  or diag view_state('gapless');
like(sql(q{SELECT last_error FROM ssp.views WHERE view = 'gapless'::regclass}),
	qr/The change is 1200\d+ bytes .* more than the topic's max\.message\.bytes allows: 1048576 bytes/,
	'and saying the change\'s size and the topic\'s limit');
ok(wait_log(qr/(continuous view "gapless" failed.*){3}/s, $log_from),
	'the view tried again, in workers of its own');
SspTest::kafka($k, 'configs', '--alter', '--entity-type', 'topics', '--entity-name', 'gapless_out',
	'--add-config', 'max.message.bytes=4194304');
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM gapless_outbox}, 't'),
	'once the topic takes it, every change is published')
  or diag view_state('gapless');
sql(q{CREATE FOREIGN TABLE gapless_topic (g text, n bigint, _seq bigint, _op text, o bigint OPTIONS (meta 'offset'))
	SERVER kbig OPTIONS (topic 'gapless_out')});
is(sql(q{WITH t AS (SELECT *, max(_seq) OVER (ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS seen
		FROM gapless_topic),
	  kept AS (SELECT * FROM t WHERE seen IS NULL OR _seq > seen),
	  last AS (SELECT DISTINCT ON (g) g, n, _op FROM kept ORDER BY g, _seq DESC)
	SELECT count(*) FROM last l FULL JOIN gapless v USING (g)
	WHERE l.n IS DISTINCT FROM v.n OR l._op = 'delete'}), '0',
	'a consumer that skips the numbers it has passed ends with the view\'s rows (the big group\'s update included)');

# a topic whose max.message.bytes is below the producer's batches (2,000
# bytes: librdkafka's batch.size is 1,000,000): the changes, each of which
# fits, are published in groups that fit in one batch (every batch was
# refused, and the view stopped for good)
create_topic('narrow_in', '--partitions', '1');
create_topic('narrow_out', '--partitions', '2', '--config', 'max.message.bytes=2000');
sql(q{
	CREATE FOREIGN TABLE narrow_in (g text, s text) SERVER kbig OPTIONS (topic 'narrow_in');
	CREATE VIEW narrow WITH (ssp.continuous, ssp.output_topic = 'narrow_out') AS
	  SELECT g, count(*) AS n, max(s) AS s FROM narrow_in GROUP BY g;
	INSERT INTO narrow_in SELECT 's' || g, repeat('x', 100) FROM generate_series(1, 3000) g;
});
SspTest::wait_views($node, 'postgres', 'narrow');
ok($node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM narrow_outbox}, 't'),
	'a topic that takes 2,000 bytes a batch gets every change of the view')
  or diag view_state('narrow');
sql(q{CREATE FOREIGN TABLE narrow_topic (g text, n bigint) SERVER kbig OPTIONS (topic 'narrow_out')});
is(sql(q{SELECT count(*) || ' ' || count(DISTINCT g) FROM narrow_topic}), '3000 3000',
	'each change once');

# changes of some 640 kB each, 100 of them (64 MB, little of it
# compressible): published in rounds of about 32 MB, each round taking
# the next without a batch in between (a round held all 10,000 changes it
# may take in the worker's memory, twice)
create_topic('wide_in', '--partitions', '1');
create_topic('wide_out', '--partitions', '1', '--config', 'max.message.bytes=4194304');
sql(q{
	CREATE FOREIGN TABLE wide_in (g text, s text) SERVER kbig OPTIONS (topic 'wide_in');
	CREATE VIEW wide WITH (ssp.continuous, ssp.output_topic = 'wide_out') AS
	  SELECT g, count(*) AS n, max(s) AS s FROM wide_in GROUP BY g;
	INSERT INTO wide_in SELECT 'w' || g,
	  (SELECT string_agg(md5(g::text || '.' || i::text), '') FROM generate_series(1, 20000) i)
	  FROM generate_series(1, 100) g;
});
SspTest::wait_views($node, 'postgres', 'wide');
ok($node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM wide_outbox}, 't'),
	'64 MB of changes are published in rounds, without a batch between them')
  or diag view_state('wide');
sql(q{CREATE FOREIGN TABLE wide_topic (g text, n bigint, s text) SERVER kbig OPTIONS (topic 'wide_out')});
is(sql(q{SELECT count(*) || ' ' || count(DISTINCT g) || ' ' || min(length(s)) FROM wide_topic}), '100 100 640000',
	'each change once, whole');

# a scan's lower bound on the message timestamp, through the broker's time
# index: later than every message, it reads nothing (it read the whole
# topic, the broker's "none that late" taken for "does not say"); between
# messages, it reads from the first one at or after it
create_topic('timed', '--partitions', '4');
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE timed (id int, kts timestamptz OPTIONS (meta 'timestamp'), part int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'timed');
	INSERT INTO timed SELECT g, timestamptz '2024-01-01 00:00+00' + g * interval '1 minute', g % 4
	  FROM generate_series(1, 400) g});
my $read = sub {
	my ($where) = @_;
	my $plan = sql("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM timed WHERE $where");
	return $plan =~ /Kafka Messages Read: (\d+)/ ? $1 : "none in: $plan";
};
is($read->("kts >= now()"), '0', 'a scan bounded after every message reads none of them');
is($read->("kts >= '2024-01-01 05:00+00'"), '101', 'one bounded between messages reads from the first at or after it');
is(sql("SELECT count(*) FROM timed WHERE kts >= '2024-01-01 05:00+00'"), '101', 'and returns them');

my ($lost, $twice) = SspTest::lost_and_twice($node, 'postgres', 'SELECT part, n, s FROM gr', $gr_truth);
my ($lost2, $twice2) = SspTest::lost_and_twice($node, 'postgres', 'SELECT part, n, s FROM ev',
	'SELECT part, count(*), sum(id) FROM produced WHERE gen IN (5, 6) GROUP BY part');
# at the end: the re-created events (600), grow (2,400), big (1), small (2),
# gapless_in (302)
SspTest::report(faults => 4, produced => 600 + 2400 + 1 + 2 + 302,
	applied => sql('SELECT sum(processed) FROM ssp.views'), lost => $lost + $lost2, twice => $twice + $twice2,
	broker => 'apache');

$node->stop;
done_testing();
