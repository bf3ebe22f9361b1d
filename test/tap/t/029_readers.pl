# One reader per stream: the views of one stream share one consumer and
# one decoding of each message (doc/internals.md, One reader per stream).
# Ten views of every kind on one stream (aggregates, windows, keyed,
# append-only, a join with a table, an output topic, parallel), through the
# reader terminated, SIGKILLed and an immediate stop, each equal to its
# query; a view created, paused, reset (shown starting at once) and
# dropped while the others run, a parallel view reset;
# a view whose table stays locked leaves the reader while the others keep
# up, and none fails while the stream is locked; a view created while
# orders flow joins the reader; views created behind the reader catch up
# in one reader of their own, which hands them to it; every view of a
# reader dropped with a change of their server.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep);
use SspTest;

my $broker = SspTest::start_any_broker(topics => ['orders:4', 'pub_changes:1']);
my $node = SspTest::new_node('readers', conf => "ssp.broker_timeout = '5s'\n");
my $brokers = $broker->{bootstrap};

# every view of the reader has the same batch settings (they are part of
# what a reader shares)
my $with = "ssp.continuous, ssp.batch_size = 500, ssp.commit_interval = '20ms'";
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$brokers');
	CREATE FOREIGN TABLE orders (order_id bigint, region text, amount numeric, ts timestamptz)
	  SERVER kafka OPTIONS (topic 'orders', timestamp 'ts');
	CREATE TABLE t (order_id bigint, region text, amount numeric, ts timestamptz);
	CREATE TABLE regions (region text PRIMARY KEY, zone text);
	INSERT INTO regions SELECT 'r' || g, 'z' || g % 3 FROM generate_series(0, 6) g;
});

# each view, and its query over the table t that holds every order produced
my %query = (
	agg => "SELECT region, count(*) AS n, sum(amount) AS total, avg(amount) AS mean FROM %s GROUP BY region",
	tumble => "SELECT region, ssp.tumble(ts, '1 minute') AS w, count(*) AS n, sum(amount) AS total FROM %s GROUP BY region, w",
	hop => "SELECT ssp.hop(ts, '10 minutes', '5 minutes') AS w, count(*) AS n FROM %s GROUP BY w",
	keyed => "SELECT order_id %% 1000 AS k, count(*) AS n, max(amount) AS top FROM %s GROUP BY k",
	append => "SELECT order_id, amount FROM %s WHERE amount > 80",
	joined => "SELECT r.zone, count(*) AS n, sum(o.amount) AS total FROM %s o JOIN regions r ON r.region = o.region GROUP BY r.zone",
	pub => "SELECT region, count(*) AS n, sum(amount) AS total FROM %s GROUP BY region",
	spread => "SELECT region, min(amount) AS lo, max(amount) AS hi, stddev(amount) AS sd FROM %s GROUP BY region",
	filtered => "SELECT region, count(*) FILTER (WHERE amount < 10) AS small, bool_or(amount > 98) AS big FROM %s GROUP BY region",
	par => "SELECT region, count(*) AS n, sum(amount) AS total FROM %s GROUP BY region",
);
my %options = (
	tumble => ", ssp.grace = '1000 days'",
	hop => ", ssp.grace = '1000 days'",
	pub => ", ssp.output_topic = 'pub_changes'",
	par => ", ssp.parallelism = 2",
);
# the plain query where it is not the view's own over t
my %truth = (
	hop => "SELECT w, count(*) FROM t, ssp.hop_windows(t.ts, '10 minutes', '5 minutes') AS w GROUP BY w",
);
my @views = sort keys %query;
# the views that share the reader of orders (par has its own, one per part)
my @shared = grep { $_ ne 'par' } @views;

