# Views through broker faults, injected while orders are produced and views
# consume: all three brokers down for 30 s, one broker down with the
# partitions' leadership moved off it, Fetch and Produce errors, a 300 ms
# round trip, the topic unknown for a while, and a view whose topic does not
# exist yet, views made while every broker is down, and brokers that take
# connections and never answer.  The views say
# "waiting for broker" (or name the topic) while it lasts, Postgres stays
# up, and each view ends exactly equal to its query over what the topic
# holds: nothing lost, nothing counted twice.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IO::Socket::INET;
use SspTest;

my $broker = SspTest::start_broker(brokers => 3, topics => ['orders:8']);
my $node = SspTest::new_node('brokerfaults', conf => "ssp.broker_timeout = '5s'\n");
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE orders (id bigint, region text, amount numeric, p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'orders');
	CREATE VIEW copy WITH (ssp.continuous, ssp.commit_interval = '20ms') AS
	  SELECT id, region, amount FROM orders;
	CREATE VIEW by_region WITH (ssp.continuous, ssp.batch_size = 500) AS
	  SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region;
});

# produce($from, $to): the orders, in chunks of 500; a chunk the broker
# refuses is tried again.  A refused INSERT may have delivered some of its
# messages, so the truth is what the topic holds, read at the end.
my $faults = 0;
sub produce
{
	my ($from, $to) = @_;
	for (my $a = $from; $a <= $to; $a += 500)
	{
		my $b = $a + 499 > $to ? $to : $a + 499;
		for my $try (1 .. 100)
		{
			my ($rc) = $node->psql('postgres',
				"INSERT INTO orders SELECT g, 'r' || g % 9, g % 100, g % 8 FROM generate_series($a, $b) g");
			last if $rc == 0;
			sleep 1;
		}
	}
}

sub status
{
	return $node->safe_psql('postgres', "SELECT status FROM ssp.views WHERE view = '$_[0]'::regclass");
}

produce(1, 5000);
SspTest::wait_views($node, 'postgres', 'copy', 'by_region');

# all brokers down for 30 s
SspTest::ctl($broker, 'down all');
$faults++;
my $t0 = time;
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM ssp.views WHERE status = 'waiting for broker'"),
	'with every broker down, the views say "waiting for broker"');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'Postgres stays up');
my ($rc) = $node->psql('postgres', "INSERT INTO orders VALUES (0, 'down', 0, 0)");
isnt($rc, 0, 'an INSERT with the brokers down fails');
sleep(30 - (time - $t0)) if time - $t0 < 30;
SspTest::ctl($broker, 'up all');
# idle views, no message since: the brokers' answers say they are back
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM ssp.views WHERE status = 'running'"),
	'once the brokers are back, the idle views say "running" before a message comes');
produce(5001, 10000);
SspTest::wait_views($node, 'postgres', 'copy', 'by_region');
is(status('copy'), 'running', 'once the brokers are back, the view runs again');

# one broker down, its partitions led by another
SspTest::ctl($broker, "leader orders $_ 2") for 0 .. 7;
SspTest::ctl($broker, 'down 1');
$faults++;
produce(10001, 15000);
SspTest::wait_views($node, 'postgres', 'copy', 'by_region');
SspTest::ctl($broker, 'up 1');

# request errors on Fetch and Produce, while producing
SspTest::ctl($broker, 'errors Fetch 20 NOT_LEADER_FOR_PARTITION');
SspTest::ctl($broker, 'errors Produce 5 NOT_LEADER_FOR_PARTITION');
$faults += 2;
produce(15001, 20000);
SspTest::wait_views($node, 'postgres', 'copy', 'by_region');
SspTest::ctl($broker, 'clear-errors');

# a 300 ms round trip
SspTest::ctl($broker, 'rtt all 300');
$faults++;
produce(20001, 22000);
SspTest::wait_views($node, 'postgres', 'copy', 'by_region');
SspTest::ctl($broker, 'rtt all 0');

# the topic unknown to the broker for a while
SspTest::ctl($broker, 'topic-error orders UNKNOWN_TOPIC_OR_PART');
$faults++;
sleep 3;
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'Postgres stays up while the topic is unknown');
SspTest::ctl($broker, 'topic-error orders 0');
produce(22001, 25000);
SspTest::wait_views($node, 'postgres', 'copy', 'by_region');

# a view over a topic that does not exist yet: it says so, and starts
# once the topic is made
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE later (id bigint) SERVER kafka OPTIONS (topic 'later');
	CREATE VIEW later_count WITH (ssp.continuous) AS SELECT count(*) AS n, sum(id) AS s FROM later;
});
$faults++;
ok($node->poll_query_until('postgres',
		"SELECT last_error LIKE '%later%' FROM ssp.views WHERE view = 'later_count'::regclass"),
	'a view over a missing topic names it in last_error');
