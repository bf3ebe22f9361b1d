# Secrets in user mappings stay secret: a stream on a server that wants SASL
# with a password (which the test broker cannot do, so every connection
# fails) is scanned, written and consumed by a view with librdkafka's
# security and broker debugging on; the password is in no error, no
# ssp.views column, no ssp catalog row, no line of the server log, and in a
# pg_dump of the database only in the CREATE USER MAPPING that holds it.
# A sasl.oauthbearer.config that librdkafka's unsecured JWT would refuse
# is refused, unshown; one it takes shows in no error another role using
# the mapping for PUBLIC sees, nor in the log.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $secret = 'Pa55-w0rd-n3ver-sh0wn';
my $broker = SspTest::start_broker(topics => ['orders:2']);
# statements are not logged here: Postgres itself logs the text of a
# statement (log_statement = all), and of a failed one
# (log_min_error_statement), passwords and all
my $node = SspTest::new_node('secrets',
	conf => "log_statement = none\nlog_min_error_statement = panic\nssp.broker_timeout = '3s'\n");
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}',
	    "security.protocol" 'SASL_PLAINTEXT', "sasl.mechanisms" 'PLAIN', debug 'security,broker,protocol');
	CREATE USER MAPPING FOR CURRENT_USER SERVER kafka
	  OPTIONS ("sasl.username" 'alice', "sasl.password" '$secret');
	CREATE FOREIGN TABLE orders (id bigint, region text) SERVER kafka OPTIONS (topic 'orders');
});

my @errors;
for my $sql ('SELECT * FROM orders', "INSERT INTO orders VALUES (1, 'r1')",
	"CREATE USER MAPPING FOR CURRENT_USER SERVER kafka OPTIONS (\"sasl.password\" '$secret')",
	"ALTER USER MAPPING FOR CURRENT_USER SERVER kafka OPTIONS (SET \"sasl.password\" '$secret', ADD \"socket.timeout.ms\" 'soon')")
{
	my ($rc, $out, $err) = $node->psql('postgres', $sql);
	isnt($rc, 0, "fails: $sql");
	push @errors, $err;
}
unlike(join("\n", @errors), qr/\Q$secret\E/, 'no error shows the password');

# librdkafka's unsecured JWT builds the token from sasl.oauthbearer.config
# in its own thread, where librdkafka 2.0 crashes the server on a config it
# refuses: ssp refuses it first, without showing it
my $oauth_secret = 'Hunter2-0auth';
$node->safe_psql('postgres', qq{
	CREATE SERVER oauth FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}',
	    "security.protocol" 'SASL_PLAINTEXT', "sasl.mechanisms" 'OAUTHBEARER', debug 'security,broker');
	CREATE ROLE bob;
	GRANT USAGE ON FOREIGN SERVER oauth TO bob;
});
my ($oauth_rc, $oauth_out, $oauth_err) = $node->psql('postgres', qq{
	CREATE USER MAPPING FOR PUBLIC SERVER oauth OPTIONS (
	    "sasl.oauthbearer.config" 'principal=svc topsecret=$oauth_secret',
	    "enable.sasl.oauthbearer.unsecure.jwt" 'true')});
like($oauth_err, qr/invalid value for Kafka property "sasl.oauthbearer.config".*not one of principal=/s,
	'a config the unsecured JWT would refuse is refused');
unlike($oauth_err, qr/\Q$oauth_secret\E|topsecret/, 'without showing it');
# one it takes gets as far as the brokers, which know no SASL
$node->safe_psql('postgres', qq{
	CREATE USER MAPPING FOR PUBLIC SERVER oauth OPTIONS (
	    "sasl.oauthbearer.config" 'principal=svc scope=$oauth_secret extension_topsecret=$oauth_secret',
	    "enable.sasl.oauthbearer.unsecure.jwt" 'true');
	CREATE FOREIGN TABLE oauth_orders (id bigint) SERVER oauth OPTIONS (topic 'orders');
	GRANT SELECT, INSERT ON oauth_orders TO bob;
});
my @oauth_errors;
for my $sql ('SELECT * FROM oauth_orders', 'INSERT INTO oauth_orders VALUES (1)')
{
	my ($rc, $out, $err) = $node->psql('postgres', "SET ROLE bob; $sql");
	isnt($rc, 0, "fails for another role: $sql");
	push @oauth_errors, $err;
}
like(join("\n", @oauth_errors), qr/SASL Handshake not supported by broker/, 'at the brokers');
unlike(join("\n", @oauth_errors), qr/\Q$oauth_secret\E|topsecret/,
	'no error shows the OAUTHBEARER config to another role');

$node->safe_psql('postgres',
	'CREATE VIEW n WITH (ssp.continuous) AS SELECT region, count(*) FROM orders GROUP BY region');
ok($node->poll_query_until('postgres',
		"SELECT last_error IS NOT NULL FROM ssp.views WHERE view = 'n'::regclass"),
	'the view reports its broker trouble');
my $views = $node->safe_psql('postgres', 'SELECT v::text FROM ssp.views v');
unlike($views, qr/\Q$secret\E/, 'ssp.views does not show it');
my $catalog = $node->safe_psql('postgres', q{
	SELECT string_agg(t::text, E'\n') FROM (
	  SELECT c::text AS t FROM ssp.continuous_views c UNION ALL
	  SELECT o::text FROM ssp.offsets o UNION ALL
	  SELECT d::text FROM ssp.dead_letters d) x});
unlike($catalog, qr/\Q$secret\E/, 'the ssp catalog does not hold it');

# a restart: the log of a worker that starts and fails again
$node->restart;
$node->poll_query_until('postgres',
	"SELECT last_error IS NOT NULL FROM ssp.views WHERE view = 'n'::regclass");
my $log = slurp_file($node->logfile);
like($log, qr/sasl|SASL|security/i, 'librdkafka logged its security trouble');
unlike($log, qr/\Q$secret\E/, 'the server log never shows the password');
unlike($log, qr/\Q$oauth_secret\E|topsecret/, 'nor the OAUTHBEARER config');

my $dump = `pg_dump -h @{[$node->host]} -p @{[$node->port]} postgres`;
is($?, 0, 'pg_dump works');
my @statements = grep { /\Q$secret\E/ } split /;\n/, $dump;
is(scalar(@statements), 1, 'pg_dump holds the password once');
like($statements[0] // '', qr/^CREATE USER MAPPING/m, 'in its CREATE USER MAPPING');

$node->stop;
done_testing();
