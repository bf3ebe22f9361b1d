# A stream altered while views of every kind apply it: columns added and
# dropped (none that a view reads) while orders flow, with a view reset
# and the readers terminated between.  A view's worker decodes as the
# stream was when it opened it, and opens it again (a new worker) once it
# is altered; a worker that opened it just before an ALTER once built its
# batch's columns from the altered relation and crashed on its first batch
# (a SIGSEGV reading a partition number as text).  Each view must equal
# its query over every order, and no process may end by a signal.  Then a
# column's field changes: the views read it by its new field, as INSERT
# writes it (they went on reading the old one, a null for each new order).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_any_broker(topics => ['orders:4']);
my $node = SspTest::new_node('stream_alter');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE orders (order_id bigint, region text, amount numeric, ts timestamptz)
	  SERVER kafka OPTIONS (topic 'orders', timestamp 'ts');
	CREATE TABLE t (order_id bigint, region text, amount numeric, ts timestamptz);
});

my $with = "ssp.continuous, ssp.batch_size = 300, ssp.commit_interval = '20ms'";
my %query = (
	agg => "SELECT region, count(*) AS n, sum(amount) AS total FROM %s GROUP BY region",
	win => "SELECT region, ssp.tumble(ts, '1 minute') AS w, count(*) AS n FROM %s GROUP BY region, w",
	keyed => "SELECT order_id %% 100 AS k, count(*) AS n, max(amount) AS top FROM %s GROUP BY k",
	append => "SELECT order_id, amount FROM %s WHERE amount > 50",
	par => "SELECT region, count(*) AS n FROM %s GROUP BY region",
);
my %options = (win => ", ssp.grace = '1000 days'", par => ", ssp.parallelism = 2");
my @views = sort keys %query;
for my $v (@views)
{
	$node->safe_psql('postgres',
		sprintf("CREATE VIEW $v WITH ($with%s) AS $query{$v}", $options{$v} // '', 'orders'));
}

# 20,000 orders, 50 every 30 ms, in the stream and in the table t
my $producer = $node->background_psql('postgres');
$producer->query_until(qr/started/, q{\echo started
DO $$ BEGIN FOR i IN 0..399 LOOP
  INSERT INTO orders (order_id, region, amount, ts)
    SELECT g, 'r' || g % 7, (g * 37) % 100, '2026-01-01'::timestamptz + g * interval '1 second'
    FROM generate_series(i * 50 + 1, i * 50 + 50) g;
  INSERT INTO t SELECT g, 'r' || g % 7, (g * 37) % 100, '2026-01-01'::timestamptz + g * interval '1 second'
    FROM generate_series(i * 50 + 1, i * 50 + 50) g;
  COMMIT; PERFORM pg_sleep(0.03); END LOOP; END $$;
\echo done
});

my $faults = 0;
for my $i (1 .. 24)
{
	$node->safe_psql('postgres', "ALTER FOREIGN TABLE orders ADD COLUMN extra$i text");
	$node->safe_psql('postgres', 'ALTER FOREIGN TABLE orders DROP COLUMN extra' . ($i - 1)) if $i > 1;
	$faults++;
	# new workers, which open the stream again
	$node->safe_psql('postgres', "SELECT ssp.reset('win')") if $i % 5 == 0;
	$node->safe_psql('postgres', 'SELECT pg_terminate_backend(pid) FROM ssp.readers') if $i % 7 == 0;
	select(undef, undef, undef, 0.3);
}
$producer->query_until(qr/done/, '');
$producer->quit;
is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), '20000', 'every order produced');

