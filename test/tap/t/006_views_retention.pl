# Nothing lost silently: messages the broker deletes (retention) before a
# paused view reads them are reported in ssp.dead_letters and counted, and
# the view goes on from the oldest message there is.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_broker(topics => ['small:1']);
my $node = SspTest::new_node('retention');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE s (id bigint, pad text, o bigint OPTIONS (meta 'offset')) SERVER kafka OPTIONS (topic 'small');
	CREATE VIEW total WITH (ssp.continuous) AS SELECT count(*) AS n FROM s;
	INSERT INTO s SELECT g, 'x' FROM generate_series(1, 100) g;
});
SspTest::wait_views($node, 'postgres', 'total');
$node->safe_psql('postgres', "SELECT ssp.pause('total')");

# the test broker keeps about 5 MiB per partition: write 10 MiB
for my $i (0 .. 9)
{
	$node->safe_psql('postgres',
		"INSERT INTO s SELECT g, repeat('p', 1000) FROM generate_series(1, 1000) g");
}
my $oldest = $node->safe_psql('postgres', 'SELECT min(o) FROM s');
ok($oldest > 100, "the broker deleted the oldest messages (oldest offset now $oldest)");

$node->safe_psql('postgres', "SELECT ssp.resume('total')");
SspTest::wait_views($node, 'postgres', 'total');
my $kept = $node->safe_psql('postgres', 'SELECT count(*) FROM s');
is($node->safe_psql('postgres', 'SELECT n FROM total'), 100 + $kept,
	'the view has what it read before and every message still there');
is($node->safe_psql('postgres', q{SELECT "offset", error FROM ssp.dead_letters}),
	"100|messages at offsets 100 to " . ($oldest - 1)
	  . " were deleted by the broker before the view read them",
	'the loss is in ssp.dead_letters');
is($node->safe_psql('postgres', 'SELECT processed + dead_letters FROM ssp.views'),
	'10100', 'every message is either in the view or in the dead letters');

$node->stop;
done_testing();
