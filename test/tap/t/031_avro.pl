# Avro through a Schema Registry, on Apache Kafka: messages written by
# Apache Avro's own Java encoder in Confluent's wire format
# (test/kafka/AvroProduce), schemas served by a test double of Confluent's
# REST API (test/kafka/SchemaRegistry).
#  - every Avro type and logical type into the Postgres type that holds it,
#    value by value, nested fields by path, into jsonb, arrays and a
#    composite;
#  - one topic with three versions of its schema (a field added with a
#    default, one removed, fields reordered, int and float widened): a scan
#    and a view decode every message by field name;
#  - hostile messages (an id the registry does not know, another magic
#    byte, truncated, a lying length, bytes left over, nesting 600 deep) are
#    dead letters with their reason, and the view goes on;
#  - the registry failing (503) for 30 s, then killed and started again,
#    while messages of new schemas arrive: the view waits ("waiting for
#    schema registry"), sends nothing to its dead letters, and then counts
#    every message exactly once;
#  - a registry that wants a bearer token: the user mapping's token is sent,
#    and never shown;
#  - each id is fetched once by a worker (the cache);
#  - INSERT writes every type with the subject's registered schema, and
#    Apache Avro's own Java decoder (test/kafka/AvroConsume) reads back what
#    ssp wrote; a subject without a schema is refused, or registered from
#    the stream's columns with auto_register (domains as their base
#    types); Avro keys both ways.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use SspTest;

my $k = SspTest::start_kafka(partitions => 2);
my $b = $k->{bootstrap};
SspTest::kafka($k, 'topics', '--create', '--topic', $_, '--partitions', '2', '--replication-factor', '1')
  for qw(types evolve nest secure types2 written dwritten js slow refs refs2 keyed keyed2);
my $reg = SspTest::start_registry($k);

my $node = SspTest::new_node('avro');
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka FOREIGN DATA WRAPPER ssp_kafka
	  OPTIONS (brokers '$b', "schema.registry.url" '$reg->{url}');
	CREATE TYPE addr_t AS (city text, zip int);
});

