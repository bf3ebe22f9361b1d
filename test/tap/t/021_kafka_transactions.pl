# Kafka transactions, on a real Apache Kafka (one node, a topic of three
# partitions): views and scans read committed messages only, exactly once,
# and the offsets that commit and abort markers take never stall anything.
#
# A transactional producer (test/kafka/TxProducer) commits and aborts
# transactions while three continuous views run: a count and sum by fate, an
# append-only view of every message, and one-second tumbling windows on the
# Kafka timestamp (ssp.idle_timeout 2 s).  Then:
#  - each view equals the committed messages exactly (no aborted message,
#    none twice), and so does a plain scan, although aborted messages are in
#    the log (a read_uncommitted kcat sees them);
#  - the topic ends in commit markers, past each partition's last message
#    (one offset, or two where two transactions ended): ssp.wait returns
#    true, every view's offsets reach the end of each partition (its high
#    watermark), ssp.views.lag reaches 0 and progress 100, and the windowed
#    view's watermark moves to the latest event time;
#  - a transaction left open (slow:1:SECONDS, one message in one partition
#    X), while a second producer commits newer messages after it: the views
#    and a scan show neither the open message nor the committed ones behind
#    it in X (the last stable offset holds them), but do show those in the
#    other partitions; ssp.wait returns true at once, because the end it
#    waits for is the last stable offset (librdkafka's ListOffsets with
#    isolation.level read_committed), while ssp.views.lag counts every offset
#    past it up to the high watermark (what the worker's fetches report); the
#    windowed view's watermark stays before the open message's window, so it
#    is not late when it commits; after the commit each of these messages is
#    in the views exactly once;
#  - ssp.reset replays the whole topic, markers, aborted transactions and
#    all, and every view ends equal again.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $k = SspTest::start_kafka(nodes => 1, partitions => 3);
my $b = $k->{bootstrap};
SspTest::kafka($k, 'topics', '--create', '--topic', 'tx', '--partitions', '3', '--replication-factor', '1');

my $node = SspTest::new_node('transactions');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$b');
	CREATE FOREIGN TABLE s (id bigint, tx int, fate text,
	    ts timestamptz OPTIONS (meta 'timestamp'),
	    p int OPTIONS (meta 'partition'), off bigint OPTIONS (meta 'offset'))
	  SERVER kafka OPTIONS (topic 'tx', format 'json');
	CREATE VIEW by_fate WITH (ssp.continuous) AS
	  SELECT fate, count(*) AS n, sum(id) AS ids FROM s GROUP BY fate;
	CREATE VIEW msgs WITH (ssp.continuous) AS
	  SELECT id, tx, fate, p, off, ts FROM s;
	CREATE VIEW per_second WITH (ssp.continuous, ssp.idle_timeout = '2 seconds') AS
	  SELECT ssp.tumble(ts, '1 second') AS w, count(*) AS n, sum(id) AS ids FROM s GROUP BY w;
	-- the committed messages, from what TxProducer was told to do
	CREATE TABLE truth (id bigint, tx int, fate text);
});
my @views = ('by_fate', 'msgs', 'per_second');

# txproducer(steps...): one run of TxProducer; returns its summary line
sub txproducer
{
	my $out = SspTest::kafka($k, 'run', 'TxProducer', $b, 'tx', @_);
	chomp $out;
	return $out;
}

# raw_log(): every record of the log with data, aborted ones included
# (kcat, read_uncommitted): [partition, offset, timestamp ms, value]
sub raw_log
{
	my ($out, $err) = ('', '');
	IPC::Run::run(['kcat', '-b', $b, '-X', 'isolation.level=read_uncommitted', '-C', '-t', 'tx',
			'-o', 'beginning', '-e', '-q', '-f', '%p %o %T %s\n'], '>', \$out, '2>', \$err)
	  or die "kcat failed: $err";
	return map { [split / /, $_, 4] } split /\n/, $out;
}

# high_watermarks(): partition => the offset after its last record (markers
# included), as Kafka's GetOffsetShell says (read_uncommitted)
sub high_watermarks
{
	my %h;
	for (split /\n/, SspTest::kafka($k, 'run', 'org.apache.kafka.tools.GetOffsetShell',
			'--bootstrap-server', $b, '--topic', 'tx'))
	{
		$h{$1} = $2 if /^tx:(\d+):(\d+)$/;
	}
	die 'GetOffsetShell gave ' . scalar(keys %h) . ' partitions' unless keys %h == 3;
	return %h;
}

sub sql { return $node->safe_psql('postgres', $_[0]) }

