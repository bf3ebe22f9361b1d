# Every SQL example of the manual runs: README.md, then each page of doc/
# in name order; in each file, each ```sql block in order, in a database of
# its own against the test broker, with ON_ERROR_STOP; then every
# continuous view it made catches up and runs without an error.  A block
# may be preceded by a comment saying what it needs:
#   <!-- readme-test: synopsis -->  a syntax summary, not run
#   <!-- readme-test: empty -->     a database without ssp (the block
#                                   creates the extension; 'localhost:9092'
#                                   becomes the test broker)
#   <!-- readme-test: server -->    ssp and the server kafka only
#   <!-- readme-test: after -->     the database of the block before it in
#                                   the same file
# otherwise it gets ssp, the server kafka, a stream "orders" with the
# columns the examples use and 2,000 orders in it, and a table "customers".
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

# the blocks to run before the manual moved from README.md to doc/
my $blocks_before = 12;

# sql_blocks: the ```sql blocks of a file, each with its line and kind.
sub sql_blocks
{
	my ($file) = @_;
	my (@blocks, $in, $line);
	my $pending = 'default';

	open(my $fh, '<', "$ENV{SSP_SRC}/$file") or die "cannot read $file: $!";
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
			die "$file line $line: unknown readme-test kind $1"
			  unless $pending =~ /^(synopsis|empty|server|after)$/;
			next;
		}
		if ($l =~ /^```sql\s*$/)
		{
			push @blocks, { file => $file, line => $line, kind => $pending, sql => '' };
			$in = 1;
			$pending = 'default';
			next;
		}
		$pending = 'default' if $l =~ /\S/;
	}
	close($fh);
	die "$file: a ```sql block is not closed" if $in;
	return @blocks;
}

my @files = ('README.md',
	map { s{^\Q$ENV{SSP_SRC}\E/}{}r } sort glob("$ENV{SSP_SRC}/doc/*.md"));
my (@run, %nblocks, %ran);
for my $file (@files)
{
	my @blocks = sql_blocks($file);
	my @torun = grep { $_->{kind} ne 'synopsis' } @blocks;
	die "$file line $torun[0]{line}: the first block to run cannot be 'after'"
	  if @torun && $torun[0]{kind} eq 'after';
	push @run, @torun;
	$nblocks{$file} = scalar(@blocks);
	$ran{$file} = 0;
}

my $broker = SspTest::start_broker(topics => ['orders:4', 'payments:4', 'customers:4', 'revenue_changes:4', 'rates:4', 'tax_rates:4', 'shipments:4']);
# each block's database keeps its scheduler and workers: room for them all
my $node = SspTest::new_node('readme', conf => "max_worker_processes = 64\n");
my $i = 0;
for my $b (@run)
{
	my $where = "$b->{file} line $b->{line}";

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
	is($ret, 0, "$where: the example runs")
	  or diag("$err\n$sql");
	$ran{ $b->{file} }++;
	# the views it made catch up, and run without an error
	my @views = split /\n/, $node->safe_psql($db, 'SELECT view FROM ssp.continuous_views ORDER BY 1');
	$node->safe_psql($db, "SELECT ssp.wait('$_', '60 s')") for @views;
	$node->poll_query_until($db,
		"SELECT count(*) = 0 FROM ssp.views WHERE status <> 'running' OR last_error IS NOT NULL");
	is($node->safe_psql($db, q{SELECT string_agg(view || ': ' || status || ' ' || coalesce(last_error, ''), ', ')
			FROM ssp.views WHERE status <> 'running' OR last_error IS NOT NULL}),
		'', "$where: its " . scalar(@views) . ' continuous views run');
}

# how many ran, file by file (synopses are not run)
my $total = 0;
$total += $_ for values %ran;
cmp_ok($total, '>=', $blocks_before,
	'SQL blocks run, per file (of its SQL blocks): '
	  . join(', ', map { "$_ $ran{$_} ($nblocks{$_})" } @files)
	  . "; $total in all, at least $blocks_before");

$node->stop;
done_testing();
