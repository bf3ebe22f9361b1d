# Shards: one topic of 12 partitions read by three Postgres servers, each
# a shard of the same views (ssp.shard = 'k/3': the partitions p % 3 = k),
# and a view over the shards on a coordinator (ssp.shards: a database of
# the first server, reading all three through postgres_fdw).  The
# coordinator's views equal the single-server query over every message:
# count, sum, avg, min, max, hll (tdigest within its error), and a
# tumbling window with ssp.emit = 'final', whose windows close by the
# least of the shards' watermarks.  Each shard's amounts are of a range of
# their own, so no shard's state alone looks like the whole.  A
# shard's server is SIGKILLed (every process of it) mid-stream and
# restarted; another fails over to its streaming standby, which the
# coordinator's server for it also names; every message is counted once.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_any_broker(topics => ['orders:12']);
# shard 2's server has a streaming standby
my @shards = map { SspTest::new_node("shard$_", allows_streaming => $_ == 2) } 0 .. 2;
my $coord = $shards[0];

my $stream = qq{
	CREATE EXTENSION hll;
	CREATE EXTENSION tdigest;
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE orders (id bigint, region text, amount numeric, ts timestamptz,
	    p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'orders', timestamp 'ts');
};
# the views' queries, and the options they have everywhere
my %views = (
	totals => [ q{SELECT region, count(*) AS n, sum(amount) AS total, avg(amount) AS mean,
	                min(amount) AS least, max(amount) AS most,
	                hll_cardinality(hll_add_agg(hll_hash_bigint(id))) AS ids,
	                tdigest_percentile(amount::float8, 100, 0.5) AS median
	              FROM orders GROUP BY region}, '' ],
	per_minute => [ q{SELECT ssp.tumble(ts, '1 minute') AS w, region, count(*) AS n, avg(amount) AS mean
	                  FROM orders GROUP BY w, region},
		", ssp.emit = 'final', ssp.idle_timeout = '1 hour'" ],
	everything => [ q{SELECT count(*) AS n, sum(amount) AS total FROM orders}, '' ],
);
my @names = sort keys %views;

for my $k (0 .. 2)
{
	$shards[$k]->safe_psql('postgres', $stream);
	for my $v (@names)
	{
		$shards[$k]->safe_psql('postgres', qq{
			CREATE VIEW $v WITH (ssp.continuous, ssp.shard = '$k/3', ssp.commit_interval = '50ms', ssp.batch_size = 300$views{$v}[1])
			  AS $views{$v}[0]});
	}
}

