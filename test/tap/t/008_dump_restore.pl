# pg_dump and restore keep streams and continuous views working: the
# restored views, with their rows and offsets, go on from where the dump
# left them, exactly once; aggregates kept by their own states (hll, a
# user-defined one) and a rollup too; and a join of two streams whose
# names, and its schema's, are as long as Postgres allows (63 bytes, some
# of them multibyte), so that its table and buffers have clipped names;
# and a view with an output topic, whose outbox's trigger function pg_dump
# must carry (it left it out before 0.2).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_broker(topics => ['orders:4', 'payments:4', 'region_changes:4']);
my $node = SspTest::new_node('dump');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE orders (id bigint OPTIONS (meta 'key'), region text, amount numeric, ts timestamptz)
	  SERVER kafka OPTIONS (topic 'orders', timestamp 'ts');
	CREATE VIEW by_region WITH (ssp.continuous) AS
	  SELECT region, count(*) AS n, sum(amount) AS total, avg(amount) AS mean,
	         count(DISTINCT amount % 30) AS d FROM orders GROUP BY region;
	CREATE VIEW per_hour WITH (ssp.continuous, ssp.grace = '1 day') AS
	  SELECT ssp.tumble(ts, '1 hour') AS w, count(*) AS n FROM orders GROUP BY w;
	CREATE VIEW latest WITH (ssp.continuous, ssp.primary_key = 'id') AS
	  SELECT id, region, amount FROM orders;
	-- a join of two streams: its buffered rows go through the dump too
	CREATE FOREIGN TABLE payments (id bigint, amount numeric, ts timestamptz)
	  SERVER kafka OPTIONS (topic 'payments', timestamp 'ts');
	CREATE VIEW paid WITH (ssp.continuous) AS
	  SELECT o.region, count(*) AS n, sum(p.amount) AS paid, count(DISTINCT o.id) AS ids FROM orders o JOIN payments p
	    ON p.id = o.id AND p.ts BETWEEN o.ts AND o.ts + interval '1 hour' GROUP BY o.region;
	-- the longest names: its table and buffers are named from clipped names
	CREATE SCHEMA "sssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss";
	CREATE VIEW "sssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss"."éééééééééééééééééééééééééééééé€" WITH (ssp.continuous) AS
	  SELECT o.region, count(*) AS n, sum(p.amount) AS paid FROM orders o JOIN payments p
	    ON p.id = o.id AND p.ts BETWEEN o.ts AND o.ts + interval '1 hour' GROUP BY o.region;
	-- aggregates kept by their own states, and a rollup of them
	CREATE EXTENSION hll;
	CREATE FUNCTION total_sfunc(numeric, numeric) RETURNS numeric LANGUAGE sql IMMUTABLE
	  AS 'SELECT \$1 + COALESCE(\$2, 0)';
	CREATE AGGREGATE total(numeric) (SFUNC = total_sfunc, STYPE = numeric, COMBINEFUNC = numeric_add, INITCOND = '0');
	CREATE VIEW sketch WITH (ssp.continuous) AS
	  SELECT region, hll_add_agg(hll_hash_bigint(id)) AS ids, total(amount) AS total FROM orders GROUP BY region;
	CREATE VIEW overall WITH (ssp.rollup) AS
	  SELECT hll_cardinality(ssp.combine(ids)) AS ids, ssp.combine(total) AS total FROM sketch;
	-- its changes published from an outbox, by a trigger function of its own
	CREATE VIEW published WITH (ssp.continuous, ssp.output_topic = 'region_changes') AS
	  SELECT region, count(*) AS n FROM orders GROUP BY region;
	INSERT INTO orders SELECT g % 100, 'r' || g % 7, g, timestamptz '2024-01-01' + g * interval '1 minute'
	  FROM generate_series(1, 1000) g;
	-- each order's payment comes 30 minutes later; those of the last 50
	-- orders after the restore
	INSERT INTO payments SELECT g % 100, g, timestamptz '2024-01-01 00:30' + g * interval '1 minute'
	  FROM generate_series(1, 950) g;
});
my $long = '"sssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss"."éééééééééééééééééééééééééééééé€"';
SspTest::wait_views($node, 'postgres', 'by_region', 'per_hour', 'latest', 'paid', 'sketch', 'published', $long);
cmp_ok($node->safe_psql('postgres', "SELECT count(*) FROM paid_left WHERE id IN (SELECT g % 100 FROM generate_series(951, 1000) g)"),
	'>=', 50, 'the orders still waiting for their payments are buffered when dumped');
