# pg_upgrade from one cluster to another keeps continuous views running
# exactly once: views of several kinds run on the old cluster with messages
# flowing; pg_upgrade --check, then pg_upgrade itself, copy it to a new
# cluster (both Postgres 15 here: what is shown is the procedure: ssp in
# the new cluster's shared_preload_libraries, no worker running while
# pg_upgrade restores the schema); on the new cluster the views go on from
# their offsets, equal to their queries over the whole topics, and their
# parts are part of them again (pg_upgrade, like pg_dump, keeps no
# dependencies that ssp recorded).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $k = SspTest::start_any_broker(topics => [ 'orders:4', 'payments:4', 'revenue_changes:4' ]);
my $old = SspTest::new_node('old');
$old->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$k->{bootstrap}');
	CREATE FOREIGN TABLE orders (id bigint OPTIONS (meta 'key'), region text, amount numeric, ts timestamptz)
	  SERVER kafka OPTIONS (topic 'orders', timestamp 'ts');
	CREATE FOREIGN TABLE payments (id bigint, amount numeric, ts timestamptz)
	  SERVER kafka OPTIONS (topic 'payments', timestamp 'ts');
	CREATE VIEW revenue WITH (ssp.continuous, ssp.output_topic = 'revenue_changes') AS
	  SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region;
	CREATE VIEW per_minute WITH (ssp.continuous, ssp.grace = '1 day') AS
	  SELECT ssp.tumble(ts, '1 minute') AS minute, count(*) AS n FROM orders GROUP BY minute;
	CREATE VIEW latest WITH (ssp.continuous, ssp.primary_key = 'id') AS SELECT id, region, amount FROM orders;
	CREATE VIEW paid WITH (ssp.continuous) AS
	  SELECT o.region, count(*) AS n, sum(p.amount) AS paid FROM orders o JOIN payments p
	    ON p.id = o.id AND p.ts BETWEEN o.ts AND o.ts + interval '1 hour' GROUP BY o.region;
	CREATE DATABASE other;
});
$old->safe_psql('other', 'CREATE EXTENSION ssp');
$old->safe_psql('other', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$k->{bootstrap}');
	CREATE FOREIGN TABLE orders (id bigint, region text, amount numeric) SERVER kafka OPTIONS (topic 'orders');
	CREATE VIEW by_region WITH (ssp.continuous) AS SELECT region, count(*) AS n FROM orders GROUP BY region;
});
my @views = qw(revenue per_minute latest paid);

my $produced = 0;
sub produce
{
	my ($node, $from, $to) = @_;
	$node->safe_psql('postgres', qq{
		INSERT INTO orders SELECT g, 'r' || g % 5, g % 1000, '2026-01-01'::timestamptz + g * interval '1 second'
		  FROM generate_series($from, $to) g;
		INSERT INTO payments SELECT g, g % 1000, '2026-01-01'::timestamptz + g * interval '1 second' + interval '20 s'
		  FROM generate_series($from, $to) g WHERE g % 4 <> 0;
	});
	$produced += $to - $from + 1;
}

