# Authentication and ACLs on Apache Kafka: a SASL_PLAINTEXT listener whose
# StandardAuthorizer denies what no ACL allows, and whose PLAINTEXT listener
# (the super user ANONYMOUS) sets up topics and ACLs and writes the truth.
#  1. The server says how to log in (SASL_PLAINTEXT, PLAIN), a user mapping
#     who: a role with alice's mapping writes and reads the stream, and a
#     continuous view it owns is exact.
#  2. A role without a user mapping gets an error naming the server and the
#     missing username and password, for a scan, an insert and its view.
#  3. A wrong password: an authentication error naming the server, for a
#     scan and an insert, within ssp.broker_timeout; the view waits, and
#     goes on exactly once the mapping holds the right password.
#  4. ACLs: a topic the principal may not describe, then may not read, for a
#     scan and a view's worker; a topic it may not write, for an INSERT (a
#     principal that may write elsewhere, and one that may write nowhere, so
#     its idempotent producer gets no producer id) and for a view's output
#     topic.  Once granted, the inserts go through and the views go on,
#     exact.
#  5. SCRAM-SHA-256 with the right password (Kafka's Java client logs in
#     with it): librdkafka before 2.6.1 cannot (Kafka 4 checks the nonce
#     strictly); the error is an authentication error naming the server.
# No password is ever in an error, ssp.views or the server log.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my %password = (alice => 'alice-secret', bob => 'bob-secret', carol => 'carol-secret');
my $wrong = 'Wr0ng-pa55-n0t-al1ce';
my $k = SspTest::start_kafka(partitions => 3,
	plain => [ "alice:$password{alice}", "bob:$password{bob}" ],
	scram => "carol:$password{carol}");
ok($k->{bootstrap_sasl}, 'the cluster has a SASL listener');
# Postgres itself would log CREATE USER MAPPING, passwords and all
my $node = SspTest::new_node('sasl',
	conf => "log_statement = none\nssp.broker_timeout = '5s'\n");

# topics, and ACLs, as ANONYMOUS on the PLAINTEXT listener
SspTest::kafka($k, 'topics', '--create', '--topic', $_, '--partitions', '3')
  for qw(orders secret_orders orders_out);
SspTest::kafka($k, 'acls', '--add', '--allow-principal', 'User:alice', '--allow-principal', 'User:carol',
	'--operation', 'Read', '--operation', 'Write', '--operation', 'Describe', '--topic', 'orders');
# scans read as group ssp, a view's worker as ssp.DATABASE.VIEWOID
SspTest::kafka($k, 'acls', '--add', '--allow-principal', 'User:alice', '--allow-principal', 'User:bob',
	'--allow-principal', 'User:carol', '--operation', 'Read', '--group', 'ssp',
	'--resource-pattern-type', 'prefixed');

$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$k->{bootstrap_sasl}',
	    "security.protocol" 'SASL_PLAINTEXT', "sasl.mechanisms" 'PLAIN');
	CREATE FOREIGN TABLE orders (id bigint, amount int) SERVER kafka OPTIONS (topic 'orders', key 'id');
	CREATE FOREIGN TABLE secret_orders (id bigint, amount int) SERVER kafka OPTIONS (topic 'secret_orders', key 'id');
	-- the same topics as ANONYMOUS: the truth, and the writes of the setup
	CREATE SERVER kafka_admin FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$k->{bootstrap}');
	CREATE FOREIGN TABLE orders_all (id bigint, amount int) SERVER kafka_admin OPTIONS (topic 'orders', key 'id');
	CREATE FOREIGN TABLE secret_all (id bigint, amount int) SERVER kafka_admin OPTIONS (topic 'secret_orders', key 'id');
	CREATE FOREIGN TABLE out_all (bucket int, n bigint, total bigint, _op text, _seq bigint)
	  SERVER kafka_admin OPTIONS (topic 'orders_out');
	CREATE ROLE app; CREATE ROLE nomap; CREATE ROLE wrongpw; CREATE ROLE bobrole;
	GRANT USAGE ON FOREIGN SERVER kafka TO app, nomap, wrongpw, bobrole;
	GRANT CREATE ON SCHEMA public TO app, nomap, wrongpw, bobrole;
	GRANT SELECT, INSERT ON orders, secret_orders TO app, nomap, wrongpw, bobrole;
	CREATE USER MAPPING FOR app SERVER kafka OPTIONS ("sasl.username" 'alice', "sasl.password" '$password{alice}');
	CREATE USER MAPPING FOR wrongpw SERVER kafka OPTIONS ("sasl.username" 'alice', "sasl.password" '$wrong');
	CREATE USER MAPPING FOR bobrole SERVER kafka OPTIONS ("sasl.username" 'bob', "sasl.password" '$password{bob}');
});

