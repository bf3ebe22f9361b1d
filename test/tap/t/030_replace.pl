# Changing a continuous view's query without a gap: CREATE OR REPLACE
# VIEW ... WITH (ssp.continuous) builds the new definition beside the old
# one, which keeps serving, and swaps them in one transaction once the new
# one has caught up.  Orders flow and a session reads the view in a loop
# the whole time: it never sees a missing relation, an error, an empty
# view or a total going back, and the view ends equal to its new query.
# Then what is refused: another name or type for a column, a view that is
# not a continuous one, a role that does not own it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use SspTest;

my $broker = SspTest::start_any_broker(topics => ['orders:4']);
my $node = SspTest::new_node('replace', conf => "ssp.broker_timeout = '5s'\n");
my $brokers = $broker->{bootstrap};

$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$brokers');
	CREATE FOREIGN TABLE orders (order_id bigint, region text, amount numeric)
	  SERVER kafka OPTIONS (topic 'orders');
	CREATE TABLE t (order_id bigint, region text, amount numeric);
	CREATE VIEW by_region WITH (ssp.continuous, ssp.commit_interval = '20ms') AS
	  SELECT region, count(*) AS n FROM orders GROUP BY region;
	-- a user's view over it: it must survive the replacement
	CREATE VIEW busy AS SELECT region FROM by_region WHERE n > 100;
});
my $gen = "SELECT g, 'r' || g % 7, (g * 37) % 100 FROM generate_series(1, 5000) g";
$node->safe_psql('postgres', "INSERT INTO orders $gen; INSERT INTO t $gen");
SspTest::wait_views($node, 'postgres', 'by_region');
my $produced = 5000;

my $psql = $node->installed_command('psql');
my $connstr = $node->connstr('postgres');
# orders flow: 50 every 50 ms
my $rounds = 200;
my $flow = IPC::Run::start([ 'bash', '-c', qq{
	for i in \$(seq 0 @{[$rounds - 1]}); do
		from=\$((5001 + \$i * 50)); to=\$((\$from + 49))
		'$psql' -X -q -v ON_ERROR_STOP=1 -d "$connstr" -c "
		  INSERT INTO orders SELECT g, 'r' || g % 7, (g * 37) % 100 FROM generate_series(\$from, \$to) g;
		  INSERT INTO t SELECT g, 'r' || g % 7, (g * 37) % 100 FROM generate_series(\$from, \$to) g" || exit 1
		sleep 0.05
	done} ]);
# a reader in a loop: the view's total, or the error
my $seen = "$PostgreSQL::Test::Utils::tmp_check/replace_reads.txt";
my $reader = IPC::Run::start([ 'bash', '-c', qq{
	for i in \$(seq 1 400); do
		'$psql' -X -At -d "$connstr" -c "SELECT coalesce(sum(n), 0) FROM by_region" 2>&1
		sleep 0.02
	done >'$seen'} ]);

# in the transaction of the replacement: no worker can catch up and swap
# before the check (a fast one did, between two statements)
is($node->safe_psql('postgres', q{
	BEGIN;
	CREATE OR REPLACE VIEW by_region WITH (ssp.continuous, ssp.commit_interval = '20ms') AS
	  SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region;
	SELECT replaces::text FROM ssp.continuous_views WHERE view = 'by_region_next'::regclass;
	COMMIT}),
	'by_region', 'the new definition is built beside the old one, as by_region_next');
ok($node->poll_query_until('postgres', q{
		SELECT count(*) = 0 FROM ssp.continuous_views WHERE replaces IS NOT NULL}),
	'once caught up, it took the old one\'s place');
ok($flow->finish, 'orders flowed meanwhile');
$produced = 5000 + $rounds * 50;
ok($reader->finish, 'the reader read meanwhile');

SspTest::wait_views($node, 'postgres', 'by_region');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM by_region',
		'SELECT region, count(*), sum(amount) FROM t GROUP BY region'), '0',
	'the view equals its new query over every order');
is($node->safe_psql('postgres', 'SELECT sum(n) FROM by_region'), $produced, "$produced orders, each counted once");
is($node->safe_psql('postgres', q{
		SELECT to_regclass('by_region_next') IS NULL AND to_regclass('by_region_mrel') IS NOT NULL
		   AND (SELECT mrel::text FROM ssp.continuous_views WHERE view = 'by_region'::regclass) = 'by_region_mrel'}),
	't', 'the new definition\'s parts have the old names, and no by_region_next is left');
is($node->safe_psql('postgres', q{
		SELECT count(*) FROM pg_class WHERE relname LIKE 'by\_region\_%' AND relkind IN ('r', 'v')}),
	'2', 'the old definition\'s parts are gone: by_region has a table and a query, no more');
