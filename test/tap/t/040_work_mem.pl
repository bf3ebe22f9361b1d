# The workers apply their batches with work_mem = ssp.work_mem (32MB by
# default), or the server's work_mem where it is -1; a reload changes it
# in running workers, a view alone and views that share a reader alike,
# and nothing is counted twice or lost across the reloads.  A view that
# reads current_setting('work_mem') shows the value its worker applied
# each batch with.  And the memory a worker keeps for its batches goes
# back once it has nothing to apply.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_any_broker(topics => ['wm_orders:2', 'wm_alone:2', 'wm_wide:32']);
my $node = SspTest::new_node('work_mem');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE orders (id int) SERVER kafka OPTIONS (topic 'wm_orders');
	CREATE FOREIGN TABLE alone (id int) SERVER kafka OPTIONS (topic 'wm_alone');
	CREATE VIEW by_mem WITH (ssp.continuous) AS
	  SELECT current_setting('work_mem') AS wm, count(*) AS n FROM orders GROUP BY 1;
	CREATE VIEW by_mem2 WITH (ssp.continuous) AS
	  SELECT current_setting('work_mem') AS wm, count(*) AS n, sum(id) AS s FROM orders GROUP BY 1;
	CREATE VIEW alone_mem WITH (ssp.continuous) AS
	  SELECT current_setting('work_mem') AS wm, count(*) AS n FROM alone GROUP BY 1;
	ALTER SYSTEM SET work_mem = '5MB';
	SELECT pg_reload_conf();
});

my $produced = 0;
my $views = 'by_mem, by_mem2, alone_mem';

# insert: $n more messages into each stream, and wait for every view
sub insert
{
	my ($n) = @_;
	$node->safe_psql('postgres', qq{
		INSERT INTO orders SELECT g FROM generate_series(1, $n) g;
		INSERT INTO alone SELECT g FROM generate_series(1, $n) g;
	});
	$produced += 2 * $n;
	SspTest::wait_views($node, 'postgres', split(/, /, $views));
}

# the work_mem of each view's latest batches: its rows by value
sub shown
{
	return $node->safe_psql('postgres', join(' UNION ALL ',
		map { "SELECT '$_', string_agg(wm, ',' ORDER BY wm) FROM $_" } split(/, /, $views)));
}

# until every view has applied a batch with work_mem $want (the workers
# take a reload when they next look, between batches); then the next
# batch of every view is applied with it
sub reaches
{
	my ($want, $name) = @_;
	my $ok = 0;
	for (1 .. 60)
	{
		insert(10);
		my $all = $node->safe_psql('postgres', 'SELECT ' . join(' AND ',
			map { "EXISTS (SELECT FROM $_ WHERE wm = '$want')" } split(/, /, $views)));
		if ($all eq 't') { $ok = 1; last; }
		select(undef, undef, undef, 0.5);
	}
	ok($ok, "$name: every view applies its batches with work_mem $want");
	my $before = $node->safe_psql('postgres', "SELECT coalesce(sum(n), 0) FROM by_mem WHERE wm = '$want'");
	insert(100);
	is($node->safe_psql('postgres', "SELECT sum(n) - $before FROM by_mem WHERE wm = '$want'"), '100',
		"$name: and the next batch too");
}

insert(100);
is(shown(), "by_mem|32MB\nby_mem2|32MB\nalone_mem|32MB",
	'by default the workers apply with work_mem 32MB, not the server\'s 5MB');
is($node->safe_psql('postgres', 'SHOW ssp.work_mem'), '32MB', 'ssp.work_mem is 32MB');

$node->safe_psql('postgres', "ALTER SYSTEM SET ssp.work_mem = -1; SELECT pg_reload_conf();");
reaches('5MB', 'ssp.work_mem = -1');

$node->safe_psql('postgres', "ALTER SYSTEM SET ssp.work_mem = '48MB'; SELECT pg_reload_conf();");
reaches('48MB', 'ssp.work_mem = 48MB');