my @errors;    # every error text the test saw, searched for secrets at the end

# as_role($role, $sql): run $sql as $role; (ok, stdout, stderr).  A
# statement that does not end within 4 minutes is a hang, a failure.
sub as_role
{
	my ($role, $sql, $name) = @_;
	my ($out, $err, $timed_out) = ('', '', 0);
	my $rc = $node->psql('postgres', "SET ROLE $role;\n$sql",
		stdout => \$out, stderr => \$err, timeout => 240, timed_out => \$timed_out,
		on_error_stop => 1);
	ok(!$timed_out, "$name: no hang");
	push @errors, $err;
	return ($rc == 0, $out, $err);
}

# wait_as($role, $view): ssp.wait as the view's owner (it asks the broker
# for the watermarks with the caller's user mapping)
sub wait_as
{
	my ($role, $view) = @_;
	my ($ok, $out, $err) = as_role($role, "SELECT ssp.wait('$view', '180 s')", "ssp.wait('$view')");
	is($out, 't', "ssp.wait('$view') as $role: the view applied everything") or diag $err;
}

sub view_state
{
	my ($view) = @_;
	return $node->safe_psql('postgres',
		"SELECT status || ' | ' || coalesce(last_error, '') FROM ssp.views WHERE view = '$view'::regclass");
}

# wait_state($view, $re): until "status | last_error" of the view matches
# $re (3 minutes at most); returns the state it was in
sub wait_state
{
	my ($view, $re) = @_;
	my $state;
	for (1 .. 360)
	{
		$state = view_state($view);
		return $state if $state =~ $re;
		select(undef, undef, undef, 0.5);
	}
	diag "ssp.views: $state";
	return $state;
}

# ---- 1. credentials only in the user mapping
my ($ok, $out, $err) = as_role('NONE',
	"ALTER SERVER kafka OPTIONS (ADD \"sasl.password\" 'not-here')", 'a password in the server');
like($err, qr/ERROR:  option "sasl.password" must be set in a user mapping, not in a server/,
	'a password is refused in the server');
($ok, $out, $err) = as_role('app', 'INSERT INTO orders SELECT g, g % 97 FROM generate_series(1, 3000) g',
	'insert as alice');
ok($ok, 'a role with a user mapping for alice inserts into the stream') or diag $err;
my $sum = 0;
$sum += $_ % 97 for 1 .. 3000;
($ok, $out, $err) = as_role('app', 'SELECT count(*), sum(amount) FROM orders', 'scan as alice');
is($out, "3000|$sum", 'and reads the 3,000 messages back through SASL_PLAINTEXT') or diag $err;
is($node->safe_psql('postgres', 'SELECT count(*), sum(amount) FROM orders_all'), "3000|$sum",
	'they are on the topic');
($ok, $out, $err) = as_role('app', q{
	CREATE VIEW per_bucket WITH (ssp.continuous) AS
	  SELECT id % 10 AS bucket, count(*) AS n, sum(amount) AS total FROM orders GROUP BY 1},
	'create view as alice');
