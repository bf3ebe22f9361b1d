# A broker that is down or failing: statements fail with a clear error in
# bounded time, never hang or crash, and work again once it is back.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_broker(brokers => 1, topics => ['faults:4']);
my $node = SspTest::new_node('faults');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE s (id int) SERVER kafka OPTIONS (topic 'faults');
	INSERT INTO s SELECT g FROM generate_series(1, 100) g;
});
is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM s'), '100|5050',
	'messages produced and read');

# run($sql): psql with a short broker timeout; returns (ret, stderr, timed out)
sub run
{
	my ($sql) = @_;
	my ($stdout, $stderr, $timed_out);
	my $ret = $node->psql('postgres', "SET ssp.broker_timeout = '2s'; $sql",
		stdout => \$stdout, stderr => \$stderr,
		timeout => 120, timed_out => \$timed_out);
	return ($ret, $stderr, $timed_out);
}

SspTest::ctl($broker, 'down all');

my ($ret, $err, $timed_out) = run('SELECT count(*) FROM s');
ok(!$timed_out, 'SELECT with the broker down does not hang');
isnt($ret, 0, 'SELECT with the broker down fails');
like($err, qr/ERROR:  could not [a-z ]+ of topic "faults"/, 'SELECT error names the topic');
like($err, qr/HINT:  Check that the brokers of server "kafka" are up; ssp.broker_timeout is 2000 ms/,
	'SELECT error says what to check');

($ret, $err, $timed_out) = run('INSERT INTO s VALUES (1000)');
ok(!$timed_out, 'INSERT with the broker down does not hang');
isnt($ret, 0, 'INSERT with the broker down fails');
like($err, qr/ERROR:  could not produce to topic "faults": timed out/,
	'INSERT error says it timed out');
like($err, qr/DETAIL:  1 message was not acknowledged within 2000 ms/,
	'INSERT error says how many messages are in doubt');

is($node->safe_psql('postgres', 'SELECT 1'), '1', 'Postgres is still up');

SspTest::ctl($broker, 'up all');
is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM s'), '100|5050',
	'SELECT works again once the broker is back');
$node->safe_psql('postgres', 'INSERT INTO s SELECT g FROM generate_series(101, 200) g');
is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM s'), '200|20100',
	'INSERT works again once the broker is back');

# request errors are retried by the client: nothing lost, nothing doubled
SspTest::ctl($broker, 'errors Produce 3 NOT_LEADER_FOR_PARTITION');
$node->safe_psql('postgres', 'INSERT INTO s SELECT g FROM generate_series(201, 300) g');
SspTest::ctl($broker, 'errors Fetch 3 NOT_LEADER_FOR_PARTITION');
is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM s'), '300|45150',
	'Produce and Fetch errors are retried exactly once');

# a slow broker only makes things slower
SspTest::ctl($broker, 'rtt all 300');
$node->safe_psql('postgres', 'INSERT INTO s VALUES (301)');
is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM s'), '301|45451',
	'a 300 ms round trip delays but does not break');
SspTest::ctl($broker, 'rtt all 0');

# the broker timeout bounds a slow broker too
SspTest::ctl($broker, 'rtt all 3000');
($ret, $err, $timed_out) = run('SELECT count(*) FROM s');
ok(!$timed_out, 'SELECT against a very slow broker does not hang');
isnt($ret, 0, 'SELECT against a broker slower than the timeout fails');
SspTest::ctl($broker, 'rtt all 0');

$node->stop;
done_testing();
