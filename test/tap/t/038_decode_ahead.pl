# A worker decodes a batch while it waits for the rest of it (collect in
# worker.c, ssp_decode_more), for a view alone and for the views of a
# reader; a message that cannot be decoded, met ahead of the batch's apply,
# must still go to each view's dead letters (the views then decode the
# batch themselves), and every other message count once.  Ten poison
# messages among 80,000, in a backlog and in a live stream: JSON cut short,
# a wrong type in a column every view reads, not JSON at all, and a message
# that only one view's statement fails on (a division by zero).  Some
# batches are decoded ahead whole, some fail after chunks that went through.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_any_broker(topics => ['orders:4']);
my $node = SspTest::new_node('decode_ahead');
$node->safe_psql('postgres', qq[
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE orders (id bigint, region text, amount numeric, qty int)
	  SERVER kafka OPTIONS (topic 'orders');
	CREATE FOREIGN TABLE orders_raw (v text, p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
	  SERVER kafka OPTIONS (topic 'orders', format 'text');
	-- the good messages, as a table
	CREATE TABLE t (id bigint, region text, amount numeric, qty int);
	-- message g: every 7919th is poison, of four kinds in turn
	CREATE FUNCTION msg(g bigint) RETURNS text LANGUAGE sql IMMUTABLE AS \$\$
	  SELECT CASE WHEN g % 7919 <> 0 THEN
	                format('{"id": %s, "region": "r%s", "amount": %s, "qty": %s}', g, g % 5, g % 1000, 1 + g % 4)
	              WHEN g / 7919 % 4 = 0 THEN format('{"id": %s, "region": "r1", "amount": 1', g)
	              WHEN g / 7919 % 4 = 1 THEN format('{"id": %s, "region": "r1", "amount": "lots", "qty": 1}', g)
	              WHEN g / 7919 % 4 = 2 THEN 'not json at all'
	              ELSE format('{"id": %s, "region": "r2", "amount": 5, "qty": 0}', g)
	         END \$\$;
	CREATE PROCEDURE produce(a bigint, b bigint) LANGUAGE sql AS \$\$
	  INSERT INTO orders_raw (v, p) SELECT msg(g), g % 4 FROM generate_series(a, b) g;
	  INSERT INTO t SELECT g, 'r' || g % 5, g % 1000, 1 + g % 4 FROM generate_series(a, b) g WHERE g % 7919 <> 0;
	  INSERT INTO t SELECT g, 'r2', 5, 0 FROM generate_series(a, b) g WHERE g % 7919 = 0 AND g / 7919 % 4 = 3;
	\$\$;
]);

# a backlog of 40,000 before the views: batches that wait for their
# messages (a commit interval of 300 ms) decode them as they come
$node->safe_psql('postgres', 'CALL produce(1, 40000)');

my $with = "ssp.continuous, ssp.commit_interval = '300ms'";
my %query = (
	by_region => "SELECT region, count(*) AS n, sum(amount) AS total FROM %s GROUP BY region",
	per_unit => "SELECT region, count(*) AS n, sum(amount / qty) AS per_unit FROM %s GROUP BY region",
	ids => "SELECT id %% 100 AS k, count(*) AS n, max(amount) AS top FROM %s GROUP BY k",
);
# by_region alone; per_unit and ids from one reader
$node->safe_psql('postgres', sprintf("CREATE VIEW by_region WITH ($with) AS $query{by_region}", 'orders'));
SspTest::wait_views($node, 'postgres', 'by_region');
$node->safe_psql('postgres', sprintf("BEGIN; CREATE VIEW per_unit WITH ($with) AS $query{per_unit}; "
		. "CREATE VIEW ids WITH ($with) AS $query{ids}; COMMIT", 'orders', 'orders'));
SspTest::wait_views($node, 'postgres', 'per_unit', 'ids');

# then 40,000 more while the views run, 2,000 every 20 ms
$node->safe_psql('postgres', q{
	DO $$ BEGIN FOR i IN 0..19 LOOP
	  CALL produce(40001 + i * 2000, 42000 + i * 2000); COMMIT; PERFORM pg_sleep(0.02);
	END LOOP; END $$});
my @views = sort keys %query;
SspTest::wait_views($node, 'postgres', @views);

my ($lost, $twice) = (0, 0);
for my $v (@views)
{
	my $truth = sprintf($query{$v}, $v eq 'per_unit' ? '(SELECT * FROM t WHERE qty <> 0) t' : 't');
	my ($l, $d) = SspTest::lost_and_twice($node, 'postgres', "SELECT * FROM $v", $truth);
	is("$l $d", '0 0', "$v equals its query over the good messages");
	$lost += $l;
	$twice += $d;
}

# the poison messages, where they are in the topic
$node->safe_psql('postgres', q[
	CREATE TABLE poison AS SELECT p, o, v FROM orders_raw
	WHERE v = 'not json at all' OR v LIKE '%"lots"%' OR v LIKE '%"qty": 0}' OR v NOT LIKE '%}']);
for my $v (@views)
{
	# the statement's error (qty 0) is a dead letter of per_unit alone
	my $which = $v eq 'per_unit' ? 'true' : "v NOT LIKE '%\"qty\": 0}'";
	is($node->safe_psql('postgres', qq{
		SELECT count(*) FROM (
		  (SELECT p, o FROM poison WHERE $which EXCEPT ALL
		   SELECT partition, "offset" FROM ssp.dead_letters WHERE view = '$v'::regclass)
		  UNION ALL
		  (SELECT partition, "offset" FROM ssp.dead_letters WHERE view = '$v'::regclass EXCEPT ALL
		   SELECT p, o FROM poison WHERE $which)) d}),
		'0', "$v: each poison message is a dead letter, once, at its offset");
}
is($node->safe_psql('postgres', "SELECT count(*) FROM poison"), '10', '10 poison messages');
is($node->safe_psql('postgres',
		"SELECT string_agg(view || ': ' || status || ' ' || coalesce(last_error, ''), ', ') FROM ssp.views "
		  . "WHERE status NOT IN ('running', 'catching up')"), '', 'every view runs');

SspTest::report(faults => 10, produced => 80000, applied => 80000 - 10, dead_letters => 10,
	lost => $lost, twice => $twice, broker => $broker->{kind});
done_testing();