# 1. Every type --------------------------------------------------------------
my $types_schema = <<'EOS';
{"type": "record", "name": "T", "namespace": "ssp.test", "fields": [
 {"name": "b", "type": "boolean"},
 {"name": "i", "type": "int"},
 {"name": "l", "type": "long"},
 {"name": "f", "type": "float"},
 {"name": "d", "type": "double"},
 {"name": "s", "type": "string"},
 {"name": "raw", "type": "bytes"},
 {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
 {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
 {"name": "arr", "type": {"type": "array", "items": "int"}},
 {"name": "sarr", "type": {"type": "array", "items": "string"}},
 {"name": "m", "type": {"type": "map", "values": "long"}},
 {"name": "addr", "type": {"type": "record", "name": "Addr", "fields": [
   {"name": "city", "type": "string"}, {"name": "zip", "type": "int"}]}},
 {"name": "opt", "type": ["null", "string"], "default": null},
 {"name": "u", "type": ["int", "string", "null"]},
 {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
 {"name": "decf", "type": {"type": "fixed", "name": "D8", "size": 8, "logicalType": "decimal", "precision": 18, "scale": 4}},
 {"name": "big", "type": {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 3}},
 {"name": "dt", "type": {"type": "int", "logicalType": "date"}},
 {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
 {"name": "tmu", "type": {"type": "long", "logicalType": "time-micros"}},
 {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
 {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
 {"name": "lts", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
 {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
 {"name": "dur", "type": {"type": "fixed", "name": "Dur", "size": 12, "logicalType": "duration"}},
 {"name": "naddr", "type": ["null", "Addr"]}
]}
EOS
my @types_rows = (
	'{"b": true, "i": -5, "l": 9007199254740993, "f": 1.5, "d": -2.25e10, "s": "h\u00e9llo \u2713",'
	  . ' "raw": "\u0000\u00ffA", "e": "GREEN", "fx": "abcd", "arr": [1, -2, 3], "sarr": ["a", "b c"],'
	  . ' "m": {"x": 1}, "addr": {"city": "Oslo", "zip": 150}, "opt": "here", "u": 42,'
	  . ' "dec": "12345678.90", "decf": "-12345678901234.5678", "big": "-12345678901234567890123456789012.345",'
	  . ' "dt": "2024-02-29", "tm": "13:14:15.678", "tmu": "23:59:59.999999",'
	  . ' "tsm": "2024-01-01T00:00:00.123Z", "tsu": "1969-12-31T23:59:59.999999Z", "lts": "2024-06-01T12:30:00",'
	  . ' "uid": "123e4567-e89b-12d3-a456-426614174000", "dur": [14, 3, 3723004],'
	  . ' "naddr": {"city": "Rome", "zip": 100}}',
	'{"b": false, "i": 2147483647, "l": -1, "f": -0.25, "d": 0, "s": "",'
	  . ' "raw": "", "e": "RED", "fx": "\u0000\u0001\u0002\u0003", "arr": [], "sarr": [],'
	  . ' "m": {}, "addr": {"city": "", "zip": -1}, "opt": null, "u": "text",'
	  . ' "dec": "-0.01", "decf": "0", "big": "0.001",'
	  . ' "dt": "1970-01-01", "tm": "00:00:00", "tmu": "00:00:00.000001",'
	  . ' "tsm": "1970-01-01T00:00:00Z", "tsu": "2038-01-19T03:14:08Z", "lts": "1999-12-31T23:59:59.999",'
	  . ' "uid": "00000000-0000-0000-0000-000000000000", "dur": [0, 0, 0], "naddr": null}',
	'{"b": true, "i": -2147483648, "l": 0, "f": 3.0e38, "d": 1.0e-300, "s": "\u0000x",'
	  . ' "raw": "z", "e": "BLUE", "fx": "wxyz", "arr": [7], "sarr": ["\u00fc"],'
	  . ' "m": {"k": 9223372036854775807}, "addr": {"city": "Lima", "zip": 0}, "opt": null, "u": null,'
	  . ' "dec": "99999999.99", "decf": "99999999999999.9999", "big": "99999999999999999999999999999999999.999",'
	  . ' "dt": "0001-01-01", "tm": "23:59:59.999", "tmu": "12:00:00",'
	  . ' "tsm": "2262-04-11T23:47:16.854Z", "tsu": "0001-01-01T00:00:00Z", "lts": "2024-02-29T00:00:00",'
	  . ' "uid": "ffffffff-ffff-ffff-ffff-ffffffffffff", "dur": [0, 1, 1], "naddr": null}');
# the third row's string holds a zero byte, which no text column can: a dead letter
my $produced = SspTest::avro_produce($k, $reg->{url}, 'types', $types_schema, \@types_rows, '--partition', '0');
like($produced, qr/^produced 3 schema \d+$/, 'Apache Avro wrote the typed messages');

$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE types (b bool, i int, l bigint, f real, d float8, s text, raw bytea, e text,
	    fx bytea, arr int[], sarr text[], m jsonb, addr jsonb, addr_c addr_t OPTIONS (field 'addr'),
	    city text OPTIONS (field 'addr.city'), zip int OPTIONS (field 'addr.zip'), opt text, u jsonb,
	    dec numeric, decf numeric, big numeric, dt date, tm time, tmu time, tsm timestamptz,
	    tsu timestamptz, lts timestamp, uid uuid, dur interval, ncity text OPTIONS (field 'naddr.city'),
	    absent text, iastext text OPTIONS (field 'i'), dectext text OPTIONS (field 'dec'),
	    tsmtext text OPTIONS (field 'tsm'), naddr_c addr_t OPTIONS (field 'naddr'))
	  SERVER kafka OPTIONS (topic 'types', format 'avro');
	CREATE VIEW types_v WITH (ssp.continuous) AS SELECT * FROM types;
});
SspTest::wait_views($node, 'postgres', 'types_v');
my $cols = 'b, i, l, f, d, s, raw, e, fx, arr, sarr, m, addr, addr_c, city, zip, opt, u, dec, decf, big, '
  . 'dt, tm, tmu, tsm, tsu, lts, uid, dur, ncity, absent, iastext, dectext';
my $expected = join("\n",
	't|-5|9007199254740993|1.5|-22500000000|héllo ✓|\x00ff41|GREEN|\x61626364|{1,-2,3}|{a,"b c"}|{"x": 1}|'
	  . '{"zip": 150, "city": "Oslo"}|(Oslo,150)|Oslo|150|here|42|12345678.90|-12345678901234.5678|'
	  . '-12345678901234567890123456789012.345|2024-02-29|13:14:15.678|23:59:59.999999|'
	  . '2024-01-01 00:00:00.123+00|1969-12-31 23:59:59.999999+00|2024-06-01 12:30:00|'
	  . '123e4567-e89b-12d3-a456-426614174000|1 year 2 mons 3 days 01:02:03.004|Rome||-5|12345678.90',
	'f|2147483647|-1|-0.25|0||\x|RED|\x00010203|{}|{}|{}|{"zip": -1, "city": ""}|("",-1)||-1||"text"|-0.01|'
	  . '0.0000|0.001|1970-01-01|00:00:00|00:00:00.000001|1970-01-01 00:00:00+00|2038-01-19 03:14:08+00|'
	  . '1999-12-31 23:59:59.999|00000000-0000-0000-0000-000000000000|00:00:00|||2147483647|-0.01');
is($node->safe_psql('postgres', "SET timezone = 'UTC'; SET intervalstyle = 'postgres';
	SELECT $cols FROM types_v ORDER BY i"), $expected, 'every Avro type into its column, by the view');
is($node->safe_psql('postgres', "SET timezone = 'UTC';
	SELECT error ~ 'zero byte' FROM ssp.dead_letters WHERE view = 'types_v'::regclass"), 't',
	'a string with a zero byte is a dead letter, with the reason');
is($node->safe_psql('postgres', 'SELECT bool_and(tsmtext::timestamptz = tsm) FROM types_v'), 't',
	'a timestamp into a text column is its text');

# 2. Three versions of a schema on one topic -----------------------------------
my @versions = (
	'{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "int"},
	  {"name": "amount", "type": "float"}, {"name": "note", "type": "string"}]}',
	'{"type": "record", "name": "Order", "fields": [{"name": "note", "type": "string"},
	  {"name": "id", "type": "int"}, {"name": "region", "type": "string", "default": "unknown"},
	  {"name": "amount", "type": "float"}]}',
	'{"type": "record", "name": "Order", "fields": [{"name": "region", "type": "string"},
	  {"name": "amount", "type": "double"}, {"name": "id", "type": "long"}]}');
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE orders (id bigint, amount float8, note text, region text,
	    p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'evolve', format 'avro');
	CREATE VIEW by_region WITH (ssp.continuous) AS
	  SELECT coalesce(region, '-') AS region, count(*) AS n, sum(id) AS ids, sum(amount) AS amount,
	         count(note) AS notes
	  FROM orders GROUP BY 1;
});
my $id = 0;
my @ids;
for my $v (0 .. 2)
{
	my @lines;
	for (1 .. 3)
	{
		$id++;
		push @lines, $v == 0 ? qq({"id": $id, "amount": 1.5, "note": "n$id"})
		  : $v == 1 ? qq({"note": "n$id", "id": $id, "region": "r$v", "amount": 2.5})
		  : qq({"region": "r$v", "amount": 0.125, "id": @{[ 4294967296 + $id ]}});
	}
	my $out = SspTest::avro_produce($k, $reg->{url}, 'evolve', $versions[$v], \@lines);
	$out =~ /schema (\d+)/;
	push @ids, $1;
}
isnt($ids[0], $ids[1], 'each version has its own id');
is($node->safe_psql('postgres', q{SELECT id % 4294967296, amount, note, region FROM orders ORDER BY 1}),
	join("\n", '1|1.5|n1|', '2|1.5|n2|', '3|1.5|n3|', '4|2.5|n4|r1', '5|2.5|n5|r1', '6|2.5|n6|r1',
		'7|0.125||r2', '8|0.125||r2', '9|0.125||r2'),
	'a scan decodes three versions by field name: added, removed, reordered, widened');
SspTest::wait_views($node, 'postgres', 'by_region');
is($node->safe_psql('postgres', 'SELECT region, n, ids, amount, notes FROM by_region ORDER BY 1'),
	join("\n", '-|3|6|4.5|3', 'r1|3|15|7.5|3', 'r2|3|12884901912|0.375|0'),
	'the view counts every version');

# 3. Hostile messages: dead letters with their reasons ------------------------
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE evolve_raw (v bytea, p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'evolve', format 'bytea');
});
my $v1 = sprintf('%08x', $ids[0]);
$node->safe_psql('postgres', qq{
	INSERT INTO evolve_raw VALUES
	  ('\\x000000270f02', 0),                          -- id 9999: unknown
	  ('\\x01${v1}02', 0),                             -- magic byte 1
	  ('\\x00${v1}80', 0),                             -- ends inside the first number
	  ('\\x00${v1}020000c03f64616263', 0),             -- note's length 50, 3 bytes there
	  ('\\x00${v1}020000c03f026100', 0),               -- a byte left over
	  ('\\x0000', 0),                                  -- shorter than the framing
	  ('\\x00${v1}0a0000c03f046163', 0);               -- a good one: id 5, 1.5, "ac"
});
SspTest::wait_views($node, 'postgres', 'by_region');
is($node->safe_psql('postgres', q{
	SELECT string_agg(CASE
	    WHEN error ~ 'has no schema 9999' THEN 'unknown id'
	    WHEN error ~ 'starts with byte 1, not the magic byte 0' THEN 'magic'
	    WHEN error ~ 'ends inside a number' THEN 'truncated'
	    WHEN error ~ 'value of 50 bytes runs past the end' THEN 'lying length'
	    WHEN error ~ '1 bytes are left after the value' THEN 'left over'
	    WHEN error ~ 'fewer than the magic byte and the schema id' THEN 'short'
	    ELSE error END, ', ' ORDER BY "offset")
	FROM ssp.dead_letters WHERE view = 'by_region'::regclass}),
	'unknown id, magic, truncated, lying length, left over, short',
	'each hostile message is a dead letter with its reason');