for my $v (@views)
{
	$node->safe_psql('postgres',
		sprintf("CREATE VIEW $v WITH ($with%s) AS $query{$v}", $options{$v} // '', 'orders'));
}

my $produced = 0;

# produce($n): n more orders, in the stream and in the table t
sub produce
{
	my ($n) = @_;
	my $from = $produced + 1;
	my $to = $produced + $n;
	my $gen = "SELECT g, 'r' || g % 7, (g * 37) % 100, '2026-01-01'::timestamptz + g * interval '1 second' "
	  . "FROM generate_series($from, $to) g";
	$node->safe_psql('postgres', "INSERT INTO orders $gen; INSERT INTO t $gen");
	$produced = $to;
}

# flow($rounds): a session that inserts 50 orders every 50 ms, for the
# checks made while orders flow; finish it with finish_flow
my ($flow, $flow_from, $flow_rounds);
sub flow
{
	my ($rounds) = @_;
	my $psql = $node->installed_command('psql');
	my $connstr = $node->connstr('postgres');
	$flow_from = $produced + 1;
	$flow_rounds = $rounds;
	$flow = IPC::Run::start([ 'bash', '-c', qq{
		for i in \$(seq 0 @{[$rounds - 1]}); do
			from=\$(($flow_from + \$i * 50)); to=\$((\$from + 49))
			'$psql' -X -q -v ON_ERROR_STOP=1 -d "$connstr" -c "
			  INSERT INTO orders SELECT g, 'r' || g % 7, (g * 37) % 100,
			    '2026-01-01'::timestamptz + g * interval '1 second' FROM generate_series(\$from, \$to) g;
			  INSERT INTO t SELECT g, 'r' || g % 7, (g * 37) % 100,
			    '2026-01-01'::timestamptz + g * interval '1 second' FROM generate_series(\$from, \$to) g" || exit 1
			sleep 0.05
		done} ]);
}

sub finish_flow
{
	ok($flow->finish, 'the orders flowed meanwhile');
	$produced = $flow_from + $flow_rounds * 50 - 1;
}

# attached(@views): wait until these views share one reader of orders
sub attached
{
	my ($label, @v) = @_;
	my $list = join(', ', map { "'$_'::regclass" } @v);
	ok($node->poll_query_until('postgres', qq{
			SELECT count(*) = @{[scalar @v]} AND bool_and(attached)
			   AND count(DISTINCT worker_pid) = 1
			FROM ssp.views WHERE view IN ($list)}),
		"$label: the views share one reader")
	  or diag($node->safe_psql('postgres', 'SELECT view, status, worker_pid, attached, last_error FROM ssp.views'));
}

# reader_pid: the reader of orders with the most views (views made far
# behind it have a reader of their own for a while)
sub reader_pid
{
	return $node->safe_psql('postgres',
		"SELECT pid FROM ssp.readers WHERE streams = ARRAY['orders'::regclass] AND views > 1 ORDER BY views DESC, pid LIMIT 1");
}

sub check_all
{
	my ($label) = @_;
	SspTest::wait_views($node, 'postgres', @views);
	my ($lost, $twice) = (0, 0);
	for my $v (@views)
	{
		my ($l, $t) = SspTest::lost_and_twice($node, 'postgres', "SELECT * FROM $v",
			$truth{$v} // sprintf($query{$v}, 't'));
		is("$l $t", '0 0', "$label: $v equals its query");
		$lost += $l;
		$twice += $t;
	}
	return ($lost, $twice);
}

produce(5000);
attached('created together', @shared);
ok($node->poll_query_until('postgres', q{
		SELECT views = } . scalar(@shared) . q{ AND partitions = 4 AND parallelism = 1 FROM ssp.readers
		WHERE streams = ARRAY['orders'::regclass] AND views > 1}),
	'ssp.readers: one reader of the 4 partitions of orders applies 9 views');
ok($node->poll_query_until('postgres', q{
		SELECT count(*) = 2 AND sum(views) = 2 AND sum(partitions) = 4 FROM ssp.readers
		WHERE streams = ARRAY['orders'::regclass] AND parallelism = 2}),
	'the parallel view reads in two parts, each with its reader');
ok($node->poll_query_until('postgres', q{
		SELECT count(*) = 3 FROM pg_stat_activity WHERE backend_type = 'ssp worker'}),
	'three processes read orders for the ten views');
ok($node->poll_query_until('postgres', q{
		SELECT memory > 0 AND "position" = 5000 AND lag = 0 FROM ssp.readers WHERE views > 1 AND parallelism = 1}),
	'ssp.readers shows the position, lag and memory of the reader');
check_all('running');

# the reader's process ended in three ways while orders come
my $faults = 0;
my $restart_log;
for my $how ('pg_terminate_backend', 'SIGKILL', 'immediate stop')
{
	produce(2000);
	my $pid = reader_pid();
	if ($how eq 'pg_terminate_backend')
	{
		$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
	}
	elsif ($how eq 'SIGKILL')
	{
		kill('KILL', $pid) or die "kill $pid: $!";
		SspTest::wait_restarted($node);
	}
	else
	{
		# the postmaster says which workers it starts
		$node->append_conf('postgresql.conf', "log_min_messages = debug1\n");
		$node->stop('immediate');
		$restart_log = -s $node->logfile;
		$node->start;
	}
	$faults++;
	produce(2000);
	attached("after $how of the reader", @shared);
	check_all("after $how of the reader");
}

# After the immediate stop, the scheduler started one worker per reader
# (the nine views' one, and the two parts of par), not one per view: the
# first view's worker became the reader and the scheduler handed it the
# others (a worker for each would take one process start per view).
{
	my @log = split /\n/, substr(slurp_file($node->logfile), $restart_log);
	my $started = grep { /starting background worker process "ssp worker for view/ } @log;
	my $handed = grep { /handed to the reader of its streams/ } @log;
	ok($started >= 3 && $started <= 5 && $handed >= 6,
		'after the restart, the views were handed to their reader rather than each started')
	  or diag("worker processes started: $started, views handed: $handed");
	$node->append_conf('postgresql.conf', "log_min_messages = warning\n");
	$node->reload;
}

# a view created, paused, reset and dropped while the others run
$node->safe_psql('postgres',
	"CREATE VIEW extra WITH ($with) AS SELECT region, count(*) AS n FROM orders GROUP BY region");
produce(1000);
attached('a new view', @shared, 'extra');
SspTest::wait_views($node, 'postgres', 'extra');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM extra',
		'SELECT region, count(*) FROM t GROUP BY region'), '0', 'the new view caught up exactly');
$node->safe_psql('postgres', "SELECT ssp.pause('extra')");
produce(1000);
SspTest::wait_views($node, 'postgres', 'agg');
is($node->safe_psql('postgres', "SELECT sum(n) FROM agg"), $produced, 'a view paused: the others go on');
ok($node->poll_query_until('postgres', "SELECT status = 'paused' AND NOT attached FROM ssp.views WHERE view = 'extra'::regclass"),
	'the paused view left the reader');
attached('with a view paused', @shared);
$node->safe_psql('postgres', "SELECT ssp.resume('extra')");
produce(1000);
attached('a view resumed', @shared, 'extra');
# once a reset is made, the process that applied the view is not shown
# running it (that process holds the offsets from before, and stops).
# Asked in the reset's own transaction: once it commits, a new process
# may load the view and run it within a tenth of a second.
is($node->safe_psql('postgres', "BEGIN; SELECT ssp.reset('extra') \\g /dev/null\n"
		  . "SELECT status FROM ssp.views WHERE view = 'extra'::regclass; COMMIT;"),
	'starting', 'a view just reset is starting, not running in its reader');
produce(1000);
SspTest::wait_views($node, 'postgres', 'extra', 'agg');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM extra',
		'SELECT region, count(*) FROM t GROUP BY region'), '0', 'the view reset replayed the topic exactly');
