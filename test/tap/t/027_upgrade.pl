# ALTER EXTENSION ssp UPDATE, from the first release: ssp 0.1, built from
# its commit in git's history, runs views of every kind with messages
# flowing; then the files of this tree replace it, as a package upgrade
# does.  Before the restart the update script refuses to run (the server
# still has the old library); after it, the views wait, saying why, until
# ALTER EXTENSION ssp UPDATE, and then go on: every view equals its query
# over the whole topics, so no message was lost or counted twice.  Then
# the updated database is compared with a fresh install of this version
# holding the same streams and views: pg_dump --schema-only of the two is
# the same.  (sql/extension.sql compares the extension's own objects, which
# pg_dump leaves out, after an update and after a fresh install.)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

# the releases, and the commit of each (also in README.md's changelog)
my %release = ('0.1' => '225d2ebbdcd93e2ddaf5381d71ac38e65cbe0955');
my $current = '0.3';

# 0.1 is built from git's history: a tarball of the tree, or a shallow
# clone, has none to build it from
plan skip_all => "ssp 0.1's commit ($release{'0.1'}) is not in this tree's git history "
  . '(a tarball, or a shallow clone): the upgrade from it cannot be tested; run make test in a full clone'
  unless SspTest::has_commit($release{'0.1'});

my $k = SspTest::start_any_broker(
	topics => [ 'orders:4', 'payments:4', 'customers:4', 'revenue_changes:4', 'refunds:2' ]);
my $root = SspTest::install_version('0.1', $release{'0.1'});
my $node = SspTest::new_node('upgrade', install => $root);
is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'ssp'"),
	'0.1', 'ssp 0.1 installed from its commit');

# streams and views of every kind: the same SQL makes them in both databases
my $schema = qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$k->{bootstrap}');
	CREATE FOREIGN TABLE orders (id bigint OPTIONS (meta 'key'), region text, amount numeric, ts timestamptz)
	  SERVER kafka OPTIONS (topic 'orders', timestamp 'ts');
	CREATE FOREIGN TABLE payments (id bigint, amount numeric, ts timestamptz)
	  SERVER kafka OPTIONS (topic 'payments', timestamp 'ts');
	CREATE FOREIGN TABLE customer_updates (id bigint OPTIONS (meta 'key'), tier text, o bigint OPTIONS (meta 'offset'))
	  SERVER kafka OPTIONS (topic 'customers');
	CREATE TABLE regions (region text PRIMARY KEY, zone text);
	-- aggregates, its changes published (the outbox's trigger function)
	CREATE VIEW revenue WITH (ssp.continuous, ssp.output_topic = 'revenue_changes') AS
	  SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region;
	CREATE VIEW revenue_low_high WITH (ssp.rollup) AS
	  SELECT region < 'r2' AS low, ssp.combine(n) AS n, ssp.combine(total) AS total
	  FROM revenue GROUP BY 1;
	-- windows: tumbling and hopping (sliding ones are relative to now())
	CREATE VIEW per_minute WITH (ssp.continuous, ssp.grace = '1 day') AS
	  SELECT ssp.tumble(ts, '1 minute') AS minute, region, count(*) AS n, avg(amount) AS mean
	  FROM orders GROUP BY minute, region;
	CREATE VIEW hopping WITH (ssp.continuous, ssp.grace = '1 day') AS
	  SELECT ssp.hop(ts, '5 minutes', '1 minute') AS w, count(*) AS n FROM orders GROUP BY w;
	-- the window after another key: the update makes its index anew, the window first
	CREATE VIEW regional WITH (ssp.continuous, ssp.grace = '1 day') AS
	  SELECT region, ssp.tumble(ts, '1 minute') AS minute, count(*) AS n FROM orders GROUP BY region, minute;
	-- rows: filtered, and kept by key
	CREATE VIEW big WITH (ssp.continuous) AS SELECT id, amount FROM orders WHERE amount > 900;
	CREATE VIEW customers WITH (ssp.continuous, ssp.primary_key = 'id') AS
	  SELECT id, tier FROM customer_updates;
	-- joins: with a table, and of two streams
	CREATE VIEW by_zone WITH (ssp.continuous) AS
	  SELECT r.zone, count(*) AS n FROM orders o JOIN regions r ON r.region = o.region GROUP BY r.zone;
	CREATE VIEW paid WITH (ssp.continuous) AS
	  SELECT o.region, count(*) AS n, sum(p.amount) AS paid FROM orders o JOIN payments p
	    ON p.id = o.id AND p.ts BETWEEN o.ts AND o.ts + interval '1 hour' GROUP BY o.region;
	-- two workers
	CREATE VIEW parallel WITH (ssp.continuous, ssp.parallelism = 2) AS
	  SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region;
	-- one group, over a stream that stays quiet: no batch, and so (before
	-- 0.3) no row, where its query has one
	CREATE FOREIGN TABLE refunds (id bigint, amount numeric) SERVER kafka OPTIONS (topic 'refunds');
	CREATE VIEW refunded WITH (ssp.continuous) AS SELECT count(*) AS n, sum(amount) AS total FROM refunds;
};
my @views = qw(revenue per_minute hopping regional big customers by_zone paid parallel refunded);
$node->safe_psql('postgres', $schema);
# what users may do to the views' tables, and the update keeps: an index of
# their own on a window's column (the update drops ssp's, not this one),
# settings of the unique index that the update makes anew in another order
# (a fresh install gets the same below, on its index)
my $users = sub {
	my ($unique) = @_;
	return qq{
		CREATE INDEX users_minute ON per_minute_mrel (minute);
		ALTER INDEX $unique SET (fillfactor = 70);
		ALTER TABLE regional_mrel CLUSTER ON $unique;
	};
};
$node->safe_psql('postgres', $users->('regional_mrel_region_minute_idx'));
$node->safe_psql('postgres', q{INSERT INTO regions VALUES ('r0', 'a'), ('r1', 'a'), ('r2', 'b'), ('r3', 'b'), ('r4', 'c')});