is($node->safe_psql('postgres', q{SELECT n, ids FROM by_region WHERE region = '-'}), '4|11',
	'the good message after them counts');
# twenty messages, each naming an id the registry does not know: the
# process asks again at most twice in 10 s (each id was asked three times,
# a second apart, which held every view of the process up two seconds per id)
my $gets = sub { SspTest::registry_control($reg, 'stats') =~ /"schema_gets":(\d+)/; $1 };
# $n messages naming the ids from $first + 1 on, each its own: all dead letters
my $unknown_ids = sub {
	my ($first, $n) = @_;
	$node->safe_psql('postgres', qq{
		INSERT INTO evolve_raw SELECT decode('00' || lpad(to_hex($first + g), 8, '0') || '02', 'hex'), 0
		FROM generate_series(1, $n) g;
	});
	SspTest::wait_views($node, 'postgres', 'by_region');
	is($node->safe_psql('postgres', qq{SELECT count(*) FROM ssp.dead_letters
			WHERE view = 'by_region'::regclass AND error ~ 'has no schema \\d+'
			AND substring(error from 'has no schema (\\d+)')::int > $first
			AND substring(error from 'has no schema (\\d+)')::int <= $first + $n}), $n,
		"messages naming $n unknown ids are dead letters");
};
my $gets_before = $gets->();
$unknown_ids->(100000, 20);
my $asked = $gets->() - $gets_before;
ok($asked >= 20 && $asked < 30, "the registry was asked for each once, and again twice in 10 s ($asked; three times each: 60)");