attached('a view reset', @shared, 'extra');
$node->safe_psql('postgres', 'DROP VIEW extra');
produce(1000);
check_all('a view dropped');
# a view of workers of its own, reset: starting, then exact again
is($node->safe_psql('postgres', "BEGIN; SELECT ssp.reset('par') \\g /dev/null\n"
		  . "SELECT status FROM ssp.views WHERE view = 'par'::regclass; COMMIT;"),
	'starting', 'a view just reset is starting, not running in its workers');
produce(1000);
check_all('a view of its own workers reset');
$faults += 5;

# a view whose table stays locked leaves the reader; the others keep up
my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN; LOCK TABLE keyed_mrel IN ACCESS EXCLUSIVE MODE');
produce(1000);
SspTest::wait_views($node, 'postgres', grep { $_ ne 'keyed' } @views);
is($node->safe_psql('postgres', "SELECT sum(n) FROM agg"), $produced,
	'with the table of one view locked, the other views applied every order');
ok($node->poll_query_until('postgres',
		"SELECT status = 'waiting for a lock' AND NOT attached FROM ssp.views WHERE view = 'keyed'::regclass"),
	'the locked view left the reader and waits for the lock alone');
produce(1000);
SspTest::wait_views($node, 'postgres', grep { $_ ne 'keyed' } @views);
is($node->safe_psql('postgres', "SELECT sum(n) FROM agg"), $produced,
	'and the others still keep up');