# the coordinator: a database of the first server, with a postgres_fdw
# server per shard (the first is the same server)
$coord->safe_psql('postgres', 'CREATE DATABASE coord');
$coord->safe_psql('coord', "CREATE EXTENSION ssp; CREATE EXTENSION postgres_fdw; $stream
	CREATE TABLE truth (id bigint, region text, amount numeric, ts timestamptz, p int);");
for my $k (0 .. 2)
{
	my ($host, $port) = ($shards[$k]->host, $shards[$k]->port);
	$coord->safe_psql('coord', qq{
		CREATE SERVER shard$k FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$host', port '$port', dbname 'postgres');
		CREATE USER MAPPING FOR CURRENT_USER SERVER shard$k;
	});
}

# refused: a server that is not the shard it is named as, a server with no
# such view, a server of another foreign-data wrapper
my ($ret, $out, $err) = $coord->psql('coord',
	"CREATE VIEW totals WITH (ssp.continuous, ssp.shards = 'shard1, shard0, shard2') AS $views{totals}[0]");
like($err, qr/continuous view public\.totals on server "shard1" is not shard 0\/3.*It is shard 1\/3/s,
	'shards named out of order are refused');
($ret, $out, $err) = $coord->psql('coord',
	"CREATE VIEW nothing WITH (ssp.continuous, ssp.shards = 'shard0, shard1, shard2') AS $views{everything}[0]");
like($err, qr/server "shard0" has no continuous view public\.nothing/, 'a view missing on a shard is refused');
($ret, $out, $err) = $coord->psql('coord',
	"CREATE VIEW totals WITH (ssp.continuous, ssp.shards = 'kafka') AS $views{totals}[0]");
like($err, qr/server "kafka" of ssp.shards is not a postgres_fdw server/, 'a server of another wrapper is refused');

for my $v (@names)
{
	$coord->safe_psql('coord', qq{
		CREATE VIEW $v WITH (ssp.continuous, ssp.shards = 'shard0, shard1, shard2'$views{$v}[1])
		  AS $views{$v}[0]});
}
is($coord->safe_psql('coord', "SELECT string_agg(DISTINCT status, ',') FROM ssp.views"), 'over shards',
	'the views over shards run no worker of their own');
is($coord->safe_psql('coord',
		"SELECT count(*) FROM pg_stat_activity WHERE datname = 'coord' AND backend_type = 'ssp worker'"),
	'0', 'no ssp worker in the coordinator\'s database');
($ret, $out, $err) = $coord->psql('coord', "SELECT ssp.reset('totals')");
like($err, qr/continuous view "totals" is a view over shards/, 'ssp.reset of a view over shards is refused');

# feed($from, $n): orders from id $from, partition id % 12, a second of
# event time apart, from the coordinator's stream; the truth kept there
sub feed
{
	my ($from, $n) = @_;
	my $gen = "SELECT g, 'r' || g % 7, (g % 100)::numeric + 0.5 + 100 * (g % 3), timestamptz '2024-01-01' + g * interval '1 s', (g % 12)::int
	           FROM generate_series($from, $from + $n - 1) g";
	$coord->safe_psql('coord', "INSERT INTO orders (id, region, amount, ts, p) $gen; INSERT INTO truth $gen");
}

sub wait_shards
{
	for my $k (0 .. 2)
	{
		SspTest::wait_views($shards[$k], 'postgres', @names);
	}
}

sub check
{
	my ($what) = @_;
	is(SspTest::differences($coord, 'coord', 'SELECT region, n, total, mean, least, most, ids FROM totals', q{
			SELECT region, count(*), sum(amount), avg(amount), min(amount), max(amount),
			       hll_cardinality(hll_add_agg(hll_hash_bigint(id)))
			FROM truth GROUP BY region}),
		'0', "$what: the view over shards equals the query over every message");
	# tdigest is approximate: the shards' digests merged, within its error
	note $coord->safe_psql('coord', q{
			SELECT string_agg(format('%s %s %s', region, round(v.median::numeric, 2), t.p50), '; ') FROM totals v
			JOIN (SELECT region, percentile_cont(0.5) WITHIN GROUP (ORDER BY amount::float8) AS p50
			      FROM truth GROUP BY region) t USING (region)});
	is($coord->safe_psql('coord', q{
			SELECT count(*) FROM totals v
			JOIN (SELECT region, percentile_cont(0.5) WITHIN GROUP (ORDER BY amount::float8) AS p50
			      FROM truth GROUP BY region) t USING (region)
			WHERE abs(v.median - t.p50) > 10}),
		'0', "$what: the shards' tdigests merged give the median within 10 of a range of 300");
	is($coord->safe_psql('coord', 'SELECT n = (SELECT count(*) FROM truth) FROM everything'), 't',
		"$what: a view without groups, merged over the shards");
	# every partition has messages, so each shard's watermark is the least
	# of its partitions' latest event times; the coordinator's the least of
	# the shards'
	my $closed = "(SELECT min(mx) FROM (SELECT max(ts) AS mx FROM truth GROUP BY p) x)";
	is(SspTest::differences($coord, 'coord', 'SELECT * FROM per_minute', qq{
			SELECT ssp.tumble(ts, '1 minute'), region, count(*), avg(amount) FROM truth
			WHERE ssp.tumble(ts, '1 minute') + interval '1 minute' <= $closed GROUP BY 1, 2}),
		'0', "$what: emit final shows the windows every shard has closed");
	isnt($coord->safe_psql('coord', 'SELECT count(*) FROM per_minute'), '0', "$what: and some are closed");
	for my $k (0 .. 2)
	{
		is($shards[$k]->safe_psql('postgres', "SELECT count(*) FROM totals_mrel WHERE _shard <> $k"), '0',
			"$what: shard $k holds its own rows");
		is($shards[$k]->safe_psql('postgres', 'SELECT region, n, total FROM totals ORDER BY 1'),
			$coord->safe_psql('coord', "SELECT region, count(*), sum(amount) FROM truth WHERE p % 3 = $k GROUP BY 1 ORDER BY 1"),
			"$what: shard $k counted the messages of its partitions, once");
	}
}

feed(1, 3000);
wait_shards();
check('caught up');

# the coordinator's merge runs the shards' scans at once (async append)
like($coord->safe_psql('coord', 'EXPLAIN (COSTS OFF) SELECT * FROM totals'), qr/Async Foreign Scan/,
	'the shards are scanned concurrently');

# a shard's server is SIGKILLed, every process of it, while it catches up
feed(3001, 30000);
my $victim = $shards[1];
$victim->poll_query_until('postgres', "SELECT processed > 1000 FROM ssp.views WHERE view = 'totals'::regclass")
  or die 'shard 1 did not start on the new messages';
note 'shard 1 had applied ' . $victim->safe_psql('postgres', "SELECT processed FROM ssp.views WHERE view = 'totals'::regclass")
  . ' of its 11,000 messages when it was killed';
my $pm = $victim->{_pid};
my @pids = ($pm, map { s/\s+//gr } split /\n/, `pgrep -P $pm`);
kill 9, @pids;
$victim->{_pid} = undef;
for (1 .. 100)
{
	last unless grep { kill 0, $_ } @pids;
	select(undef, undef, undef, 0.1);
}
feed(33001, 3000);
$victim->start;
wait_shards();
check('after a shard was SIGKILLed');

# shard 2's server fails over to its standby; the coordinator's server for
# it names both, and reads whichever answers
$shards[2]->backup('shard2_backup');
my $standby = PostgreSQL::Test::Cluster->new('shard2_standby');
$standby->init_from_backup($shards[2], 'shard2_backup', has_streaming => 1);
$standby->start;
$coord->safe_psql('coord', sprintf("ALTER SERVER shard2 OPTIONS (SET host '%s,%s', SET port '%s,%s')",
	$shards[2]->host, $standby->host, $shards[2]->port, $standby->port));
feed(36001, 3000);
SspTest::wait_views($shards[2], 'postgres', @names);
$shards[2]->wait_for_catchup($standby);
feed(39001, 3000);
$shards[2]->stop('immediate');
like($coord->safe_psql('coord', 'SELECT n FROM everything'), qr/^[1-9][0-9]*$/,
	"with shard 2's server down, the coordinator reads its standby");
$standby->promote;
$shards[2] = $standby;
feed(42001, 3000);
wait_shards();
check("after shard 2's standby was promoted");

# per region, orders missing from the view over shards and counted twice
my ($lost, $twice) = split /\|/, $coord->safe_psql('coord', q{
	SELECT coalesce(sum(greatest(e.n - coalesce(v.n, 0), 0)), 0), coalesce(sum(greatest(coalesce(v.n, 0) - e.n, 0)), 0)
	FROM (SELECT region, count(*) AS n FROM truth GROUP BY 1) e
	FULL JOIN totals v USING (region)});
SspTest::report(faults => 2, produced => $coord->safe_psql('coord', 'SELECT count(*) FROM truth'),
	applied => $coord->safe_psql('coord', 'SELECT n FROM everything'),
	dead_letters => 0, lost => $lost, twice => $twice, broker => $broker->{kind});

# the coordinator's database dumped and restored: its views read the
# shards again, and the scheduler makes their tables parts of them again
my $dump = PostgreSQL::Test::Utils::tempdir() . '/coord.sql';
$coord->command_ok(['pg_dump', '-d', $coord->connstr('coord'), '-f', $dump], 'pg_dump of the coordinator');
$coord->safe_psql('postgres', 'CREATE DATABASE coord2');
$coord->command_ok(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $coord->connstr('coord2'), '-f', $dump],
	'restored');
$coord->poll_query_until('coord2', q{
	SELECT count(*) = 3 FROM ssp.continuous_views c JOIN pg_depend d ON d.objid = c.mrel AND d.refobjid = c.view
	WHERE d.deptype = 'i'})
  or die 'the restored views over shards did not get their parts back';
is($coord->safe_psql('coord2', 'SELECT n FROM everything'), $coord->safe_psql('coord', 'SELECT n FROM everything'),
	'the restored view over shards reads them');
$coord->safe_psql('coord2', 'DROP VIEW per_minute');
is($coord->safe_psql('coord2', "SELECT count(*) FROM pg_class WHERE relname LIKE 'per_minute%'"), '0',
	'DROP VIEW of a restored view over shards leaves nothing behind');

# DROP VIEW takes the coordinator's tables of the shards with it
$coord->safe_psql('coord', 'DROP VIEW totals');
is($coord->safe_psql('coord', "SELECT count(*) FROM pg_class WHERE relname LIKE 'totals%'"), '0',
	'DROP VIEW of a view over shards leaves nothing behind');

$_->stop for @shards;
done_testing();
