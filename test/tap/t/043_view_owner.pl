# A continuous view's owner, changed: ALTER VIEW ... OWNER TO hands the
# view's parts (its table, its query, ...) to the new owner too, so that
# queries of the view work, and its worker starts again as the new owner,
# with the new owner's privileges on the stream, while the other views of
# its reader go on.  CREATE OR REPLACE of another role's view, by a
# superuser, leaves the new definition's parts with the view's owner; and a
# view moved to another schema while its new definition catches up still
# takes it.  REASSIGN OWNED starts the workers of the views it gave a new
# owner again, as that owner.  Every view ends equal to its query.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_any_broker(topics => ['orders:4']);
my $node = SspTest::new_node('owner');
my $with = "ssp.continuous, ssp.commit_interval = '20ms'";
$node->safe_psql('postgres', qq{
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	GRANT USAGE ON FOREIGN SERVER kafka TO alice, bob;
	CREATE USER MAPPING FOR PUBLIC SERVER kafka;
	CREATE FOREIGN TABLE orders (order_id bigint, region text, amount numeric)
	  SERVER kafka OPTIONS (topic 'orders');
	GRANT SELECT, INSERT ON orders TO alice;
	GRANT CREATE ON SCHEMA public TO alice;
	CREATE SCHEMA moved;
	CREATE TABLE t (order_id bigint, region text, amount numeric);
	GRANT SELECT ON t TO alice, bob;
});
$node->safe_psql('postgres', qq{
	SET ROLE alice;
	BEGIN;
	CREATE VIEW a1 WITH ($with) AS SELECT region, count(*) AS n FROM orders GROUP BY region;
	CREATE VIEW a2 WITH ($with) AS SELECT region, sum(amount) AS total FROM orders GROUP BY region;
	CREATE VIEW a3 WITH ($with) AS SELECT order_id % 10 AS k, count(*) AS n FROM orders GROUP BY k;
	COMMIT;
});
my %truth = (
	a1 => 'SELECT region, count(*) AS n FROM t GROUP BY region',
	a2 => 'SELECT region, sum(amount) AS total FROM t GROUP BY region',
	a3 => 'SELECT order_id % 10 AS k, count(*) AS n FROM t GROUP BY k',
);
my $produced = 0;

sub produce
{
	my ($n) = @_;
	my $gen = "SELECT g, 'r' || g % 7, (g * 37) % 100 FROM generate_series(@{[$produced + 1]}, @{[$produced + $n]}) g";
	$node->safe_psql('postgres', "INSERT INTO orders $gen; INSERT INTO t $gen");
	$produced += $n;
}

sub exact
{
	my ($label, @views) = @_;
	SspTest::equal_to_queries($node, 'postgres', "$label, $produced orders", \%truth, @views);
}

my $shared = q{SELECT count(DISTINCT worker_pid) = 1 AND bool_and(attached) FROM ssp.views
	WHERE view IN ('a1'::regclass, 'a2'::regclass, 'a3'::regclass)};
produce(300);
ok($node->poll_query_until('postgres', $shared), 'alice\'s three views share one reader');
exact('before', qw(a1 a2 a3));

# a1 to bob, who may not read the stream: a1 fails, saying why, and the
# others go on; bob can query a1 (its table is his too)
$node->safe_psql('postgres', 'ALTER VIEW a1 OWNER TO bob');
is($node->safe_psql('postgres', q{
		SELECT string_agg(c.relname || ' ' || pg_get_userbyid(c.relowner), ', ' ORDER BY c.relname)
		FROM ssp.continuous_views v, pg_class c
		WHERE v.view = 'a1'::regclass AND c.oid IN (v.view, v.mrel, v.query)}),
	'a1 bob, a1_mrel bob, a1_query bob', 'the parts of a1 went to bob with it');
produce(200);
ok($node->poll_query_until('postgres', q{
		SELECT status = 'failed' AND last_error LIKE 'permission denied for stream "orders"%'
		FROM ssp.views WHERE view = 'a1'::regclass}),
	'a1 fails as bob, who may not read orders, rather than running on as alice')
  or diag($node->safe_psql('postgres', 'SELECT view, status, worker_pid, last_error FROM ssp.views'));
