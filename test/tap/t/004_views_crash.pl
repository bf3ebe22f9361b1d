# Exactly once across crashes: while messages are produced, view workers
# (grouped, append-only, windowed with grace and retention, parallel, and
# one of aggregates kept by their own states: hll, tdigest, user-defined
# ones; and distinct values, windowed and shared by parallel workers) are
# killed
# with SIGKILL several times, so are the scheduler and the launcher, and
# Postgres is stopped with -m immediate; the
# views end exactly equal to their queries over the messages: nothing lost,
# nothing counted twice.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_any_broker(topics => ['orders:16']);
my $node = SspTest::new_node('crash');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE orders (order_id bigint, region text, amount numeric, ts timestamptz,
	    p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'orders', timestamp 'ts');
	-- small batches: many commits, so that kills land between and inside them
	CREATE VIEW by_region WITH (ssp.continuous, ssp.batch_size = 500, ssp.commit_interval = '5ms') AS
	  SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region;
	CREATE VIEW copy WITH (ssp.continuous, ssp.batch_size = 700, ssp.commit_interval = '5ms') AS
	  SELECT order_id, region, amount FROM orders;
	CREATE VIEW per_minute WITH (ssp.continuous, ssp.batch_size = 600, ssp.commit_interval = '5ms',
	    ssp.grace = '1 hour', ssp.retention = '10 minutes') AS
	  SELECT region, ssp.tumble(ts, '1 minute') AS w, count(*) AS n, sum(amount) AS total,
	         count(DISTINCT amount % 7) AS sevens
	  FROM orders GROUP BY region, w;
	-- two workers, each on half the partitions, each with its own rows;
	-- the distinct values shared
	CREATE VIEW par_region WITH (ssp.continuous, ssp.parallelism = 2, ssp.batch_size = 400,
	    ssp.commit_interval = '5ms') AS
	  SELECT region, count(*) AS n, sum(amount) AS total, count(DISTINCT order_id % 5000) AS customers
	  FROM orders GROUP BY region;
	-- aggregates kept by their own transition states (src/sqlfuncs/combine.c)
	CREATE EXTENSION hll;
	CREATE EXTENSION tdigest;
	CREATE AGGREGATE mean(numeric) (SFUNC = numeric_avg_accum, STYPE = internal, FINALFUNC = numeric_avg,
	  COMBINEFUNC = numeric_avg_combine, SERIALFUNC = numeric_avg_serialize,
	  DESERIALFUNC = numeric_avg_deserialize);
	CREATE FUNCTION total_sfunc(bigint, numeric) RETURNS bigint LANGUAGE sql IMMUTABLE
	  AS 'SELECT \$1 + COALESCE(\$2, 0)::bigint';
	CREATE AGGREGATE total(numeric) (SFUNC = total_sfunc, STYPE = bigint, COMBINEFUNC = int8pl, INITCOND = '0');
	CREATE VIEW sketches WITH (ssp.continuous, ssp.batch_size = 450, ssp.commit_interval = '5ms') AS
	  SELECT region, hll_add_agg(hll_hash_bigint(order_id % 5000)) AS h, tdigest(amount::float8, 100) AS d,
	         mean(amount) AS mean, total(amount) AS total
	  FROM orders GROUP BY region;
});

sub worker_pids
{
	return split /\n/, $node->safe_psql('postgres',
		'SELECT worker_pid FROM ssp.views WHERE worker_pid IS NOT NULL ORDER BY view::text');
}

# wait until both views have a running worker
sub wait_workers
{
	$node->poll_query_until('postgres',
		'SELECT count(*) = 5 FROM ssp.views WHERE worker_pid IS NOT NULL')
	  or die 'workers did not start';
}