# produce($from, $to): orders $from..$to, payments for most, tier changes
my $produced = 0;
sub produce
{
	my ($db, $from, $to) = @_;
	$node->safe_psql($db, qq{
		INSERT INTO orders SELECT g, 'r' || g % 5, (g * 37) % 1000, '2026-01-01'::timestamptz + g * interval '1 second'
		  FROM generate_series($from, $to) g;
		INSERT INTO payments SELECT g, (g * 37) % 1000, '2026-01-01'::timestamptz + g * interval '1 second' + interval '30 s'
		  FROM generate_series($from, $to) g WHERE g % 10 <> 0;
		INSERT INTO customer_updates (id, tier) SELECT g % 50, 't' || g % 7 FROM generate_series($from, $to, 3) g;
	});
	$produced += ($to - $from + 1);
}

# check($db, $label): every view equals its query over the whole topics
sub check
{
	my ($db, $label) = @_;
	SspTest::wait_views($node, $db, @views);
	my %truth = (
		revenue => 'SELECT region, count(*), sum(amount) FROM orders GROUP BY region',
		revenue_low_high => q{SELECT region < 'r2', count(*), sum(amount) FROM orders GROUP BY 1},
		per_minute => q{SELECT ssp.tumble(ts, '1 minute'), region, count(*), avg(amount) FROM orders GROUP BY 1, 2},
		hopping => q{SELECT w, count(*) FROM orders, ssp.hop_windows(ts, '5 minutes', '1 minute') w GROUP BY w},
		regional => q{SELECT region, ssp.tumble(ts, '1 minute'), count(*) FROM orders GROUP BY 1, 2},
		big => 'SELECT id, amount FROM orders WHERE amount > 900',
		customers => 'SELECT * FROM (SELECT DISTINCT ON (id) id, tier FROM customer_updates ORDER BY id, o DESC) l',
		by_zone => 'SELECT r.zone, count(*) FROM orders o JOIN regions r ON r.region = o.region GROUP BY r.zone',
		paid => q{SELECT o.region, count(*), sum(p.amount) FROM orders o JOIN payments p
			ON p.id = o.id AND p.ts BETWEEN o.ts AND o.ts + interval '1 hour' GROUP BY o.region},
		parallel => 'SELECT region, count(*), sum(amount) FROM orders GROUP BY region');
	my %cols = (revenue => 'region, n, total', revenue_low_high => 'low, n, total',
		per_minute => 'minute, region, n, mean', hopping => 'w, n', regional => 'region, minute, n',
		big => 'id, amount', customers => 'id, tier', by_zone => 'zone, n', paid => 'region, n, paid',
		parallel => 'region, n, total');
	for my $v (sort keys %truth)
	{
		is(SspTest::differences($node, $db, "SELECT $cols{$v} FROM $v", $truth{$v}),
			'0', "$label: $v equals its query over the whole topics");
	}
}

produce('postgres', 1, 3000);
check('postgres', 'on 0.1');
is($node->safe_psql('postgres', 'SELECT count(*) FROM refunded'), '0',
	'on 0.1, a view of one group that has applied no batch has no row');

# the new version's files, with the old library still loaded
SspTest::install_current($root);
my ($rc, $out, $err) = $node->psql('postgres', 'ALTER EXTENSION ssp UPDATE');
like($err, qr/the ssp library loaded by this server is older than version 0\.2.*The server has loaded version 0\.1.*Restart PostgreSQL after installing the new version of ssp/s,
	'before the restart, the update script refuses to run with the old library');
is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'ssp'"),
	'0.1', 'and the extension is still 0.1');
produce('postgres', 3001, 4000);
SspTest::wait_views($node, 'postgres', @views);

# restarted on the new library: the views wait for the update, saying why
$node->restart;
ok($node->poll_query_until('postgres', qq{
		SELECT bool_and(status = 'waiting for extension update'
		                AND last_error LIKE '%library is version $current, but the extension in this database is version 0.1%ALTER EXTENSION ssp UPDATE%')
		       AND count(*) = ${\ scalar(@views)}
		FROM ssp.views}),
	'on the new library, every view waits for ALTER EXTENSION ssp UPDATE and says so in ssp.views');