# refused: 0, less than work_mem's least, and a change outside the server's configuration
my ($ret, $out, $err) = $node->psql('postgres', 'ALTER SYSTEM SET ssp.work_mem = 0');
like($err, qr/invalid value for parameter "ssp.work_mem": 0.*\n.*DETAIL:  ssp.work_mem must be -1 \(work_mem\) or at least 64kB/,
	'0 is refused, and the error says what is allowed');
($ret, $out, $err) = $node->psql('postgres', "ALTER SYSTEM SET ssp.work_mem = '32kB'");
like($err, qr/invalid value for parameter "ssp.work_mem": 32/, 'less than 64kB is refused');
($ret, $out, $err) = $node->psql('postgres', "SET ssp.work_mem = '1GB'");
like($err, qr/parameter "ssp.work_mem" cannot be changed now/, 'a session cannot set it');

# every message once, whatever the work_mem it was applied with
my $each = $produced / 2;
is($node->safe_psql('postgres', 'SELECT sum(n) FROM by_mem'), $each, 'by_mem counted each message once');
is($node->safe_psql('postgres', 'SELECT sum(n) FROM by_mem2'), $each, 'by_mem2 counted each message once');
is($node->safe_psql('postgres', 'SELECT sum(n) FROM alone_mem'), $each, 'alone_mem counted each message once');

$node->safe_psql('postgres', "ALTER SYSTEM RESET ALL; SELECT pg_reload_conf();");

# What a worker keeps between the batches of a catch-up goes back to the
# system once it has nothing to apply (give_back_memory): its anonymous
# memory, sampled at its peak while it catches up on 300,000 messages (as
# many as the broker keeps: the test broker keeps some 240,000), is at
# most half that a few seconds later.  (Without it, 0.9 of the peak
# stayed.)
sub anon_kb
{
	my ($pid) = @_;
	open(my $fh, '<', "/proc/$pid/status") or return undef;
	my ($kb) = join('', <$fh>) =~ /^RssAnon:\s+(\d+) kB/m;
	return $kb;
}
my $wide = 300000;
$node->safe_psql('postgres', qq{
	CREATE FOREIGN TABLE wide (id int, pad text) SERVER kafka OPTIONS (topic 'wm_wide');
	INSERT INTO wide SELECT g, repeat('x', 200) FROM generate_series(1, $wide) g;
	CREATE VIEW wide_n WITH (ssp.continuous) AS
	  SELECT id % 1000 AS k, count(*) AS n, max(pad) AS p FROM wide GROUP BY 1;
});
my ($pid, $peak, $n) = ('', 0, 0);
for (1 .. 1200)
{
	my ($worker, $lag);
	($worker, $n, $lag) = split /\|/, $node->safe_psql('postgres',
		"SELECT worker_pid, processed, lag FROM ssp.views WHERE view = 'wide_n'::regclass");
	$pid = $worker if $worker;
	my $kb = $pid ? anon_kb($pid) : undef;
	$peak = $kb if defined $kb && $kb > $peak;
	# caught up: most of what the broker keeps, and nothing left (a worker's
	# lag may read 0 after its first small batch, before it knows the
	# watermarks: a CI run stopped there at 2 messages)
	last if $n >= 100000 && $lag eq '0';
	select(undef, undef, undef, 0.05);
}
cmp_ok($n, '>=', 100000, 'wide_n caught up on the messages the broker keeps');
is($node->safe_psql('postgres', 'SELECT sum(n) FROM wide_n'), $n, 'wide_n counted each of them once');
my $idle;
for (1 .. 100)
{
	$idle = anon_kb($pid);
	last if defined $idle && $idle <= $peak / 2;
	select(undef, undef, undef, 0.1);
}
ok($peak > 0 && defined $idle && $idle <= $peak / 2,
	'the worker gave back what it kept for the catch-up once it had nothing to apply')
  or diag("anonymous memory: peak $peak kB, idle $idle kB");
$produced += $n;

SspTest::report(faults => 2, produced => $produced, applied => $produced, lost => 0, twice => 0,
	broker => $broker->{kind});
done_testing();
