# Aggregates over a changelog, exactly once.  30,000 versions of 3,000
# customers (new segments, new balances, deletes as tombstones, keys coming
# back) are produced into 8 partitions while the views' workers are killed
# and Postgres is stopped with -m immediate.  Each view ends equal to the
# aggregate over the table's final state (the latest version of each key):
# a version that left an aggregate and came back in a retried batch would
# be counted twice, one whose retraction was lost would stay.  A view
# publishing its changes to an output topic, killed too, leaves each key's
# chain of changes unbroken: a group emptied by a tombstone is one delete.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $broker = SspTest::start_any_broker(topics => ['customers:8', 'id_changes:4']);
my $node = SspTest::new_node('changelog');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka OPTIONS (brokers '$broker->{bootstrap}');
	CREATE FOREIGN TABLE customers (id int, segment text, balance numeric, p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'customers', key 'id', changelog 'upsert');
	CREATE FOREIGN TABLE customers_raw (id text, v text, p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'customers', format 'text', key 'id');
	CREATE VIEW per_segment WITH (ssp.continuous, ssp.batch_size = 700) AS
	  SELECT segment, count(*) AS customers, sum(balance) AS balance, avg(balance) AS avg_balance,
	         min(balance) AS lowest, max(balance) AS highest
	  FROM customers GROUP BY segment;
	CREATE VIEW rich WITH (ssp.continuous, ssp.batch_size = 1100) AS
	  SELECT count(*) AS customers, sum(balance) AS balance FROM customers WHERE balance > 500;
	CREATE VIEW latest WITH (ssp.continuous, ssp.primary_key = 'id', ssp.batch_size = 900) AS
	  SELECT id, segment, balance FROM customers;
	CREATE VIEW per_id WITH (ssp.continuous, ssp.output_topic = 'id_changes', ssp.batch_size = 800) AS
	  SELECT id, count(*) AS n, sum(balance) AS total FROM customers GROUP BY id;

	-- the versions, in order: every 7th a delete (a tombstone); keys come
	-- back after their delete
	CREATE TABLE versions AS
	  SELECT g AS seq, (g * 7919) % 3000 AS id, 's' || (g * 31) % 11 AS segment,
	         ((g * 13) % 1000)::numeric + 0.5 AS balance, g % 7 = 0 AS deleted
	  FROM generate_series(1, 30000) g;
	CREATE VIEW final AS
	  SELECT id, segment, balance FROM (
	    SELECT DISTINCT ON (id) * FROM versions ORDER BY id, seq DESC) l WHERE NOT deleted;
});
my @views = qw(per_segment rich latest per_id);

my $kills = 0;
my $rotation = 0;
for my $chunk (0 .. 14)
{
	my $range = 'seq > ' . ($chunk * 2000) . ' AND seq <= ' . (($chunk + 1) * 2000);
	# versions and deletes interleaved in order, each key on its partition
	$node->safe_psql('postgres', "INSERT INTO customers_raw (id, v, p)
		SELECT id::text, CASE WHEN deleted THEN NULL
		       ELSE json_build_object('segment', segment, 'balance', balance)::text END, id % 8
		FROM versions WHERE $range ORDER BY seq");
	if ($chunk % 4 == 1 || $chunk == 3 || $chunk == 11)
	{
		my $view = $chunk % 4 == 3 ? 'per_id' : $views[$rotation++ % 3];
		$node->poll_query_until('postgres',
			"SELECT worker_pid IS NOT NULL FROM ssp.views WHERE view = '$view'::regclass")
		  or die "no worker for $view";
		my $pid = $node->safe_psql('postgres', "SELECT worker_pid FROM ssp.views WHERE view = '$view'::regclass");
		select(undef, undef, undef, 0.1 * ($chunk % 3));
		ok(kill('KILL', $pid), "SIGKILL to the worker of $view mid-stream");
		$kills++;
		SspTest::wait_restarted($node);
	}
	elsif ($chunk == 7)
	{
		$node->stop('immediate');
		$node->start;
	}
}
SspTest::wait_views($node, 'postgres', @views);

is($node->safe_psql('postgres', 'SELECT sum(processed), sum(dead_letters) FROM ssp.views'),
	4 * 30000 . '|0', 'every version applied once by each view');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM per_segment',
		'SELECT segment, count(*), sum(balance), avg(balance), min(balance), max(balance) FROM final GROUP BY segment'),
	'0', 'per segment: counts, sums, averages, minimums and maximums of the current rows, after kills and a crash');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM rich',
		'SELECT count(*), sum(balance) FROM final WHERE balance > 500'),
	'0', 'a filtered total: customers moving in and out of it');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM latest', 'SELECT * FROM final'),
	'0', 'the latest row per key');
is($node->safe_psql('postgres', 'SELECT count(*) FROM per_segment_versions'),
	$node->safe_psql('postgres', 'SELECT count(*) FROM final'),
	'the table of versions holds one row per live key');
note $node->safe_psql('postgres', 'SELECT * FROM per_segment ORDER BY segment');

# the changes of per_id, as a consumer keeps them: a record numbered no
# higher than the last one seen on its partition was sent again by a crash
ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM per_id_outbox'),
	'every change of per_id published');
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE id_changes (id int, n bigint, total numeric, _op text, _seq bigint, _before jsonb,
	    p int OPTIONS (meta 'partition'), o bigint OPTIONS (meta 'offset'))
	  SERVER kafka OPTIONS (topic 'id_changes');
	CREATE TABLE kept AS SELECT * FROM (
	  SELECT c.*, max(_seq) OVER (PARTITION BY p ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS seen
	  FROM id_changes c) x WHERE seen IS NULL OR _seq > seen;
});
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM (
	  SELECT _before, lag(CASE WHEN _op <> 'delete' THEN jsonb_build_object('id', id, 'n', n, 'total', total) END)
	           OVER (PARTITION BY id ORDER BY _seq) AS prev
	  FROM kept) x WHERE _before IS DISTINCT FROM prev}),
	'0', "each key's changes form an unbroken chain: a delete's before is the last row, an insert after it has none");
cmp_ok($node->safe_psql('postgres', q{SELECT count(*) FROM kept WHERE _op = 'delete'}), '>', 100,
	'keys deleted by tombstones: their groups published as deletes');
is($node->safe_psql('postgres', q{SELECT count(*) FROM kept WHERE _op <> 'delete' AND n <> 1}), '0',
	'no change publishes a group emptied (count 0)');
is(SspTest::differences($node, 'postgres', 'SELECT * FROM per_id',
		q{SELECT id, n, total FROM (SELECT DISTINCT ON (id) * FROM kept ORDER BY id, _seq DESC) l WHERE _op <> 'delete'}),
	'0', "each key's last change is the view's row, or a delete where the view has none");
is(SspTest::differences($node, 'postgres', 'SELECT * FROM per_id',
		'SELECT id, count(*), sum(balance) FROM final GROUP BY id'),
	'0', 'per_id equals its query');

my ($lost, $twice) = SspTest::lost_and_twice($node, 'postgres', 'SELECT * FROM per_segment',
	'SELECT segment, count(*), sum(balance), avg(balance), min(balance), max(balance) FROM final GROUP BY segment');
SspTest::report(faults => $kills + 1, produced => 30000,
	applied => $node->safe_psql('postgres', "SELECT processed FROM ssp.views WHERE view = 'per_segment'::regclass"),
	dead_letters => 0, lost => $lost, twice => $twice, broker => $broker->{kind});

$node->stop;
done_testing();