my $processed = $node->safe_psql('postgres', 'SELECT sum(processed) FROM ssp.continuous_views');
produce('postgres', 4001, 5000);
($rc, $out, $err) = $node->psql('postgres',
	'CREATE VIEW v2 WITH (ssp.continuous) AS SELECT region, count(*) FROM orders GROUP BY region');
like($err, qr/the ssp library is version $current, but the extension in this database is version 0.1.*ALTER EXTENSION ssp UPDATE/s,
	'a new continuous view is refused until the update');
sleep 2;
is($node->safe_psql('postgres', 'SELECT sum(processed) FROM ssp.continuous_views'), $processed,
	'while they wait, no view applies anything');
ok($node->log_contains("continuous views of database \"postgres\" wait: the ssp library is version $current, but the extension there is version 0.1"),
	'the log says why the views wait');

# the update, with messages flowing: another session inserts orders, 50 at a
# time, while it runs
my $psql = $node->installed_command('psql');
my $connstr = $node->connstr('postgres');
my $flow = IPC::Run::start([ 'bash', '-c', qq{
	for i in \$(seq 0 19); do
		'$psql' -X -q -v ON_ERROR_STOP=1 -d "$connstr" -c "INSERT INTO orders
		  SELECT g, 'r' || g % 5, (g * 37) % 1000, '2026-01-01'::timestamptz + g * interval '1 second'
		  FROM generate_series(5001 + \$i * 50, 5050 + \$i * 50) g" || exit 1
		sleep 0.1
	done} ]);
$node->safe_psql('postgres', 'ALTER EXTENSION ssp UPDATE');
ok($flow->finish, 'orders went on being inserted while the update ran');
$produced += 1000;
is($node->safe_psql('postgres', "SELECT extversion, current_setting('ssp.library_version') FROM pg_extension WHERE extname = 'ssp'"),
	"$current|$current", "updated to $current");
produce('postgres', 6001, 7000);
check('postgres', "after ALTER EXTENSION ssp UPDATE to $current");
is($node->safe_psql('postgres', 'SELECT n, total IS NULL FROM refunded'), '0|t',
	'the update gave it the row its query has over no rows');
is($node->safe_psql('postgres', q{SELECT string_agg(format('%s: %s, %s', view, status, last_error), '; ' ORDER BY view::text)
		FROM ssp.views WHERE status NOT IN ('running', 'catching up') OR last_error IS NOT NULL}),
	'', 'every view runs again, without an error');

# what revenue published: each key's changes chained, across the update
ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM revenue_outbox'), 'revenue published every change');
# (in a schema of their own, which the dumps below leave out)
$node->safe_psql('postgres', 'CREATE SCHEMA readback; ALTER DATABASE postgres SET search_path = readback, public');
SspTest::read_published($node, 'postgres', 'revenue_changes');
SspTest::check_published($node, 'public.revenue', 'across the update: ');
$node->safe_psql('postgres', 'ALTER DATABASE postgres RESET search_path');

# a fresh database of this version with the same streams and views
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION ssp');
$node->safe_psql('fresh', $schema);
$node->safe_psql('fresh', $users->('regional_mrel_minute_region_idx'));
my ($updated, $fresh) = (schema_dump('postgres'), schema_dump('fresh'));
like(PostgreSQL::Test::Utils::slurp_file($updated), qr/CREATE FUNCTION public\.revenue_changes\(\)/,
	"the dump has the outbox's trigger function");
is(`diff -u '$fresh' '$updated'`, '',
	'pg_dump --schema-only: the updated database is a fresh install with the same views');

# the orders the view revenue counted, against those produced
my $applied = $node->safe_psql('postgres', 'SELECT sum(n) FROM public.revenue');
SspTest::report(faults => 1, produced => $produced, applied => $applied,
	lost => $produced > $applied ? $produced - $applied : 0,
	twice => $applied > $produced ? $applied - $produced : 0, broker => $k->{kind});
done_testing();

# schema_dump($db): pg_dump --schema-only (but the tables read back from the
# output topic), without its comment lines, in a file; returns its name
sub schema_dump
{
	my ($db) = @_;
	my ($stdout, $stderr);
	IPC::Run::run([ $node->installed_command('pg_dump'), '--schema-only', '--exclude-schema=readback',
			'-d', $node->connstr($db) ],
		'>', \$stdout, '2>', \$stderr) or die "pg_dump $db: $stderr";
	$stdout =~ s/^(--|\\restrict |\\unrestrict ).*\n//mg;
	$stdout =~ s/\n{3,}/\n\n/g;
	my $file = "$PostgreSQL::Test::Utils::tmp_check/dump-$db.sql";
	PostgreSQL::Test::Utils::append_to_file($file, $stdout);
	return $file;
}