is($node->safe_psql('postgres', 'SELECT count(*) FROM busy'),
	$node->safe_psql('postgres', 'SELECT count(*) FROM by_region WHERE n > 100'), 'the view over it still works');

# what the reader saw
open(my $fh, '<', $seen) or die "$seen: $!";
my @reads = map { s/\s+$//r } <$fh>;
close($fh);
my @bad = grep { !/^\d+$/ } @reads;
is(scalar(@bad), 0, 'the reader never got an error or a missing relation') or diag(join("\n", @bad[0 .. ($#bad < 5 ? $#bad : 5)]));
my @numbers = grep { /^\d+$/ } @reads;
cmp_ok(scalar(@numbers), '>', 100, scalar(@numbers) . ' reads');
my ($empty, $back) = (0, 0);
for my $i (0 .. $#numbers)
{
	$empty++ if $numbers[$i] == 0;
	$back++ if $i > 0 && $numbers[$i] < $numbers[$i - 1];
}
is("$empty $back", '0 0', 'it never saw the view empty, nor its total go back');
cmp_ok($numbers[0], '>=', 5000, 'the first reads saw the old definition');
is($node->safe_psql('postgres', q{SELECT count(*) FROM ssp.views WHERE status = 'running'}), '1',
	'one view, running');

# refused
my ($rc, $out, $err) = $node->psql('postgres', q{
	CREATE OR REPLACE VIEW by_region WITH (ssp.continuous) AS
	  SELECT region AS area, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region});
like($err, qr/cannot change name of column "region" of continuous view "by_region" to "area"/,
	'a column cannot change its name');
($rc, $out, $err) = $node->psql('postgres', q{
	CREATE OR REPLACE VIEW by_region WITH (ssp.continuous) AS
	  SELECT region, count(*)::int AS n, sum(amount) AS total FROM orders GROUP BY region});
like($err, qr/cannot change data type of column "n" of continuous view "by_region" from bigint to integer/,
	'nor its type');
($rc, $out, $err) = $node->psql('postgres', q{
	CREATE OR REPLACE VIEW by_region WITH (ssp.continuous) AS
	  SELECT region, count(*) AS n FROM orders GROUP BY region});
like($err, qr/cannot drop columns from continuous view "by_region"/, 'nor can columns go');
is($node->safe_psql('postgres', q{SELECT count(*) FROM ssp.continuous_views}), '1',
	'a refused replacement leaves nothing behind');
($rc, $out, $err) = $node->psql('postgres', q{
	CREATE OR REPLACE VIEW busy WITH (ssp.continuous) AS SELECT region, count(*) AS n FROM orders GROUP BY region});
like($err, qr/"busy" is not a continuous view/, 'a plain view is not replaced by a continuous one');
$node->safe_psql('postgres', 'CREATE ROLE other; GRANT SELECT ON orders TO other; GRANT CREATE ON SCHEMA public TO other');
($rc, $out, $err) = $node->psql('postgres', q{
	SET ROLE other;
	CREATE OR REPLACE VIEW by_region WITH (ssp.continuous) AS
	  SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region});
like($err, qr/must be owner of view by_region/, 'only its owner replaces it');

# replaced twice before the first has caught up: the second wins
$node->safe_psql('postgres', 'SELECT ssp.pause(\'by_region\')');
$node->safe_psql('postgres', q{
	CREATE OR REPLACE VIEW by_region WITH (ssp.continuous, ssp.batch_size = 10) AS
	  SELECT region, count(*) AS n, sum(amount) AS total, max(amount) AS top FROM orders GROUP BY region;
	CREATE OR REPLACE VIEW by_region WITH (ssp.continuous) AS
	  SELECT region, count(*) AS n, sum(amount) AS total, min(amount) AS bottom FROM orders GROUP BY region});
# (the second may have caught up and taken the place already: none pending)
cmp_ok($node->safe_psql('postgres', q{SELECT count(*) FROM ssp.continuous_views WHERE replaces IS NOT NULL}),
	'<=', 1, 'a replacement replaced: one pending at most, not two');
ok($node->poll_query_until('postgres', q{
		SELECT count(*) = 0 FROM ssp.continuous_views WHERE replaces IS NOT NULL}),
	'the last one took the place of the paused view');
SspTest::wait_views($node, 'postgres', 'by_region');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM by_region',
		'SELECT region, count(*), sum(amount), min(amount) FROM t GROUP BY region'), '0',
	'and equals its query');

SspTest::report(faults => 2, produced => $produced,
	applied => $node->safe_psql('postgres', 'SELECT sum(n) FROM by_region'),
	lost => 0, twice => 0, broker => $broker->{kind});

$node->stop;
done_testing();