ok($ok, 'the role creates a continuous view') or diag $err;
wait_as('app', 'per_bucket');
my $truth = 'SELECT id % 10 AS bucket, count(*) AS n, sum(amount) AS total FROM orders_all GROUP BY 1';
is(SspTest::differences($node, 'postgres', 'SELECT * FROM per_bucket', $truth), '0',
	'its view, read by its worker as alice, equals the query over the whole topic');
is(view_state('per_bucket'), 'running | ', 'and runs without error');

# ---- 2. no user mapping
for my $sql ('SELECT count(*) FROM orders', 'INSERT INTO orders VALUES (1, 1)')
{
	($ok, $out, $err) = as_role('nomap', $sql, "$sql without a mapping");
	ok(!$ok, "without a user mapping, fails: $sql");
	like($err, qr/ERROR:  could not create a Kafka client for server "kafka"/, '... naming the server');
	like($err, qr/DETAIL:  sasl.username and sasl.password must be set/, '... and what is missing');
}
($ok, $out, $err) = as_role('nomap',
	'CREATE VIEW nomap_count WITH (ssp.continuous) AS SELECT count(*) AS n FROM orders', 'view without a mapping');
is(wait_state('nomap_count', qr/^failed \| ./),
	'failed | could not create a Kafka client for server "kafka": sasl.username and sasl.password must be set',
	"the worker of a view whose owner has no mapping fails, naming the server and what is missing");
{
	like(view_state('nomap_count'), qr/sasl.username/, "... and what is missing, in ssp.views");
}
$node->safe_psql('postgres', 'DROP VIEW nomap_count');

# ---- 3. a wrong password
($ok, $out, $err) = as_role('wrongpw', 'SELECT count(*) FROM orders', 'scan with a wrong password');
ok(!$ok, 'a scan with a wrong password fails');
note "wrong password, scan: $err";
like($err, qr/could not get the metadata of topic "orders"/, '... naming the topic');
like($err, qr/SASL authentication error: Authentication failed: Invalid username or password/,
	'... saying the authentication failed');
like($err, qr/server "kafka"/, '... naming the server');
{
	unlike($err, qr/brokers of server "kafka" are up/, 'the hint does not blame the brokers');
}
($ok, $out, $err) = as_role('wrongpw', 'INSERT INTO orders VALUES (1, 1)', 'insert with a wrong password');
ok(!$ok, 'an insert with a wrong password fails');
like($err, qr/could not produce to topic "orders"/, '... naming the topic');
like($err, qr/SASL authentication error/, '... saying the authentication failed');
like($err, qr/server "kafka"/, '... naming the server');

($ok, $out, $err) = as_role('wrongpw',
	'CREATE VIEW wrong_count WITH (ssp.continuous) AS SELECT count(*) AS n, sum(amount) AS total FROM orders',
	'view with a wrong password');
ok($ok, 'a view with a wrong password is created') or diag $err;
# (within the first second it may say only that the brokers have not
# answered yet; the error comes with the request's end, ssp.broker_timeout)
like(wait_state('wrong_count', qr/^waiting for broker \| could not/),
	qr/^waiting for broker \| could not get the metadata of topic "orders": .*SASL authentication error/,
	'its worker waits for the broker, naming the topic and the authentication error');
{
	like(view_state('wrong_count'), qr/authentication/i, '... and saying the authentication failed');
}
$node->safe_psql('postgres',
	"ALTER USER MAPPING FOR wrongpw SERVER kafka OPTIONS (SET \"sasl.password\" '$password{alice}')");
wait_as('wrongpw', 'wrong_count');
is($node->safe_psql('postgres', 'SELECT n, total FROM wrong_count'), "3000|$sum",
	'with the right password in the mapping, the view goes on, exact');
$node->safe_psql('postgres', 'DROP VIEW wrong_count');

# ---- 4. ACLs
$node->safe_psql('postgres', 'INSERT INTO secret_all SELECT g, g % 13 FROM generate_series(1, 500) g');