$locker->query_safe('ROLLBACK');
$locker->quit;
produce(1000);
attached('the lock released', @shared);
check_all('after the lock');
$faults++;

# the stream itself locked (an ALTER FOREIGN TABLE not committed yet) past
# ssp.attached_lock_timeout while a view leaves the reader: the reader
# waits for the lock, as each of its views must, and none fails (they all
# failed, and each started again alone after a backoff)
my $reader = reader_pid();
my $slocker = $node->background_psql('postgres');
$slocker->query_safe("BEGIN; ALTER FOREIGN TABLE orders ALTER COLUMN amount OPTIONS (ADD field 'amount')");
$node->safe_psql('postgres', "SELECT ssp.pause('spread')");
sleep(3);
is(reader_pid() . '|' . $node->safe_psql('postgres', q{SELECT string_agg(view::text, ',') FROM ssp.views
		WHERE status = 'failed' OR last_error LIKE '%lock timeout%'}), "$reader|",
	'with the stream locked past ssp.attached_lock_timeout as a view leaves, no view fails, nor the reader');
$slocker->query_safe('ROLLBACK');
$slocker->quit;
$node->safe_psql('postgres', "SELECT ssp.resume('spread')");
produce(1000);
attached('the stream unlocked', @shared);
is(reader_pid(), $reader, 'the same process reads the stream');
check_all('after the stream was locked');
$faults++;

# a view created while orders flow joins the reader
flow(60);
$node->safe_psql('postgres',
	"CREATE VIEW live WITH ($with) AS SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region");
attached('a view created while orders flow', @shared, 'live');
finish_flow();
SspTest::wait_views($node, 'postgres', 'live');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM live',
		'SELECT region, count(*), sum(amount) FROM t GROUP BY region'), '0',
	'the view that joined while orders flowed equals its query');
# the scheduler terminated again and again while it hands new views to a
# reader (the one started for the first of them, the topic being longer by
# now than the live reader reads again for a view that joins it), and a
# reader once, as orders flow: whichever of a hand-off the new scheduler
# finds (asked, adopted, withdrawn), a view is applied by one process at a
# time, and each ends equal to its query
flow(20);
$node->safe_psql('postgres', 'BEGIN; '
	  . join('', map { "CREATE VIEW handed$_ WITH ($with) AS SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region; " } 1 .. 4)
	  . 'COMMIT');
for my $round (1 .. 6)
{
	my $victim = $round == 4
	  ? reader_pid()
	  : $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'ssp scheduler' AND datname = 'postgres'");
	$node->safe_psql('postgres', "SELECT pg_terminate_backend($victim)") if $victim;
	usleep(150_000 * $round);
}
finish_flow();
my @handed = map { "handed$_" } 1 .. 4;
attached('after the scheduler was terminated while it handed views over', @shared, @handed);
SspTest::wait_views($node, 'postgres', @handed);
for my $v (@handed)
{
	my ($l, $t) = SspTest::lost_and_twice($node, 'postgres', "SELECT * FROM $v",
		'SELECT region, count(*), sum(amount) FROM t GROUP BY region');
	is("$l $t", '0 0', "handed over through terminations: $v equals its query");
}
$node->safe_psql('postgres', 'DROP VIEW ' . join(', ', @handed));
$faults += 6;