sub check
{
	my ($node, $label) = @_;
	SspTest::wait_views($node, 'postgres', @views);
	SspTest::wait_views($node, 'other', 'by_region');
	my %truth = (
		'region, n, total FROM revenue' => 'SELECT region, count(*), sum(amount) FROM orders GROUP BY region',
		'minute, n FROM per_minute' => q{SELECT ssp.tumble(ts, '1 minute'), count(*) FROM orders GROUP BY 1},
		'id, region, amount FROM latest' => 'SELECT * FROM (SELECT DISTINCT ON (id) id, region, amount FROM orders ORDER BY id) l',
		'region, n, paid FROM paid' => q{SELECT o.region, count(*), sum(p.amount) FROM orders o JOIN payments p
			ON p.id = o.id AND p.ts BETWEEN o.ts AND o.ts + interval '1 hour' GROUP BY o.region});
	for my $v (sort keys %truth)
	{
		is(SspTest::differences($node, 'postgres', "SELECT $v", $truth{$v}), '0',
			"$label: " . ($v =~ s/.* FROM //r) . ' equals its query over the whole topics');
	}
	is(SspTest::differences($node, 'other', 'SELECT region, n FROM by_region',
			'SELECT region, count(*) FROM orders GROUP BY region'),
		'0', "$label: the view of the second database too");
}

produce($old, 1, 2000);
check($old, 'on the old cluster');
produce($old, 2001, 3000);		# some of it left for the new cluster
$old->stop;

my $new = PostgreSQL::Test::Cluster->new('new');
$new->init;
$new->append_conf('postgresql.conf',
	"shared_preload_libraries = 'ssp'\nmax_worker_processes = 32\n");
my $bindir = $new->config_data('--bindir');
my @upgrade = ('pg_upgrade', '--no-sync', '--retain', '-d', $old->data_dir, '-D', $new->data_dir,
	'-b', $bindir, '-B', $bindir, '-s', $new->host, '-p', $old->port, '-P', $new->port);
# pg_upgrade writes its logs in the current directory
chdir $PostgreSQL::Test::Utils::tmp_check;
command_ok([ @upgrade, '--check' ], 'pg_upgrade --check passes (no reg* column that pg_upgrade refuses)');
command_ok(\@upgrade, 'pg_upgrade copies the cluster');
# both clusters ran in binary-upgrade mode meanwhile, with ssp preloaded
my ($server_log) = glob($new->data_dir . '/pg_upgrade_output.d/*/log/pg_upgrade_server.log');
my $during = PostgreSQL::Test::Utils::slurp_file($server_log);
like($during, qr/ -b /, "pg_upgrade's servers ran in binary-upgrade mode (their log is read)");
unlike($during, qr/background worker "ssp/, 'no ssp launcher, scheduler or worker ran while pg_upgrade did');
$new->start;

is($new->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'ssp'"),
	$new->safe_psql('postgres', "SELECT current_setting('ssp.library_version')"),
	'the new cluster has ssp at the library version');
produce($new, 3001, 4000);
check($new, 'on the new cluster');
is($new->safe_psql('postgres', q{SELECT count(*) FROM ssp.views WHERE last_error IS NOT NULL}), '0',
	'no view has an error');

# its parts are part of the view again once its worker has loaded it
my ($rc, $out, $err) = $new->psql('postgres', 'DROP TABLE revenue_mrel');
like($err, qr/cannot drop table revenue_mrel because view revenue requires it/,
	'the materialisation table is part of the view again');
($rc, $out, $err) = $new->psql('postgres', 'DROP VIEW revenue_query');
like($err, qr/cannot drop view revenue_query because view revenue requires it/, 'so is its query');
($rc, $out, $err) = $new->psql('postgres', 'DROP TABLE revenue_outbox');
like($err, qr/cannot drop table revenue_outbox because view revenue requires it/, 'and its outbox');
my $fn = $new->safe_psql('postgres',
	q{SELECT tgfoid::regproc FROM pg_trigger WHERE tgrelid = 'revenue_mrel'::regclass AND tgname = 'ssp_changes_insert'});
($rc, $out, $err) = $new->psql('postgres', "DROP FUNCTION $fn()");
like($err, qr/cannot drop function revenue_changes\(\) because continuous view revenue requires it/,
	"the outbox's trigger function is the view's again");
($rc, $out, $err) = $new->psql('postgres', 'DROP TRIGGER ssp_changes_update ON revenue_mrel');
like($err, qr/cannot drop trigger ssp_changes_update on table revenue_mrel because continuous view revenue requires it/,
	'and so are its triggers');

ok($new->poll_query_until('postgres', 'SELECT count(*) = 0 FROM revenue_outbox'),
	'the outbox is published on the new cluster');
SspTest::read_published($new, 'postgres', 'revenue_changes');
SspTest::check_published($new, 'revenue', 'across pg_upgrade: ');

# the orders the view revenue counted, against those produced
my $applied = $new->safe_psql('postgres', 'SELECT sum(n) FROM public.revenue');
SspTest::report(faults => 1, produced => $produced, applied => $applied,
	lost => $produced > $applied ? $produced - $applied : 0,
	twice => $applied > $produced ? $applied - $produced : 0, broker => $k->{kind});
done_testing();