# amount is written, and read, as "amt" from now on (the views have read
# every order written as "amount": the new field applies to what a view
# reads from now on)
SspTest::wait_views($node, 'postgres', @views);
$node->safe_psql('postgres', q{
	ALTER FOREIGN TABLE orders ALTER COLUMN amount OPTIONS (ADD field 'amt');
	INSERT INTO orders (order_id, region, amount, ts)
	  SELECT g, 'r' || g % 7, (g * 37) % 100, '2026-01-01'::timestamptz + g * interval '1 second'
	  FROM generate_series(20001, 21000) g;
	INSERT INTO t SELECT g, 'r' || g % 7, (g * 37) % 100, '2026-01-01'::timestamptz + g * interval '1 second'
	  FROM generate_series(20001, 21000) g;
});
SspTest::wait_views($node, 'postgres', @views);
ok($node->log_contains(qr/stream "orders" of continuous view "\w+" was altered; its worker starts again/),
	'the workers saw the stream altered');

# An ALTER that a view's join takes in first: late, paused behind the
# others, is resumed in the ALTER's transaction, so the transaction in
# which the reader takes it opens the altered stream before the process
# looks for an ALTER.  The reader's views were loaded before it, and
# where one decodes for itself it does so as it was loaded (a process
# that went on with them read the new field's values as nulls); the
# reader now starts again when it opens a stream that differs from its
# views'.  (Here the others did not decode for themselves, and were exact
# before that too.)  Each view must equal its query.  Made after the first ALTER, it read the amounts of
# the orders written before it as nulls, and reads those written since it
# was paused by the new field, which they do not have: nulls too, as a
# stream read anew would.
$node->safe_psql('postgres',
	"CREATE VIEW late WITH ($with) AS " . sprintf($query{agg}, 'orders'));
SspTest::wait_views($node, 'postgres', 'late');
$node->safe_psql('postgres', "SELECT ssp.pause('late')");
my $more = sub {
	my ($from, $to) = @_;
	return qq{
	INSERT INTO orders (order_id, region, amount, ts)
	  SELECT g, 'r' || g % 7, (g * 37) % 100, '2026-01-01'::timestamptz + g * interval '1 second'
	  FROM generate_series($from, $to) g;
	INSERT INTO t SELECT g, 'r' || g % 7, (g * 37) % 100, '2026-01-01'::timestamptz + g * interval '1 second'
	  FROM generate_series($from, $to) g;};
};
$node->safe_psql('postgres', $more->(21001, 24000));
SspTest::wait_views($node, 'postgres', @views);
$node->safe_psql('postgres', "BEGIN; ALTER FOREIGN TABLE orders ALTER COLUMN amount OPTIONS (SET field 'amount2');
	SELECT ssp.resume('late'); COMMIT;" . $more->(24001, 25000));
SspTest::wait_views($node, 'postgres', @views, 'late');
$query{late} = sprintf($query{agg}, '(SELECT order_id, region, CASE WHEN order_id BETWEEN 20001 AND 21000 '
	  . 'OR order_id > 24000 THEN amount END AS amount FROM %s) t');
push @views, 'late';

my ($lost, $twice) = (0, 0);
for my $v (@views)
{
	my ($l, $t) = SspTest::lost_and_twice($node, 'postgres', "SELECT * FROM $v", sprintf($query{$v}, 't'));
	is("$l $t", '0 0', "$v equals its query over every order");
	$lost += $l;
	$twice += $t;
}
is($node->safe_psql('postgres',
		"SELECT string_agg(view || ': ' || status || ' ' || coalesce(last_error, ''), ', ') FROM ssp.views "
		  . "WHERE last_error IS NOT NULL"), '', 'no view shows an error');
my @signals = slurp_file($node->logfile) =~ /(terminated by signal \d+[^\n]*)/g;
is(scalar(@signals), 0, 'no process ended by a signal') or diag(join("\n", @signals));

SspTest::report(faults => $faults + 1, produced => 25000,
	applied => $node->safe_psql('postgres', "SELECT processed FROM ssp.views WHERE view = 'agg'::regclass"),
	lost => $lost, twice => $twice, broker => $broker->{kind});
$node->stop;
done_testing();
