# No role but a superuser, with ssp.allow_kinit_cmd on, makes the backend
# run a command through librdkafka's Kerberos ticket refresh, whatever the
# role does: the repro of the issue (a user mapping whose kinit command
# touches a file), the same command smuggled into the default kinit
# template through sasl.kerberos.principal, a user mapping written behind
# the rule's back (as before it existed) and used by scans, inserts and a
# view's worker, and a server whose owner lost superuser.  Each is checked
# by the file the command would create.  The test can fail: with
# ssp.allow_kinit_cmd on, a superuser's kinit command does run, and the
# same file appears.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_broker(topics => ['orders:2']);
my $node = SspTest::new_node('kinit', conf => "ssp.broker_timeout = '2s'\n");
my $dir = PostgreSQL::Test::Utils::tempdir;
my $n = 0;

# pwned(): a fresh path for a command to create
sub pwned { $n++; return "$dir/pwned$n"; }

# as_alice($sql): psql as the role alice; returns (rc, stderr)
sub as_alice
{
	my ($sql) = @_;
	my ($rc, $out, $err) = $node->psql('postgres', $sql, extra_params => ['-U', 'alice']);
	return ($rc, $err);
}

$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE ROLE alice LOGIN;
	GRANT USAGE ON FOREIGN SERVER kafka TO alice;
	GRANT USAGE ON FOREIGN DATA WRAPPER ssp_kafka TO alice;
	GRANT CREATE ON SCHEMA public TO alice;
});

# the repro, as alice
my $file = pwned();
my ($rc, $err) = as_alice(qq{
	CREATE USER MAPPING FOR alice SERVER kafka OPTIONS (
	    "sasl.kerberos.kinit.cmd" 'touch $file', "security.protocol" 'sasl_plaintext',
	    "sasl.mechanisms" 'GSSAPI')});
isnt($rc, 0, 'the user mapping of the repro is refused');
like($err, qr/permission denied to set Kafka property "sasl.kerberos.kinit.cmd"/, 'and says why');
as_alice(q{CREATE FOREIGN TABLE o (x int) SERVER kafka OPTIONS (topic 'orders');
           SELECT count(*) FROM o});
ok(!-e $file, 'its command never ran');

# the command in the default kinit template, through the principal
$file = pwned();
($rc, $err) = as_alice(qq{
	CREATE USER MAPPING FOR alice SERVER kafka OPTIONS (
	    "sasl.kerberos.principal" 'x; touch $file', "security.protocol" 'sasl_plaintext',
	    "sasl.mechanisms" 'GSSAPI')});
like($err, qr/permission denied to set Kafka property "sasl.kerberos.principal"/,
	'a principal is refused to alice');
# a superuser's server that sets one: the template is not run unless allowed
my $file_template = pwned();
$node->safe_psql('postgres', qq{
	CREATE SERVER kerberos FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}',
	    "security.protocol" 'sasl_plaintext', "sasl.mechanisms" 'GSSAPI',
	    "sasl.kerberos.principal" 'x; touch $file_template #',
	    "sasl.kerberos.keytab" '/nonexistent.keytab');
	GRANT USAGE ON FOREIGN SERVER kerberos TO alice;
});
as_alice(q{CREATE FOREIGN TABLE k (x int) SERVER kerberos OPTIONS (topic 'orders');
           SELECT count(*) FROM k});
ok(!-e $file, 'the principal alice tried never reached a shell');
ok(!-e $file_template, 'no kinit template runs while ssp.allow_kinit_cmd is off');

