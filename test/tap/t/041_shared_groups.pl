# Views of one reader that reduce a batch to the same groups (the same
# keys, WHERE and GROUP BY, whatever their aggregates) reduce it once
# (doc/internals.md, Groups reduced once): each then merges those groups
# into its own table, in its own transaction, with its own offsets.
# Checked: each view equals its query, with groups of null keys, no keys,
# event-time windows and a stable function; the log says how many views
# shared their groups; a message that fails in the shared reduction goes to
# the dead letters of each view that reads it, and nowhere else; a view
# renamed, one dropped and the reader cancelled and terminated while
# orders come; views that must not share (now(), a subquery, the transaction's id, an
# aggregate whose work is a stable function) are exact too; an error of
# the system's kind in one view's expression fails that view alone; groups
# wider than the workers' work_mem (64 kB here) go through a tuplestore
# on disk.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use SspTest;

my $broker = SspTest::start_any_broker(topics => ['orders:4']);
my $node = SspTest::new_node('shared_groups',
	conf => "log_min_messages = debug1\nssp.work_mem = 64\nlog_temp_files = 0\n");
my $brokers = $broker->{bootstrap};

my $with = "ssp.continuous, ssp.batch_size = 400, ssp.commit_interval = '20ms'";
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$brokers');
	CREATE FOREIGN TABLE orders (order_id bigint, region text, amount numeric, ts timestamptz)
	  SERVER kafka OPTIONS (topic 'orders', timestamp 'ts');
	CREATE TABLE t (order_id bigint, region text, amount numeric, ts timestamptz);
	CREATE TABLE big (amount numeric);
	INSERT INTO big VALUES (90);
});
$node->safe_psql('postgres', q{
	CREATE FUNCTION add_stable(numeric, numeric) RETURNS numeric STABLE LANGUAGE sql
	  AS 'SELECT $1 + $2';
	CREATE AGGREGATE stable_sum(numeric) (sfunc = add_stable, stype = numeric,
	  combinefunc = add_stable, initcond = '0');
	CREATE FUNCTION boom(a numeric) RETURNS numeric IMMUTABLE LANGUAGE plpgsql
	  AS $$BEGIN IF a > 1000 THEN RAISE EXCEPTION 'boom %', a USING ERRCODE = 'XX000'; END IF; RETURN a; END$$;
});

# each view, and its query over the table t of every order produced;
# ratio_* divide by the amount, which is 0 in one order of a thousand
my %query = (
	cnt => 'SELECT region, count(*) AS n, sum(amount) AS total FROM %s GROUP BY region',
	mean => 'SELECT region, avg(amount) AS mean, sum(amount) AS total FROM %s GROUP BY region',
	spread => 'SELECT region, min(amount) AS lo, max(amount) AS hi FROM %s GROUP BY region',
	all_n => 'SELECT count(*) AS n, sum(amount) AS total FROM %s',
	all_top => 'SELECT count(*) AS n, max(amount) AS top FROM %s',
	minute_n => "SELECT region, date_trunc('minute', ts) AS m, count(*) AS n FROM %s GROUP BY region, m",
	minute_sum => "SELECT region, date_trunc('minute', ts) AS m, sum(amount) AS total FROM %s GROUP BY region, m",
	tumble_n => "SELECT ssp.tumble(ts, '1 minute') AS w, count(*) AS n FROM %s GROUP BY w",
	tumble_sum => "SELECT ssp.tumble(ts, '1 minute') AS w, sum(amount) AS total FROM %s GROUP BY w",
	ratio_sum => 'SELECT region, sum(100 / amount) AS r FROM %s GROUP BY region',
	ratio_max => 'SELECT region, count(*) AS n, max(100 / amount) AS top FROM %s GROUP BY region',
	now_n => 'SELECT region, count(*) FILTER (WHERE ts < now()) AS n FROM %s GROUP BY region',
	sub_n => 'SELECT region, count(*) FILTER (WHERE amount < (SELECT max(amount) FROM big)) AS n FROM %s GROUP BY region',
	xid_n => 'SELECT region, count(*) FILTER (WHERE txid_current() > 0) AS n FROM %s GROUP BY region',
	agg_sum => 'SELECT region, stable_sum(amount) AS total FROM %s GROUP BY region',
	z_boom => 'SELECT region, sum(boom(amount)) AS total FROM %s GROUP BY region',
	wide_a => "SELECT order_id, max(region || repeat('a', 200)) AS r, count(*) AS n FROM %s GROUP BY order_id",
	wide_b => "SELECT order_id, min(region || repeat('a', 200)) AS r, sum(amount) AS total FROM %s GROUP BY order_id",
);
my %options = (
	tumble_n => ", ssp.grace = '1000 days'",
	tumble_sum => ", ssp.grace = '1000 days'",
);
# the views that divide by the amount leave its zeros to the dead letters
my %where = (ratio_sum => ' WHERE amount <> 0', ratio_max => ' WHERE amount <> 0');
my @views = sort keys %query;
# the views that share groups with another, when a batch has no zero amount
my $sharing = 14;

