# Moving partitions between shards: a view read by two servers (ssp.shard
# = '0/2', '1/2') over a topic of 12 partitions is re-sharded to three
# while it catches up: every shard paused, ssp.handover on each, a third
# server's view created paused, ssp.reshard on all three with the
# hand-overs, resumed; the view over the shards is made again over three.
# Each partition changes hands at the offset its old owner stopped at, the
# old owners' rows stay readable, and the view over the shards equals the
# plain query over every message, counts (two workers on each shard) and
# a tumbling window with ssp.emit = 'final'.  Partitions 3 and 9 run ten minutes behind the
# others in event time, so the shard that takes them over has a watermark
# ahead of them: their next events must not be late there.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_any_broker(topics => ['orders:12']);
my @servers = map { SspTest::new_node("server$_") } 0 .. 2;
my $coord = $servers[0];

my $stream = qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE orders (id bigint, region text, amount numeric, ts timestamptz,
	    p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'orders', timestamp 'ts');
};
my %views = (
	# two workers on each shard, sharing its partitions
	totals => [ q{SELECT region, count(*) AS n, sum(amount) AS total, avg(amount) AS mean
	              FROM orders GROUP BY region}, ', ssp.parallelism = 2' ],
	per_minute => [ q{SELECT ssp.tumble(ts, '1 minute') AS w, region, count(*) AS n
	                  FROM orders GROUP BY w, region},
		", ssp.emit = 'final', ssp.idle_timeout = '1 hour'" ],
);
my @names = sort keys %views;

