# Changes to a server or user mapping reach running views within seconds,
# as postgres_fdw drops its connections on ALTER SERVER: the view's worker
# starts again with the new properties.  A server moved to brokers that do
# not exist makes the view wait for the broker (not run on, on the old
# cluster), and moved back it goes on exactly once, within seconds even
# with ssp.broker_timeout at two minutes (and a user mapping made while it
# waits restarts it as soon); a user mapping created,
# altered (a rotated password) and dropped restarts the worker each time;
# the server's owner losing superuser stops the worker with the reason (within
# seconds too while it waits for brokers); an INSERT waiting for brokers
# that refuse it, for their acknowledgements or for room in its queue,
# ends when the server moves; and
# an unrelated server's change leaves the worker alone.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_broker(topics => ['orders:4']);
my $node = SspTest::new_node('changes', conf => "ssp.broker_timeout = '3s'\n");
my $b = $broker->{bootstrap};
$node->safe_psql('postgres', qq{
	CREATE ROLE admin SUPERUSER;
	CREATE ROLE vo;
	SET ROLE admin;
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$b');
	CREATE SERVER direct FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$b');
	CREATE SERVER unrelated FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$b');
	RESET ROLE;
	CREATE FOREIGN TABLE orders (id bigint, region text) SERVER kafka OPTIONS (topic 'orders');
	-- the same topic through a server the test does not change, to produce
	CREATE FOREIGN TABLE orders_in (id bigint, region text) SERVER direct OPTIONS (topic 'orders');
	GRANT SELECT ON orders TO vo;
	GRANT CREATE ON SCHEMA public TO vo;
	SET ROLE vo;
	CREATE VIEW by_region WITH (ssp.continuous) AS SELECT region, count(*) AS n FROM orders GROUP BY region;
	RESET ROLE;
	INSERT INTO orders_in SELECT g, 'r' || g % 5 FROM generate_series(1, 1000) g;
});
SspTest::wait_views($node, 'postgres', 'by_region');
my $produced = 1000;

sub worker_pid
{
	return $node->safe_psql('postgres', "SELECT worker_pid FROM ssp.views WHERE view = 'by_region'::regclass");
}

# wait_new_worker($old, $what): a worker other than $old runs the view
sub wait_new_worker
{
	my ($old, $what) = @_;
	ok($node->poll_query_until('postgres',
			"SELECT worker_pid IS NOT NULL AND worker_pid <> $old FROM ssp.views WHERE view = 'by_region'::regclass"),
		"the worker starts again after $what");
}

# an unrelated server changes: nothing to do for this view
my $pid = worker_pid();
$node->safe_psql('postgres', q{ALTER SERVER unrelated OPTIONS (ADD "socket.timeout.ms" '5000')});
sleep 3;
is(worker_pid(), $pid, 'a change of another server leaves the worker alone');

# the server moved to brokers that do not exist
$node->safe_psql('postgres', q{ALTER SERVER kafka OPTIONS (SET brokers '127.0.0.1:1')});
wait_new_worker($pid, 'ALTER SERVER ... SET brokers');
ok($node->poll_query_until('postgres',
		"SELECT status = 'waiting for broker' FROM ssp.views WHERE view = 'by_region'::regclass"),
	'the view waits for the brokers it is now told of');
$node->safe_psql('postgres', "INSERT INTO orders_in SELECT g, 'r' || g % 5 FROM generate_series(1001, 2000) g");
$produced = 2000;
sleep 2;
is($node->safe_psql('postgres', 'SELECT sum(n) FROM by_region'), '1000',
	'and reads nothing more from the old ones');
$pid = worker_pid();
$node->safe_psql('postgres', qq{ALTER SERVER kafka OPTIONS (SET brokers '$b')});
SspTest::wait_views($node, 'postgres', 'by_region');
is($node->safe_psql('postgres', 'SELECT sum(n) FROM by_region'), $produced,
	'moved back, it goes on exactly once');

# the server moved to brokers that refuse the worker, which then waits for them
sub move_to_refusing_brokers
{
	my ($what) = @_;
	my $old = worker_pid();
	$node->safe_psql('postgres', q{ALTER SERVER kafka OPTIONS (SET brokers '127.0.0.1:1')});
	wait_new_worker($old, "ALTER SERVER ... SET brokers, $what");
	ok($node->poll_query_until('postgres',
			"SELECT status = 'waiting for broker' FROM ssp.views WHERE view = 'by_region'::regclass"),
		"the view waits for the brokers it is now told of, $what");
	sleep 2;
}