# 4,000 more, each naming an id of its own: the process remembers at most
# 256 unknown ids (it kept each, 200 bytes, for its life: anyone who may
# write the topic could fill its memory)
my $pid = $node->safe_psql('postgres', q{SELECT worker_pid FROM ssp.views WHERE view = 'by_region'::regclass});
$unknown_ids->(200000, 4000);
my $log_from = -s $node->logfile;
$node->safe_psql('postgres', qq{SELECT pg_log_backend_memory_contexts($pid)});
my %ctx;
for (1 .. 300)
{
	%ctx = substr(slurp_file($node->logfile), $log_from) =~ /(ssp schema registry|ssp schemas): (\d+) total/g;
	last if keys %ctx == 2;
	select(undef, undef, undef, 0.1);
}
is(join(',', sort keys %ctx), 'ssp schema registry,ssp schemas', 'the worker logged its memory contexts');
ok($ctx{'ssp schema registry'} + $ctx{'ssp schemas'} < 256 * 1024,
	"the registry's cache stays small ($ctx{'ssp schema registry'} + $ctx{'ssp schemas'} bytes; 1.3 MB when it kept every id)");

# a recursive schema, a value nested 600 deep
my $node_schema = '{"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]}';
my $nid = SspTest::register_schema($reg, 'nest-value', $node_schema);
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE nest (next jsonb) SERVER kafka OPTIONS (topic 'nest', format 'avro');
	CREATE FOREIGN TABLE nest_raw (v bytea) SERVER kafka OPTIONS (topic 'nest', format 'bytea');
	CREATE VIEW nests WITH (ssp.continuous) AS SELECT count(*) AS n, count(next) AS deep FROM nest;
});
$node->safe_psql('postgres', qq{
	INSERT INTO nest_raw VALUES
	  (decode('00' || lpad(to_hex($nid), 8, '0') || repeat('02', 600) || '00', 'hex')),
	  (decode('00' || lpad(to_hex($nid), 8, '0') || repeat('02', 3) || '00', 'hex'))});
SspTest::wait_views($node, 'postgres', 'nests');
is($node->safe_psql('postgres', q{SELECT n, deep FROM nests}), '1|1', 'a value 3 deep counts');
like($node->safe_psql('postgres', q{SELECT error FROM ssp.dead_letters WHERE view = 'nests'::regclass}),
	qr/nested more than 512 deep/, 'a value 600 deep is a dead letter');

# 4. The registry failing, then down: the view waits, loses nothing ---------
my $v4 = '{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"},
  {"name": "region", "type": "string"}, {"name": "amount", "type": "double"}, {"name": "extra", "type": "int"}]}';
my $v4id = SspTest::register_schema($reg, 'evolve-value', $v4);
my $before = $node->safe_psql('postgres', q{SELECT processed FROM ssp.views WHERE view = 'by_region'::regclass});
SspTest::registry_control($reg, 'fail?status=503&seconds=30');
my $failed_at = time;
SspTest::avro_produce($k, $reg->{url}, 'evolve', $v4,
	[ map { qq({"id": $_, "region": "r4", "amount": 1.0, "extra": 1}) } 1 .. 50 ], '--id', $v4id);
ok($node->poll_query_until('postgres', q{
	SELECT status = 'waiting for schema registry' AND last_error ~ 'HTTP 503'
	FROM ssp.views WHERE view = 'by_region'::regclass}), 'the view waits for the registry (503)');
is($node->safe_psql('postgres', q{SELECT processed FROM ssp.views WHERE view = 'by_region'::regclass}),
	$before, 'and applies nothing of the batch meanwhile');
ok(time - $failed_at < 30, 'the registry was still failing then');
SspTest::wait_views($node, 'postgres', 'by_region');
is($node->safe_psql('postgres', q{SELECT n, ids, amount FROM by_region WHERE region = 'r4'}), '50|1275|50',
	'then every message of the new schema counts once');