# a reader stopped (SIGSTOP), alive but not answering: a view created
# meanwhile from the end of the topic is handed to it, and after 5 s the
# scheduler withdraws the hand-off and starts a worker; that worker, and
# the worker of a view catching up from the earliest message, ask the
# reader once, wait 5 s for an answer, then apply alone and ask again only
# 10 s later (they once asked before each batch); continued, the reader
# takes both back, and every view is exact
produce(500);
SspTest::wait_views($node, 'postgres', @shared);
ok($node->poll_query_until('postgres', q{
		SELECT lag = 0 FROM ssp.readers WHERE views > 1 AND parallelism = 1}),
	'the reader is idle before it is stopped');
# the scheduler says (at DEBUG1) which views it hands to a reader
$node->append_conf('postgresql.conf', "log_min_messages = debug1\n");
$node->reload;
my $stop_log = -s $node->logfile;
my $stopped = reader_pid();
kill('STOP', $stopped) or die "kill -STOP $stopped: $!";
my $before_lone = $produced;
$node->safe_psql('postgres', "CREATE VIEW lone WITH ($with) AS SELECT region, count(*) AS n FROM orders GROUP BY region;"
	  . "CREATE VIEW lone_end WITH ($with, ssp.start = 'latest') AS SELECT region, count(*) AS n FROM orders GROUP BY region");
produce(500);
my %lone_truth = (
	lone => 'SELECT region, count(*) FROM t GROUP BY region',
	lone_end => "SELECT region, count(*) FROM t WHERE order_id > $before_lone GROUP BY region",
);
SspTest::wait_views($node, 'postgres', 'lone', 'lone_end');
my $lone_end = $node->safe_psql('postgres', "SELECT 'lone_end'::regclass::oid");
like(slurp_file($node->logfile, $stop_log),
	qr/continuous view $lone_end \(part 0\) handed to the reader of its streams \(pid $stopped\)/,
	'the scheduler handed the view from the end of the topic to the stopped reader first');
$node->append_conf('postgresql.conf', "log_min_messages = warning\n");
$node->reload;
for my $v (sort keys %lone_truth)
{
	is(SspTest::differences($node, 'postgres', "SELECT * FROM $v", $lone_truth{$v}), '0',
		"with the reader stopped, $v caught up on a worker of its own");
	isnt($node->safe_psql('postgres', "SELECT worker_pid FROM ssp.views WHERE view = '$v'::regclass"),
		$stopped, "$v: not in the stopped reader");
}
is($node->safe_psql('postgres', "SELECT sum(n) FROM agg"), $before_lone,
	'the stopped reader applied nothing meanwhile');
kill('CONT', $stopped) or die "kill -CONT $stopped: $!";
produce(500);
attached('the reader continued', @shared, 'lone', 'lone_end');
check_all('after the reader was stopped and continued');
for my $v (sort keys %lone_truth)
{
	is(SspTest::differences($node, 'postgres', "SELECT * FROM $v", $lone_truth{$v}), '0',
		"$v, created while the reader was stopped, is exact in it");
}
$node->safe_psql('postgres', 'DROP VIEW lone, lone_end');
$faults++;