# bob may do nothing on secret_orders
($ok, $out, $err) = as_role('bobrole', 'SELECT count(*) FROM secret_orders', 'scan without DESCRIBE');
ok(!$ok, 'a scan of a topic the principal may not describe fails');
note "no ACL, scan: $err";
like($err, qr/could not get the metadata of topic "secret_orders"/, '... naming the topic');
like($err, qr/DETAIL:  Broker: Topic authorization failed/, '... saying the principal may not');
{
	like($err, qr/server "kafka"/, '... naming the server');
	like($err, qr/HINT: .*(READ|DESCRIBE)/, '... with a hint at the ACL');
}

# alice may write orders, not secret_orders: her producer has an id, the
# topic refuses the messages
($ok, $out, $err) = as_role('app', "INSERT INTO secret_orders VALUES (9001, 1);\n", 'insert without WRITE');
ok(!$ok, 'an insert into a topic the principal may not write fails');
like($err, qr/could not produce to topic "secret_orders"/, '... naming the topic');
like($err, qr/DETAIL:  The broker refused 1 message: Broker: Topic authorization failed/,
	'... saying the broker refused it');
like($err, qr/HINT:  The principal of server "kafka" may not write to the topic: grant it WRITE \(kafka-acls\)/,
	'... with the hint');
my ($out2, $err2) = ('', '');
$node->psql('postgres', "SET ROLE app;\nINSERT INTO secret_orders VALUES (9001, 1);\nINSERT INTO secret_orders VALUES (9002, 1);",
	stdout => \$out2, stderr => \$err2, on_error_stop => 0, timeout => 240);
push @errors, $err2;
my $refused = () = $err2 =~ /Topic authorization failed/g;
is($refused, 2, 'a second insert in the same session fails the same way');
{
	my $hints = () = $err2 =~ /grant it WRITE/g;
	is($hints, 2, '... with the hint too');
}

# views: one that reads secret_orders as bob, one whose changes alice
# publishes to orders_out, which she may not write
($ok, $out, $err) = as_role('bobrole',
	'CREATE VIEW bob_secret WITH (ssp.continuous) AS SELECT id % 7 AS k, count(*) AS n, sum(amount) AS total FROM secret_orders GROUP BY 1',
	'create view on secret_orders');
ok($ok, 'bob creates a view of secret_orders') or diag $err;
($ok, $out, $err) = as_role('app', q{
	CREATE VIEW pub WITH (ssp.continuous, ssp.output_topic = 'orders_out') AS
	  SELECT id % 10 AS bucket, count(*) AS n, sum(amount) AS total FROM orders GROUP BY 1},
	'create view with an output topic');
ok($ok, 'alice creates a view that publishes to orders_out') or diag $err;

is(wait_state('bob_secret', qr/^waiting for broker \| could not/),
	'waiting for broker | could not get the metadata of topic "secret_orders": Broker: Topic authorization failed',
	"the worker of a view of a topic its owner's principal may not describe waits, naming the topic and why");
{
	like(view_state('bob_secret'), qr/authori[sz]ation/i, '... saying the principal may not');
}
like(wait_state('pub', qr/^failed \| ./),
	qr/^failed \| could not produce to topic "orders_out": The broker refused \d+ messages?: Broker: Topic authorization failed$/,
	'the worker of a view that may not write its output topic fails, naming the topic and why');
{
	like(view_state('pub'), qr/authori[sz]ation/i, '... saying the principal may not');
}
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM pub_outbox'), '>=', 10,
	'the outbox keeps the changes of the 10 groups');
is($node->safe_psql('postgres', 'SELECT count(*) FROM out_all'), '0', 'none reached orders_out');

# grants: alice may write orders_out; bob may describe secret_orders
SspTest::kafka($k, 'acls', '--add', '--allow-principal', 'User:alice', '--operation', 'Write',
	'--topic', 'orders_out');