# the same with a long ssp.broker_timeout: a worker waiting for brokers that
# refuse it takes the server's change within a slice of its request, not
# at the request's end two minutes later
$node->safe_psql('postgres', "ALTER SYSTEM SET ssp.broker_timeout = '120s'; SELECT pg_reload_conf()");
move_to_refusing_brokers('with ssp.broker_timeout at 2 minutes');
$node->safe_psql('postgres', "INSERT INTO orders_in SELECT g, 'r' || g % 5 FROM generate_series(2001, 2500) g");
$produced = 2500;
$node->safe_psql('postgres', qq{ALTER SERVER kafka OPTIONS (SET brokers '$b')});
my $moved_back = time;
ok($node->poll_query_until('postgres', "SELECT sum(n) = $produced FROM by_region"),
	'moved back, it goes on exactly once');
cmp_ok(time - $moved_back, '<', 40, '... within 40 s of the change, not at ssp.broker_timeout (2 minutes)');
# and a user mapping's change, which leaves the server as it is
move_to_refusing_brokers('again');
$pid = worker_pid();
my $mapped = time;
$node->safe_psql('postgres', q{CREATE USER MAPPING FOR vo SERVER kafka OPTIONS ("sasl.username" 'vo', "sasl.password" 'one')});
wait_new_worker($pid, 'CREATE USER MAPPING while it waits for the brokers');
cmp_ok(time - $mapped, '<', 40, '... within 40 s of the change, not at ssp.broker_timeout (2 minutes)');
# dropped, and the server moved back at once: the worker made after the
# drop reads the old brokers, and may take the move before its request
# begins; it goes on within seconds all the same
$node->safe_psql('postgres', q{DROP USER MAPPING FOR vo SERVER kafka});
$node->safe_psql('postgres', qq{ALTER SERVER kafka OPTIONS (SET brokers '$b')});
$moved_back = time;
$node->safe_psql('postgres', "INSERT INTO orders_in SELECT g, 'r' || g % 5 FROM generate_series(2501, 2600) g");
$produced = 2600;
ok($node->poll_query_until('postgres', "SELECT sum(n) = $produced FROM by_region"),
	'mapping dropped and server moved back: it goes on exactly once');
cmp_ok(time - $moved_back, '<', 40, '... within 40 s, not at ssp.broker_timeout (2 minutes)');
$node->safe_psql('postgres', "ALTER SYSTEM RESET ssp.broker_timeout; SELECT pg_reload_conf()");

