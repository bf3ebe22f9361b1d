# A view's lag (ssp.views) is null until its worker has seen the end of
# every partition it reads: a sum over the partitions it has seen said 0,
# caught up, for a view whose first fetch had answered for some partitions
# and not the others.  Checked on a test broker of two brokers, each the
# leader of half the partitions, the second answering the worker's fetches
# seconds late: the view applies the first half while the lag is watched,
# and the lag is never 0 before all is applied.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use SspTest;

my $broker = SspTest::start_broker(brokers => 2, topics => ['halves:4']);
SspTest::ctl($broker, "leader halves $_->[0] $_->[1]") for ([0, 1], [1, 1], [2, 2], [3, 2]);
my $node = SspTest::new_node('lag_unknown');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE halves (id int, p int OPTIONS (meta 'partition')) SERVER kafka
	  OPTIONS (topic 'halves');
	INSERT INTO halves SELECT g, g % 4 FROM generate_series(1, 400) g;
});

# the second broker's next fetch answers come 8 s late (a late answer
# holds up the later ones on its connection)
SspTest::ctl($broker, 'delay Fetch 2 8000') for 1 .. 3;
$node->safe_psql('postgres', 'CREATE VIEW n WITH (ssp.continuous) AS SELECT count(*) AS n FROM halves');

# the view's processed messages and lag, every 0.1 s for 6 s
my (@zero, $partial);
my $t0 = time;
while (time - $t0 < 6)
{
	my ($processed, $lag) = split /\|/,
	  $node->safe_psql('postgres', "SELECT processed, lag FROM ssp.views WHERE view = 'n'::regclass");
	$partial = "$processed" if $processed > 0 && $processed < 400;
	push @zero, $processed if $processed < 400 && ($lag // '') eq '0';
	sleep 0.1;
}
ok($partial, "the view applied the first broker's partitions while the second's fetch was late ("
	  . ($partial // 'none') . ' processed)');
is(scalar @zero, 0, 'the lag was never 0 before every message was applied'
	  . (@zero ? " (0 with $zero[0] processed)" : ''));

SspTest::wait_views($node, 'postgres', 'n');
is($node->safe_psql('postgres', "SELECT n FROM n"), '400', 'the view counts every message');
is($node->safe_psql('postgres', "SELECT lag FROM ssp.views WHERE view = 'n'::regclass"), '0',
	'and its lag is 0 once it has');

done_testing();