# killed: connections refused, then started again on its port with its ids
my $v5 = '{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"},
  {"name": "region", "type": "string"}, {"name": "amount", "type": "double"}, {"name": "v5", "type": "boolean"}]}';
my $v5id = SspTest::register_schema($reg, 'evolve-value', $v5);
SspTest::stop_registry($reg);
SspTest::avro_produce($k, '-', 'evolve', $v5,
	[ map { qq({"id": $_, "region": "r5", "amount": 2.0, "v5": true}) } 1 .. 20 ], '--id', $v5id);
ok($node->poll_query_until('postgres', q{
	SELECT status = 'waiting for schema registry' AND last_error ~ 'could not reach the schema registry'
	FROM ssp.views WHERE view = 'by_region'::regclass}), 'the view waits for the registry (refused)');
sleep 3;
$reg = SspTest::start_registry($k, port => $reg->{port}, dir => $reg->{dir});
SspTest::wait_views($node, 'postgres', 'by_region');
is($node->safe_psql('postgres', q{SELECT n, ids, amount FROM by_region WHERE region = 'r5'}), '20|210|40',
	'and counts every message once it is back');
is($node->safe_psql('postgres', q{SELECT count(*) FROM ssp.dead_letters WHERE view = 'by_region'::regclass}),
	'4026', 'the outages sent nothing to the dead letters');
is($node->safe_psql('postgres', q{SELECT status FROM ssp.views WHERE view = 'by_region'::regclass}),
	'running', 'and the view runs again');
# every message of the topic: 9 of three versions, 7, 20 and 4,000 raw, 50
# during the 503s, 20 while the registry was down; 4,026 raw ones dead
# letters by design
my ($applied, $dead) = split /\|/, $node->safe_psql('postgres', q{
	SELECT processed, dead_letters FROM ssp.views WHERE view = 'by_region'::regclass});
is($node->safe_psql('postgres', 'SELECT sum(n) FROM by_region'), $applied, 'the view holds what it applied');
SspTest::report(faults => 2, produced => 9 + 7 + 20 + 4000 + 50 + 20, applied => $applied, dead_letters => $dead,
	lost => 9 + 7 + 20 + 4000 + 50 + 20 - $applied - $dead, twice => 0, broker => 'apache');

# 5. A registry that wants a token ---------------------------------------------
my $secure = SspTest::start_registry($k, token => 'sekret-token-42');
my $sid = SspTest::register_schema($secure, 'secure-value', $versions[0]);
SspTest::avro_produce($k, '-', 'secure', $versions[0], [ '{"id": 7, "amount": 0.5, "note": "tok"}' ],
	'--id', $sid);
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka_secure FOREIGN DATA WRAPPER ssp_kafka
	  OPTIONS (brokers '$b', "schema.registry.url" '$secure->{url}');
	CREATE FOREIGN TABLE secure (id int, note text) SERVER kafka_secure OPTIONS (topic 'secure', format 'avro');
});
my ($ret, $out, $err) = $node->psql('postgres', 'SELECT * FROM secure');
like($err, qr/refused the credentials \(HTTP 401\)/, 'without a token, the registry refuses');
$node->safe_psql('postgres', q{
	CREATE USER MAPPING FOR PUBLIC SERVER kafka_secure
	  OPTIONS ("schema.registry.bearer.auth.token" 'sekret-token-42');
});
is($node->safe_psql('postgres', 'SELECT id, note FROM secure'), '7|tok', 'with the mapping\'s token, it answers');
($ret, $out, $err) = $node->psql('postgres', q{
	ALTER SERVER kafka_secure OPTIONS (ADD "schema.registry.bearer.auth.token" 'sekret-token-42')});
like($err, qr/must be set in a user mapping/, 'a token in a server is refused');
# the log's own echo of the statements typed aside, nothing shows the token
my $shown = join("\n", grep { !/statement:|STATEMENT:|^\s/ } split /\n/, slurp_file($node->logfile));
unlike($err . $shown, qr/sekret-token-42/, 'the token is never shown');

# 6. Each id fetched once per process -------------------------------------------
my $stats = SspTest::registry_control($reg, 'stats');
$stats =~ /"schema_gets":(\d+)/;
ok($1 <= 4, "the restarted registry was asked for few schemas ($1)");