SspTest::kafka($k, 'acls', '--add', '--allow-principal', 'User:bob', '--operation', 'Describe',
	'--topic', 'secret_orders');

# bob may describe the topic, not read it (once the brokers apply the ACL)
for (1 .. 30)
{
	($ok, $out, $err) = as_role('bobrole', 'SELECT count(*) FROM secret_orders', 'scan without READ');
	last unless $err =~ /could not get the metadata/;
	sleep 1;
}
ok(!$ok, 'a scan of a topic the principal may describe but not read fails');
note "no READ, scan: $err";
like($err, qr/could not read messages of topic "secret_orders"/, '... naming the topic');
like($err, qr/DETAIL:  Broker: Topic authorization failed/, '... saying the principal may not');
# (its last error may still be the metadata's for a moment: wait for the fetch's)
like(wait_state('bob_secret', qr/^waiting for broker \| .*Fetch.*authorization/),
	qr/^waiting for broker \| topic "secret_orders": Fetch from broker \d+ failed: Broker: Topic authorization failed$/,
	'the worker of the view waits, saying its principal may not read');
{
	like(view_state('bob_secret'), qr/secret_orders/, '... naming the topic');
}

# bob may write no topic: his idempotent producer gets no producer id
# (CLUSTER_AUTHORIZATION_FAILED, a fatal error of the producer)
my $bob = $node->background_psql('postgres', on_error_stop => 0);
$bob->query_safe('SET ROLE bobrole');
$bob->query('INSERT INTO secret_orders VALUES (9003, 1)');
my $bob_err = $bob->{stderr};
push @errors, $bob_err;
note "no WRITE on any topic, insert: $bob_err";
like($bob_err, qr/could not produce to topic "secret_orders"/,
	'an insert by a principal that may write no topic fails, naming the topic');
{
	like($bob_err, qr/authori[sz]ation/i, '... saying the principal may not');
}

# bob may read and write secret_orders
SspTest::kafka($k, 'acls', '--add', '--allow-principal', 'User:bob', '--operation', 'Read',
	'--operation', 'Write', '--topic', 'secret_orders');
my $inserted = 0;
for (1 .. 30)
{
	($ok, $out, $err) = as_role('bobrole', 'INSERT INTO secret_orders VALUES (9004, 4)', 'insert after the grant');
	$inserted = 1, last if $ok;
	sleep 1;
}
ok($inserted, 'granted WRITE, a new session of bob inserts') or diag $err;
$bob->{stderr} = '';
$bob->query('INSERT INTO secret_orders VALUES (9005, 5)');
$bob_err = $bob->{stderr};
push @errors, $bob_err;
{
	is($bob_err, '', 'granted WRITE, the session whose producer failed inserts too');
}
$bob->quit;
wait_as('bobrole', 'bob_secret');
my $secret_truth = 'SELECT id % 7 AS k, count(*) AS n, sum(amount) AS total FROM secret_all GROUP BY 1';
is(SspTest::differences($node, 'postgres', 'SELECT * FROM bob_secret', $secret_truth), '0',
	'granted READ, the view of secret_orders goes on and equals the query over the whole topic');
is($node->safe_psql('postgres', 'SELECT sum(n) FROM bob_secret'),
	$node->safe_psql('postgres', 'SELECT count(*) FROM secret_all'), '... every message counted once');
is(view_state('bob_secret'), 'running | ', '... and its error is over');

# alice may write orders_out: the view publishes its outbox, and goes on
ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pub_outbox'),
	'granted WRITE, the view publishes what its outbox kept');
($ok, $out, $err) = as_role('app', 'INSERT INTO orders SELECT g, g % 97 FROM generate_series(3001, 3500) g',
	'more orders');
