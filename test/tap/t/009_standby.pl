# High availability is Postgres's own: a streaming standby holds the views
# and their offsets, runs no workers, and after promotion its workers start
# by themselves and go on exactly once.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_any_broker(topics => ['orders:4']);
my $primary = SspTest::new_node('primary', allows_streaming => 1);
$primary->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE orders (id bigint, region text, amount numeric) SERVER kafka OPTIONS (topic 'orders');
	CREATE VIEW by_region WITH (ssp.continuous) AS
	  SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region;
	INSERT INTO orders SELECT g, 'r' || g % 5, g FROM generate_series(1, 1000) g;
});
SspTest::wait_views($primary, 'postgres', 'by_region');

$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;
$primary->safe_psql('postgres', 'INSERT INTO orders SELECT g, \'r\' || g % 5, g FROM generate_series(1001, 2000) g');
SspTest::wait_views($primary, 'postgres', 'by_region');
$primary->wait_for_catchup($standby);

is($standby->safe_psql('postgres', 'SELECT sum(n) FROM by_region'), '2000',
	'the standby holds the view');
is($standby->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'ssp%'"), '0',
	'no ssp worker runs on the standby');

# the primary dies mid-stream; the standby takes over
$primary->safe_psql('postgres', 'INSERT INTO orders SELECT g, \'r\' || g % 5, g FROM generate_series(2001, 3000) g');
$primary->stop('immediate');
$standby->promote;
$standby->safe_psql('postgres', 'INSERT INTO orders SELECT g, \'r\' || g % 5, g FROM generate_series(3001, 4000) g');
SspTest::wait_views($standby, 'postgres', 'by_region');
is(SspTest::differences($standby, 'postgres', 'SELECT * FROM by_region',
		"SELECT 'r' || g % 5, count(*), sum(g) FROM generate_series(1, 4000) g GROUP BY 1"),
	'0', 'after promotion the view went on exactly once');
isnt($standby->safe_psql('postgres', 'SELECT worker_pid FROM ssp.views'), '',
	'the promoted standby runs the worker');
# per region, orders missing from the view's count and orders counted twice
my ($lost, $twice) = split /\|/, $standby->safe_psql('postgres', q{
	SELECT sum(greatest(e.n - coalesce(v.n, 0), 0)), sum(greatest(coalesce(v.n, 0) - e.n, 0))
	FROM (SELECT 'r' || g % 5 AS region, count(*) AS n FROM generate_series(1, 4000) g GROUP BY 1) e
	LEFT JOIN by_region v USING (region)});
SspTest::report(faults => 1, produced => 4000,
	applied => $standby->safe_psql('postgres', 'SELECT sum(n) FROM by_region'),
	dead_letters => $standby->safe_psql('postgres', 'SELECT sum(dead_letters) FROM ssp.views'),
	lost => $lost, twice => $twice, broker => $broker->{kind});

$standby->stop;
done_testing();