# 7. Writing Avro: INSERT with the subject's schema, read back by Apache Avro
my $t2 = SspTest::register_schema($reg, 'types2-value', $types_schema);
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE types2 (b bool, i int, l bigint, f real, d float8, s text, raw bytea, e text,
	    fx bytea, arr int[], sarr text[], m jsonb, addr addr_t, opt text, u text,
	    dec numeric, decf numeric, big numeric, dt date, tm time, tmu time, tsm timestamptz,
	    tsu timestamptz, lts timestamp, uid uuid, dur interval, naddr addr_t, p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'types2', format 'avro');
	INSERT INTO types2 SELECT b, i, l, f, d, s, raw, e, fx, arr, sarr, m, addr_c, opt, u #>> '{}', dec, decf,
	    big, dt, tm, tmu, tsm, tsu, lts, uid, dur, naddr_c, 0 FROM types_v ORDER BY i;
	CREATE FOREIGN TABLE types2_r (b bool, i int, l bigint, f real, d float8, s text, raw bytea, e text,
	    fx bytea, arr int[], sarr text[], m jsonb, addr_c addr_t OPTIONS (field 'addr'), opt text, u jsonb,
	    dec numeric, decf numeric, big numeric, dt date, tm time, tmu time, tsm timestamptz,
	    tsu timestamptz, lts timestamp, uid uuid, dur interval, naddr_c addr_t OPTIONS (field 'naddr'))
	  SERVER kafka OPTIONS (topic 'types2', format 'avro');
});
# u (a union of int and string) comes back a string: it was written from text
my $same = 'b, i, l, f, d, s, raw, e, fx, arr, sarr, m, addr_c, opt, dec, decf, big, dt, tm, tmu, tsm, tsu, '
  . 'lts, uid, dur, naddr_c';
is(SspTest::differences($node, 'postgres', "SELECT $same FROM types_v", "SELECT $same FROM types2_r"), '0',
	'every type written by INSERT reads back the same');
my $java = SspTest::avro_consume($k, $reg->{url}, 'types2', 2);
like($java, qr/^0:0\t\{"b": true, "i": -5, "l": 9007199254740993, "f": 1\.5, "d": -2\.25E10, "s": "h\S+llo \S+",/m,
	'Apache Avro reads what ssp wrote: numbers and strings');
like($java, qr/"dec": 12345678\.90, "decf": -12345678901234\.5678, "big": -12345678901234567890123456789012\.345, "dt": "2024-02-29", "tm": "13:14:15\.678", "tmu": "23:59:59\.999999", "tsm": "2024-01-01T00:00:00\.123Z", "tsu": "1969-12-31T23:59:59\.999999Z", "lts": "2024-06-01T12:30", "uid": "123e4567-e89b-12d3-a456-426614174000"/,
	'and the logical types');
like($java, qr/"addr": \{"city": "Oslo", "zip": 150\}, "opt": "here", "u": "42"/, 'and records and unions');
like($java, qr/"naddr": \{"city": "Rome", "zip": 100\}\}/, 'and a record in a union');
like($java, qr/^0:1\t.*"opt": null, "u": "text".*"naddr": null\}$/m, 'and nulls');

# a subject without a schema: refused, or registered from the columns
my ($r7, $o7, $e7) = $node->psql('postgres', q{
	CREATE FOREIGN TABLE written (id bigint, name text, amount numeric(10,2), at timestamptz, tags text[])
	  SERVER kafka OPTIONS (topic 'written', format 'avro');
	INSERT INTO written VALUES (1, 'x', 1.5, '2024-01-01 00:00:00+00', '{a}')});