ok($ok, 'alice writes 500 more orders') or diag $err;
$sum += $_ % 97 for 3001 .. 3500;
wait_as('app', 'pub');
wait_as('app', 'per_bucket');
ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pub_outbox'), 'and publishes their changes');
is($node->safe_psql('postgres', 'SELECT sum(n), sum(total) FROM pub'), "3500|$sum", 'the view is exact');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM pub',
		'SELECT * FROM (SELECT DISTINCT ON (bucket) bucket, n, total FROM out_all ORDER BY bucket, _seq DESC) l'),
	'0', 'the latest change of each group on orders_out is the view\'s row');
is(view_state('pub'), 'running | ', '... and its error is over');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM per_bucket', $truth), '0',
	'the first view is still exact');

# ---- 5. SCRAM-SHA-256, with the right password
my $tmp = PostgreSQL::Test::Utils::tempdir('scram');
open(my $fh, '>', "$tmp/carol.properties") or die "$tmp/carol.properties: $!";
print $fh "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n",
  "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required ",
  "username=\"carol\" password=\"$password{carol}\";\n";
close($fh);
like(SspTest::kafka($k, 'run', 'org.apache.kafka.tools.TopicCommand', '--bootstrap-server', $k->{bootstrap_sasl},
		'--command-config', "$tmp/carol.properties", '--list'),
	qr/^orders$/m, "Kafka's Java client logs in as carol with SCRAM-SHA-256");

$node->safe_psql('postgres', qq{
	CREATE SERVER kafka_scram FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$k->{bootstrap_sasl}',
	    "security.protocol" 'SASL_PLAINTEXT', "sasl.mechanisms" 'SCRAM-SHA-256');
	CREATE FOREIGN TABLE orders_scram (id bigint, amount int) SERVER kafka_scram OPTIONS (topic 'orders');
	CREATE ROLE carolrole;
	GRANT USAGE ON FOREIGN SERVER kafka_scram TO carolrole;
	GRANT SELECT ON orders_scram TO carolrole;
	CREATE USER MAPPING FOR carolrole SERVER kafka_scram
	  OPTIONS ("sasl.username" 'carol', "sasl.password" '$password{carol}');
});
my $rdkafka = `pkg-config --modversion rdkafka 2>/dev/null` =~ s/\s+$//r;
my @v = split /\./, $rdkafka || '0';
my $scram_works = sprintf('%03d%03d%03d', map { $_ // 0 } @v[0 .. 2]) ge '002006001';
note "librdkafka $rdkafka";
($ok, $out, $err) = as_role('carolrole', 'SELECT count(*) FROM orders_scram', 'scan with SCRAM');
if ($scram_works)
{
	is($out, '3500', "librdkafka $rdkafka logs in with SCRAM-SHA-256 and reads the topic") or diag $err;
}
else
{
	note "SCRAM-SHA-256 with librdkafka $rdkafka, the right password: $err";
	ok(!$ok, "librdkafka $rdkafka cannot log in with SCRAM-SHA-256 to Kafka 4");
	like($err, qr/could not get the metadata of topic "orders"/, '... the scan fails naming the topic');
	like($err, qr/SASL authentication error: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256/,
		'... with the authentication error of the mechanism');
	like($err, qr/server "kafka_scram"/, '... naming the server');
	{
		like($err, qr/HINT: .*2\.6\.1/, '... with a hint at the librdkafka version');
	}
}

# ---- no password anywhere
my $views = $node->safe_psql('postgres', 'SELECT string_agg(v::text, E\'\n\') FROM ssp.views v');
my $log = slurp_file($node->logfile);
like($log, qr/SASL authentication error/, 'the server log has the authentication errors');
my $all_errors = join("\n", @errors);
for my $secret (sort(values %password), $wrong)
{
	ok(index($all_errors, $secret) < 0, "no error, DETAIL or HINT shows the password $secret");
	ok(index($views, $secret) < 0, "ssp.views does not show the password $secret");
	my @lines = grep { index($_, $secret) >= 0 } split /\n/, $log;
	is(scalar(@lines), 0, "the server log does not show the password $secret") or diag join("\n", @lines);
}

$node->stop;
done_testing();