# a view that starts at the latest message has counted nothing, but has
# its offsets, stored when it was made: it keeps only the orders to come
# (appended: its table has no index to wait for)
$node->safe_psql('postgres',
	"CREATE VIEW fresh WITH (ssp.continuous, ssp.start = 'latest') AS SELECT id, amount FROM orders");

my $dump = "${PostgreSQL::Test::Utils::tmp_check}/dump.sql";
$node->command_ok(['pg_dump', '-d', $node->connstr('postgres'), '-f', $dump], 'pg_dump');
my $custom = "${PostgreSQL::Test::Utils::tmp_check}/dump.custom";
$node->command_ok(['pg_dump', '-Fc', '-d', $node->connstr('postgres'), '-f', $custom], 'pg_dump -Fc');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok(['psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('restored'), '-f', $dump],
	'restore');

is($node->safe_psql('restored', 'SELECT count(*) FROM ssp.continuous_views'), '8',
	'the catalog came back');
$node->safe_psql('restored', q{
	INSERT INTO orders SELECT g % 100, 'r' || g % 7, g, timestamptz '2024-01-01' + g * interval '1 minute'
	FROM generate_series(1001, 2000) g;
	INSERT INTO payments SELECT g % 100, g, timestamptz '2024-01-01 00:30' + g * interval '1 minute'
	FROM generate_series(951, 2000) g});
SspTest::wait_views($node, 'restored', 'by_region', 'per_hour', 'latest', 'paid', 'sketch', 'published', 'fresh', $long);

my $all = "SELECT g % 100 AS id, 'r' || g % 7 AS region, g::numeric AS amount,
           timestamptz '2024-01-01' + g * interval '1 minute' AS ts FROM generate_series(1, 2000) g";
is(SspTest::differences($node, 'restored', 'SELECT * FROM by_region',
		"SELECT region, count(*), sum(amount), avg(amount), count(DISTINCT amount % 30) FROM ($all) t GROUP BY region"),
	'0', 'restored grouped view went on exactly once, its distinct values too');
is(SspTest::differences($node, 'restored', 'SELECT * FROM per_hour',
		"SELECT ssp.tumble(ts, '1 hour'), count(*) FROM ($all) t GROUP BY 1"),
	'0', 'restored windowed view went on exactly once');
is(SspTest::differences($node, 'restored', 'SELECT * FROM latest',
		"SELECT * FROM (SELECT DISTINCT ON (id) id, region, amount FROM ($all) t ORDER BY id, amount DESC) l"),
	'0', 'restored keyed view keeps the latest row per key');
is(SspTest::differences($node, 'restored', 'SELECT * FROM paid',
		"SELECT region, count(*), sum(g), count(DISTINCT id) FROM ($all) t, generate_series(1, 2000) g WHERE g = t.amount GROUP BY region"),
	'0', 'restored join of two streams went on exactly once, with the orders buffered before the dump, its distinct values too');
is(SspTest::differences($node, 'restored', 'SELECT region, hll_cardinality(ids), total FROM sketch',
		"SELECT region, hll_cardinality(hll_add_agg(hll_hash_bigint(id))), sum(amount) FROM ($all) t GROUP BY region"),
	'0', 'restored view of hll and a user-defined aggregate went on exactly once');
is(SspTest::differences($node, 'restored', "SELECT * FROM $long", 'SELECT region, n, paid FROM paid'),
	'0', 'restored join with the longest names went on exactly once');
is($node->safe_psql('restored', "SELECT string_agg(relname, ' ' ORDER BY octet_length(relname) DESC, relname) FROM pg_class
	  WHERE relnamespace = 'sssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss'::regnamespace AND relkind = 'r'"),
	'ééééééééééééééééééééééééééééé_left ééééééééééééééééééééééééééééé_mrel éééééééééééééééééééééééééééé_right',
	'its table and buffers are named from its name clipped at a character');
is($node->safe_psql('restored', 'SELECT * FROM overall'),
	$node->safe_psql('restored', "SELECT hll_cardinality(hll_add_agg(hll_hash_bigint(id))), sum(amount) FROM ($all) t"),
	'restored rollup combines the restored states');
is(SspTest::differences($node, 'restored', 'SELECT * FROM published',
		"SELECT region, count(*) FROM ($all) t GROUP BY region"),
	'0', 'restored view with an output topic went on exactly once (its trigger function was in the dump)');
ok($node->poll_query_until('restored', 'SELECT count(*) = 0 FROM published_outbox'),
	'and publishes its changes');
is($node->safe_psql('restored', 'SELECT count(*) FROM fresh'), '1000',
	'the view made to start at the latest message counts only the orders after the dump');
is($node->safe_psql('restored', "SELECT bool_and(status = 'running'), sum(processed) FROM ssp.views"),
	't|19000', 'restored views run: 2,000 messages each, 4,000 for a join, 1,000 for the view started at the latest');

# the dump does not carry the tie between a view and its table; the worker
# puts it back
my ($ret, $out, $err) = $node->psql('restored', 'DROP TABLE by_region_mrel');
like($err, qr/cannot drop table by_region_mrel because view by_region requires it/,
	'the materialisation table is part of its view again');
$node->safe_psql('restored', 'DROP VIEW by_region');
is($node->safe_psql('restored',
		"SELECT count(*) FROM pg_class WHERE relname = 'by_region_mrel'"), '0',
	'and goes with it');

# the restored views keep their queries (NAME_query) by oid: a column they
# read cannot be dropped, and renames, of the stream and of the longest
# schema among them, are harmless
($ret, $out, $err) = $node->psql('restored', 'ALTER FOREIGN TABLE payments DROP COLUMN amount');
like($err, qr/cannot drop column amount of foreign table payments because other objects depend on it/,
	'a column a restored view reads cannot be dropped');
$node->safe_psql('restored', q{
	ALTER FOREIGN TABLE payments RENAME TO payments_renamed;
	ALTER SCHEMA "sssssssssssssssssssssssssssssssssssssssssssssssssssssssssssssss" RENAME TO renamed;
	INSERT INTO orders SELECT g % 100, 'r' || g % 7, g, timestamptz '2024-01-01' + g * interval '1 minute'
	FROM generate_series(2001, 2100) g;
	INSERT INTO payments_renamed SELECT g % 100, g, timestamptz '2024-01-01 00:30' + g * interval '1 minute'
	FROM generate_series(2001, 2100) g});
SspTest::wait_views($node, 'restored', 'paid', 'renamed."éééééééééééééééééééééééééééééé€"');
is(SspTest::differences($node, 'restored', 'SELECT * FROM paid', 'SELECT * FROM paid_query'),
	'0', 'after renames the restored join equals its query over both topics');
is(SspTest::differences($node, 'restored', 'SELECT * FROM renamed."éééééééééééééééééééééééééééééé€"',
		'SELECT region, n, paid FROM paid'),
	'0', 'and so does the view in the renamed schema');

# a restore as the scheduler sees it, step by step: each table's rows
# commit on their own while the views' processes run, ssp's catalog and
# offsets before the views' own tables here (as for views in a schema
# that sorts after ssp), and the indexes at the end.  A view must wait for
# the whole: one started in between merged new groups into its empty
# table, then got the dumped rows beside them (two rows a group, and the
# unique index could not be made); one started before its offsets read
# its topic again into its restored rows.
$node->safe_psql('postgres', 'CREATE DATABASE staged');
my $step = sub {
	my ($name, @args) = @_;
	$node->command_ok(['pg_restore', '-d', $node->connstr('staged'), @args, $custom], "restore: $name");
};
$step->('pre-data', '--section=pre-data');
my @toc = split /\n/, `pg_restore -l $custom`;
my $list = sub {
	my ($file, $match) = @_;
	open(my $fh, '>', $file) or die "$file: $!";
	print $fh map { "$_\n" } grep { $match->($_) } @toc;
	close $fh;
	return $file;
};
my $tmp = $PostgreSQL::Test::Utils::tmp_check;
my $catalog = $list->("$tmp/catalog.list", sub { $_[0] =~ /TABLE DATA ssp continuous_views / });
my $offsets = $list->("$tmp/offsets.list", sub { $_[0] =~ /TABLE DATA ssp (offsets|dead_letters) / });
my $rest = $list->("$tmp/rest.list",
	sub { $_[0] =~ /(TABLE DATA|SEQUENCE SET)/ && $_[0] !~ /TABLE DATA ssp (continuous_views|offsets|dead_letters) / });
$step->('the views\' catalog rows', '-L', $catalog);
ok($node->poll_query_until('staged',
		"SELECT count(*) = 3 FROM ssp.views WHERE view IN ('by_region'::regclass, 'latest'::regclass, 'fresh'::regclass)
		   AND last_error LIKE '%has no offsets in ssp.offsets%'"),
	'views whose offsets are not restored yet, those that counted messages or start at the latest, wait for them, and say so');
$step->('offsets', '-L', $offsets);
ok($node->poll_query_until('staged',
		"SELECT count(*) = 2 FROM ssp.views WHERE view IN ('by_region'::regclass, 'paid'::regclass)
		   AND last_error LIKE '%is not whole: its table % has no index%'"),
	'views whose tables have no index yet wait for them, and say so');
is($node->safe_psql('staged', 'SELECT count(*) FROM by_region_mrel'), '0', 'and applied nothing');
$step->('the views\' tables', '-L', $rest);
$step->('post-data', '--section=post-data');
SspTest::wait_views($node, 'staged', 'by_region', 'per_hour', 'latest', 'paid', 'sketch', 'published', 'fresh');
is($node->safe_psql('staged', 'SELECT count(*), min(amount) FROM fresh'), '1100|1001',
	'the view started at the latest counts the orders after the dump, not the topic again');
for my $v ('by_region', 'per_hour', 'paid', 'published')
{
	is(SspTest::differences($node, 'staged', "SELECT * FROM $v", "SELECT * FROM ${v}_query"),
		'0', "the view $v restored step by step equals its query over the whole topic");
}
is($node->safe_psql('staged', "SELECT count(*) FROM ssp.views WHERE status <> 'running'"), '0',
	'and every view runs');

# the data restored alone, into a database restored with the schema alone
# (pg_restore --schema-only, then --data-only): the views' tables have
# their indexes before their rows, and ssp's catalog and offsets come
# before them (views in a schema that sorts after ssp).  A view that has
# counted messages waits for its table's rows: one started before them
# merged new groups into the empty table, the rows' restore then failed
# on its unique index, and the view had lost all it had counted.
$node->safe_psql('postgres', 'CREATE DATABASE split');
my $split = sub {
	my ($name, @args) = @_;
	$node->command_ok(['pg_restore', '-d', $node->connstr('split'), @args, $custom], "restore apart: $name");
};
$split->('the schema', '--schema-only');
my $catalog_offsets = $list->("$tmp/catalog_offsets.list",
	sub { $_[0] =~ /TABLE DATA ssp (continuous_views|offsets|dead_letters) / });
$split->('the views\' catalog rows and offsets', '-L', $catalog_offsets);
ok($node->poll_query_until('split',
		"SELECT count(*) = 3 FROM ssp.views WHERE view IN ('by_region'::regclass, 'per_hour'::regclass, 'latest'::regclass)
		   AND last_error LIKE '%is not whole: it has counted % messages but its table % has no rows%'"),
	'views that have counted messages wait for their tables\' rows, and say so');
is($node->safe_psql('split', 'SELECT count(*) FROM by_region_mrel'), '0', 'and applied nothing');
$split->('the views\' tables', '-L', $rest);
SspTest::wait_views($node, 'split', 'by_region', 'per_hour', 'latest', 'paid', 'sketch', 'published', 'fresh');
for my $v ('by_region', 'per_hour', 'paid', 'published')
{
	is(SspTest::differences($node, 'split', "SELECT * FROM $v", "SELECT * FROM ${v}_query"),
		'0', "the view $v restored data apart from schema equals its query over the whole topic");
}
is($node->safe_psql('split', "SELECT count(*) FROM ssp.views WHERE status <> 'running'"), '0',
	'and every view runs');

$node->stop;
done_testing();