SspTest::ctl($broker, 'topic later 2');
$node->safe_psql('postgres', 'INSERT INTO later SELECT g FROM generate_series(1, 1000) g');
SspTest::wait_views($node, 'postgres', 'later_count');
is($node->safe_psql('postgres', 'SELECT n, s FROM later_count'), '1000|500500',
	'once the topic exists, the view counts every message');

# views made while every broker is down: the worker started for the first
# waits for the brokers, and the others wait with it, saying so, rather
# than start a worker each (a background worker slot each, for nothing);
# once the brokers are back, they read the topic together
my @down = map { "down$_" } 1 .. 8;
SspTest::ctl($broker, 'down all');
$faults++;
$node->safe_psql('postgres', join('', map {
	"CREATE VIEW $_ WITH (ssp.continuous) AS SELECT region, count(*) AS n, sum(amount) AS total FROM orders GROUP BY region; "
} @down));
ok($node->poll_query_until('postgres', q{
		SELECT count(*) = 8 FROM ssp.views
		WHERE view::text LIKE 'down_' AND status = 'waiting for broker' AND last_error <> ''}),
	'views made with every broker down say "waiting for broker", and why');
# past the 2 s a view waits for the worker of another to become its reader
sleep 5;
is($node->safe_psql('postgres', q{
		SELECT count(DISTINCT worker_pid) || ' ' || count(*) FILTER (WHERE status = 'waiting for broker')
		FROM ssp.views WHERE view::text LIKE 'down_'}),
	'1 8', 'one worker waits for the brokers for the eight views');
SspTest::ctl($broker, 'up all');
SspTest::wait_views($node, 'postgres', 'copy', 'by_region', @down);
for my $v (@down)
{
	is(SspTest::differences($node, 'postgres', "SELECT * FROM $v",
			'SELECT region, count(*), sum(amount) FROM orders GROUP BY region'),
		'0', "$v, made with the brokers down, exact");
}

# brokers that take connections and never answer (a socket that listens,
# and that no one reads): the view says so, and its worker, waiting for
# them, takes a terminate at once, not after ssp.broker_timeout (60 s
# here), as a scan of the stream takes its statement_timeout
my $hole = IO::Socket::INET->new(Listen => 16, LocalAddr => '127.0.0.1', LocalPort => 0,
	Proto => 'tcp') or die "no listening socket: $!";
my $hole_port = $hole->sockport;
$node->safe_psql('postgres', "ALTER SYSTEM SET ssp.broker_timeout = '60s'; SELECT pg_reload_conf()");
$node->safe_psql('postgres', qq{
	CREATE SERVER hole FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '127.0.0.1:$hole_port');
	CREATE FOREIGN TABLE silent (id bigint) SERVER hole OPTIONS (topic 'silent');
	CREATE VIEW silent_count WITH (ssp.continuous) AS SELECT count(*) AS n FROM silent;
});
$faults++;
ok($node->poll_query_until('postgres', q{
		SELECT status = 'waiting for broker' AND worker_pid IS NOT NULL AND last_error LIKE '%not answered%'
		FROM ssp.views WHERE view = 'silent_count'::regclass}),
	'a view over brokers that never answer says "waiting for broker" before ssp.broker_timeout');
my $silent_pid = $node->safe_psql('postgres',
	q{SELECT worker_pid FROM ssp.views WHERE view = 'silent_count'::regclass});
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($silent_pid, 20000)"), 't',
	'its worker, waiting for them, takes a terminate within 20 s');
my $timed_out = 0;
my (undef, undef, $scan_err) = $node->psql('postgres', "SET statement_timeout = '1s'; SELECT count(*) FROM silent",
	timeout => 20, timed_out => \$timed_out);
ok(!$timed_out && $scan_err =~ /canceling statement due to statement timeout/,
	'a scan of the stream ends at its statement_timeout (1 s; not 20 s later) while the brokers do not answer');
$node->safe_psql('postgres', 'DROP SERVER hole CASCADE');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET ssp.broker_timeout; SELECT pg_reload_conf()');
close($hole);

# every view equals its query over what the topic holds
my $produced = $node->safe_psql('postgres', 'SELECT count(*) FROM orders');
cmp_ok($produced, '>=', 25000, "the topic holds at least the 25,000 orders ($produced)");
my ($lost, $twice) = SspTest::lost_and_twice($node, 'postgres', 'SELECT * FROM copy',
	'SELECT id, region, amount FROM orders');
is($lost, '0', 'append-only view: nothing lost');
is($twice, '0', 'append-only view: nothing twice');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM by_region',
		'SELECT region, count(*), sum(amount) FROM orders GROUP BY region'),
	'0', 'grouped view exact');
SspTest::report(faults => $faults, produced => $produced + 1000,
	applied => $node->safe_psql('postgres', 'SELECT count(*) FROM copy') + 1000,
	dead_letters => $node->safe_psql('postgres', 'SELECT sum(dead_letters) FROM ssp.views'),
	lost => $lost, twice => $twice);

$node->stop;
done_testing();