like($e7, qr/subject "written-value" has no schema in the schema registry/, 'no schema, no auto_register: refused');
$node->safe_psql('postgres', q{
	ALTER FOREIGN TABLE written OPTIONS (ADD auto_register 'true');
	INSERT INTO written SELECT g, 'n' || g, g * 1.25, timestamptz '2024-01-01 00:00:00+00' + g * interval '1 s',
	    ARRAY['t' || g] FROM generate_series(1, 5) g;
	INSERT INTO written VALUES (6, NULL, NULL, NULL, NULL);
});
my $wjava = SspTest::avro_consume($k, $reg->{url}, 'written', 6);
is(scalar(() = $wjava =~ /\{"id": \d+, "name": /g), 6, 'a schema registered from the columns: Avro reads all six');
like($wjava, qr/\{"id": 3, "name": "n3", "amount": 3\.75, "at": "2024-01-01T00:00:03Z", "tags": \["t3"\]\}/,
	'with their values');
like($wjava, qr/\{"id": 6, "name": null, "amount": null, "at": null, "tags": null\}/, 'and NULLs as nulls');
is($node->safe_psql('postgres', q{SELECT count(*), sum(id), sum(amount) FROM written}), '6|21|18.75',
	'and ssp reads them back');

# domains: registered and written as their base types, read back through them
$node->safe_psql('postgres', q{
	CREATE DOMAIN d_id AS bigint CHECK (VALUE > 0);
	CREATE DOMAIN d_money AS numeric(10,2);
	CREATE DOMAIN d_at AS timestamptz;
	CREATE DOMAIN d_ints AS int[];
	CREATE FOREIGN TABLE dwritten (id d_id, amount d_money, at d_at, nums d_ints, tags d_id[])
	  SERVER kafka OPTIONS (topic 'dwritten', format 'avro', auto_register 'true');
	INSERT INTO dwritten VALUES (1, 1.25, '2024-01-01 00:00:01+00', '{1,2}', '{3}'), (2, NULL, NULL, NULL, NULL);
});
require HTTP::Tiny;
like(HTTP::Tiny->new->get("$reg->{url}/subjects/dwritten-value/versions/latest")->{content},
	qr/\{\\"name\\": \\"id\\", \\"type\\": \[\\"null\\", \\"long\\"\], \\"default\\": null\}, \{\\"name\\": \\"amount\\", \\"type\\": \[\\"null\\", \{\\"type\\": \\"bytes\\", \\"logicalType\\": \\"decimal\\", \\"precision\\": 10, \\"scale\\": 2\}\], \\"default\\": null\}, \{\\"name\\": \\"at\\", \\"type\\": \[\\"null\\", \{\\"type\\": \\"long\\", \\"logicalType\\": \\"timestamp-micros\\"\}\], \\"default\\": null\}, \{\\"name\\": \\"nums\\", \\"type\\": \[\\"null\\", \{\\"type\\": \\"array\\", \\"items\\": \[\\"null\\", \\"int\\"\]\}\], \\"default\\": null\}, \{\\"name\\": \\"tags\\", \\"type\\": \[\\"null\\", \{\\"type\\": \\"array\\", \\"items\\": \[\\"null\\", \\"long\\"\]\}\]/,
	'auto_register: domains as their base types');
is($node->safe_psql('postgres', q{SET timezone = 'UTC'; SELECT id, amount, at, nums, tags FROM dwritten ORDER BY id}),
	"1|1.25|2024-01-01 00:00:01+00|{1,2}|{3}\n2||||", 'and ssp reads them back');
my $djava = SspTest::avro_consume($k, $reg->{url}, 'dwritten', 2);
like($djava, qr/\{"id": 1, "amount": 1\.25, "at": "2024-01-01T00:00:01Z", "nums": \[1, 2\], "tags": \[3\]\}/,
	'and so does Apache Avro');
like($djava, qr/\{"id": 2, "amount": null, "at": null, "nums": null, "tags": null\}/, 'NULLs as nulls');

# keys in Avro: written with a registered key schema, read by ssp and by Apache Avro
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE keyed (id bigint, region text, amount float8)
	  SERVER kafka OPTIONS (topic 'keyed', format 'avro', key 'id', key_format 'avro', auto_register 'true');
	INSERT INTO keyed VALUES (1, 'eu', 1.5), (2, 'us', 2.5);
});
is($node->safe_psql('postgres', 'SELECT id, region, amount FROM keyed ORDER BY id'), "1|eu|1.5\n2|us|2.5",
	'Avro keys written and read back');
my $keys = SspTest::avro_consume($k, $reg->{url}, 'keyed', 2, '--key');
is(scalar(() = $keys =~ /\t\{"id": [12]\}$/mg), 2, 'Apache Avro reads the keys');
my $key_schema = '{"type": "record", "name": "K", "fields": [{"name": "id", "type": "long"}, {"name": "shard", "type": "string"}]}';
my $val_schema = '{"type": "record", "name": "V", "fields": [{"name": "amount", "type": "double"}]}';
SspTest::avro_produce($k, $reg->{url}, 'keyed2', $val_schema,
	[ qq({"id": 7, "shard": "a"}\t{"amount": 0.5}), qq({"id": 8, "shard": "b"}\t{"amount": 1.5}) ],
	'--key-schema', do { my $f = PostgreSQL::Test::Utils::tempdir('key') . '/key.avsc';
		open(my $kfh, '>', $f) or die $!; print $kfh $key_schema; close($kfh); $f });
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE keyed2 (id bigint, shard text, amount float8)
	  SERVER kafka OPTIONS (topic 'keyed2', format 'avro', key 'id,shard', key_format 'avro')});
is($node->safe_psql('postgres', 'SELECT id, shard, amount FROM keyed2 ORDER BY id'), "7|a|0.5\n8|b|1.5",
	'keys written by Apache Avro read by field name');

# 8. JSON Schema: written framed with a registered schema, read with the id checked
my ($r8, $o8, $e8) = $node->psql('postgres', q{
	CREATE FOREIGN TABLE js (id int, name text, tags text[], p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'js', format 'jsonschema', auto_register 'true');
	INSERT INTO js VALUES (1, 'a', '{x}', 0), (2, NULL, '{}', 0);
	CREATE FOREIGN TABLE js_raw (v bytea, p int OPTIONS (meta 'partition'))
	  SERVER kafka OPTIONS (topic 'js', format 'bytea');
	INSERT INTO js_raw VALUES ('\x00000003e7' || convert_to('{"id": 3}', 'UTF8'), 0);
	CREATE VIEW js_v WITH (ssp.continuous) AS SELECT id, name, tags FROM js});
is($e8, '', 'a jsonschema stream registers its schema and writes');
SspTest::wait_views($node, 'postgres', 'js_v');
is($node->safe_psql('postgres', 'SELECT id, name, tags FROM js_v ORDER BY id'), "1|a|{x}\n2||{}",
	'and reads what it wrote');