# views made behind the live reader (from the start of a topic longer than
# what a reader reads again for a view that joins it) share one catch-up
# reader, started once for all of them, which hands them all to the live
# reader once near it, as orders flow; each view is exact (a worker and a
# consumer for each of them once caught up alone)
produce(30000);
SspTest::wait_views($node, 'postgres', @shared);
$node->append_conf('postgresql.conf', "log_min_messages = debug1\n");
$node->reload;
my $behind_log = -s $node->logfile;
my %behind_query = (
	behind_agg => 'SELECT region, count(*) AS n, sum(amount) AS total FROM %s GROUP BY region',
	behind_keyed => 'SELECT order_id %% 100 AS k, count(*) AS n, max(amount) AS top FROM %s GROUP BY k',
	behind_spread => 'SELECT region, min(amount) AS lo, max(amount) AS hi FROM %s GROUP BY region',
	behind_append => 'SELECT order_id, amount FROM %s WHERE amount > 95',
	behind_all => 'SELECT count(*) AS n, sum(amount) AS total FROM %s',
);
my @behind = sort keys %behind_query;
flow(40);
$node->safe_psql('postgres', 'BEGIN; '
	  . join('', map { sprintf("CREATE VIEW $_ WITH ($with) AS $behind_query{$_}; ", 'orders') } @behind)
	  . 'COMMIT');
attached('views made behind the reader', @shared, @behind);
finish_flow();
SspTest::wait_views($node, 'postgres', @behind);
for my $v (@behind)
{
	my ($l, $t) = SspTest::lost_and_twice($node, 'postgres', "SELECT * FROM $v", sprintf($behind_query{$v}, 't'));
	is("$l $t", '0 0', "made behind the reader: $v equals its query");
}
{
	my @log = split /\n/, substr(slurp_file($node->logfile), $behind_log);
	my $started = grep { /starting background worker process "ssp worker for view/ } @log;
	my ($merged) = map { /a reader of (\d+) views hands them to the reader/ ? $1 : () } @log;
	ok($started <= 2 && ($merged // 0) >= 3,
		'the views made behind the reader caught up in one reader of their own, which handed them to it')
	  or diag("worker processes started: $started, views handed by a reader: " . ($merged // 'none'));
}
$node->append_conf('postgresql.conf', "log_min_messages = warning\n");
$node->reload;
$node->safe_psql('postgres', 'DROP VIEW ' . join(', ', @behind));

# every view of a reader dropped in the transaction that changes their
# server: the reader answers the drops and is left with no view just as it
# sees the change (it once read its first view then, and crashed)
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka2 FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$brokers');
	CREATE FOREIGN TABLE orders2 (order_id bigint, region text, amount numeric, ts timestamptz)
	  SERVER kafka2 OPTIONS (topic 'orders', timestamp 'ts');
});
my $log_from = -s $node->logfile;
for my $round (1 .. 3)
{
	my @gone = map { "gone$_" } 1 .. 3;
	$node->safe_psql('postgres',
		"CREATE VIEW $_ WITH ($with) AS SELECT region, count(*) AS n FROM orders2 GROUP BY region")
	  for @gone;
	SspTest::wait_views($node, 'postgres', @gone);
	attached("round $round: views of another server", @gone);
	my $change = $round % 2 ? q{ADD "socket.timeout.ms" '5000'} : q{DROP "socket.timeout.ms"};
	$node->safe_psql('postgres', "BEGIN; ALTER SERVER kafka2 OPTIONS ($change); DROP VIEW "
		  . join(', ', @gone) . '; COMMIT');
	ok($node->poll_query_until('postgres', q{
			SELECT NOT EXISTS (SELECT FROM ssp.readers WHERE streams = ARRAY['orders2'::regclass])}),
		"round $round: the reader of the dropped views is gone");
}
produce(500);
unlike(slurp_file($node->logfile, $log_from), qr/terminated by signal/,
	'no process crashed when a reader lost every view to a server change');
$faults += 3;
my ($lost, $twice) = check_all('at the end');

SspTest::read_published($node, 'postgres', 'pub_changes');
SspTest::check_published($node, 'pub', 'the output topic: ');

my $applied = $node->safe_psql('postgres', 'SELECT sum(n) FROM agg');
is($applied, $produced, "$produced orders, each counted once by each view");
SspTest::report(faults => $faults, produced => $produced, applied => $applied,
	lost => $lost, twice => $twice, broker => $broker->{kind});

$node->stop;
done_testing();
