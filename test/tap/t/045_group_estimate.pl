# The planner's estimate of a batch's groups.  A batch's columns have no
# statistics, so left alone the planner guesses its groups as 200 for one
# column and at most a tenth of its rows for several; ssp counts them on a
# sample of the batch instead (rows.c, estimate_groups), for batches of at
# least 10,000 rows.  auto_explain logs each plan a worker runs, with the
# rows each node gave; the grouping under each view's merge of a batch of
# at least 10,000 rows is checked against the groups it really gave, and
# each view against its query.
use strict;
use warnings;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_any_broker(topics => ['ge_orders:4']);
my $node = SspTest::new_node('group_estimate', conf => qq{
shared_preload_libraries = 'ssp,auto_explain'
auto_explain.log_min_duration = 0
auto_explain.log_nested_statements = on
auto_explain.log_analyze = on
auto_explain.log_timing = off
auto_explain.log_format = json
});

# 40,000 orders, produced before the views start: each view catches up in
# one batch of 40,000 rows (ssp.batch_size is 200,000)
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE orders (id int, region text, amount numeric) SERVER kafka OPTIONS (topic 'ge_orders');
	CREATE TABLE t (id int, region text, amount numeric);
	INSERT INTO t SELECT g, 'r' || (g % 100), g % 17 FROM generate_series(1, 40000) g;
	INSERT INTO orders SELECT * FROM t;
});

# view name => its query, and the groups of its batch
my %views = (
	# one column, 5,000 groups (the planner alone: 200)
	by_id => ['SELECT id % 5000 AS k, count(*) AS n, sum(amount) AS s FROM orders GROUP BY 1', 5000],
	# two columns, 40,000 groups, every row its own (alone: 4,000)
	by_pair => ['SELECT region, id, count(*) AS n FROM orders GROUP BY region, id', 40000],
	# a WHERE that passes a quarter of the rows, 10,000 groups
	where_odd => ['SELECT id AS k, count(*) AS n FROM orders WHERE id % 4 = 1 GROUP BY 1', 10000],
	# 100 groups in 40,000 rows
	by_region => ['SELECT region, count(*) AS n, avg(amount) AS a FROM orders GROUP BY region', 100],
);
my $log_from = -s $node->logfile;
$node->safe_psql('postgres', join('',
	map { "CREATE VIEW $_ WITH (ssp.continuous) AS $views{$_}[0];\n" } sort keys %views));
SspTest::wait_views($node, 'postgres', sort keys %views);

for my $v (sort keys %views)
{
	my $q = $views{$v}[0] =~ s/FROM orders/FROM t/r;
	is($node->safe_psql('postgres', "SELECT count(*) FROM (($q) EXCEPT ALL (SELECT * FROM $v)) d")
		. '/' . $node->safe_psql('postgres', "SELECT count(*) FROM $v"),
		"0/$views{$v}[1]", "$v equals its query");
}

# find_node($plan, $type): the first node of that type in a plan, depth first
sub find_node
{
	my ($plan, $type) = @_;
	return $plan if $plan->{'Node Type'} eq $type;
	for my $sub (@{ $plan->{Plans} // [] })
	{
		my $found = find_node($sub, $type);
		return $found if $found;
	}
	return undef;
}

# the plans of the merges the workers ran (auto_explain's JSON: the lines
# right after the log line, each indented by a tab): per view, the groups its
# Aggregate was planned at and gave, over a batch of at least 10,000 rows
my %merges;
for my $block (split /^\S.*?LOG:  duration: [\d.]+ ms  plan:\n/m, slurp_file($node->logfile, $log_from))
{
	my ($json) = $block =~ /\A((?:\t.*\n)*)/;
	$json =~ s/^\t//mg;
	next unless $json =~ /MERGE INTO public\.\w+_mrel/;
	my $plan = decode_json($json);
	# (its groups are in a WITH query where a key may be null)
	my ($v) = $plan->{'Query Text'} =~ /^(?:WITH .*?\) )?MERGE INTO public\.(\w+)_mrel/;
	my $agg = find_node($plan->{Plan}, 'Aggregate');
	my $scan = $agg && find_node($agg, 'Custom Scan');
	next unless $scan && $scan->{'Actual Rows'} >= 10000;
	push @{ $merges{$v} }, [ $agg->{'Plan Rows'}, $agg->{'Actual Rows'} ];
}
for my $v (sort keys %views)
{
	my @m = @{ $merges{$v} // [] };
	ok(@m >= 1 && !grep({ $_->[0] < $_->[1] * 0.7 || $_->[0] > $_->[1] * 1.3 } @m),
		"$v: its merge planned the grouping of a batch within 30% of the groups it gave (planned/gave: "
		  . join(', ', map { "$_->[0]/$_->[1]" } @m) . ')');
}

done_testing();