sub create_views
{
	my ($node, $shard, $then) = @_;
	# $then: in the same transaction
	$node->safe_psql('postgres', 'BEGIN;' . join('', map { qq{
		CREATE VIEW $_ WITH (ssp.continuous, ssp.shard = '$shard', ssp.commit_interval = '50ms',
		    ssp.batch_size = 300$views{$_}[1]) AS $views{$_}[0];
	} } @names) . ($then // '') . 'COMMIT;');
}

for my $k (0 .. 1)
{
	$servers[$k]->safe_psql('postgres', $stream);
	create_views($servers[$k], "$k/2");
}
$servers[2]->safe_psql('postgres', $stream);

$coord->safe_psql('postgres', 'CREATE DATABASE coord');
$coord->safe_psql('coord', "CREATE EXTENSION ssp; CREATE EXTENSION postgres_fdw; $stream
	CREATE TABLE truth (id bigint, region text, amount numeric, ts timestamptz, p int);");
for my $k (0 .. 2)
{
	$coord->safe_psql('coord', sprintf(q{
		CREATE SERVER shard%d FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '%s', port '%s', dbname 'postgres');
		CREATE USER MAPPING FOR CURRENT_USER SERVER shard%d;
	}, $k, $servers[$k]->host, $servers[$k]->port, $k));
}

sub views_over
{
	my ($servers) = @_;
	$coord->safe_psql('coord', join('', map { qq{
		DROP VIEW IF EXISTS $_;
		CREATE VIEW $_ WITH (ssp.continuous, ssp.shards = '$servers'@{[ $views{$_}[1] =~ s/, ssp.parallelism = \d+//r ]})
		  AS $views{$_}[0];
	} } @names));
}
views_over('shard0, shard1');

# orders from id $from, partition id % 12, a second of event time apart,
# partitions 3 and 9 ten minutes behind
sub orders
{
	my ($from, $n) = @_;
	my $gen = "SELECT g, 'r' || g % 7, (g % 100)::numeric + 0.5,
	             timestamptz '2024-01-01' + g * interval '1 s' - CASE WHEN g % 12 IN (3, 9) THEN interval '10 minutes' ELSE interval '0' END,
	             (g % 12)::int
	           FROM generate_series($from, $from + $n - 1) g";
	return "INSERT INTO orders (id, region, amount, ts, p) $gen; INSERT INTO truth $gen";
}

sub feed
{
	$coord->safe_psql('coord', orders(@_));
}

sub check
{
	my ($what, @shards) = @_;
	SspTest::wait_views($_, 'postgres', @names) for @shards;
	is(SspTest::differences($coord, 'coord', 'SELECT * FROM totals',
			'SELECT region, count(*), sum(amount), avg(amount) FROM truth GROUP BY region'),
		'0', "$what: the view over the shards equals the query over every message");
	my $closed = "(SELECT min(mx) FROM (SELECT max(ts) AS mx FROM truth GROUP BY p) x)";
	is(SspTest::differences($coord, 'coord', 'SELECT * FROM per_minute', qq{
			SELECT ssp.tumble(ts, '1 minute'), region, count(*) FROM truth
			WHERE ssp.tumble(ts, '1 minute') + interval '1 minute' <= $closed GROUP BY 1, 2}),
		'0', "$what: emit final shows the windows every shard has closed, whole");
	isnt($coord->safe_psql('coord', 'SELECT count(*) FROM per_minute'), '0', "$what: and some are closed");
	is(join(',', map { $_->safe_psql('postgres', 'SELECT sum(late_events) FROM ssp.views') } @shards),
		join(',', map { '0' } @shards), "$what: no event was late on any shard");
}

feed(1, 6000);
check('two shards', @servers[0 .. 1]);

# the re-shard, while 30,000 more orders flow (1,000 every 0.1 s)
my $psql = $coord->installed_command('psql');
my $connstr = $coord->connstr('coord');
my $flow = IPC::Run::start([ 'bash', '-c', join('', map {
	sprintf(qq{'%s' -X -q -v ON_ERROR_STOP=1 -d "%s" -c "%s" || exit 1; sleep 0.1\n}, $psql, $connstr, orders(5001 + $_ * 1000, 1000))
	} 1 .. 30) ]);
$servers[0]->poll_query_until('postgres', "SELECT processed > 6000 FROM ssp.views WHERE view = 'totals'::regclass")
  or die 'shard 0 did not start on the new orders';
$_->safe_psql('postgres', join('', map { "SELECT ssp.pause('$_');" } @names)) for @servers[0 .. 1];
my %handover;
for my $v (@names)
{
	$handover{$v} = join(' || ', map { "'" . $_->safe_psql('postgres', "SELECT ssp.handover('$v')") . "'::jsonb" }
		@servers[0 .. 1]);
}
note 'hand-over of totals: ' . $coord->safe_psql('coord', "SELECT $handover{totals}");
isnt($coord->safe_psql('coord', "SELECT count(*) FROM jsonb_array_elements($handover{totals}) e
		WHERE (e->>'next_offset')::bigint < 3000"), '0', 'the hand-over came mid-stream');

# what is refused: resuming a shard that handed its partitions over, a
# hand-over without every old shard's, one that is not this round's
my ($ret, $out, $err) = $servers[0]->psql('postgres', "SELECT ssp.resume('totals')");
like($err, qr/continuous view "totals" has handed its partitions over/, 'a shard handed over is not resumed');
($ret, $out, $err) = $servers[0]->psql('postgres', sprintf("SELECT ssp.reshard('totals', '0/3', '%s')",
		$servers[0]->safe_psql('postgres', "SELECT ssp.handover('totals')")));
like($err, qr/the hand-overs have no offset for partition 3 of topic "orders"/,
	'a hand-over missing an old shard\'s partitions is refused');
($ret, $out, $err) = $servers[0]->psql('postgres', "SELECT ssp.reshard('totals', '0/3', (
	SELECT jsonb_agg(CASE WHEN (e->>'partition')::int = 0 THEN jsonb_set(e, '{next_offset}', '1') ELSE e END)
	FROM jsonb_array_elements($handover{totals}) e))");
like($err, qr/the hand-over of partition 0 of topic "orders" says offset 1, but continuous view "totals" stopped at/,
	'a hand-over that is not this round\'s is refused');

# the third server's views, paused from the start, then every server's new shard
create_views($servers[2], '2/3', join('', map { "SELECT ssp.pause('$_');" } @names));
for my $k (0 .. 2)
{
	$servers[$k]->safe_psql('postgres', join('', map { "SELECT ssp.reshard('$_', '$k/3', $handover{$_});" } @names)
		. join('', map { "SELECT ssp.resume('$_');" } @names));
}
views_over('shard0, shard1, shard2');
ok($flow->finish, 'the orders flowed meanwhile');
feed(36001, 3000);
check('re-sharded from two servers to three', @servers);
is($servers[2]->safe_psql('postgres',
		"SELECT string_agg(DISTINCT partition::text, ',' ORDER BY partition::text) FROM ssp.offsets WHERE view = 'totals'::regclass"),
	'11,2,5,8', 'the third shard read its partitions only');
is($servers[2]->safe_psql('postgres',
		"SELECT string_agg(part::text, ',' ORDER BY part) FROM ssp.worker_status() WHERE view = 'totals'::regclass::oid"),
	'0,1', 'two workers share its partitions');

my ($lost, $twice) = split /\|/, $coord->safe_psql('coord', q{
	SELECT coalesce(sum(greatest(e.n - coalesce(v.n, 0), 0)), 0), coalesce(sum(greatest(coalesce(v.n, 0) - e.n, 0)), 0)
	FROM (SELECT region, count(*) AS n FROM truth GROUP BY 1) e FULL JOIN totals v USING (region)});
SspTest::report(faults => 1, produced => $coord->safe_psql('coord', 'SELECT count(*) FROM truth'),
	applied => $coord->safe_psql('coord', 'SELECT sum(n) FROM totals'),
	dead_letters => 0, lost => $lost, twice => $twice, broker => $broker->{kind});

$_->stop for @servers;
done_testing();