sub view_row
{
	my ($view, $cols) = @_;
	return sql("SELECT $cols FROM ssp.views WHERE view = '$view'::regclass");
}

# the checks that hold whenever the topic ends in commit markers: count and
# sum of the committed ids, and per partition how far past its last message
# its end is (the markers after it)
sub check_all
{
	my ($what, $count, $sum, $gaps) = @_;
	for my $v (@views)
	{
		is(sql("SELECT ssp.wait('$v', '180 s')"), 't', "$what: ssp.wait('$v') returns true");
	}
	is(sql('SELECT fate, n, ids FROM by_fate'), "commit|$count|$sum",
		"$what: by_fate shows the committed messages only");
	is(SspTest::differences($node, 'postgres', 'SELECT fate, n, ids FROM by_fate',
			'SELECT fate, count(*), sum(id) FROM truth GROUP BY fate'),
		'0', "$what: by_fate equals the committed messages");
	is(SspTest::differences($node, 'postgres', 'SELECT id, tx, fate FROM msgs', 'SELECT * FROM truth'),
		'0', "$what: msgs holds each committed message once, and nothing else");
	is(sql('SELECT count(*) || \'|\' || sum(id) FROM s'), "$count|$sum",
		"$what: a scan counts the committed messages only");
	is(SspTest::differences($node, 'postgres', 'SELECT id, tx, fate FROM s', 'SELECT * FROM truth'),
		'0', "$what: a scan returns each committed message once, and nothing else");
	is(SspTest::differences($node, 'postgres', 'SELECT id, tx, fate, p, off, ts FROM msgs',
			'SELECT id, tx, fate, p, off, ts FROM s'),
		'0', "$what: msgs has each message's partition, offset and timestamp as the scan");
	is(SspTest::differences($node, 'postgres', 'SELECT w, n, ids FROM per_second',
			"SELECT ssp.tumble(ts, '1 second'), count(*), sum(id) FROM s GROUP BY 1"),
		'0', "$what: per_second equals the windows of the committed messages");
	is(view_row('per_second', 'late_events'), '0', "$what: no event late");

	# every partition ends in a commit marker, one past its last message;
	# each view's offsets are at the end, past the marker
	my %high = high_watermarks();
	my %last = map { split /\|/ } split /\n/, sql('SELECT p, max(off) FROM s GROUP BY p');
	is(join(',', map { $high{$_} - $last{$_} - 1 } 0 .. 2), $gaps,
		"$what: the partitions end in markers after their last messages ($gaps)");
	my $ends = join(',', map { "$_:$high{$_}" } 0 .. 2);
	for my $v (@views)
	{
		is(sql("SELECT string_agg(partition || ':' || next_offset, ',' ORDER BY partition)
		      FROM ssp.offsets WHERE view = '$v'::regclass"),
			$ends, "$what: $v has consumed every partition to its end, markers included");
		ok($node->poll_query_until('postgres',
				"SELECT lag = 0 AND progress = 100 FROM ssp.views WHERE view = '$v'::regclass"),
			"$what: $v shows lag 0 and progress 100")
		  or diag(view_row($v, '*'));
	}
	ok($node->poll_query_until('postgres',
			"SELECT watermark = (SELECT max(ts) FROM s) FROM ssp.views WHERE view = 'per_second'::regclass"),
		"$what: per_second's watermark moves to the latest event time")
	  or diag(view_row('per_second', 'watermark') . ' vs ' . sql('SELECT max(ts) FROM s'));
}

# 1. committed and aborted transactions while the views run
# (an aborted transaction's records reach the log only if the producer sent
# them before it aborted: large ones fill batches, which it sends at once)
is(txproducer('commit:200', 'abort:2000', 'commit:150', 'abort:2000', 'commit:100'),
	'committed 450 aborted 4000', 'TxProducer committed 450 messages and aborted 4000');
sql(q{INSERT INTO truth SELECT g, CASE WHEN g <= 200 THEN 1 WHEN g <= 2350 THEN 3 ELSE 5 END, 'commit'
     FROM generate_series(1, 4450) g WHERE g <= 200 OR g BETWEEN 2201 AND 2350 OR g > 4350});
my @raw = raw_log();
my $aborted_in_log = grep { $_->[3] =~ /"fate": "abort"/ } @raw;
ok($aborted_in_log > 0, "aborted messages are in the log ($aborted_in_log of them, read uncommitted)");
check_all('committed and aborted', 450, 801475, '1,1,1');

# 2. a transaction left open: one message (id 5000) in one partition X, and
# a second producer's newer messages (ids 4501 to 4530) committed behind it
my $seconds = 60;
my ($aout, $aerr) = ('', '');
my $slow = IPC::Run::start(["$ENV{SSP_SRC}/test/kafka/kafka_ctl", 'run', $k->{dir}, 'TxProducer', $b, 'tx',
		'abort:4999', "slow:1:$seconds"], '>', \$aout, '2>', \$aerr);
my $open;
for (1 .. 600)
{
	($open) = grep { $_->[3] =~ /"id": 5000,/ } raw_log();
	last if $open;
	select(undef, undef, undef, 0.2);
}
die "the open transaction's message never reached the log: $aerr" unless $open;
my ($x, $off_open, $ts_open) = @$open;
note "open transaction: id 5000 at partition $x, offset $off_open";
# the second producer's messages at least 2 s later than id 5000: past the end
# of its one-second window, so a watermark that went past the open
# transaction would make it late
sleep 2;
is(txproducer('abort:4500', 'commit:30'), 'committed 30 aborted 4500',
	'a second producer committed 30 messages (ids 4501 to 4530) while the transaction is open');
my @behind = grep { $_->[0] == $x && $_->[1] > $off_open && $_->[3] =~ /"fate": "commit"/ } raw_log();
ok(@behind > 0, scalar(@behind) . " of them are behind the open transaction in partition $x");
my %high_open = high_watermarks();

# the views go on in the other partitions, not past the open transaction
for my $v (@views)
{
	is(sql("SELECT ssp.wait('$v', '5 s')"), 't',
		"open transaction: ssp.wait('$v') returns true (it waits for the last stable offset)");
}
is(sql("SELECT string_agg(next_offset::text, ',') FROM ssp.offsets WHERE view = 'msgs'::regclass AND partition = $x"),
	$off_open, 'open transaction: msgs stopped at the open transaction (the last stable offset)');
my $visible = "SELECT id, tx, fate FROM truth WHERE id <= 4450 OR (id BETWEEN 4501 AND 4530 AND id NOT IN ("
  . join(',', map { $_->[3] =~ /"id": (\d+)/ } @behind) . '))';
$node->safe_psql('postgres', "INSERT INTO truth VALUES (5000, 2, 'commit');
	INSERT INTO truth SELECT g, 2, 'commit' FROM generate_series(4501, 4530) g");
# long enough for a worker that read uncommitted messages to apply them,
# and for the quiet partitions to pass ssp.idle_timeout
sleep 4;
is(SspTest::differences($node, 'postgres', 'SELECT id, tx, fate FROM msgs', $visible),
	'0', 'open transaction: msgs has the committed messages up to the last stable offsets, no more');
is(SspTest::differences($node, 'postgres', 'SELECT fate, n, ids FROM by_fate',
		"SELECT fate, count(*), sum(id) FROM ($visible) v GROUP BY fate"),
	'0', 'open transaction: by_fate counts the same');
is(SspTest::differences($node, 'postgres', 'SELECT id, tx, fate FROM s', $visible),
	'0', 'open transaction: a scan reads the same');
is(sql("SELECT count(*) FROM s WHERE id = 5000 OR p = $x AND off > $off_open"), '0',
	'open transaction: a scan shows nothing at or past the open transaction in its partition');
ok($node->poll_query_until('postgres',
		"SELECT lag = $high_open{$x} - $off_open FROM ssp.views WHERE view = 'msgs'::regclass"),
	'open transaction: ssp.views.lag counts the offsets from the last stable offset to the high watermark')
  or diag(view_row('msgs', 'lag, progress') . " high watermarks @{[ %high_open ]}");
my $window_end = "ssp.tumble(to_timestamp($ts_open / 1000.0), '1 second') + interval '1 second'";
is(view_row('per_second', "watermark < $window_end"), 't',
	"open transaction: per_second's watermark stays before the open message's window ends")
  or diag(view_row('per_second', "watermark, $window_end"));
$slow->pump_nb;
ok($slow->pumpable, "the transaction was still open during these checks (else raise \$seconds, $seconds)");

# the commit
$slow->finish;
is($aout =~ s/\s+$//r, 'committed 1 aborted 4999', 'the open transaction committed');
# X ends in the second producer's commit marker, then the open one's
my $gaps = join(',', map { $_ == $x ? 2 : 1 } 0 .. 2);
check_all('after the commit', 481, 941940, $gaps);

# 3. replay: a topic full of markers and aborted transactions
sql("SELECT ssp.reset('$_')") for @views;
check_all('after ssp.reset', 481, 941940, $gaps);

$node->stop;
done_testing();