my $kills = 0;
my @killed;
my $gen = "SELECT g, 'r' || g % 11, g % 1000, timestamptz '2024-01-01' + g * interval '1 s'";
$node->safe_psql('postgres', 'CREATE TABLE t (order_id bigint, region text, amount numeric, ts timestamptz)');
for my $chunk (0 .. 39)
{
	my $from = $chunk * 2500 + 1;
	my $to = $from + 2499;
	# the INSERT returns once the broker has every message; t keeps a copy
	$node->safe_psql('postgres', "INSERT INTO orders $gen FROM generate_series($from, $to) g");
	$node->safe_psql('postgres', "INSERT INTO t $gen FROM generate_series($from, $to) g");
	if ($chunk % 8 == 3)
	{
		# SIGKILL a worker mid-stream (Postgres then restarts every backend)
		wait_workers();
		my @pids = worker_pids();
		ok(kill('KILL', $pids[$kills % 5]), "SIGKILL to worker $pids[$kills % 5]");
		push @killed, $pids[$kills % 5];
		$kills++;
		SspTest::wait_restarted($node);
	}
	elsif ($chunk == 13 || $chunk == 30)
	{
		# SIGKILL the database's scheduler, then the launcher
		my $type = $chunk == 13 ? 'ssp scheduler' : 'ssp launcher';
		my $pid = $node->safe_psql('postgres',
			"SELECT pid FROM pg_stat_activity WHERE backend_type = '$type'");
		ok($pid && kill('KILL', $pid), "SIGKILL to the $type");
		$kills++;
		SspTest::wait_restarted($node);
	}
	elsif ($chunk == 21)
	{
		$node->stop('immediate');
		$node->start;
	}
}
wait_workers();
my @after = worker_pids();
is(scalar(@after), 5, 'every worker runs again after the kills and the crash');
my %running = map { $_ => 1 } @after;
is(scalar(grep { $running{$_} } @killed), 0, "none of the $kills killed workers is the one running now");

SspTest::wait_views($node, 'postgres', 'by_region', 'copy', 'per_minute', 'par_region', 'sketches');
is($node->safe_psql('postgres', 'SELECT count(*) FROM t'), '100000', '100,000 messages produced');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM by_region',
		'SELECT region, count(*), sum(amount) FROM t GROUP BY region'),
	'0', 'grouped view exact after crashes');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM copy',
		'SELECT order_id, region, amount FROM t'),
	'0', 'append-only view exact after crashes: nothing lost, nothing doubled');

# the windowed view: watermark = slowest partition's latest event - grace;
# no event is late; windows that ended 10 minutes before it are deleted
my $w = $node->safe_psql('postgres', "SELECT watermark FROM ssp.views WHERE view = 'per_minute'::regclass");
is($w, $node->safe_psql('postgres',
		"SELECT min(m) - interval '1 hour' FROM (SELECT max(ts) AS m FROM orders GROUP BY p) x"),
	'watermark is the slowest partition less the grace');
is($node->safe_psql('postgres', "SELECT late_events FROM ssp.views WHERE view = 'per_minute'::regclass"),
	'0', 'no late events');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM per_minute',
		"SELECT region, ssp.tumble(ts, '1 minute') AS w, count(*), sum(amount), count(DISTINCT amount % 7)
		 FROM t GROUP BY 1, 2
		 HAVING ssp.tumble(ts, '1 minute') + interval '1 minute' >= '$w'::timestamptz - interval '10 minutes'"),
	'0', 'windowed view with grace and retention exact after crashes, its distinct values too');
is($node->safe_psql('postgres', 'SELECT sum(n) FROM by_region'), '100000', 'counts add up');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM par_region',
		'SELECT region, count(*), sum(amount), count(DISTINCT order_id % 5000) FROM t GROUP BY region'),
	'0', 'a view with two parallel workers exact after crashes, its distinct values too');
is(SspTest::differences($node, 'postgres',
		'SELECT region, hll_cardinality(h), mean, total FROM sketches',
		'SELECT region, hll_cardinality(hll_add_agg(hll_hash_bigint(order_id % 5000))), mean(amount), total(amount)
		 FROM t GROUP BY region'),
	'0', 'hll, and aggregates made by the user, exact after crashes');
# tdigest: the median's rank within 1% (and one value) of the middle
is($node->safe_psql('postgres', q{
	SELECT count(*) FILTER (WHERE below <= 0.51 + 1.0 / n AND upto >= 0.49 - 1.0 / n)
	FROM (SELECT s.region, count(*) AS n, avg((t.amount < s.p50)::int) AS below,
	             avg((t.amount <= s.p50)::int) AS upto
	      FROM (SELECT region, tdigest_percentile(d, 0.5) AS p50 FROM sketches GROUP BY region) s
	      JOIN t USING (region) GROUP BY s.region) x}),
	'11', 'tdigest medians within their error after crashes');
my ($lost, $twice) = SspTest::lost_and_twice($node, 'postgres', 'SELECT * FROM copy',
	'SELECT order_id, region, amount FROM t');
SspTest::report(faults => $kills + 1, produced => 100000,
	applied => $node->safe_psql('postgres', 'SELECT count(*) FROM copy'),
	dead_letters => $node->safe_psql('postgres', 'SELECT sum(dead_letters) FROM ssp.views'),
	lost => $lost, twice => $twice, broker => $broker->{kind});

$node->stop;
done_testing();
