# The disk fills under a view: its table is in a tablespace on a small
# filesystem (a 24 MB tmpfs that make test mounts when run as root, in
# SSP_SMALL_DISK).  The worker fails its batch with Postgres's "could not
# extend file" error, says so in ssp.views, retries with backoff and loses
# nothing; once the table moves to a disk with room, the view catches up and
# ends exactly equal to its query.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

plan skip_all => 'needs a small filesystem in SSP_SMALL_DISK (make test mounts one when run as root)'
  unless $ENV{SSP_SMALL_DISK} && -d $ENV{SSP_SMALL_DISK};

my $dir = "$ENV{SSP_SMALL_DISK}/tablespace";
mkdir $dir or die "$dir: $!";
my $broker = SspTest::start_any_broker(topics => ['orders:16']);
my $node = SspTest::new_node('diskfull');
$node->safe_psql('postgres', qq{
	CREATE TABLESPACE small LOCATION '$dir';
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE orders (id bigint, note text, p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'orders');
	SET default_tablespace = small;
	CREATE VIEW copy WITH (ssp.continuous, ssp.batch_size = 5000) AS SELECT id, note FROM orders;
});
is($node->safe_psql('postgres',
		"SELECT spcname FROM pg_class c JOIN pg_tablespace t ON t.oid = c.reltablespace WHERE relname = 'copy_mrel'"),
	'small', "the view's table is on the small disk");

# about 40 MB of rows for 24 MB
for my $chunk (0 .. 7)
{
	my $from = $chunk * 25000 + 1;
	my $to = $from + 24999;
	$node->safe_psql('postgres',
		"INSERT INTO orders SELECT g, repeat('x', 150), g % 16 FROM generate_series($from, $to) g");
}
ok($node->poll_query_until('postgres',
		"SELECT status = 'failed' AND last_error LIKE '%could not extend file%'
		   FROM ssp.views WHERE view = 'copy'::regclass"),
	'a full disk fails the batch, and ssp.views says why');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'Postgres stays up');
my $applied = $node->safe_psql('postgres', 'SELECT count(*) FROM copy');
cmp_ok($applied, '<', 200000, "the view holds what fit ($applied rows)");

# room again: the table moves to the data directory's disk
$node->safe_psql('postgres', 'ALTER TABLE copy_mrel SET TABLESPACE pg_default');
SspTest::wait_views($node, 'postgres', 'copy');
# what was produced (the test broker keeps only about 5 MB a partition, so
# the topic may no longer hold the first orders)
my ($lost, $twice) = SspTest::lost_and_twice($node, 'postgres', 'SELECT * FROM copy',
	"SELECT g, repeat('x', 150) FROM generate_series(1, 200000) g");
is($lost, '0', 'once there is room, nothing is lost');
is($twice, '0', 'and nothing is there twice');
is($node->safe_psql('postgres', "SELECT status, last_error IS NULL FROM ssp.views WHERE view = 'copy'::regclass"),
	'running|t', 'the view runs again, its error cleared');
SspTest::report(faults => 1, produced => 200000,
	applied => $node->safe_psql('postgres', 'SELECT count(*) FROM copy'),
	dead_letters => $node->safe_psql('postgres', 'SELECT sum(dead_letters) FROM ssp.views'),
	lost => $lost, twice => $twice, broker => $broker->{kind});

$node->safe_psql('postgres', 'DROP VIEW copy; DROP TABLESPACE small');
$node->stop;
done_testing();