$node->safe_psql('postgres', 'BEGIN; '
	  . join('', map { sprintf("CREATE VIEW $_ WITH ($with%s) AS $query{$_}; ", $options{$_} // '', 'orders') } @views)
	  . 'COMMIT');

my $produced = 0;

# produce($n): n more orders, in the stream and in the table t; a region of
# nine is null, and one amount in a thousand is 0
sub produce
{
	my ($n) = @_;
	my $from = $produced + 1;
	my $to = $produced + $n;
	my $gen = "SELECT g, CASE WHEN g % 9 = 0 THEN NULL ELSE 'r' || g % 7 END, "
	  . "CASE WHEN g % 1000 = 500 THEN 0 ELSE (g * 37) % 100 + 1 END, "
	  . "'2026-01-01'::timestamptz + g * interval '1 second' FROM generate_series($from, $to) g";
	$node->safe_psql('postgres', "INSERT INTO orders $gen; INSERT INTO t $gen");
	$produced = $to;
}

sub check_all
{
	my ($label, @v) = @_;
	SspTest::wait_views($node, 'postgres', @v);
	my ($lost, $twice) = (0, 0);
	for my $v (@v)
	{
		my $truth = sprintf($query{$v}, $where{$v} ? "(SELECT * FROM t$where{$v}) t" : 't');
		my ($l, $t) = SspTest::lost_and_twice($node, 'postgres', "SELECT * FROM $v", $truth);
		is("$l $t", '0 0', "$label: $v equals its query");
		$lost += $l;
		$twice += $t;
	}
	return ($lost, $twice);
}

# shared_most($from): the most views the log says shared their groups since
sub shared_most
{
	my ($from) = @_;
	my $most = 0;
	for (split /\n/, slurp_file($node->logfile, $from))
	{
		$most = $1 if /reduces each batch to its groups once for (\d+) of them/ && $1 > $most;
	}
	return $most;
}

# reader_pid: the pid of the reader of the orders, once it serves most
# of the views again
sub reader_pid
{
	for (1 .. 1800)
	{
		# in one query: a reader still listed as it exits can be gone by the next
		my $pid = $node->safe_psql('postgres', q{
			SELECT min(pid) FROM ssp.readers WHERE streams = ARRAY['orders'::regclass]
			HAVING count(*) = 1 AND min(views) > 8});
		return $pid if $pid ne '';
		usleep(100_000);
	}
	die 'no reader of the orders serves most views';
}

my $log = -s $node->logfile;
produce(4000);
ok($node->poll_query_until('postgres', q{
		SELECT count(*) = 1 FROM ssp.readers WHERE streams = ARRAY['orders'::regclass]}),
	'the views share one reader');
check_all('running', @views);
is(shared_most($log), $sharing, "$sharing views read groups reduced once for them and another");
ok(slurp_file($node->logfile, $log) =~ /temporary file: /, 'the workers wrote past their work_mem to disk');

# the zeros: one dead letter each, in each view that divides by the amount
my $zeros = $node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE amount = 0');
is($node->safe_psql('postgres', q{
		SELECT string_agg(view::text || ' ' || n, ', ' ORDER BY view::text)
		FROM (SELECT view, count(*) AS n FROM ssp.dead_letters GROUP BY view) d}),
	"ratio_max $zeros, ratio_sum $zeros",
	'a message that fails the shared reduction goes to the dead letters of the views that read it only');

# an order whose amount makes boom() raise (XX000, an error of the
# system's kind; PL/pgSQL's own P0001 would be one of the data): the
# reduction the views share fails; the views reduce alone, and only z_boom
# fails, in its own statement (it is the last of its group: the reduction
# runs in the transaction of another view, the first by oid)
$log = -s $node->logfile;
$node->safe_psql('postgres', q{
	INSERT INTO orders VALUES (-1, 'r1', 5000, '2026-01-01'); INSERT INTO t VALUES (-1, 'r1', 5000, '2026-01-01')});
$produced++;
produce(1000);
ok($node->poll_query_until('postgres', q{
		SELECT last_error LIKE '%boom 5000%' FROM ssp.views WHERE view = 'z_boom'::regclass}),
	'the view whose expression raises fails');
delete $query{z_boom};
@views = sort keys %query;
check_all('after one view failed in the shared reduction', @views);
my @failed;
for (split /\n/, slurp_file($node->logfile, $log))
{
	push @failed, $1 if /continuous view "(\w+)" failed in the reader/;
}
is(join(',', sort grep { $_ ne 'z_boom' } @failed), '', 'no other view failed');
$node->safe_psql('postgres', 'DROP VIEW z_boom');

# renamed, dropped, the reader terminated, as orders come
$node->safe_psql('postgres', 'ALTER VIEW spread RENAME TO spread2');
$query{spread2} = delete $query{spread};
produce(1500);
$node->safe_psql('postgres', 'DROP VIEW all_top');
delete $query{all_top};
produce(1500);
# the reader cancelled (pg_cancel_backend) as it applies batches, at
# several points of them (a cancel fails a view that is applying, which
# leaves the reader, or ends the reader, which is listed until it has
# exited: a reader gone by the time of the cancel is not counted, and the
# one after it is cancelled instead)
my $cancels = 0;
for my $ms (0, 5, 15, 30, 60)
{
	my $pid = reader_pid();
	produce(600);
	usleep($ms * 1000);
	for (1 .. 20)
	{
		if ($node->safe_psql('postgres', "SELECT pg_cancel_backend($pid)") eq 't')
		{
			$cancels++;
			last;
		}
		$pid = reader_pid();
	}
}
is($cancels, 5, 'the reader cancelled five times');
my $reader = reader_pid();
$log = -s $node->logfile;
$node->safe_psql('postgres', "SELECT pg_terminate_backend($reader)");
produce(3000);
@views = sort keys %query;
my ($lost, $twice) = check_all('after a rename, a drop, the reader cancelled and terminated', @views);
# views failed by a cancel catch up alone after their backoff and may join
# the new reader after the last batch: once it serves them all, 1,000 more
# orders are at least two batches, one of them without a zero amount
ok($node->poll_query_until('postgres', q{
		SELECT views = } . scalar(@views) . q{ FROM ssp.readers WHERE streams = ARRAY['orders'::regclass]}),
	'the new reader serves every view left');
produce(1000);
my ($l, $t) = check_all('a reader of every view', @views);
$lost += $l;
$twice += $t;
is(shared_most($log), 11, 'the new reader shares the groups of the views left (all_n alone now)');
$zeros = $node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE amount = 0');
is($node->safe_psql('postgres', 'SELECT count(*) FROM ssp.dead_letters'), 2 * $zeros,
	'the dead letters: each zero amount once in each view that divides by it');

my $applied = $node->safe_psql('postgres', 'SELECT sum(n) FROM cnt');
is($applied, $produced, "$produced orders, each counted once");
SspTest::report(faults => 1 + $cancels, produced => $produced, applied => $applied,
	dead_letters => $node->safe_psql('postgres', 'SELECT count(*) FROM ssp.dead_letters'),
	lost => $lost, twice => $twice, broker => $broker->{kind});

$node->stop;
done_testing();