exact('a1 failing', qw(a2 a3));
my ($ret, $out, $err) = $node->psql('postgres', 'SET ROLE bob; SELECT count(*) > 0 FROM a1');
is($out, 't', 'bob queries a1');

# bob may read the stream: a1 runs again, as bob, and catches up exactly
$node->safe_psql('postgres', 'GRANT SELECT ON orders TO bob');
produce(200);
exact('a1 as bob', qw(a1 a2 a3));
is($node->safe_psql('postgres', q{
		SELECT count(DISTINCT worker_pid) FROM ssp.views
		WHERE view IN ('a1'::regclass, 'a2'::regclass, 'a3'::regclass)}),
	'2', 'a1 runs in a process of its own, as bob, not in alice\'s reader');

# a superuser replaces alice's a2: its new definition's parts are alice's,
# and it runs on
$node->safe_psql('postgres', qq{
	CREATE OR REPLACE VIEW a2 WITH ($with) AS
	  SELECT region, sum(amount) AS total, max(amount) AS top FROM orders GROUP BY region;
});
$truth{a2} = 'SELECT region, sum(amount) AS total, max(amount) AS top FROM t GROUP BY region';
ok($node->poll_query_until('postgres', q{
		SELECT count(*) = 0 FROM ssp.continuous_views WHERE replaces IS NOT NULL}),
	'a2 took its new definition');
is($node->safe_psql('postgres', q{
		SELECT string_agg(DISTINCT pg_get_userbyid(c.relowner), ', ')
		FROM ssp.continuous_views v, pg_class c
		WHERE v.view = 'a2'::regclass AND c.oid IN (v.view, v.mrel, v.query)}),
	'alice', 'the parts of a2\'s new definition are alice\'s, not the superuser\'s');
produce(200);
exact('a2 replaced by a superuser', qw(a1 a2 a3));

# a3 moved to another schema while its new definition catches up (in the
# same transaction: nothing swaps before it commits)
$node->safe_psql('postgres', qq{
	BEGIN;
	CREATE OR REPLACE VIEW a3 WITH ($with) AS
	  SELECT order_id % 10 AS k, count(*) AS n, min(order_id) AS first FROM orders GROUP BY k;
	ALTER VIEW a3 SET SCHEMA moved;
	COMMIT;
});
$truth{'moved.a3'} = 'SELECT order_id % 10 AS k, count(*) AS n, min(order_id) AS first FROM t GROUP BY k';
ok($node->poll_query_until('postgres', q{
		SELECT count(*) = 0 FROM ssp.continuous_views WHERE replaces IS NOT NULL}),
	'moved.a3 took its new definition')
  or diag($node->safe_psql('postgres', 'SELECT view, status, last_error FROM ssp.views'));
is($node->safe_psql('postgres', q{SELECT to_regclass('public.a3_next') IS NULL}), 't',
	'the new definition\'s view is gone');
produce(200);
exact('a3 moved', qw(a1 a2 moved.a3));
# REASSIGN OWNED BY bob TO alice: a1 (and its parts) back to alice, and
# its worker starts again as alice (it ran on as bob)
my $a1_pid = $node->safe_psql('postgres', "SELECT worker_pid FROM ssp.views WHERE view = 'a1'::regclass");
$node->safe_psql('postgres', 'REASSIGN OWNED BY bob TO alice');
ok($node->poll_query_until('postgres', qq{
		SELECT worker_pid IS DISTINCT FROM $a1_pid AND pg_get_userbyid(c.relowner) = 'alice'
		FROM ssp.views v JOIN pg_class c ON c.oid = v.view WHERE v.view = 'a1'::regclass}),
	'after REASSIGN OWNED, a1 is alice\'s and its worker started again');
$node->safe_psql('postgres', 'REVOKE SELECT ON orders FROM bob');
produce(200);
exact('a1 reassigned', qw(a1 a2 moved.a3));
ok(!$node->log_contains(qr/could not take its new definition/), 'no replacement failed');
ok(!$node->log_contains(qr/terminated by signal/), 'no process crashed');

SspTest::report(faults => 0, produced => $produced, applied => $produced, lost => 0, twice => 0,
	broker => $broker->{kind});
$node->stop;
done_testing();