# a user mapping written behind the rule's back, used by every path that
# builds a client as alice: a scan, an insert, ssp.wait and a view's worker
$file = pwned();
$node->safe_psql('postgres', qq{
	CREATE USER MAPPING FOR alice SERVER kafka OPTIONS ("sasl.username" 'alice');
	UPDATE pg_user_mapping
	   SET umoptions = ARRAY['sasl.kerberos.kinit.cmd=touch $file',
	                         'security.protocol=sasl_plaintext', 'sasl.mechanisms=GSSAPI']
	 WHERE umuser = 'alice'::regrole;
});
for my $sql ('SELECT count(*) FROM o', 'INSERT INTO o VALUES (1)')
{
	($rc, $err) = as_alice($sql);
	like($err, qr/permission denied to set Kafka property "sasl.kerberos.kinit.cmd"/,
		"refused when used: $sql");
}
($rc, $err) = as_alice(q{CREATE VIEW v WITH (ssp.continuous) AS SELECT count(*) AS n FROM o});
is($rc, 0, 'alice creates a continuous view');
($rc, $err) = as_alice(q{SELECT ssp.wait('v', '1 s')});
like($err, qr/permission denied to set Kafka property/, 'ssp.wait refuses to build her client');
ok($node->poll_query_until('postgres',
		"SELECT last_error LIKE 'permission denied to set Kafka property%' FROM ssp.views WHERE view = 'v'::regclass"),
	'the view\'s worker refuses it too, and says so in ssp.views');
ok(!-e $file, 'the command of the mapping never ran');

# a server whose owner is a superuser no more
$file = pwned();
$node->safe_psql('postgres', qq{
	CREATE ROLE bob SUPERUSER LOGIN;
	SET ROLE bob;
	CREATE SERVER bobs FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}',
	    "security.protocol" 'sasl_plaintext', "sasl.mechanisms" 'GSSAPI',
	    "sasl.kerberos.principal" 'x; touch $file #',
	    "sasl.kerberos.keytab" '/nonexistent.keytab');
	CREATE FOREIGN TABLE b (x int) SERVER bobs OPTIONS (topic 'orders');
	RESET ROLE;
	ALTER ROLE bob NOSUPERUSER;
});
($rc, undef, $err) = $node->psql('postgres', 'SELECT count(*) FROM b');
# (its GSSAPI, for superusers only too, is the first property refused)
like($err, qr/permission denied to set Kafka property "(sasl.kerberos.principal|sasl.mechanisms)"/,
	'a server whose owner lost superuser is refused');
ok(!-e $file, 'and its template never ran');

# with ssp.allow_kinit_cmd on, a superuser's command does run: the check
# above would see it
$node->safe_psql('postgres', 'ALTER SYSTEM SET ssp.allow_kinit_cmd = on; SELECT pg_reload_conf()');
$node->poll_query_until('postgres', 'SELECT current_setting(\'ssp.allow_kinit_cmd\')::bool');
my $file_su = pwned();
$node->safe_psql('postgres', qq{
	CREATE USER MAPPING FOR CURRENT_USER SERVER kafka OPTIONS (
	    "sasl.kerberos.kinit.cmd" 'touch $file_su', "security.protocol" 'sasl_plaintext',
	    "sasl.mechanisms" 'GSSAPI')});
$node->psql('postgres', 'SELECT count(*) FROM o');
ok(-e $file_su, 'a superuser\'s kinit command runs when ssp.allow_kinit_cmd is on');
($rc, $err) = as_alice('SELECT count(*) FROM k');
note $err;
ok(-e $file_template, 'so does the default template of a superuser\'s server');

# and still never alice's
$file = pwned();
($rc, $err) = as_alice(qq{
	DROP USER MAPPING FOR alice SERVER kafka;
	CREATE USER MAPPING FOR alice SERVER kafka OPTIONS (
	    "sasl.kerberos.kinit.cmd" 'touch $file', "security.protocol" 'sasl_plaintext',
	    "sasl.mechanisms" 'GSSAPI')});
like($err, qr/permission denied to set Kafka property "sasl.kerberos.kinit.cmd"/,
	'alice is refused with ssp.allow_kinit_cmd on too');
$node->safe_psql('postgres', qq{
	UPDATE pg_user_mapping
	   SET umoptions = ARRAY['sasl.kerberos.kinit.cmd=touch $file',
	                         'security.protocol=sasl_plaintext', 'sasl.mechanisms=GSSAPI']
	 WHERE umuser = 'alice'::regrole});
as_alice('SELECT count(*) FROM o');
ok(!-e $file, 'and her mapping written behind the rule\'s back never runs');

$node->stop;
done_testing();
