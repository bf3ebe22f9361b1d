# Every SQL example in README.md runs: each ```sql block, in order, in a
# database of its own against the test broker, with ON_ERROR_STOP; then
# every continuous view it made catches up and runs without an error.  A
# block may be preceded by a comment saying what it needs:
#   <!-- readme-test: synopsis -->  a syntax summary, not run
#   <!-- readme-test: empty -->     a database without ssp (the block
#                                   creates the extension; 'localhost:9092'
#                                   becomes the test broker)
#   <!-- readme-test: server -->    ssp and the server kafka only
#   <!-- readme-test: after -->     the database of the block before
# otherwise it gets ssp, the server kafka, a stream "orders" with the
# columns the examples use and 2,000 orders in it, and a table "customers".
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $readme = "$ENV{SSP_SRC}/README.md";
open(my $fh, '<', $readme) or die "cannot read $readme: $!";
my (@blocks, $in, $kind, $line);
my $pending = 'default';
while (my $l = <$fh>)
{
	$line++;
	if ($in)
	{
		if ($l =~ /^```\s*$/)
		{
			$in = 0;
			next;
		}
		$blocks[-1]{sql} .= $l;
		next;
	}
	if ($l =~ /<!--\s*readme-test:\s*(\w+)\s*-->/)
	{
		$pending = $1;
		die "README.md line $line: unknown readme-test kind $1"
		  unless $pending =~ /^(synopsis|empty|server|after)$/;
		next;
	}
	if ($l =~ /^```sql\s*$/)
	{
		push @blocks, { line => $line, kind => $pending, sql => '' };
		$in = 1;
		$pending = 'default';
		next;
	}
	$pending = 'default' if $l =~ /\S/;
}
close($fh);
my @run = grep { $_->{kind} ne 'synopsis' } @blocks;
cmp_ok(scalar(@run), '>=', 10, scalar(@blocks) . ' SQL blocks in README.md, ' . scalar(@run) . ' to run');

my $broker = SspTest::start_broker(topics => ['orders:4', 'payments:4', 'customers:4', 'revenue_changes:4']);
my $node = SspTest::new_node('readme');
my $i = 0;
for my $b (@run)
{
	$i++ unless $b->{kind} eq 'after';
	my $db = "readme_$i";
	$node->safe_psql('postgres', "CREATE DATABASE $db") unless $b->{kind} eq 'after';
	if ($b->{kind} ne 'empty' && $b->{kind} ne 'after')
	{
		$node->safe_psql($db, qq{
			CREATE EXTENSION ssp;
			CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}')});
	}
	if ($b->{kind} eq 'default')
	{
		$node->safe_psql($db, q{
			CREATE FOREIGN TABLE orders (order_id bigint, customer_id bigint, region text, amount numeric,
			    qty int, ts timestamptz)
			  SERVER kafka OPTIONS (topic 'orders', timestamp 'ts');
			CREATE TABLE customers (id bigint PRIMARY KEY, segment text);
			INSERT INTO customers SELECT g, 'segment ' || g % 3 FROM generate_series(0, 99) g;
			INSERT INTO orders SELECT g, g % 100, 'r' || g % 5, g % 300, g % 7,
			    now() - interval '1 hour' + g * interval '1 s' FROM generate_series(1, 2000) g});
	}
	(my $sql = $b->{sql}) =~ s/'localhost:9092'/'$broker->{bootstrap}'/g;
	my ($ret, $out, $err) = $node->psql($db, $sql, extra_params => ['-v', 'ON_ERROR_STOP=1']);
	is($ret, 0, "README.md line $b->{line}: the example runs")
	  or diag("$err\n$sql");
	# the views it made catch up, and run without an error
	my @views = split /\n/, $node->safe_psql($db, 'SELECT view FROM ssp.continuous_views ORDER BY 1');
	$node->safe_psql($db, "SELECT ssp.wait('$_', '60 s')") for @views;
	$node->poll_query_until($db,
		"SELECT count(*) = 0 FROM ssp.views WHERE status <> 'running' OR last_error IS NOT NULL");
	is($node->safe_psql($db, q{SELECT string_agg(view || ': ' || status || ' ' || coalesce(last_error, ''), ', ')
			FROM ssp.views WHERE status <> 'running' OR last_error IS NOT NULL}),
		'', "README.md line $b->{line}: its " . scalar(@views) . ' continuous views run');
}

$node->stop;
done_testing();