# a user mapping for the owner: created, a password rotated, dropped
for my $ddl (q{CREATE USER MAPPING FOR vo SERVER kafka OPTIONS ("sasl.username" 'vo', "sasl.password" 'one')},
	q{ALTER USER MAPPING FOR vo SERVER kafka OPTIONS (SET "sasl.password" 'two')},
	q{DROP USER MAPPING FOR vo SERVER kafka})
{
	$pid = worker_pid();
	$node->safe_psql('postgres', $ddl);
	wait_new_worker($pid, $ddl =~ s/ OPTIONS.*//r);
}
$node->safe_psql('postgres', "INSERT INTO orders_in SELECT g, 'r' || g % 5 FROM generate_series(2601, 3000) g");
$produced = 3000;
SspTest::wait_views($node, 'postgres', 'by_region');
is($node->safe_psql('postgres', 'SELECT sum(n) FROM by_region'), $produced,
	'every message once through the restarts');

# a property only superusers may set, on a server whose owner stops being one
$node->safe_psql('postgres', q{ALTER SERVER kafka OPTIONS (ADD debug 'generic')});
SspTest::wait_views($node, 'postgres', 'by_region');
$node->safe_psql('postgres', 'ALTER ROLE admin NOSUPERUSER');
ok($node->poll_query_until('postgres', q{
		SELECT last_error LIKE 'permission denied to set Kafka property "debug": It changes what the database server logs.%'
		FROM ssp.views WHERE view = 'by_region'::regclass}),
	'the server\'s owner lost superuser: the worker stops, saying why');
$node->safe_psql('postgres', 'ALTER ROLE admin SUPERUSER');
$node->safe_psql('postgres', "INSERT INTO orders_in SELECT g, 'r' || g % 5 FROM generate_series(3001, 4000) g");
$produced = 4000;
SspTest::wait_views($node, 'postgres', 'by_region');
is($node->safe_psql('postgres', 'SELECT sum(n) FROM by_region'), $produced,
	'superuser again, it goes on exactly once');
# the same while it waits for brokers that refuse it, with
# ssp.broker_timeout at two minutes: its request ends within a slice
$node->safe_psql('postgres', "ALTER SYSTEM SET ssp.broker_timeout = '120s'; SELECT pg_reload_conf()");
move_to_refusing_brokers('with a superuser\'s property');
my $demoted = time;
$node->safe_psql('postgres', 'ALTER ROLE admin NOSUPERUSER');
ok($node->poll_query_until('postgres', q{
		SELECT last_error LIKE 'permission denied to set Kafka property "debug":%'
		FROM ssp.views WHERE view = 'by_region'::regclass}),
	'the server\'s owner lost superuser while the view waits: the worker stops, saying why');
cmp_ok(time - $demoted, '<', 40, '... within 40 s of the change, not at ssp.broker_timeout (2 minutes)');
$node->safe_psql('postgres', 'ALTER ROLE admin SUPERUSER');
$node->safe_psql('postgres', qq{ALTER SERVER kafka OPTIONS (SET brokers '$b')});
$node->safe_psql('postgres', "ALTER SYSTEM RESET ssp.broker_timeout; SELECT pg_reload_conf()");
$node->safe_psql('postgres', "INSERT INTO orders_in SELECT g, 'r' || g % 5 FROM generate_series(4001, 4500) g");
$produced = 4500;
SspTest::wait_views($node, 'postgres', 'by_region');
is($node->safe_psql('postgres', 'SELECT sum(n) FROM by_region'), $produced,
	'superuser again and moved back, it goes on exactly once');

# an INSERT into a stream whose brokers refuse it ends when the server is
# moved back, not at ssp.broker_timeout (nothing it sent counts: the view
# stays exact): given the options that point the server away and back, the
# INSERT, and what it waits for
sub insert_fails_on_move
{
	my ($away, $back, $insert, $waits_for) = @_;
	$node->safe_psql('postgres', "ALTER SERVER kafka OPTIONS ($away)");
	my $inserter = $node->background_psql('postgres', on_error_stop => 0);
	$inserter->query_safe("SET ssp.broker_timeout = '120s'");
	$inserter->query_until(qr/inserting/, "\\echo inserting\n$insert;\n");
	sleep 2;
	$node->safe_psql('postgres', "ALTER SERVER kafka OPTIONS ($back)");
	my $moved = time;
	$inserter->query("SELECT 'after'");
	like($inserter->{stderr},
		qr/could not produce to topic "orders": server "kafka" or its user mapping changed/,
		"an INSERT waiting for $waits_for fails when the server is moved back");
	cmp_ok(time - $moved, '<', 40, '... within 40 s of the change, not at ssp.broker_timeout (2 minutes)');
	$inserter->quit;
}
insert_fails_on_move("SET brokers '127.0.0.1:1'", "SET brokers '$b'",
	"INSERT INTO orders VALUES (-1, 'lost')", 'the old brokers');
# waiting for room in the producer's queue, before the acknowledgements:
# 100 rows, and room for 10
insert_fails_on_move(q{SET brokers '127.0.0.1:1', ADD "queue.buffering.max.messages" '10'},
	qq{SET brokers '$b', DROP "queue.buffering.max.messages"},
	"INSERT INTO orders SELECT -g, 'lost' FROM generate_series(1, 100) g", 'room in the queue');
$node->safe_psql('postgres', "INSERT INTO orders_in SELECT g, 'r' || g % 5 FROM generate_series(4501, 4600) g");
$produced = 4600;
SspTest::wait_views($node, 'postgres', 'by_region');
is($node->safe_psql('postgres', 'SELECT sum(n) FROM by_region'), $produced,
	'the view goes on exactly once');

$node->stop;
done_testing();