like($node->safe_psql('postgres', q{SELECT error FROM ssp.dead_letters WHERE view = 'js_v'::regclass}),
	qr/has no schema 999/, 'an id the registry does not know is a dead letter');
require HTTP::Tiny;
my $latest = HTTP::Tiny->new->get("$reg->{url}/subjects/js-value/versions/latest")->{content};
like($latest, qr/"schemaType":"JSON"/, 'the subject holds a JSON Schema');
like($latest, qr/\\"tags\\": \{\\"type\\": \[\\"array\\", \\"null\\"\]\}/, 'of the columns');

# 9. A registry slower than the request timeout: the view waits, then goes on
$node->safe_psql('postgres', qq{
	CREATE SERVER kafka_slow FOREIGN DATA WRAPPER ssp_kafka
	  OPTIONS (brokers '$b', "schema.registry.url" '$reg->{url}', "schema.registry.request.timeout.ms" '300');
	CREATE FOREIGN TABLE slow (id int, note text) SERVER kafka_slow OPTIONS (topic 'slow', format 'avro');
	CREATE VIEW slow_v WITH (ssp.continuous) AS SELECT count(*) AS n, sum(id) AS ids FROM slow;
});
my $slow_schema = '{"type": "record", "name": "Slow", "fields": [{"name": "id", "type": "int"}, {"name": "note", "type": "string"}]}';
my $slow_id = SspTest::register_schema($reg, 'slow-value', $slow_schema);
SspTest::registry_control($reg, 'delay?ms=1500');
SspTest::avro_produce($k, '-', 'slow', $slow_schema, [ map { qq({"id": $_, "note": "s"}) } 1 .. 10 ], '--id', $slow_id);
ok($node->poll_query_until('postgres', q{
	SELECT status = 'waiting for schema registry' AND last_error ~ 'could not reach|[Tt]imeout|timed out'
	FROM ssp.views WHERE view = 'slow_v'::regclass}), 'a registry past the timeout: the view waits');
SspTest::registry_control($reg, 'delay?ms=0');
SspTest::wait_views($node, 'postgres', 'slow_v');
is($node->safe_psql('postgres', 'SELECT n, ids FROM slow_v'), '10|55', 'then counts every message once');

# 10. Schema references: a schema using a type another subject holds
my $addr_schema = '{"type": "record", "name": "Addr", "namespace": "ssp.ref", "fields": [{"name": "city", "type": "string"}, {"name": "zip", "type": "int"}]}';
my $ev_schema = '{"type": "record", "name": "Ev", "namespace": "ssp.ref", "fields": [{"name": "id", "type": "long"},
  {"name": "home", "type": "Addr"}, {"name": "work", "type": ["null", "ssp.ref.Addr"]}]}';
SspTest::register_schema($reg, 'ssp.ref.Addr', $addr_schema);
my $ev_id = SspTest::register_schema($reg, 'refs-value', $ev_schema,
	{ name => 'ssp.ref.Addr', subject => 'ssp.ref.Addr', version => 1 });
my $rdir = PostgreSQL::Test::Utils::tempdir('ref');
open(my $afh, '>', "$rdir/addr.avsc") or die $!;
print $afh $addr_schema;
close($afh);
my @ev = ('{"id": 1, "home": {"city": "Oslo", "zip": 1}, "work": {"city": "Bergen", "zip": 5}}',
	'{"id": 2, "home": {"city": "Rome", "zip": 2}, "work": null}');
SspTest::avro_produce($k, '-', 'refs', $ev_schema, \@ev, '--id', $ev_id, '--reference', "$rdir/addr.avsc");
$node->safe_psql('postgres', q{
	CREATE FOREIGN TABLE refs (id bigint, home_city text OPTIONS (field 'home.city'), work jsonb)
	  SERVER kafka OPTIONS (topic 'refs', format 'avro')});
is($node->safe_psql('postgres', 'SELECT id, home_city, work FROM refs ORDER BY id'),
	qq(1|Oslo|{"zip": 5, "city": "Bergen"}\n2|Rome|), 'a schema with a reference to another subject reads');
my $bad_id = SspTest::register_schema($reg, 'refs2-value', $ev_schema,
	{ name => 'ssp.ref.Addr', subject => 'nosuch', version => 1 });
SspTest::avro_produce($k, '-', 'refs2', $ev_schema, [ $ev[0] ], '--id', $bad_id, '--reference', "$rdir/addr.avsc");
($ret, $out, $err) = $node->psql('postgres', q{
	CREATE FOREIGN TABLE refs2 (id bigint) SERVER kafka OPTIONS (topic 'refs2', format 'avro');
	SELECT * FROM refs2});
like($err, qr/no version 1 of subject "nosuch", which it refers to/, 'a reference the registry lacks: the message cannot be read');

done_testing();
